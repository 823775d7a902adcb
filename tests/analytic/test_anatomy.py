"""The anatomy's formats: K3 as released (MXFP4 routed experts, bf16 rest) moves a different mix of bytes than an
all-bf16 K3, and the home sentence says which it uses."""
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.analytic.anatomy import RELEASED_K3_PART_FORMATS, anatomy
from k3lite.analytic.memory import precision
from k3lite.model.presets import get_preset


def test_in_formats_scales_only_the_named_parts_weights():
    an = anatomy(get_preset("lite"), context=4096)
    re = an.in_formats({"routed_experts": "mxfp4"})
    scale = precision("mxfp4").bytes_per_param / precision("bf16").bytes_per_param
    for name, part in an.totals().items():
        other = re.part(name)
        want = part.bytes["weights"] * (scale if name == "routed_experts" else 1.0)
        assert other.bytes["weights"] == pytest.approx(want)
        assert other.bytes["cache"] == part.bytes["cache"] and other.params == part.params
    assert re.format_words == "bf16 weights, routed experts in mxfp4" and an.format_words == "bf16 weights"
    with pytest.raises(ValueError, match="unknown parts"):
        an.in_formats({"experts": "fp8"})
    with pytest.raises(ValueError, match="starts from one format"):
        re.in_formats({"routed_experts": "fp8"})


def _home_sentence(at) -> str:
    return next(m.value for m in at.markdown if "of the bytes a decoded token moves" in m.value)


def test_home_share_sentence_uses_k3s_released_formats_and_says_so():
    """The sentence gave routed experts 45.8% of K3's bytes, true only with bf16 experts, and did not say so; K3
    ships MXFP4 experts, and then KDA mixers take the biggest share."""
    an = anatomy(get_preset("kimi-k3"), context=131072).in_formats(RELEASED_K3_PART_FORMATS)
    shares = an.shares()
    top = max(shares, key=lambda k: shares[k][1])
    at = AppTest.from_file(str(ROOT / "views" / "home.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    text = _home_sentence(at)
    assert f"{100 * shares['routed_experts'][1]:.1f}% of the bytes" in text and "routed experts in mxfp4" in text
    assert f"({100 * shares[top][1]:.1f}%)" in text and top == "attention_kda"
    at.selectbox(key="home_preset").set_value("deepseek-v3").run()
    assert "(bf16 weights, batch 1)" in _home_sentence(at) and "mxfp4" not in _home_sentence(at)
