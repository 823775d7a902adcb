"""The MoE page (views/moe.py) renders at its defaults and its extremes, and bad input is a clear message."""
import pytest

from k3lite.model.nn import glu_curves


PAGE = "views/moe.py"


def _page(root, **state):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(root / PAGE), default_timeout=240)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def test_page_renders_at_default(root):
    at = _page(root)
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.title[0].value == "Stable LatentMoE & routing"
    heads = [h.value for h in at.subheader]
    assert [h[:3] for h in heads] == ["(a)", "(b)", "(c)", "(d)", "(e)", "(f)"]
    situ = next(c.value for c in at.caption if "SiTU-GLU (report Eq. 12" in c.value)  # (f), computed
    glu = glu_curves()
    assert f"never exceeds b1 b2 = {glu.bound:g}" in situ and f"{float(glu.swiglu[180]):,.0f} against" in situ
    md = " ".join(m.value for m in at.markdown).lower()
    assert "grading on a curve" in md
    # quantile balancing is token choice on s - beta; exact-by-construction evenness belongs to expert choice
    assert "token choice" in md and "s − β" in md and "comes out even by construction" not in md
    # panels (a)-(d): 6 charts; (e) the experts one decode step reads; (f) the SiTU-GLU vs SwiGLU curves; the drawn
    # path of one token opens the page
    # and the assumptions block its tornado (its table: the third dataframe); the Try it block's read-the-picture
    # problem draws one more
    assert len(at.get("plotly_chart")) == 11 and len(at.dataframe) == 3
    assert "moe_touched" in [c.key for c in at.get("plotly_chart")]
    captions = " ".join(c.value for c in at.caption)
    assert "trained lite model" in captions
    assert "Every method got 32 updates" in captions  # one budget for all methods (it was 6 for quantile, 30 else)


@pytest.mark.parametrize("state", [
    dict(moe_experts=896, moe_top_k=32, moe_shared=4, moe_latent="1/8", moe_balancing="bias"),
    dict(moe_experts=8, moe_top_k=1, moe_shared=0, moe_latent="1", moe_balancing="aux_loss",
         moe_prompt="naïve café — 東京 🚀", moe_layer=7),
])
def test_page_renders_at_extremes(root, state):
    at = _page(root, **state)
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert len(at.get("plotly_chart")) == 11  # the default's 11: (a)-(d) 6, (e) 1, (f) 1, the path, tornado, Try it
    # what max-violation means at this scale is said in words built from the run (a bare 3.51 at 896 experts,
    # top-16, told a reader nothing)
    reading = [m.value for m in at.markdown if "means the busiest of the" in m.value]
    assert reading and f"busiest of the {state['moe_experts']} experts" in reading[0]


@pytest.mark.parametrize("state, message", [
    (dict(moe_experts=8, moe_top_k=32), "moe.top_k (32) must be <= moe.n_routed_experts (8)"),
    (dict(moe_prompt="x" * 300), "the limit is 256"),
    (dict(moe_prompt=""), "prompt is empty"),
    (dict(moe_prompt="bell\x07"), "control character U+0007"),  # the app's one prompt policy
])
def test_page_invalid_input_is_a_clear_error(root, state, message):
    at = _page(root, **state)
    assert not at.exception, [e.message for e in at.exception]
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
