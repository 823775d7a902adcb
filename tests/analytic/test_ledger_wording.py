"""The ledger's sentences (home's comparison of K3 with DeepSeek-V3 / K2, the five ideas' bytes, where an idea
costs bytes; the interconnect page's "does the wire bind?") take every comparison word from k3lite.base.wording:
a grid over presets x deployments x contexts and batches. And the interconnect intro says what the serving model
computes, not that the wire "often sets the speed"."""
import pytest

from k3lite.analytic import ledger as L
from k3lite.analytic.serving.deployment import Serving
from k3lite.analytic.serving.step import check_fits, decode_step
from k3lite.viz.style import fmt_bytes
from wording_check import wording_problems

DEPLOYS = [L.Deploy(), L.Deploy(topology="multi-node-8x8"), L.Deploy(topology="dgx-b300", ep_size=8),
           L.Deploy(scheme="low-latency", batch=1), L.Deploy(batch=1024, dispatch="bf16", combine="fp8")]
CONTEXTS = (4_096, 131_072, 1_048_576)


def _why(other, context, deploy):
    k3, o = L.ledger("kimi-k3", context, deploy=deploy), L.ledger(other, context, deploy=deploy)
    return L.why_more_bytes(k3, o, L.token_work("kimi-k3", context), L.token_work(other, context), fmt_bytes)


def test_why_more_bytes_words_follow_the_numbers():
    grid = [dict(other=o, context=c, deploy=d) for o in ("deepseek-v3", "kimi-k2") for c in CONTEXTS for d in DEPLOYS]
    assert wording_problems(_why, grid) == []


def test_at_128k_k3_is_said_to_do_less_work_than_deepseek():
    text = _why("deepseek-v3", 131_072, L.Deploy())
    w3, wds = L.token_work("kimi-k3", 131_072).total, L.token_work("deepseek-v3", 131_072).total
    assert w3 < wds and f"({wds / w3:.2f}x less work)" in text


def test_idea_and_cost_sentences_words_follow_the_numbers():
    grid = [dict(context=c, deploy=d) for c in CONTEXTS for d in DEPLOYS]
    assert wording_problems(lambda context, deploy: L.idea_bytes(context, fmt_bytes, deploy=deploy), grid) == []
    assert wording_problems(lambda context, deploy: L.cost_words(context, deploy, fmt_bytes) or "every idea saves",
                            grid) == []
    assert "more than the" in L.cost_words(131_072, L.Deploy(batch=1), fmt_bytes)


@pytest.mark.parametrize("preset", ["kimi-k3", "kimi-k2", "deepseek-v3"])
def test_wire_or_hbm_words_follow_the_numbers(preset):
    grid = [dict(preset=preset, gpu=g, ep=e) for g, e in (("GB300 NVL72", 64), ("B200", 64), ("B300", 16))]
    assert wording_problems(L.wire_or_hbm, grid) == []


def test_interconnect_intro_says_what_the_serving_model_computes():
    """The intro said "That traffic, not the matmuls, often sets the speed of a big MoE"; by the app's own serving
    model the default decode step is HBM-bound with the wire a few percent of it, and a handful of the frontier's
    points are wire-bound. The page now prints those numbers."""
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT

    s = Serving("kimi-k3", *L.SERVING_DEFAULT[:1], L.SERVING_DEFAULT[1], L.SERVING_DEFAULT[1],
                context=L.SERVING_DEFAULT[2])
    step = decode_step(s, check_fits(s).max_batch_per_gpu)
    text = L.wire_or_hbm()
    assert step.bound == "HBM" and "the step is HBM-bound" in text
    assert f"{step.hbm_s * 1e3:.3g} ms" in text and f"{step.wire_s * 1e3:.3g} ms" in text
    at = AppTest.from_file(str(ROOT / "views" / "interconnect.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    shown = " ".join([m.value for m in at.markdown] + [c.value for c in at.caption])
    assert "often sets the speed" not in shown
    assert text in shown
