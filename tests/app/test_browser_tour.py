"""Real browser (Debian Chromium via Playwright): the architecture map and the guided tour.

- forward pass: clicking a map element moves the stepper to that element's stage; Prev/Next still move it
  and the map's outline follows;
- the tour end to end: predict, reveal, next, with the answers in the URL;
- at 390 px (a phone) and 1400 px: the map's labels neither overlap nor leave the figure, and the tour
  still works; screenshots of the maps and the tour go to test-output/tour/.
Uses tests/app/test_browser.py's server and page helpers; skips like it when Chromium is missing outside CI.
"""
from __future__ import annotations

import re

import pytest

from k3lite.model.presets import get_preset
from k3lite.tour.steps import STEPS
from k3lite.viz.archmap import BIG_MARKER
from k3lite.viz.model import stages
from test_browser import (LOAD_TIMEOUT_MS, ROOT, assert_clean, browser, pytestmark,  # noqa: F401  (browser: the
                          screenshot, streamlit_server, wait_idle)                 # shared fixture)

OUT = ROOT / "test-output" / "tour"
WIDTHS = (1400, 390)

# pixel centre of the map node whose customdata is [kind, layer, ...] (layer -1 = none), or null
NODE_XY_JS = """
([kind, layer]) => {
  const gd = [...document.querySelectorAll('.js-plotly-plot')].find(
      g => (g.data || []).some(t => t.customdata && t.customdata.length && Array.isArray(t.customdata[0])));
  if (!gd) return null;
  gd.scrollIntoView({block: 'center'});
  const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
  for (const t of gd._fullData) {
    const cd = t.customdata || [];
    for (let i = 0; i < cd.length; i++) {
      if (cd[i][0] === kind && cd[i][1] === layer)
        return {x: box.left + xa._offset + xa.l2p(t.x[i]), y: box.top + ya._offset + ya.l2p(t.y[i])};
    }
  }
  return null;
}
"""
# customdata of the outlined (highlighted) nodes
OUTLINED_JS = """
() => {
  // the stage marked on the map: the nodes under the ring trace ("current stage", k3lite.viz.stepper), or, on a map
  // without a stepper, the nodes drawn with a thick outline
  const gd = [...document.querySelectorAll('.js-plotly-plot')].find(
      g => (g.data || []).some(t => t.customdata && t.customdata.length && Array.isArray(t.customdata[0])));
  const out = [];
  const ring = gd.data.find(t => t.name === 'current stage');
  for (const t of gd.data) (t.customdata || []).forEach((cd, i) => {
    if (!Array.isArray(cd)) return;
    if (ring) {
      if (ring.x.some((x, j) => x === t.x[i] && ring.y[j] === t.y[i])) out.push(cd.slice(0, 2));
    } else {
      const w = t.marker && t.marker.line && t.marker.line.width;
      if (Array.isArray(w) && w[i] >= 3) out.push(cd.slice(0, 2));
    }
  });
  return out;
}
"""
# every visible text box of the map: overlaps between them and any outside the figure
TEXT_BOXES_JS = """
(index) => {
  const gd = [...document.querySelectorAll('.js-plotly-plot')].filter(
      g => (g.data || []).some(t => t.customdata && t.customdata.length && Array.isArray(t.customdata[0])))[index];
  if (!gd) return null;
  const fig = gd.getBoundingClientRect();
  const boxes = [...gd.querySelectorAll('text')].filter(t => t.textContent.trim() && t.getBBox().width > 0)
    .map(t => { const r = t.getBoundingClientRect();
                return {text: t.textContent.trim(), l: r.left, r: r.right, t: r.top, b: r.bottom}; });
  const overlaps = [], outside = [];
  for (let i = 0; i < boxes.length; i++) {
    const a = boxes[i];
    if (a.l < fig.left - 1 || a.r > fig.right + 1 || a.t < fig.top - 1 || a.b > fig.bottom + 1) outside.push(a.text);
    for (let j = i + 1; j < boxes.length; j++) {
      const b = boxes[j];
      const w = Math.min(a.r, b.r) - Math.max(a.l, b.l), h = Math.min(a.b, b.b) - Math.max(a.t, b.t);
      if (w > 1 && h > 1) overlaps.push(a.text + ' / ' + b.text);
    }
  }
  const ya = gd._fullLayout.yaxis;
  return {n: boxes.length, overlaps, outside, width: fig.width, rowPx: Math.abs(ya.l2p(1) - ya.l2p(0))};
}
"""


@pytest.fixture(scope="module")
def server():
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.png"):
        old.unlink()
    with streamlit_server("app.py", ROOT, OUT / "streamlit-server.log") as srv:
        yield srv


def open_page(browser, server, path: str, width: int = 1400):
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.goto(f"{server['url']}/{path}", timeout=LOAD_TIMEOUT_MS)
    wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS)
    assert_clean(page, server, path)
    return page


def heading(page) -> str:
    return page.get_by_test_id("stMain").get_by_role("heading", level=3).first.inner_text()


def map_screenshot(page, name: str, index: int = 0) -> None:
    maps = page.locator(".js-plotly-plot").filter(has=page.locator(".legend"))
    target = maps.nth(index)
    target.scroll_into_view_if_needed()
    target.screenshot(path=str(OUT / name))


def test_clicking_a_map_element_moves_the_forward_pass_to_its_stage(browser, server):
    page = open_page(browser, server, "forward_pass")
    try:
        lite = get_preset("lite")
        st_list = stages(list(zip(lite.layer_types(), lite.ffn_types())))
        for kind, layer in (("kda", 2), ("router", 5), ("embed", None)):
            xy = page.evaluate(NODE_XY_JS, [kind, -1 if layer is None else layer])
            assert xy, f"no map node for ({kind}, {layer})"
            page.mouse.click(xy["x"], xy["y"])
            target = next(i for i, s in enumerate(st_list) if (s.kind, s.layer) == (kind, layer))
            want = f"{target + 1}/{len(st_list)} · {st_list[target].title}"
            page.wait_for_function("(w) => [...document.querySelectorAll('h3')].some(h => h.innerText.includes(w))",
                                   arg=want, timeout=60_000)
            wait_idle(page)
            assert_clean(page, server, f"forward_pass after clicking {kind} {layer}")
            assert page.evaluate(OUTLINED_JS) == [[kind, -1 if layer is None else layer]] * len(page.evaluate(OUTLINED_JS))
            assert re.search(rf"fp_stage={target}\b", page.url), page.url
        # Prev / Next still work after a click, and the map follows them: one stage picker drives the map and the
        # detail (the map's own slider and the detail's drifted apart), so the map's title names the new stage
        page.get_by_role("button", name="Next ▶").click()
        nxt = st_list[target + 1]
        page.wait_for_function("(w) => [...document.querySelectorAll('h3')].some(h => h.innerText.includes(w))",
                               arg=f"{target + 2}/{len(st_list)} · {nxt.title}", timeout=60_000)
        wait_idle(page)
        map_title = page.evaluate("""() => { const gd = [...document.querySelectorAll('.js-plotly-plot')].find(
            g => (g.data || []).some(t => t.name === 'current stage')); return gd && gd.layout.title.text; }""")
        assert map_title and f"stage {target + 2}/{len(st_list)} · {nxt.title}" in map_title, map_title
        assert {tuple(x) for x in page.evaluate(OUTLINED_JS)} != {(kind, -1 if layer is None else layer)}
        assert not page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].some("
                                 "g => (g.layout.sliders || []).length)"), "a second stage picker on the map"
        assert re.search(rf"fp_stage={target + 1}\b", page.url), page.url
        map_screenshot(page, "map_forward_pass_after_click_and_next_1400.png")
    finally:
        page.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_maps_are_legible_at_phone_and_desktop_width(browser, server, width):
    for path, name in (("forward_pass", "forward_pass"), ("", "home_k3")):
        page = open_page(browser, server, path, width)
        try:
            boxes = page.evaluate(TEXT_BOXES_JS, 0)
            assert boxes and boxes["n"] > 10, f"{name}: no map found"
            assert boxes["width"] <= width, f"{name} at {width}px: the map is {boxes['width']}px wide"
            assert not boxes["overlaps"], f"{name} at {width}px: overlapping labels {boxes['overlaps'][:6]}"
            assert not boxes["outside"], f"{name} at {width}px: labels outside the figure {boxes['outside'][:6]}"
            assert boxes["rowPx"] > BIG_MARKER + 2, f"{name} at {width}px: rows {boxes['rowPx']:.0f}px apart squeeze " \
                                                    f"the {BIG_MARKER}px boxes into each other"
            map_screenshot(page, f"map_{name}_{width}.png")
        finally:
            page.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_tour_end_to_end_predict_reveal_next(browser, server, width):
    page = open_page(browser, server, "tour", width)
    try:
        main = page.get_by_test_id("stMain")
        for i, step in enumerate(STEPS[:3], start=1):  # three steps: a number, a choice, the 20-s balancing run
            assert heading(page).startswith(f"{i}. {step.title}")
            if step.kind == "number":
                box = main.get_by_test_id("stNumberInput").locator("input")
                box.fill(f"{step.hi:g}")
                box.press("Enter")
                wait_idle(page)
            else:
                main.get_by_test_id("stRadio").get_by_text(step.choices[-1], exact=True).click()
                wait_idle(page)
            main.get_by_role("button", name="Reveal the computed answer").click()
            page.wait_for_function("() => [...document.querySelectorAll('[data-testid=stMetric]')]"
                                   ".some(m => m.innerText.includes('computed'))", timeout=120_000)
            wait_idle(page, timeout_ms=120_000)
            assert_clean(page, server, f"tour step {i}")
            metrics = " ".join(main.get_by_test_id("stMetric").all_inner_texts())
            assert step.compute().answer_text in metrics
            assert main.get_by_test_id("stAlert").count() >= 1  # the gap, in words
            assert f"tour_g{i}=" in page.url and "tour_revealed=" in page.url
            if i == 1:
                screenshot(page, OUT / f"tour_step1_revealed_{width}.png")
            main.get_by_role("button", name="Next step ▶").click()
            page.wait_for_function("(n) => [...document.querySelectorAll('h3')].some(h => h.innerText.startsWith(n))",
                                   arg=f"{i + 1}. ", timeout=60_000)
            wait_idle(page)
        assert re.search(r"tour_step=4\b", page.url)
        assert re.search(r"tour_revealed=1(%2C|,)2(%2C|,)3\b", page.url), page.url
    finally:
        page.close()


def test_clicking_a_part_of_the_k3_map_on_home_opens_its_page(browser, server):
    page = open_page(browser, server, "")
    try:
        xy = page.evaluate(NODE_XY_JS, ["kda", 1])  # a KDA mixer of K3
        assert xy, "no KDA node on the home map"
        page.mouse.click(xy["x"], xy["y"])
        page.wait_for_url(re.compile(r"/kda\b"), timeout=60_000)
        wait_idle(page)
        assert_clean(page, server, "kda page opened from the home map")
        assert "Kimi Delta Attention" in page.get_by_test_id("stMain").get_by_role("heading", level=1).first.inner_text()
    finally:
        page.close()
