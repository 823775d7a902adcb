"""One meaning, one number: the MoE, forward-pass and interconnect pages show the same wire bytes per token.

All three call k3lite.interconnect.wire_bytes_per_token; this renders the pages with AppTest at one shared
configuration (the lite model's layer: 32 experts top-4, latent 64 of d 128, on the reference deployment: one
8-GPU node, DeepEP normal kernels, FP8 dispatch + BF16 combine) and compares what they display.
"""
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.model.presets import get_preset
from k3lite.interconnect import REFERENCE, wire_bytes_per_token
from views.common import interconnect_query
from k3lite.viz.style import fmt_bytes

LITE = get_preset("lite")


def _metric(at, label):
    return next(m.value for m in at.metric if m.label.startswith(label))


@pytest.fixture(scope="module")
def interconnect_page():
    at = AppTest.from_file(str(ROOT / "views" / "interconnect.py"), default_timeout=180)
    at.query_params.update(interconnect_query(REFERENCE, "lite"))  # the settings the forward-pass page links with
    at.run()
    assert not at.exception and not at.error
    return at


def test_moe_page_and_interconnect_page_show_the_same_bytes_per_layer(interconnect_page):
    at = AppTest.from_file(str(ROOT / "views" / "moe.py"), default_timeout=600)
    at.query_params.update(moe_experts=str(LITE.moe.n_routed_experts), moe_top_k=str(LITE.moe.top_k), moe_latent="1/2")
    at.run()
    assert not at.exception and not at.error
    shown = _metric(at, "bytes on the wire per token")
    assert shown == _metric(interconnect_page, "bytes / token / MoE layer")
    assert shown == fmt_bytes(wire_bytes_per_token(LITE).total)  # and it is the function's number


def test_forward_pass_page_and_interconnect_page_show_the_same_bytes_per_forward(interconnect_page):
    at = AppTest.from_file(str(ROOT / "views" / "forward_pass.py"), default_timeout=600).run()
    assert not at.exception and not at.error
    stage = at.select_slider(key="fp_stage")
    stage.set_value(len(stage.options) - 1).run()  # the last stage: every layer done
    shown = _metric(at, "interconnect bytes per token so far")
    n_moe = sum(t == "moe" for t in LITE.ffn_types())
    assert shown == _metric(interconnect_page, "per forward pass")
    assert shown == fmt_bytes(n_moe * wire_bytes_per_token(LITE).total)


def test_forward_pass_links_to_the_interconnect_page_with_its_settings():
    """The help said "the Interconnect page shows the same number for the lite preset", but
    choosing lite there with its default topology errors until the user also picks DGX-B300 / EP 8. The page now
    links with the settings; on its own (no navigation) it names them."""
    at = AppTest.from_file(str(ROOT / "views" / "forward_pass.py"), default_timeout=600).run()
    assert not at.exception and not at.error
    query = interconnect_query(REFERENCE, "lite")
    assert query["ic_topology"] == "dgx-b300" and query["ic_ep"] == str(REFERENCE.ep_size)
    assert any(str(query) in c.value for c in at.caption)
