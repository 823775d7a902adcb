"""`python -m k3lite.bench serving-peer` (k3lite/bench/serving_peer.py): each published run is matched to
AIConfigurator's setting or skipped with its reason; with the dev dependency installed, one run is predicted."""
import ast

import pytest

from k3lite.analytic.serving.measured import MEASURED
from k3lite.bench import serving_peer as peer

ROWS = {m.key: m for m in MEASURED}


def test_a_run_is_matched_to_the_recipes_layout_and_batch():
    s = peer.aic_setting(ROWS["sglang-b300-low-latency-mxfp4-nospec-c1"])
    assert (s.system, s.backend, s.tp, s.moe_tp, s.moe_ep, s.nextn, s.batch) == ("b300_sxm", "sglang", 8, 8, 1, 0, 1)
    assert (s.isl, s.osl, s.ctx_tokens, s.moe_quant, s.note) == (8192, 1024, 8192, None, "")  # one prompt a step
    v = peer.aic_setting(ROWS["vllm-b300-tp8-mxfp4-dspark-c16"])
    assert (v.backend, v.nextn, v.batch, v.ctx_tokens) == ("vllm", 8, 16, 16384)  # the chunk caps the prefill step


def test_what_cannot_be_matched_says_why():
    assert "no MI350X system" in peer.aic_setting(ROWS["sglang-mi350x-balanced-mxfp4-dspark-c1"])
    balanced = peer.aic_setting(ROWS["sglang-b300-balanced-mxfp4-nospec-c64"])
    assert "DCP 8 not modelled" in balanced.note
    assert peer.aic_setting(ROWS["sglang-b300-low-latency-nvfp4-nospec-c1"]).moe_quant == "nvfp4"


def test_mape_is_over_the_rows_both_tools_predict():
    def row(key, k, a, scored=True):
        errors = {m: e for m, e in zip(peer.METRICS, (k, k, k))}
        return {"row": key, "ttft_scored": scored, "concurrency": 1, "dspark": False,
                "k3lite": {"errors": errors}, "aic": {"errors": dict.fromkeys(peer.METRICS, a)} if a is not None
                else None}
    rows = [row("sglang-a-c1", 0.1, -0.3), row("sglang-b-c1", -0.2, None), row("vllm-c-c1", 0.3, 0.5, scored=False)]
    m = peer.mape(rows)
    assert m["tpot"] == {"rows": 2, "k3lite": pytest.approx(0.2), "aic": pytest.approx(0.4)}
    assert m["ttft"]["rows"] == 1 and m["ttft"]["aic"] == pytest.approx(0.3)  # vLLM's TTFT is not scored


def test_only_this_bench_imports_aiconfigurator(root):
    """A dev dependency: the app, the library and the other benches never import it."""
    offenders = []
    for path in [root / "app.py", *sorted((root / "k3lite").rglob("*.py")), *sorted((root / "views").rglob("*.py"))]:
        if path == root / "k3lite" / "bench" / "serving_peer.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(root)}:{node.lineno}" for n in names if n.startswith("aiconfigurator")]
    assert offenders == []


def test_aiconfigurator_predicts_one_run():
    pytest.importorskip("aiconfigurator_core", reason="aiconfigurator-core (requirements-dev.txt) is not installed")
    m = ROWS["sglang-b300-low-latency-mxfp4-nospec-c1"]
    p = peer.aic_predict(m, peer.aic_setting(m), None)
    assert isinstance(p, peer.AicPrediction), p
    assert 0 < p.prefill_s <= p.ttft_s and 1 / 3 < p.tpot_s / m.tpot_s < 3 and 1 / 3 < p.prefill_s / m.ttft_s < 3
    nvfp4 = ROWS["sglang-b300-low-latency-nvfp4-nospec-c1"]
    assert "no nvfp4 MoE timing table" in peer.aic_predict(nvfp4, peer.aic_setting(nvfp4), None)


def test_one_fitted_constant_removes_a_uniform_offset_and_only_that():
    def row(measured, aic):
        return {"ttft_scored": True, "measured": {"ttft_s": measured, "tpot_s": measured, "throughput": measured},
                "aic": {"ttft_s": aic, "tpot_s": aic, "throughput": aic}}
    uniform = peer.calibrated_mape([row(1.0, 2.0), row(3.0, 6.0), row(0.5, 1.0)])
    assert uniform["tpot"] == pytest.approx(0.0, abs=1e-12)
    two_ways = peer.calibrated_mape([row(1.0, 2.0), row(1.0, 0.5)])  # +100% and -50%: no constant fixes both
    assert two_ways["ttft"] == pytest.approx((3.0 + 0.75) / 2)  # each scaled by the other's ratio: x4 and x1/4
