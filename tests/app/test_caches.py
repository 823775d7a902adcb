"""Every server-wide cache a page declares is bounded, so a class's worth of sessions cannot grow the server
without limit: a Streamlit cache with arguments names max_entries (or a ttl), and one without a
bound takes no arguments (one entry per server)."""
import ast

import pytest

from conftest import ROOT

CACHES = {"cache_data", "cache_resource"}


def _caches(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            call = dec if isinstance(dec, ast.Call) else None
            target = call.func if call else dec
            if isinstance(target, ast.Attribute) and target.attr in CACHES:
                kwargs = {k.arg for k in call.keywords} if call else set()
                n_args = len(node.args.args) + len(node.args.kwonlyargs) + bool(node.args.vararg)
                yield node.name, node.lineno, kwargs, n_args


def unbounded(path) -> list[str]:
    return [f"{path.name}:{line} {name}" for name, line, kwargs, n_args in _caches(path)
            if n_args and not {"max_entries", "ttl"} & kwargs]


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "views").glob("*.py")))
def test_every_page_cache_is_bounded(page):
    assert unbounded(ROOT / "views" / page) == []


def test_the_check_finds_an_unbounded_cache(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import streamlit as st\n@st.cache_data\ndef f(x):\n    return x\n"
                     "@st.cache_data(max_entries=4)\ndef g(x):\n    return x\n@st.cache_resource\ndef h():\n    return {}\n")
    assert unbounded(probe) == ["probe.py:3 f"]  # the def line
