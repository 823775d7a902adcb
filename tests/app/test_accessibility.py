"""Accessibility and the phone's first screen, in a real browser (Debian's Chromium against `streamlit run app.py`).

1. axe-core (axe-playwright-python ships it) with the WCAG 2.1 A and AA rules on every page at 1400 px and at
   390 px (a phone): no violation of the app's own. Only Streamlit's navigation markup is excluded, by rule id:
   its sidebar nav is a `ul` with `div` children, which fails `list` and `listitem` on every page; that markup is
   Streamlit's, not the app's. Caption contrast (Streamlit draws captions in the body colour at 60% opacity) comes
   from the theme's textColor in .streamlit/config.toml; `test_caption_contrast` measures it.
2. At 390 x 844 (a phone's first screen) the first chart of every mechanism page starts within the screen: the
   controls sit below or beside it.
3. At 390 px a code block ("The code behind this figure") shows every line: it wraps, or its overflow shows a
   scrollbar (a hidden overflow showed a third of each line with no sign that more was there).

One server and one browser for all of it (28 axe runs, 8 first screens, one code block): about 2 minutes on a
2-core machine.
"""
from __future__ import annotations

import re

import pytest

from test_browser import (  # noqa: F401  (browser is a fixture; pytestmark skips without Chromium)
    LOAD_TIMEOUT_MS, ROOT, ROUTES, browser, pytestmark, streamlit_server, url_of, wait_idle,
)

OUT = ROOT / "test-output" / "accessibility"
WIDTHS = (1400, 390)
PHONE = {"width": 390, "height": 844}
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# Streamlit's own sidebar navigation (a `ul` whose children are `div`s): upstream markup, the only exclusion
STREAMLIT_NAV_RULES = {"list": False, "listitem": False}
MECHANISM_PAGES = ("home", "moe", "kda", "hybrid_attention", "attention_residuals", "forward_pass", "interconnect",
                   "serving")
AA_NORMAL_TEXT = 4.5

FIRST_CHART_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const charts = [...main.querySelectorAll('.js-plotly-plot, [data-testid="stImage"] img, [data-testid="stVegaLiteChart"]')]
    .filter(e => !e.closest('details:not([open])') && e.getBoundingClientRect().height > 20);
  return charts.length ? charts[0].getBoundingClientRect().top + main.scrollTop : null;
}"""

CODE_JS = """() => [...document.querySelectorAll('[data-testid="stCode"] pre')].map(pre => {
  const s = getComputedStyle(pre), code = pre.querySelector('code') || pre;
  return {client: pre.clientWidth, scroll: pre.scrollWidth, overflowX: s.overflowX,
          whiteSpace: getComputedStyle(code).whiteSpace, scrollbar: pre.offsetHeight - pre.clientHeight};
})"""


@pytest.fixture(scope="module")
def server():
    OUT.mkdir(parents=True, exist_ok=True)
    with streamlit_server("app.py", ROOT, OUT / "streamlit-server.log") as srv:
        yield srv


def _open(page, server, route: str, query: str = "") -> None:
    page.goto(f"{server['url']}/{url_of(route)}{'?' + query if query else ''}")
    wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS)
    page.wait_for_timeout(500)  # Plotly lays out after the script is idle


def _luminance(rgb: tuple[float, float, float]) -> float:
    c = [x / 255 for x in rgb]
    c = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]


def contrast(fg: tuple[float, float, float], bg: tuple[float, float, float]) -> float:
    a, b = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def test_contrast_formula():
    """The WCAG formula: Streamlit's default caption #828180 on white is 3.88:1 (axe cuts to two decimals)."""
    assert int(contrast((0x82, 0x81, 0x80), (255, 255, 255)) * 100) == 388
    assert round(contrast((0, 0, 0), (255, 255, 255)), 1) == 21.0


def test_axe_every_page(server, browser):
    from axe_playwright_python.sync_playwright import Axe

    axe, found = Axe(), {}
    options = {"runOnly": {"type": "tag", "values": WCAG_TAGS}, "rules": {r: {"enabled": e} for r, e in
                                                                          STREAMLIT_NAV_RULES.items()},
               "resultTypes": ["violations"]}
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900 if width > 390 else PHONE["height"]})
        page = context.new_page()
        try:
            for route in ROUTES:
                _open(page, server, route)
                for v in axe.run(page, options=options).response["violations"]:
                    found.setdefault(f"{route} @ {width} px", []).append(
                        f"{v['id']} ({len(v['nodes'])}): {v['help']}; e.g. {v['nodes'][0]['target']} "
                        f"{v['nodes'][0].get('failureSummary', '')[:200]}")
        finally:
            context.close()
    assert not found, "axe (WCAG 2.1 A/AA) found violations of the app's own:\n" + "\n".join(
        f"{where}: {line}" for where, lines in found.items() for line in lines)


def test_caption_contrast(server, browser):
    """A caption's colour, as the browser computes it, against the page's background: AA for normal text."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        _open(page, server, "glossary")
        colours = page.evaluate("""() => {
          const cap = document.querySelector('[data-testid="stMain"] [data-testid="stCaptionContainer"]');
          const app = document.querySelector('[data-testid="stApp"]');
          return cap && [getComputedStyle(cap).color, getComputedStyle(app).backgroundColor];
        }""")
    finally:
        page.close()
    assert colours, "no caption on the glossary page to measure"
    fg, bg = ([float(x) for x in re.findall(r"[\d.]+", c)] for c in colours)
    alpha = fg[3] if len(fg) > 3 else 1.0  # rgba: composite over the background, as the eye (and axe) sees it
    seen = tuple(alpha * f + (1 - alpha) * b for f, b in zip(fg[:3], bg[:3]))
    ratio = contrast(seen, tuple(bg[:3]))
    assert ratio >= AA_NORMAL_TEXT, f"caption {colours[0]} on {colours[1]}: {ratio:.2f}:1, AA needs {AA_NORMAL_TEXT}:1"


def test_first_chart_on_a_phones_first_screen(server, browser):
    page = browser.new_page(viewport=PHONE)
    tops, below = {}, []
    try:
        for route in MECHANISM_PAGES:
            _open(page, server, route)
            tops[route] = page.evaluate(FIRST_CHART_JS)
            if tops[route] is None or tops[route] >= PHONE["height"] - 40:  # at least its top 40 px in view
                below.append(route)
            if route in ("home", "interconnect", "serving", "moe"):
                page.screenshot(path=str(OUT / f"first-screen-{route}-390.png"))
    finally:
        page.close()
    assert not below, f"first chart's top (px from the page's top) at 390 x 844, below the first screen: {tops}"


def test_code_blocks_show_every_line_on_a_phone(server, browser):
    page = browser.new_page(viewport=PHONE)
    try:
        _open(page, server, "hybrid_attention")
        expander = page.get_by_test_id("stMain").get_by_text("The code behind this figure").first
        expander.scroll_into_view_if_needed()
        expander.click()
        page.get_by_test_id("stCode").first.wait_for(state="visible", timeout=60_000)
        wait_idle(page)
        blocks = page.evaluate(CODE_JS)
        page.screenshot(path=str(OUT / "code-hybrid-390.png"), full_page=False)
    finally:
        page.close()
    assert blocks, "no code block drawn after opening 'The code behind this figure'"
    hidden = [b for b in blocks if b["scroll"] > b["client"] + 1 and b["scrollbar"] <= 0]
    assert not hidden, f"code blocks whose lines run past the box with no scrollbar: {hidden}"
    assert all(b["whiteSpace"].startswith("pre-wrap") or b["scrollbar"] > 0 for b in blocks), blocks
