"""Shareable state: a copied URL reopens the same view; bad query values fall back to defaults with a notice.

Two layers:
1. views/common.py's url_state()/push_url() on a tiny synthetic page (every value type, every constraint),
   so the mechanism is tested independently of the pages.
2. Every real page (read from app.py): the keys it passes to url_state() are found in its source, then
   (a) round trip: move every URL-backed widget one step, take the query string push_url() wrote, open a
       fresh session with it, and the widgets must show the moved values;
   (b) garbage: open with an invalid value for every constrained key: no exception, each widget at its
       default, and a warning naming the ignored key.
"""
from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from conftest import APP_PAGE_PATHS

ROOT = Path(__file__).resolve().parents[2]
PAGE_PATHS = APP_PAGE_PATHS
TIMEOUT = 120


pytestmark = pytest.mark.usefixtures("full_error_details")

# ---------------------------------------------------------------------------------- 1. the helper itself
SYNTHETIC = '''
import streamlit as st
from views.common import url_state, push_url

url_state("n", 4, lo=1, hi=10)
url_state("ratio", 0.5, lo=0.0, hi=1.0)
url_state("on", False)
url_state("mode", "b", choices=["a", "b", "c"])
url_state("picks", ["x"], choices=["x", "y", "z"])
url_state("prompt", "hello")
st.slider("n", 1, 10, key="n")
st.slider("ratio", 0.0, 1.0, step=0.05, key="ratio")
st.checkbox("on", key="on")
st.selectbox("mode", ["a", "b", "c"], key="mode")
st.multiselect("picks", ["x", "y", "z"], key="picks")
st.text_input("prompt", key="prompt")
push_url("n", "ratio", "on", "mode", "picks", "prompt")
st.write("n squared:", st.session_state["n"] ** 2)
'''
DEFAULTS = {"n": 4, "ratio": 0.5, "on": False, "mode": "b", "picks": ["x"], "prompt": "hello"}
WIDGET_TYPES = ("slider", "select_slider", "selectbox", "number_input", "multiselect", "checkbox", "toggle",
                "radio", "text_input", "text_area", "color_picker", "date_input", "time_input")


def synthetic(query: dict | None = None) -> AppTest:
    at = AppTest.from_string(SYNTHETIC, default_timeout=30)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run()


def widget_by_key(at: AppTest, key: str):
    for kind in WIDGET_TYPES:
        for w in getattr(at, kind):
            if w.key == key:
                return w
    return None


def values(at: AppTest, keys) -> dict:
    return {k: widget_by_key(at, k).value for k in keys}


def ignored_notices(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if w.value.startswith("Ignored `")]


def test_no_query_gives_defaults_and_writes_the_url():
    at = synthetic()
    assert not at.exception and not ignored_notices(at)
    assert values(at, DEFAULTS) == DEFAULTS
    assert at.query_params["n"] == "4" and at.query_params["picks"] == "x" and at.query_params["on"] == "False"


def test_valid_query_values_reach_every_widget_type():
    at = synthetic({"n": "9", "ratio": "0.25", "on": "true", "mode": "c", "picks": "y,z", "prompt": "héllo 🙂"})
    assert not at.exception and not ignored_notices(at)
    assert values(at, DEFAULTS) == {"n": 9, "ratio": 0.25, "on": True, "mode": "c", "picks": ["y", "z"],
                                    "prompt": "héllo 🙂"}
    assert any("81" in m.value for m in at.markdown)  # the page used the value from the link


@pytest.mark.parametrize("key, raw, why", [
    ("n", "11", "must be <= 10"),
    ("n", "0", "must be >= 1"),
    ("n", "4.5", "expected a whole number"),
    ("n", "", "expected a whole number"),
    ("ratio", "nan", "expected a finite number"),
    ("ratio", "inf", "expected a finite number"),
    ("ratio", "-0.1", "must be >= 0.0"),
    ("on", "maybe", "expected true or false"),
    ("mode", "d", "must be one of a, b, c"),
    ("picks", "x,w", "must be one of x, y, z"),
])
def test_invalid_query_value_falls_back_to_the_default_with_a_notice(key, raw, why):
    at = synthetic({key: raw})
    assert not at.exception, [e.message for e in at.exception]
    assert widget_by_key(at, key).value == DEFAULTS[key]
    notices = ignored_notices(at)
    assert len(notices) == 1 and notices[0].startswith(f"Ignored `{key}=") and why in notices[0], notices
    assert f"using the default {DEFAULTS[key]!r}" in notices[0]
    assert at.query_params[key] == (",".join(DEFAULTS[key]) if key == "picks" else str(DEFAULTS[key]))


def test_hostile_query_values_are_truncated_and_harmless():
    at = synthetic({"n": "9" * 100_000, "mode": "\x00\x1b[31m🙂" * 1000, "prompt": "\x00\u202e" + "A" * 100_000})
    assert not at.exception
    assert values(at, ["n", "mode"]) == {"n": 4, "mode": "b"}
    assert all(len(w) < 300 for w in ignored_notices(at)) and len(ignored_notices(at)) == 2
    assert widget_by_key(at, "prompt").value.startswith("\x00\u202eAAA")  # free text is free: the page validates it


def test_the_url_seeds_once_then_the_visitor_is_in_charge():
    at = synthetic({"n": "9"})
    at.slider(key="n").set_value(2).run()
    assert at.slider(key="n").value == 2 and at.query_params["n"] == "2"  # not reset to 9 from the URL
    at.run()
    assert at.slider(key="n").value == 2


def test_round_trip_of_the_synthetic_page():
    at = synthetic()
    at.slider(key="n").set_value(7)
    at.slider(key="ratio").set_value(0.85)
    at.checkbox(key="on").check()
    at.selectbox(key="mode").set_value("a")
    at.multiselect(key="picks").set_value(["z", "x"])
    at.text_input(key="prompt").input("a, b & c?")
    at.run()
    reopened = synthetic(dict(at.query_params))
    assert values(reopened, DEFAULTS) == values(at, DEFAULTS) == {
        "n": 7, "ratio": 0.85, "on": True, "mode": "a", "picks": ["z", "x"], "prompt": "a, b & c?"}


# ---------------------------------------------------------------------------------- 2. the real pages
def pushed_keys(page: str) -> set[str]:
    """Keys a page mirrors into the URL: the string arguments of its push_url(...) calls."""
    tree = ast.parse((ROOT / page).read_text())
    return {a.value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "push_url"
            for a in node.args if isinstance(a, ast.Constant)}


def url_keys(page: str) -> dict[str, dict]:
    """url_state(key, default, ...) calls in a page's source: key -> {"default", "constrained"}."""
    tree = ast.parse((ROOT / page).read_text())
    found = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "url_state"
                and node.args and isinstance(node.args[0], ast.Constant)):
            try:
                default = ast.literal_eval(node.args[1]) if len(node.args) > 1 else None
            except ValueError:
                default = None  # computed at run time
            kwargs = {k.arg for k in node.keywords}
            found[node.args[0].value] = {
                "default": default,
                "constrained": bool(kwargs & {"choices", "lo", "hi"})
                or isinstance(default, (bool, int, float)),
            }
    return found


def _identity_formatted(w, options) -> list:
    """Options whose display text is the value itself (so the option string *is* the value)."""
    out = []
    for o in options:
        try:
            if str(w.format_func(o)) == o:
                out.append(o)
        except Exception:  # noqa: BLE001 - a format_func that needs a real value: skip the option
            pass
    return out


def one_step(w):
    """A different, valid value for widget `w` (one step from its current value), or None if unknown."""
    v = w.value
    if w.type == "slider":
        if isinstance(v, (list, tuple)):
            return None
        step = w.step or 1
        return v + step if v + step <= w.max else v - step
    if w.type == "number_input":
        if v is None:
            return None
        step = w.step or 1
        hi = w.max if w.max is not None else math.inf
        return v + step if v + step <= hi else v - step
    if w.type in ("selectbox", "radio"):
        options = [o for o in _identity_formatted(w, w.options) if o != v]
        if not options and all(isinstance(o, str) and o.lstrip("-").isdigit() for o in w.options):
            options = [int(o) for o in w.options if int(o) != v]
        return options[0] if options else None
    if w.type == "select_slider":
        if isinstance(v, (list, tuple)):
            return None
        i = w.options.index(str(w.format_func(v)))
        j = i + 1 if i + 1 < len(w.options) else i - 1
        target = w.options[j]
        for candidate in (target, _num(target), j):  # j: options that are positions, shown through a format_func
            try:
                if candidate is not None and str(w.format_func(candidate)) == target:
                    return candidate
            except (TypeError, ValueError):  # a format_func written for the option's real type
                continue
        return None
    if w.type == "multiselect":
        if len(v) > 1:
            return list(v[:-1])
        extra = [o for o in _identity_formatted(w, w.options) if o not in v]
        return list(v) + extra[:1] if extra else None
    if w.type in ("checkbox", "toggle"):
        return not v
    if w.type in ("text_input", "text_area"):
        return (v or "") + " more"
    return None


def _num(s: str):
    try:
        return int(s)
    except ValueError:
        try:
            return float(s)
        except ValueError:
            return None


def same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def open_page(page: str, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=TIMEOUT)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    return at.run()


def test_pages_were_found():
    assert len(PAGE_PATHS) >= 9, PAGE_PATHS


@pytest.mark.parametrize("page", PAGE_PATHS)
def test_a_copied_link_reopens_the_same_view(page):
    keys = [k for k in url_keys(page) if k in pushed_keys(page)]  # seeded from and mirrored into the URL
    if not keys:
        pytest.skip(f"{page} does not use url_state + push_url yet")
    at = open_page(page)
    assert not at.exception, [e.message for e in at.exception]
    moved = {}
    for key in keys:
        w = widget_by_key(at, key)
        if w is None or getattr(w, "disabled", False):
            continue  # rendered only in some states (e.g. behind a toggle), or disabled (home's overload input
            # counts only with balancing off): a visitor cannot move it either
        new = one_step(w)
        if new is None:
            continue
        w.set_value(new)
        moved[key] = new
    assert moved, f"{page}: found url_state keys {sorted(keys)} but no widget to move"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    if at.error:  # a combination the page refuses: fall back to one key at a time
        moved = dict(list(moved.items())[:1])
        at = open_page(page)
        widget_by_key(at, next(iter(moved))).set_value(next(iter(moved.values())))
        at.run()
    # the view to reproduce: what the moved widgets show now (a moved widget may hide another one)
    view = {k: w.value for k in moved if (w := widget_by_key(at, k)) is not None}
    assert view, f"{page}: moving {sorted(moved)} hid every one of them"
    link = dict(at.query_params)
    missing = [k for k in view if k not in link]
    assert not missing, f"{page}: push_url() does not mirror {missing} into the URL"
    reopened = open_page(page, link)
    assert not reopened.exception, [e.message for e in reopened.exception]
    assert not ignored_notices(reopened), f"{page}: its own link was refused: {ignored_notices(reopened)}"
    for key, expected in view.items():
        shown = widget_by_key(reopened, key)
        assert shown is not None and same(shown.value, expected), (
            f"{page}: ?{key}={link[key]!r} reopened as {None if shown is None else shown.value!r}, "
            f"expected {expected!r}")


GARBAGE = "\x00not-a-valid-value 🙂"


@pytest.mark.parametrize("page", PAGE_PATHS)
def test_garbage_in_the_link_gives_defaults_and_a_notice(page):
    keys = {k: v for k, v in url_keys(page).items() if v["constrained"]}
    if not keys:
        pytest.skip(f"{page} has no constrained url_state key yet")
    plain = open_page(page)
    defaults = {k: w.value for k in keys if (w := widget_by_key(plain, k)) is not None}
    at = open_page(page, {k: GARBAGE for k in keys})
    assert not at.exception, [e.message for e in at.exception]
    assert at.title, f"{page} did not render with a garbage link"
    for key, default in defaults.items():
        w = widget_by_key(at, key)
        assert w is not None and same(w.value, default), f"{page}: {key} = {None if w is None else w.value!r}"
    notices = " ".join(ignored_notices(at))
    unnoticed = [k for k in defaults if f"Ignored `{k}=" not in notices]
    assert not unnoticed, f"{page}: no notice for the ignored {unnoticed}"
