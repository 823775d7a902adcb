"""The serving page's claims that depend on the served model: DeepSeek-V3 speculates at its own MTP figures (not
K3-DSpark's 8 drafted / 3.3 kept), and the price verdict reads the served model's own sticker (not always K3's)."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.analytic.cost import PRICES


def _page(**params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "views" / "serving.py"), default_timeout=300)
    at.query_params.update(params)
    return at.run()


def _text(at) -> str:
    return " ".join(c.value for c in at.caption).replace("\\$", "$")


def test_deepseek_v3_speculates_with_its_own_mtp_numbers():
    at = _page(sv_preset="deepseek-v3", sv_spec="true", sv_gpu="H800", sv_gpus="144", sv_ep="144", sv_experts="fp8",
               sv_rest="fp8", sv_context="4096")
    assert not at.exception, [e.message for e in at.exception]
    text = _text(at)
    assert "Speculation (1 drafted, 1.85 kept per step, the MTP layer)" in text
    assert "8 drafted" not in text and "85-90%" in text  # the caption cites DeepSeek's own figures


def test_switching_the_model_resets_speculation_to_its_own_defaults():
    at = _page(sv_spec="true")
    at.selectbox(key="sv_preset").set_value("deepseek-v3").run()
    assert at.session_state.sv_draft == 1 and at.session_state.sv_accept == 1.85
    at.selectbox(key="sv_preset").set_value("kimi-k2").run()
    assert at.session_state.sv_draft == 8 and at.session_state.sv_accept == 3.3


def test_price_verdict_compares_with_the_served_models_sticker():
    at = _page(sv_preset="deepseek-v3", sv_gpu="H800", sv_gpus="144", sv_ep="144", sv_experts="fp8", sv_rest="fp8",
               sv_context="4096")
    assert not at.exception, [e.message for e in at.exception]
    ds = PRICES["deepseek-v3"]
    text = _text(at)
    assert f"on {ds.name}'s own sticker" in text and "on K3's sticker" not in text
    assert "Kimi K3's own sticker" not in text
