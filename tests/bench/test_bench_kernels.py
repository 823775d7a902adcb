"""Smoke tests of the kernel benchmarks' printouts (tiny sizes; speed itself is never asserted)."""
import re

from k3lite.bench import kda as bench_kda, model as bench_model, train as bench_train
from k3lite.model.kda.chunk import chunk_flops


def test_bench_kda_prints_a_roofline_row_per_length(capsys):
    assert bench_kda.main(["--T", "32", "64", "--repeats", "1", "--rec-tokens", "32", "--head-dim", "16",
                           "--clock", "cpu"]) == 0
    out = capsys.readouterr().out
    roof = out.split("roofline")[1]
    rows = [line.split() for line in roof.splitlines() if re.match(r"\s+\d+\s", line)]
    assert [r[0] for r in rows] == ["32", "64"]
    for r in rows:  # chunk, softmax, recurrent, matmul GFLOP/s are positive; the ratio is matmul / chunk
        gf = [float(x) for x in r[1:5]]
        assert min(gf) > 0
        ratio = gf[3] / gf[0]
        rounding = 0.01 + ratio * (0.05 / gf[0] + 0.05 / gf[3])  # GFLOP/s print with one decimal
        assert abs(float(r[5].rstrip("x")) - ratio) <= rounding


def test_chunk_flops_counts_the_matmuls():
    # one chunk, one head, causal halves only: Grams C(C+1)K + C(C-1)K, inverse (C^3 - C)/3, U and W
    # C(C+1)(V + K), carry 6CKV + C(C+1)V
    C, K, V = 4, 3, 2
    assert chunk_flops(1, C, 1, K, V, C) == 20 * K + 12 * K + 20 + 20 * (V + K) + 6 * C * K * V + 20 * V
    assert chunk_flops(1, C, 1, K, V, C, delta=False) == 20 * K + 4 * C * K * V + 20 * V
    # the inverse of a unit lower triangle by forward substitution: sum over columns j of sum over rows i > j
    # of (i - j) multiply-adds
    assert (C**3 - C) // 3 == 2 * sum(i - j for j in range(C) for i in range(j + 1, C))
    dense = 4 * C * C * K + C**3 + 2 * C * C * (V + K) + 6 * C * K * V + 2 * C * C * V  # what the kernel multiplies
    assert chunk_flops(1, C, 1, K, V, C) < dense
    assert chunk_flops(2, 3 * C - 1, 5, K, V, C) == 2 * 5 * 3 * chunk_flops(1, C, 1, K, V, C)  # ragged tail pads


def test_bench_train_prints_each_mixer_and_ratio(capsys):
    assert bench_train.main(["--T", "32", "--batch", "2", "--repeats", "1", "--mixers", "kda", "attention"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.strip().startswith("32 "))
    kda_ms, attn_ms, ratio = (float(x.rstrip("msx")) for x in row.split()[1:4])
    rounding = 0.01 + ratio * (0.5 / kda_ms + 0.5 / attn_ms)  # the times print as whole ms
    assert abs(ratio - kda_ms / attn_ms) <= rounding


def test_bench_model_rows_per_prompt_length(capsys):
    assert bench_model.main(["--seq", "8", "24", "--repeats", "1", "--decode-steps", "0", "--profile"]) == 0
    out = capsys.readouterr().out
    lengths = [line.split()[0] for line in out.splitlines() if re.match(r"\s+\d+\s+\d", line)]
    assert lengths == ["8", "24"]
    # the profile names lite's KDA and MoE sublayers and counts more aten calls for lite than for dense
    assert "mixer (KimiDeltaAttention)" in out and "ffn (LatentMoE)" in out and "attn (CausalSelfAttention)" in out
    calls = [int(c.replace(",", "")) for c in re.findall(r"([\d,]+) aten calls", out)]
    assert len(calls) == 2 and calls[0] > calls[1] > 0
