"""The interconnect page's training view: one training step's traffic per token, every number with its evidence."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from test_evidence import unlabelled

from k3lite.analytic.training import training_sentence


def _page(query: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / "views" / "interconnect.py"), default_timeout=240)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def test_training_view_shows_the_step_with_evidence_and_its_assumptions():
    at = _page({"ic_mode": "training", "ic_t_layout": "deepseek-v3", "ic_t_micro": "64"})
    assert not at.exception, [e.message for e in at.exception]
    text = " ".join(c.value for c in at.caption)
    assert training_sentence("deepseek-v3", "dualpipe", 64) in text
    assert unlabelled(at) == []
    assert any(e.label.startswith("What this page assumes") for e in at.expander)
    assert not any(e.label.startswith("Measure it") for e in at.subheader)  # the inference-only panel is gone


def test_inference_is_the_default_and_a_bad_mode_falls_back():
    at = _page({"ic_mode": "teaching"})
    assert not at.exception and at.session_state.ic_mode == "inference"
    assert any("Ignored `ic_mode=teaching`" in w.value for w in at.warning)


def test_a_micro_batch_count_outside_the_slider_falls_back_with_a_notice():
    at = _page({"ic_mode": "training", "ic_t_micro": "1000"})
    assert not at.exception, [e.message for e in at.exception]
    assert at.session_state.ic_t_micro == 120 and any("ic_t_micro" in w.value for w in at.warning)
