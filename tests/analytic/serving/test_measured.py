"""The published K3 runs (k3lite/analytic/serving/measured.py): each row's own numbers agree with each other the
way its publisher computes them."""
import pytest

from k3lite.analytic.serving.measured import (
    CHECKPOINTS, FITTED_ROWS, MEASURED, MI350X_K3, SGLANG_K3, VLLM_K3, VLLM_K3_ROWS, sglang_tokens_per_s_per_gpu,
)


# Two speculative runs at concurrency 64 publish less than their mean latency implies: each request keeps its own
# number of tokens per step, a wave lasts as long as its slowest request, and the run's throughput counts that
SLOWEST_REQUEST_ROWS = {"sglang-b300-balanced-nvfp4-dspark-c64", "sglang-mi350x-balanced-mxfp4-dspark-c64"}


@pytest.mark.parametrize("m", SGLANG_K3 + MI350X_K3, ids=lambda m: m.key)
def test_sglang_tokens_per_sec_per_gpu_counts_input_and_output_tokens(m):
    # c x (8,192 + 1,024) over TTFT + 1,023 TPOT, per GPU
    got = sglang_tokens_per_s_per_gpu(m.ttft_s, m.tpot_s, m.concurrency, m.input_len, m.output_len, m.n_gpus)
    if m.key in SLOWEST_REQUEST_ROWS:
        assert m.draft_tokens and m.concurrency == 64 and m.throughput < 0.92 * got
    else:
        assert got == pytest.approx(m.throughput, rel=0.018 if m.gpu == "MI350X" else 0.006)
    output_only = got * m.output_len / (m.input_len + m.output_len)
    assert abs(output_only / m.throughput - 1) > 0.8  # counting output tokens alone is far off


def test_vllm_throughput_is_summed_over_the_node_not_per_request():
    for m in VLLM_K3:
        per_request = 1000 / m.latency_s
        summed = m.concurrency * per_request
        assert summed == pytest.approx(m.output_tokens_per_s, rel=0.1)
        if m.concurrency > 1:
            assert per_request < 0.5 * m.output_tokens_per_s


def test_rows_are_unique_cited_and_only_b300_is_fitted():
    assert len({m.key for m in MEASURED}) == len(MEASURED) == 21
    assert all(len(m.source) > 40 and m.checkpoint in CHECKPOINTS for m in MEASURED)
    assert set(FITTED_ROWS) == set(SGLANG_K3 + VLLM_K3_ROWS) and all(m.gpu == "B300" for m in FITTED_ROWS)
    assert not any(m.fitted for m in MI350X_K3)
    # vLLM's derived TPOT: (latency - TTFT) / 999
    assert VLLM_K3_ROWS[0].tpot_s == pytest.approx((5.30 - 0.3763) / 999)
    # SGLang's balanced cell runs decode context parallelism over its 8 GPUs; DSpark proposes 7 tokens
    assert {m.dcp for m in SGLANG_K3 if "balanced" in m.key} == {8}
    assert {m.draft_tokens for m in SGLANG_K3 if "dspark" in m.key} == {7}
