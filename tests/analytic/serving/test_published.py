"""The multi-node published deployments as predictions (published.validate / validate_prefill): each predicted value
comes from the predictor with the shipped efficiencies (not refitted, not typed), and its error is reported beside
the bound, whatever its size."""
import math

import pytest

from k3lite.analytic.serving.published import (
    PUBLISHED, PUBLISHED_PREFILL, predicted_decode, validate, validate_prefill,
)
from k3lite.analytic.serving.fit import FITTED
from k3lite.analytic.serving.predict import as_step, prefill_forward_s, terms
from k3lite.analytic.serving.step import prefill_step

KEYS_THE_PANELS_READ = ("deployment", "short", "model / measured", "measured tokens/s / GPU", "model tokens/s / GPU",
                        "batch / GPU", "context", "model bound by", "source")


def test_every_decode_deployment_is_predicted_with_its_error():
    rows = {r["deployment"]: r for r in validate()}
    assert len(rows) == len(PUBLISHED) >= 3
    for p in PUBLISHED:
        r = rows[p.label]
        assert all(k in r for k in KEYS_THE_PANELS_READ)  # today's keys stay
        expected = as_step(terms(p.serving.with_(spec=p.spec)), FITTED.efficiency, p.batch_per_gpu)
        assert r["predicted tokens/s / GPU"] == pytest.approx(expected.tokens_per_s_per_gpu)
        assert r["predicted error"] == pytest.approx(expected.tokens_per_s_per_gpu / p.measured_tokens_per_s_per_gpu - 1)
        assert math.isfinite(r["predicted error"])  # reported, whatever its size
        assert r["predicted tokens/s / GPU"] <= r["model tokens/s / GPU"] * 1.001  # the prediction stays under the bound
        assert r["EP across the NIC"] and r["expert-call latency per step (ms)"] > 0  # all three span NVLink domains
        assert r["speculation"] and "FITTED" in r["efficiencies"]


def test_deepseeks_service_is_predicted_with_its_mtp_and_without():
    p = next(p for p in PUBLISHED if p.serving.name == "deepseek-v3" and p.serving.gpu == "H800")
    assert p.spec is not None and p.spec.drafter == "mtp" and "assumed" in p.spec_source
    r = next(r for r in validate() if r["deployment"] == p.label)
    assert r["predicted tokens/s / GPU"] == pytest.approx(predicted_decode(p).tokens_per_s_per_gpu)
    assert r["predicted tokens/s / GPU without speculation"] == pytest.approx(
        predicted_decode(p._replace(spec=None)).tokens_per_s_per_gpu)
    assert r["measured tokens/s / user"] == 21.0  # "20-22 tokens per second", the middle
    assert p.measured_tokens_per_s_per_gpu == 14_800 / 8  # per node over 8 GPUs, as the overview counts


def test_every_prefill_pool_is_predicted_against_the_tokens_it_computed():
    rows = validate_prefill()
    assert len(rows) == len(PUBLISHED_PREFILL) >= 2
    for p, r in zip(PUBLISHED_PREFILL, rows):
        s = p.serving
        chunk = prefill_step(s).chunk_tokens * s.tp
        predicted = chunk / prefill_forward_s(terms(s), FITTED.efficiency, chunk) / s.tp
        computed = p.measured_input_tokens_per_s_per_gpu * p.computed_share
        assert r["predicted tokens/s / GPU"] == pytest.approx(predicted)
        assert r["predicted error"] == pytest.approx(predicted / computed - 1) and math.isfinite(r["predicted error"])
        assert r["bound tokens/s / GPU"] == pytest.approx(prefill_step(s).tokens_per_s_per_gpu)
        assert r["bound / measured"] >= 1.0  # the bound still lands above what was measured
    deepseek = rows[0]
    # 73.7k per node incl. 56.3% cache hits: the computed tokens are LMSYS's 'DeepSeek Blog (excl. cache hit)' 32,206
    assert deepseek["measured computed tokens/s / GPU"] * 8 == pytest.approx(32_206, rel=1e-3)


def test_the_sentence_is_built_from_the_rows():
    from k3lite.analytic.serving.published import multinode_sentence
    rows, pre = validate(), validate_prefill()
    text = multinode_sentence(rows, pre)
    lo, hi = min(r["predicted error"] for r in rows), max(r["predicted error"] for r in rows)
    assert f"{100 * lo:+.0f}% to {100 * hi:+.0f}%" in text and "Predicted, not fitted" in text
    fake = [{**r, "predicted error": 0.1} for r in rows]
    assert "lands over every" in multinode_sentence(fake, pre)  # the word follows the numbers
