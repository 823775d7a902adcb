"""One meaning, one number: the MoE, forward-pass and interconnect pages show the same wire bytes per token.

All three call k3lite.interconnect.wire_bytes_per_token; this renders the pages with AppTest at one shared
configuration (the lite model's layer: 32 experts top-4, latent 64 of d 128, on the reference deployment: one
8-GPU node, DeepEP normal kernels, FP8 dispatch + BF16 combine) and compares what they display.
"""
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.config import get_preset
from k3lite.interconnect import REFERENCE, wire_bytes_per_token
from k3lite.viz.style import fmt_bytes

LITE = get_preset("lite")


def _metric(at, label):
    return next(m.value for m in at.metric if m.label.startswith(label))


@pytest.fixture(scope="module")
def interconnect_page():
    at = AppTest.from_file(str(ROOT / "views" / "interconnect.py"), default_timeout=180)
    at.query_params.update(ic_preset="lite", ic_topology="dgx-b300", ic_ep=str(REFERENCE.ep_size),
                           ic_scheme=REFERENCE.scheme, ic_node_limit="0", ic_dispatch=REFERENCE.dispatch,
                           ic_combine=REFERENCE.combine)
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
