"""Bad input, fuzzed: random values on every widget of every page; the page must never show a traceback.

For each page listed in app.py, hypothesis draws a value for every widget the page shows (sliders and
number inputs anywhere in range, extremes twice as likely; any option of a selectbox / radio /
select_slider / multiselect, including none for a multiselect; checkboxes; and text from a list of
hostile prompts: empty, 100k characters, emoji, NUL, control and bidi characters, plus random unicode).
Then a second round on whatever widgets are shown now (controls that appear only after the first change).
After each run: no exception element, and the page still shows its title (a constraint the user broke
must come back as st.error / st.warning, which is allowed and expected).

Choice widgets are set the way the browser sends them (the option's display string), so pages with a
format_func are fuzzed too. Buttons are not pressed: heavy work behind them is the browser suite's and
the guards' business. Bounded: a few examples per page, derandomised so CI sees the same cases.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from conftest import APP_PAGE_PATHS
from streamlit_internals import send_display_string  # the browser's display strings (private API, pinned)

ROOT = Path(__file__).resolve().parents[2]
PAGE_PATHS = APP_PAGE_PATHS
TIMEOUT = 120
EXAMPLES = 5

HOSTILE_TEXT = [
    "", " ", "\n\n", "A" * 100_000, "🙂" * 2_000, "\x00", "a\x00b", "\x1b[31mred\x1b[0m\x07\x08",
    "\u202eevil\u202c", "e\u0301" * 500, "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ﷽ \ufeff", "\ud7ff\ue000\uffff", "\t\r\v\f", "<script>x</script>",
    "'; DROP TABLE x; --", "{{7*7}} ${7*7}", "0" * 5_000, "\n".join(["line"] * 10_000),
]
# surrogates cannot be encoded by the protobuf layer (the browser cannot send them either)
TEXT = st.one_of(st.sampled_from(HOSTILE_TEXT),
                 st.text(st.characters(exclude_categories=("Cs",)), max_size=300))


pytestmark = pytest.mark.usefixtures("full_error_details")


# --------------------------------------------------------------------------- one value per widget
def _aligned(lo, hi, step, is_int: bool):
    """Values of a slider: extremes (weighted), or lo + k * step."""
    if step is None or step <= 0 or hi <= lo:
        return st.just(lo)
    n = int((hi - lo) // step)
    inner = st.integers(0, n).map(lambda k: lo + k * step)
    if not is_int:
        inner = inner.map(lambda v: min(float(v), hi))
    return st.one_of(st.sampled_from([lo, hi]), inner)


def draw_and_set(data, w) -> str | None:
    """Draw a value for widget `w` and set it; return a description (None: widget not fuzzed)."""
    if getattr(w.proto, "disabled", False):
        return None
    kind = w.type
    if kind == "slider":
        if isinstance(w.value, (list, tuple)):
            is_int = isinstance(w.min, int)
            a = data.draw(_aligned(w.min, w.max, w.step, is_int))
            b = data.draw(_aligned(w.min, w.max, w.step, is_int))
            w.set_value(sorted([a, b]))
        elif isinstance(w.min, (int, float)):
            w.set_value(data.draw(_aligned(w.min, w.max, w.step, isinstance(w.value, int))))
        else:
            return None  # dates / times: none in this app
        return f"{kind} {w.label!r} = {w.value!r}"
    if kind == "number_input":
        is_int = isinstance(w.value, int) and isinstance(w.step, int)
        lo = w.min if w.min is not None else (-10**9 if is_int else -1e9)
        hi = w.max if w.max is not None else (10**9 if is_int else 1e9)
        inner = st.integers(lo, hi) if is_int else st.floats(lo, hi, allow_nan=False, allow_infinity=False)
        w.set_value(data.draw(st.one_of(st.sampled_from([lo, hi]), inner)))
        return f"{kind} {w.label!r} = {w.value!r}"
    if kind in ("selectbox", "radio"):
        if not w.options:
            return None
        raw = data.draw(st.sampled_from(w.options))
        send_display_string(w, raw)
        return f"{kind} {w.label!r} = {raw!r}"
    if kind == "select_slider":
        if isinstance(w.value, (list, tuple)):
            raw = sorted(data.draw(st.lists(st.integers(0, len(w.options) - 1), min_size=2, max_size=2)))
            raw = [w.options[i] for i in raw]
        else:
            raw = [data.draw(st.sampled_from(w.options))]
        send_display_string(w, raw)
        return f"{kind} {w.label!r} = {raw!r}"
    if kind == "multiselect":
        if not w.options:
            return None
        raw = data.draw(st.lists(st.sampled_from(w.options), unique=True, max_size=len(w.options)))
        send_display_string(w, raw)
        return f"{kind} {w.label!r} = {raw!r}"
    if kind in ("checkbox", "toggle"):
        w.set_value(data.draw(st.booleans()))
        return f"{kind} {w.label!r} = {w.value!r}"
    if kind in ("text_input", "text_area"):
        text = data.draw(TEXT)
        w.set_value(text)
        return f"{kind} {w.label!r} = {text[:40]!r}... ({len(text)} chars)"
    return None


FUZZED = ("slider", "number_input", "selectbox", "radio", "select_slider", "multiselect", "checkbox", "toggle",
          "text_input", "text_area")


def widgets(at: AppTest) -> list:
    return [w for kind in FUZZED for w in getattr(at, kind)]


def assert_rendered(at: AppTest, page: str, did: list[str]) -> None:
    assert not at.exception, (f"{page} raised after:\n  " + "\n  ".join(did) + "\n"
                              + "\n".join(e.message + "\n" + "\n".join(e.stack_trace) for e in at.exception))
    assert at.title, f"{page} rendered no title after:\n  " + "\n  ".join(did)


def fuzz_page(page: str, data) -> None:
    at = AppTest.from_file(str(ROOT / page), default_timeout=TIMEOUT).run()
    assert_rendered(at, page, ["(first run)"])
    did: list[str] = []
    for _round in range(2):
        found = widgets(at)
        if not found:
            return
        did += [d for w in found if (d := draw_and_set(data, w))]
        at.run()
        assert_rendered(at, page, did)


def test_pages_were_found():
    assert len(PAGE_PATHS) >= 9, PAGE_PATHS


@pytest.mark.parametrize("page", PAGE_PATHS)
def test_fuzz_every_widget(page):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        fuzz_page(page, data)

    run()


def test_the_fuzzer_finds_a_page_that_breaks(tmp_path):
    """The fuzz can fail: a page that raises on an extreme slider value and on NUL in text is caught."""
    script = tmp_path / "fragile.py"
    script.write_text(
        "import streamlit as st\n"
        "st.title('fragile')\n"
        "n = st.slider('n', 0, 100, 50)\n"
        "s = st.text_input('prompt', 'hi')\n"
        "if n == 100 or '\\x00' in s:\n"
        "    raise RuntimeError('fragile page broke')\n"
    )
    root_page = Path(script)

    @settings(max_examples=25, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])  # stop at the first failure
    @given(data=st.data())
    def run(data):
        at = AppTest.from_file(str(root_page), default_timeout=30).run()
        did = [d for w in widgets(at) if (d := draw_and_set(data, w))]
        at.run()
        assert_rendered(at, "fragile.py", did)

    with pytest.raises(AssertionError, match="fragile.py raised"):
        run()
