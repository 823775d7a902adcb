"""Controls and figure text on the forward-pass and interconnect pages, measured in a real browser at 1400 px and at
390 px: a selectbox shows its whole value (the topology box showed "8 nodes x 8 GPUs over scale-ou"), and the
forward pass's token grid prints no label or id over another (44 ids in one row overprinted on a phone).

Uses tests/app/test_browser.py's server helper and browser fixture (Debian's Chromium; skipped without it).
"""
from __future__ import annotations

import pytest

from test_browser import (  # noqa: F401  (browser is a fixture; pytestmark skips without Chromium)
    LOAD_TIMEOUT_MS, ROOT, browser, pytestmark, streamlit_server, url_of, wait_idle,
)

OUT = ROOT / "test-output" / "widgets"
TOLERANCE_PX = 2

# every selectbox on the page: the shown value's box against the text it holds
SELECT_JS = """
(tol) => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stSelectbox"]')].map(box => {
  const label = (box.querySelector('label') || {}).textContent || '';
  // the shown value: the combobox's input (Streamlit 1.5x) or a text node of an older select
  const cut = [...box.querySelectorAll('input, [data-baseweb="select"] *')].filter(e => e.clientWidth > 0
      && (e.tagName === 'INPUT' ? e.value : (e.children.length === 0 && (e.textContent || '').trim()))
      && e.scrollWidth > e.clientWidth + tol)
    .map(e => e.tagName === 'INPUT' ? e.value : (e.textContent || '').trim());
  return {label: label.trim(), cut};
})
"""

# the text drawn in heatmap cells of the figure whose title names the byte tokens: pairs that overlap
HEAT_TEXT_JS = """
(tol) => {
  const plot = [...document.querySelectorAll('.js-plotly-plot')].find(
      el => el.layout && JSON.stringify(el.layout.title || '').includes('byte tokens'));
  if (!plot) return null;
  const texts = [...plot.querySelectorAll('.heatmaplayer text, .hm text, g.textpoint text')]
    .map(t => t.getBoundingClientRect()).filter(b => b.width > 0);
  const hits = [];
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
    const a = texts[i], b = texts[j];
    if (a.left < b.right - tol && b.left < a.right - tol && a.top < b.bottom - tol && b.top < a.bottom - tol)
      hits.push([i, j]);
  }
  return {n: texts.length, overlaps: hits.length};
}
"""


@pytest.fixture(scope="module")
def app_server():
    OUT.mkdir(parents=True, exist_ok=True)
    with streamlit_server("app.py", ROOT, OUT / "streamlit-server.log") as srv:
        yield srv


def open_page(browser, app_server, route: str, width: int):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(f"{app_server['url']}/{url_of(route)}", timeout=LOAD_TIMEOUT_MS)
    wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS * 3)
    page.wait_for_timeout(500)
    return context, page


@pytest.mark.parametrize("width", [1400, 390])
def test_interconnect_selectboxes_show_their_whole_value(app_server, browser, width):
    context, page = open_page(browser, app_server, "interconnect", width)
    try:
        boxes = page.evaluate(SELECT_JS, TOLERANCE_PX)
        page.screenshot(path=str(OUT / f"interconnect-{width}.png"))
    finally:
        context.close()
    assert any(b["label"].startswith("topology") for b in boxes), boxes
    cut = [b for b in boxes if b["cut"]]
    assert not cut, f"selectboxes whose value is clipped at {width} px: {cut}"


@pytest.mark.parametrize("width", [390, 1400])
def test_forward_pass_token_grid_text_does_not_overprint(app_server, browser, width):
    context, page = open_page(browser, app_server, "forward_pass", width)
    try:
        page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].some(el => el.layout && "
                               "JSON.stringify(el.layout.title || '').includes('byte tokens'))", timeout=30_000)
        page.wait_for_timeout(500)
        measured = page.evaluate(HEAT_TEXT_JS, TOLERANCE_PX)
        page.screenshot(path=str(OUT / f"forward_pass-{width}.png"), full_page=True)
    finally:
        context.close()
    assert measured and measured["n"] >= 44, measured  # the default prompt: 44 tokens, a label and an id each
    assert measured["overlaps"] == 0, f"{measured['overlaps']} pairs of token texts overprint at {width} px"
