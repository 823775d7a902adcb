"""The glossary: every abbreviation in the pages' titles, headers, expander and metric labels
has an entry; the page lists and filters them; every page links to it."""
import ast
import re

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.tour.glossary import GLOSSARY, lookup, search
from views.registry import PAGES, by_url_path

# an abbreviation: a word with a capital after its first letter or a digit (MLA, EP, MoE, NVL72, B300, FLOPs)
ABBREVIATION = re.compile(r"\b[A-Za-z$][A-Za-z]*[A-Z0-9][A-Za-z0-9]*\b")
# names, not abbreviations a reader needs spelled out
NAMES = {"DeepSeek", "V3", "K2", "K3", "NVIDIA", "PyTorch", "README", "Kimi", "KimiDeltaAttention", "k3lite"}
LABELLED = ("title", "header", "subheader", "expander", "metric", "tabs")


def _literal_text(node) -> list[str]:
    """The constant text of a string or f-string argument (the parts a reader sees whatever the numbers)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant)]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [s for e in node.elts for s in _literal_text(e)]
    return []


def headings() -> dict[str, list[str]]:
    """Page file -> the text of its titles, headers, subheaders, expander labels and metric labels."""
    out = {}
    for spec in PAGES:
        tree = ast.parse((ROOT / spec.file).read_text())
        texts = [spec.title]
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and getattr(n.func, "attr", "") in LABELLED and n.args:
                texts += _literal_text(n.args[0])
        out[spec.file] = texts
    return out


def abbreviations(text: str) -> set[str]:
    return {w for w in ABBREVIATION.findall(text) if w not in NAMES}


def test_the_extraction_finds_abbreviations():
    assert abbreviations("KV cache per sequence at 1M, MLA vs KDA on 8 x 8 GPUs, NVL72") >= {"KV", "MLA", "KDA",
                                                                                           "GPUs", "NVL72"}
    assert not abbreviations("what each sublayer reads, and why")
    assert "MLA" in abbreviations(" ".join(headings()["views/hybrid_attention.py"]) + " MLA")


@pytest.mark.parametrize("page", [p.file for p in PAGES])
def test_every_abbreviation_in_a_page_heading_has_an_entry(page):
    known = lookup()
    missing = sorted({a for text in headings()[page] for a in abbreviations(text)
                      if a not in known and a.lower() not in known and a.rstrip("s") not in known})
    assert not missing, f"{page}: add to k3lite/tour/glossary.py: {missing}"


def test_the_issue_list_is_covered():
    known = lookup()
    for term in ("MLA", "EP", "NIC", "HBM", "TPOT", "roofline", "NVFP4", "MXFP4", "GDN", "MQAR", "load CV",
                 "max-violation", "flips", "KDA", "MoE", "RDMA", "NVLink", "AttnRes"):
        assert term in known, term
    assert known["MLA"].expansion == "Multi-head Latent Attention"


def test_entries_are_complete_and_link_real_pages():
    seen = set()
    for t in GLOSSARY:
        assert t.term not in seen, f"{t.term} twice"
        seen.add(t.term)
        assert t.meaning.endswith(".") and len(t.meaning) > 30, t.term
        if t.page is not None:
            by_url_path(t.page)  # KeyError for a page that does not exist


def test_search_filters():
    assert [t.term for t in search("mla")][0] == "MLA"
    assert any(t.term == "TPOT" for t in search("time per output"))
    assert search("") == list(GLOSSARY) and not search("zzzz no such term")


def test_glossary_page_lists_and_filters():
    at = AppTest.from_file(str(ROOT / "views" / "glossary.py"), default_timeout=60).run()
    assert not at.exception, [e.message for e in at.exception]
    text = " ".join(m.value for m in at.markdown)
    assert all(f"**{t.term}**" in text for t in GLOSSARY)
    at.text_input(key="gl_query").set_value("HBM").run()
    text = " ".join(m.value for m in at.markdown)
    assert "high-bandwidth memory" in text and "**MQAR**" not in text
    assert at.query_params["gl_query"] == "HBM"  # a shared link opens the same search
    at.text_input(key="gl_query").set_value("no such term at all").run()
    assert at.info and "No term matches" in at.info[0].value


def test_every_page_links_to_the_glossary():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    for page in ("views/kda.py", "views/serving.py"):
        at.switch_page(page).run()
        assert not at.exception, [e.message for e in at.exception]
        links = [link.proto.label for link in at.sidebar.get("page_link")]
        assert any(label.startswith("Glossary") for label in links), links


def test_hybrid_entry_does_not_promise_exact_recall():
    """It said the global layer keeps exact recall over the whole context; full attention can attend to every
    token, but recall is learned, not guaranteed (the lab's softmax attention scores below 100%)."""
    from k3lite.tour.glossary import GLOSSARY

    entry = next(t for t in GLOSSARY if t.term == "3:1 hybrid")
    assert "exact recall" not in entry.meaning and "every earlier token" in entry.meaning


def test_serving_terms_have_entries_with_their_page():
    """DP attention, MTP / speculative decoding, GQA and EPLB appear on the serving page without an entry."""
    known = lookup()
    for term in ("DP attention", "MTP", "speculative decoding", "GQA", "EPLB"):
        assert term in known and known[term].page == "serving", term
    assert known["DP attention"].expansion == "data-parallel attention"
    assert known["GQA"].expansion == "grouped-query attention"
    assert "DeepSeek" in known["EPLB"].meaning and "speculative decoding" in known["MTP"].meaning


def test_units_entry_states_the_apps_units_rule():
    """It said every unit is decimal ('1 GB = 10^9 B', 'as memory datasheets use them'); the app's rule
    (k3lite/base/units.py) is decimal for bytes that move and rates, binary GiB for HBM capacity, 2^20 tokens for
    '1M' of context and 10^6 tokens for a price per M."""
    from k3lite.base.units import GIB, ONE_M_CONTEXT, PER_M_TOKENS
    entry = lookup()["GB"]
    assert "memory datasheets use them" not in entry.meaning
    for needle in ("1 GB = 10⁹ B", "GiB", f"{GIB:,} B", f"{ONE_M_CONTEXT:,} tokens", f"{PER_M_TOKENS:,} tokens",
                   "HBM capacity is binary"):
        assert needle in entry.meaning, needle
    assert lookup()["GiB"] is entry and lookup()["1M"] is entry


def test_evidence_classes_entry_explains_every_marker():
    from k3lite.base.evidence import KINDS, MARKERS, MEANING
    entry = lookup()["evidence classes"]
    for kind in KINDS:
        assert f"{MARKERS[kind]} {kind}: {MEANING[kind]}" in entry.meaning
        assert lookup()[MARKERS[kind]] is entry  # searching a marker finds it
    assert [t.term for t in search("ᵃ")] == ["evidence classes"]
