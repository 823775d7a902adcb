"""Legibility in a real browser: every page at 1400 px and at 390 px (a phone), measured from the DOM.

For every Plotly figure on a page, from the rendered SVG (getBoundingClientRect, so what a visitor sees):
  - no text (title, axis title, tick label, legend entry, annotation, subplot title) extends past its figure,
    where the SVG clips it ("...this view reuses its", "…dding");
  - no two titles (figure title, subplot titles, axis titles) overlap ("max-violatima:2.55-flips");
  - the legend does not sit on a colourbar ("β head 0 … ‖S‖ head 3" over the a_t scale), and sits under the plot
    area (beside or above it, it took 80% of a phone's width or met the title);
  - at 390 px the Plotly toolbar is hidden (it covered titles and legends);
and for the page: every table fits its box or shows the right-edge cue, and no text is cut with "…".
Full-page screenshots of both widths go to test-output/legibility/<view>-<width>.png, with the measurements
next to them as JSON. Also here, because it needs the real router: opening /home shows the home page, not a
"Page not found" toast.

Uses tests/app/test_browser.py's server helper and browser fixture (Debian's Chromium; skipped without it).
"""
from __future__ import annotations

import json

import pytest

from test_browser import (  # noqa: F401  (browser is a fixture; pytestmark skips without Chromium)
    LOAD_TIMEOUT_MS, ROOT, ROUTES, SECTIONS_LABEL, browser, pytestmark, streamlit_server, url_of, wait_idle,
)

from k3lite.viz.style import TABLE_CUE  # noqa: E402

OUT = ROOT / "test-output" / "legibility"
from views.registry import COMPARE_PAGES  # noqa: E402  (the pages the sidebar's comparison draws on)

WIDTHS = (1400, 390)
TOLERANCE_PX = 2

# (name, route, query): every page at its defaults, plus the views a reading of the app found broken
VIEWS = [(r, r, "", None) for r in ROUTES] + [
    ("moe-896-top16", "moe", "moe_experts=896&moe_top_k=16", "(a)–(b) Routing and balance on a prompt"),  # K3 scale:
    # the GPU view + load histogram
    ("forward-pass-kda", "forward_pass", "fp_stage=3", None),  # a KDA stage (0-based index): legend vs colourbar
    ("attention-residuals-full", "attention_residuals", "ar_mode=full", None),
    ("interconnect-training", "interconnect", "ic_mode=training", None),  # the training view's bars and labels  # the caveat that cut the title
] + [  # with the sidebar's comparison on: one comparison per page (every page and choice renders under AppTest:
    # tests/app/test_compare_pages.py), released models and K3 variants both drawn
    (f"{route}-vs-{vs}", route, f"vs={vs}", None) for route, vs in zip(COMPARE_PAGES, (
        "deepseek-v3", "no-latent", "kimi-linear-48b-a3b", "all-mla", "standard-residual", "deepseek-v3", "kimi-k2",
        "all-mla", "deepseek-v3"))
] + [  # the sections below the first picture (views/common.lazy_sections): each drawn once it is picked
    (f"{route}-section-{i}", route, "", tab) for route, tabs in (
        ("moe", ("(a)–(b) Routing and balance on a prompt", "(c) Balance during training", "(d) The latent trade-off",
                 "(f) SiTU-GLU")),
        ("attention_residuals", ("Every sublayer's weights", "Does it train better?", "What blocks save at scale")),
        ("home", ("Bytes per decoded token", "Where the parameters are", "K3 without each idea")),
        ("lab", ("Recall vs length",)),
        ("cost_per_task", ("Planner / worker: K3 plans, a small model works",))) for i, tab in enumerate(tabs)]

MEASURE_JS = """
(tol) => {
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  // figures a visitor can see: not stale, not inside a collapsed expander (laid out at its last open width)
  const plots = [...main.querySelectorAll('.js-plotly-plot')].filter(
      el => !el.closest('[data-stale="true"]') && !el.closest('details:not([open])'));
  const r = (el) => { const b = el.getBoundingClientRect(); return {l: b.left, r: b.right, t: b.top, b: b.bottom,
                                                                    w: b.width, h: b.height}; };
  const meet = (a, b) => a.l < b.r - tol && b.l < a.r - tol && a.t < b.b - tol && b.t < a.b - tol;
  const label = (el) => (el.textContent || '').trim().slice(0, 60);
  return plots.map((el, i) => {
    const box = r(el);
    const title = el.layout && el.layout.title ? (el.layout.title.text || el.layout.title) : '';
    const out = {index: i, title: String(title).slice(0, 80), width: box.w, height: box.h, overflow: [], overlaps: []};
    if (box.w < 1 || box.h < 1) return out;
    for (const t of el.querySelectorAll('svg text')) {
      // legend entries count too (a scheme's name ran off a phone's screen); hover labels do not
      if (!label(t) || t.closest('.hoverlayer')) continue;
      const b = r(t);
      if (b.w < 1 || b.h < 1) continue;
      if (b.l < box.l - tol || b.r > box.r + tol || b.t < box.t - tol || b.b > box.b + tol)
        out.overflow.push(`${label(t)} [${Math.round(b.l - box.l)}..${Math.round(b.r - box.l)} of ${Math.round(box.w)} px]`);
    }
    const titles = [...el.querySelectorAll('.gtitle, .annotation-text, .g-xtitle text, .g-ytitle text, '
                                           + '.g-x2title text, .g-y2title text')].filter(t => label(t));
    for (let a = 0; a < titles.length; a++)
      for (let b = a + 1; b < titles.length; b++)
        if (meet(r(titles[a]), r(titles[b]))) out.overlaps.push(`'${label(titles[a])}' / '${label(titles[b])}'`);
    const legend = el.querySelector('.legend');
    const ticks = [...el.querySelectorAll('.xtick text, .ytick text')].filter(t => !t.closest('.colorbar') && label(t));
    for (const bar of el.querySelectorAll('.colorbar')) {
      if (legend && meet(r(legend), r(bar))) out.overlaps.push('legend / colourbar');
      // a colour scale between two panels sat on the second panel's axis labels (KDA (b) at 390 px)
      const hit = ticks.find(t => meet(r(t), r(bar)));
      if (hit) out.overlaps.push(`colourbar / axis label '${label(hit)}'`);
    }
    // the legend sits under the plot area (k3lite.viz.style.legend_below), never on it or beside it
    const plotArea = [...el.querySelectorAll('.nsewdrag')].map(r);
    if (legend && plotArea.length && r(legend).h > 0) {
      const bottom = Math.max(...plotArea.map(p => p.b));
      if (r(legend).t < bottom - tol) out.overlaps.push(`legend not under the plot (top ${Math.round(r(legend).t - box.t)} < ${Math.round(bottom - box.t)} px)`);
    }
    // at phone widths the Plotly toolbar is hidden (it covered titles and legends)
    const bar = el.querySelector('.modebar-container');
    out.toolbar = bar ? getComputedStyle(bar).display !== 'none' && r(bar).w > 0 : false;
    return out;
  });
}
"""

# tables: each visible st.dataframe either fits its box or shows the right-edge cue (style.APP_CSS), and no visible
# text in the page is cut with an ellipsis (metric and widget labels, page links)
PAGE_JS = """
([tol, cue]) => {
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  const shown = (el) => !el.closest('[data-stale="true"]') && !el.closest('details:not([open])');
  const tables = [...main.querySelectorAll('[data-testid="stDataFrame"]')].filter(shown).map((el, i) => {
    const s = el.querySelector('.dvn-scroller');
    const over = s ? s.scrollWidth - s.clientWidth : 0;
    const after = getComputedStyle(el, '::after');
    return {index: i, over, cue: after.animationName.includes(cue) && after.content !== 'none' && after.opacity === '1'};
  });
  const cut = [...main.querySelectorAll('*')].filter(e => shown(e) && e.clientWidth > 0
      && getComputedStyle(e).textOverflow === 'ellipsis' && e.scrollWidth > e.clientWidth + tol)
    .map(e => (e.textContent || '').trim().slice(0, 60));
  return {tables, cut};
}
"""


@pytest.fixture(scope="module")
def app_server():
    OUT.mkdir(parents=True, exist_ok=True)
    for old in [*OUT.glob("*.png"), *OUT.glob("*.json")]:  # this run's pictures only
        old.unlink()
    with streamlit_server("app.py", ROOT, OUT / "streamlit-server.log") as srv:
        yield srv


# every visible figure laid out at its container's width: Streamlit re-flows a container at once, Plotly redraws its
# svg at the new width a moment later (a fixed wait of 1.5 s per width cost the suite ~90 s over its views)
LAID_OUT_JS = """
() => [...(document.querySelector('[data-testid="stMain"]') || document.body).querySelectorAll('.js-plotly-plot')]
  .filter(el => !el.closest('details:not([open])') && el.getBoundingClientRect().width > 0)
  .every(el => { const svg = el.querySelector('.main-svg');
                 return svg && Math.abs(svg.getBoundingClientRect().width - el.getBoundingClientRect().width) < 3; })
"""


def settle(page) -> None:
    """Wait until every visible figure is drawn at its container's width, then a beat for the last repaint."""
    try:
        page.wait_for_function(LAID_OUT_JS, timeout=5000, polling=100)
    except Exception:  # noqa: BLE001 - a figure with a fixed width never matches: measure it as it stands
        pass
    page.wait_for_timeout(300)


def _screenshot(page, path) -> None:
    """Whole page: Streamlit scrolls inside stMain, so grow the viewport to its height first."""
    width = page.viewport_size["width"]
    height = page.evaluate("() => (document.querySelector('[data-testid=stMain]') || document.body).scrollHeight")
    page.set_viewport_size({"width": width, "height": max(600, min(int(height) + 40, 16_000))})
    settle(page)  # the width did not change; a taller viewport only re-flows what sizes to the window
    page.screenshot(path=str(path), full_page=True)


def problems(measured: list[dict]) -> list[str]:
    return [f"figure {m['index']} ({m['title']!r}): {kind}: {what}"
            for m in measured for kind in ("overflow", "overlaps") for what in m[kind]]


def page_problems(whole: dict, measured: list[dict], width: int) -> list[str]:
    """Tables clipped without the cue, text cut with an ellipsis, and (at phone width) a visible Plotly toolbar."""
    out = [f"table {t['index']}: {t['over']} px clipped at the right with no cue" for t in whole["tables"]
           if t["over"] > TOLERANCE_PX and not t["cue"]]
    out += [f"text cut with an ellipsis: {c!r}" for c in whole["cut"]]
    if width < 640:
        out += [f"figure {m['index']} ({m['title']!r}): the Plotly toolbar shows at {width} px" for m in measured
                if m.get("toolbar")]
    return out


@pytest.mark.parametrize("name, route, query, tab", VIEWS, ids=[v[0] for v in VIEWS])
def test_figures_are_legible_at_both_widths(app_server, browser, name, route, query, tab):
    context = browser.new_context(viewport={"width": WIDTHS[0], "height": 1000})
    page = context.new_page()
    found = {}
    try:
        page.goto(f"{app_server['url']}/{url_of(route)}{'?' + query if query else ''}", timeout=LOAD_TIMEOUT_MS)
        wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS * 3)
        if tab:
            page.get_by_test_id("stMain").get_by_role("radiogroup", name=SECTIONS_LABEL).get_by_role(
                "radio", name=tab, exact=True).click()
            wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS)
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 1000})
            settle(page)  # Streamlit re-flows columns, plotly re-lays out its figures
            measured = page.evaluate(MEASURE_JS, TOLERANCE_PX)
            whole = page.evaluate(PAGE_JS, [TOLERANCE_PX, TABLE_CUE])
            _screenshot(page, OUT / f"{name}-{width}.png")
            (OUT / f"{name}-{width}.json").write_text(json.dumps({"figures": measured, **whole}, indent=1))
            # lab: its figures come after a run; tour: text and numbers until a step is revealed; glossary, article: text;
            # practice: its first problem asks for a number (a picture only in read-the-picture problems)
            assert measured or route in ("lab", "tour", "glossary", "article", "practice"), \
                f"{name}: no figure rendered at {width} px"
            found[width] = problems(measured) + page_problems(whole, measured, width)
    finally:
        context.close()
    bad = {w: p for w, p in found.items() if p}
    assert not bad, "\n".join(f"{name} at {w} px: {p}" for w, ps in bad.items() for p in ps)


def test_the_measurement_catches_a_cut_title_and_colliding_subplot_titles(browser, tmp_path):
    """The checks can fail: a tiny app with a title wider than its figure and four crowded subplot titles."""
    (tmp_path / "bad.py").write_text(
        "import streamlit as st\nfrom plotly.subplots import make_subplots\n"
        "fig = make_subplots(rows=1, cols=4, subplot_titles=['max-violation 2.55 flips 3%'] * 4)\n"
        "for c in range(1, 5):\n    fig.add_bar(x=[1], y=[1], row=1, col=c)\n"
        "fig.update_layout(title='a title that is much too long to fit a phone-width figure, so it is cut', width=380)\n"
        "st.plotly_chart(fig)\n"
        "st.dataframe({f'a long column name {i}': [1.0] for i in range(12)})\n"
        "st.metric('a metric label much longer than its column ' * 4, 1)\n")
    with streamlit_server("bad.py", tmp_path, tmp_path / "server.log") as srv:
        context = browser.new_context(viewport={"width": 390, "height": 900})
        page = context.new_page()
        try:
            page.goto(srv["url"] + "/", timeout=LOAD_TIMEOUT_MS)
            wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS)
            page.wait_for_timeout(1000)
            measured = page.evaluate(MEASURE_JS, TOLERANCE_PX)
            whole = page.evaluate(PAGE_JS, [TOLERANCE_PX, TABLE_CUE])
            found = " | ".join(problems(measured) + page_problems(whole, measured, 390))
        finally:
            context.close()
    assert "overflow: a title that is much too long" in found, found
    assert "overlaps: 'max-violation" in found, found
    # without the app's CSS and legend placement (a bare page): each new check fires
    assert "legend not under the plot" in found, found
    assert "clipped at the right with no cue" in found, found
    assert "the Plotly toolbar shows at 390 px" in found, found
    assert "text cut with an ellipsis: 'a metric label" in found, found


def test_home_url_opens_home_without_page_not_found(app_server, browser):
    """/home is the home page's url_path: Streamlit does not route the default page's path, and showed a
    "Page not found" toast before falling back (app.py now adds a hidden page that answers there)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{app_server['url']}/home", timeout=LOAD_TIMEOUT_MS)
        wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS)
        page.wait_for_timeout(1000)  # the toast arrives with the navigation message
        toasts = page.get_by_test_id("stToast").all_inner_texts()
        dialogs = page.get_by_role("dialog").all_inner_texts()
        page.screenshot(path=str(OUT / "home-url.png"))
        assert not any("not found" in t.lower() for t in toasts + dialogs), toasts + dialogs
        assert "/home" in page.url
        assert page.get_by_test_id("stMain").locator("h1").count() >= 1
    finally:
        context.close()


def test_pages_fetch_nothing_from_another_host(app_server, browser):
    """The favicon came from fonts.gstatic.com (Streamlit builds that URL for a ":material/" page icon)
    and failed offline. Every request a page makes must go to this server (or be a data:/blob: URL)."""
    from urllib.parse import urlparse

    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    outside = []
    page.on("request", lambda r: outside.append(r.url) if urlparse(r.url).scheme in ("http", "https", "ws", "wss")
            and urlparse(r.url).hostname not in ("127.0.0.1", "localhost") else None)
    try:
        for route in (ROUTES[0], "moe", "interconnect"):
            page.goto(f"{app_server['url']}/{url_of(route)}", timeout=LOAD_TIMEOUT_MS)
            wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS * 3)
            page.wait_for_timeout(1000)
        icons = page.evaluate("() => [...document.querySelectorAll('link[rel~=icon]')].map(l => l.href)")
    finally:
        context.close()
    assert not outside, outside
    assert icons and all(urlparse(h).hostname in ("127.0.0.1", "localhost") or h.startswith("data:") for h in icons), icons


# every toggle's track and every checkbox's square, as drawn: a CSS rule meant for long labels once set every
# descendant of a checkbox's label to height: auto, which collapsed a toggle's track to 0 px (on or off could not be
# seen) and squashed a checkbox's square
CONTROLS_JS = """
() => [...document.querySelectorAll('[data-testid="stCheckbox"] label')].map(lab => {
  const box = [...lab.children].find(ch => ch.tagName === 'DIV' && !ch.getAttribute('data-testid'));
  const b = box ? box.getBoundingClientRect() : {width: 0, height: 0};
  return {label: (lab.textContent || '').trim().slice(0, 40), w: b.width, h: b.height};
})
"""


@pytest.mark.parametrize("route", ["serving", "home"])
def test_toggles_and_checkboxes_are_drawn(app_server, browser, route):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        query = "?home_section=Bytes per decoded token" if route == "home" else ""
        page.goto(f"{app_server['url']}/{url_of(route)}{query}", timeout=LOAD_TIMEOUT_MS)
        wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS * 3)
        controls = page.evaluate(CONTROLS_JS)
        page.screenshot(path=str(OUT / f"controls-{route}.png"))
    finally:
        context.close()
    assert controls, f"no toggle or checkbox found on {route}"
    flat = [c for c in controls if c["h"] < 12 or c["w"] < 12]
    assert not flat, f"{route}: controls drawn without their switch or box: {flat}"


def test_sidebar_ledger_link_opens_the_ledger_on_home(app_server, browser):
    """On home, the sidebar's ledger link was a page link to the page already shown: Streamlit ignored the click."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{app_server['url']}/", timeout=LOAD_TIMEOUT_MS)
        wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS * 3)
        page.get_by_test_id("stSidebar").get_by_text("Bytes per decoded token: the ledger").click()
        wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS * 3)
        picked = page.get_by_test_id("stMain").get_by_role("radiogroup", name=SECTIONS_LABEL).get_by_role(
            "radio", name="Bytes per decoded token", exact=True)
        assert picked.is_checked()
    finally:
        context.close()
