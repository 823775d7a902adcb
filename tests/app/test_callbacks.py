"""Streamlit keeps each widget's metadata (its callback, its format function) for the whole session, one entry per
widget id, and a keyed chart's id changes with its figure. A function written in a page script holds that run's
whole namespace, so a page callback kept every run of the forward pass alive (its trace, its figures): the server's
memory crept for as long as a class clicked. The pages hand Streamlit only functions from modules (views.common)."""
import ast
import gc
import weakref

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.model.trace import Trace
from views.registry import PAGES

HANDED_TO_STREAMLIT = ("on_change", "on_click", "on_select", "format_func")


def _page_functions(tree: ast.Module) -> set[str]:
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _written_here(value: ast.expr, local: set[str]) -> str | None:
    """What makes `value` a function of this page script (a lambda, a function defined in it, or either bound by
    functools.partial), or None."""
    if isinstance(value, ast.Lambda):
        return "a lambda"
    if isinstance(value, ast.Name) and value.id in local:
        return f"{value.id}, defined in the page"
    if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) == "partial":
        for arg in value.args:
            if (why := _written_here(arg, local)) is not None:
                return f"partial of {why}"
    return None


@pytest.mark.parametrize("spec", PAGES, ids=lambda s: s.url_path)
def test_pages_hand_streamlit_no_function_written_in_the_page(spec):
    tree = ast.parse((ROOT / spec.file).read_text())
    local = _page_functions(tree)
    found = [f"line {node.lineno}: {kw.arg}= {why}"
             for node in ast.walk(tree) if isinstance(node, ast.Call)
             for kw in node.keywords if kw.arg in HANDED_TO_STREAMLIT
             if (why := _written_here(kw.value, local)) is not None]
    assert not found, f"{spec.file}: use a module's function (views.common) or a dict's .get: {found}"


def test_the_check_sees_each_kind_of_page_function():
    src = ("def cb(): pass\n"
           "st.button('a', on_click=cb)\n"
           "st.radio('b', [1], format_func=lambda x: x)\n"
           "st.plotly_chart(f, on_select=partial(pick, 'k', partial(cb, 1)))\n"
           "st.selectbox('c', [1], format_func=LABELS.get, on_change=partial(set_state, 'k', 1))\n")
    tree = ast.parse(src)
    local = _page_functions(tree)
    kinds = [_written_here(kw.value, local) for node in ast.walk(tree) if isinstance(node, ast.Call)
             for kw in node.keywords if kw.arg in HANDED_TO_STREAMLIT]
    assert kinds == ["cb, defined in the page", "a lambda", "partial of partial of cb, defined in the page", None, None]


def test_stepping_through_the_forward_pass_keeps_no_old_run_alive():
    """Each stage reopens the map on a new figure (a new widget id for its selection): with a page-script callback,
    each kept its run's trace alive for the session. After six more stages the first run's trace is gone."""
    at = AppTest.from_file(str(ROOT / "views" / "forward_pass.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    gc.collect()
    first = [weakref.ref(o) for o in gc.get_objects() if type(o) is Trace]
    assert first, "the page's run holds its trace"
    for _ in range(6):
        at.button(key="fp_next").click().run()
        assert not at.exception, [e.message for e in at.exception]
    assert at.session_state.fp_stage == 6
    gc.collect()
    alive = sum(r() is not None for r in first)
    assert alive == 0, f"{alive} of the first run's {len(first)} traces still alive six stages later"
