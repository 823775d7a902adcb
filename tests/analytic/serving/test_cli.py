"""The serving CLI (k3lite/analytic/serving/__main__.py): its JSON, its frontier and predict subcommands, its
refusals."""
import json
import re

import pytest

from k3lite.analytic.hardware import GPUS
from k3lite.analytic.serving import Speculation
from k3lite.analytic.serving.__main__ import main
from k3lite.analytic.serving.fit import FITTED
from k3lite.analytic.serving.measured import SGLANG_K3
from k3lite.analytic.serving.frontier import RELEASED, frontier
from k3lite.analytic.serving.price import Shape



def test_cli_json(capsys):
    rc = main(["--preset", "kimi-k2", "--gpu", "H200", "--gpus", "16", "--ep", "16", "--weights", "fp8",
               "--context", "8192", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    for key in ("weight_bytes_per_gpu", "free_hbm_bytes_per_gpu", "max_batch_per_gpu", "batch_per_gpu", "step_time_s",
                "tokens_per_s_per_gpu", "request_price"):
        assert key in out, key
    assert out["batch_per_gpu"] == out["max_batch_per_gpu"]  # no --batch: the most that fit
    assert out["inputs"]["preset"] == "kimi-k2" and out["inputs"]["n_gpus"] == 16 and out["inputs"]["context"] == 8192
    assert main(["--preset", "kimi-k2", "--gpu", "H200", "--gpus", "16", "--context", "8192", "--batch", "7",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["batch_per_gpu"] == 7
    assert main(["--preset", "kimi-k3", "--gpu", "H100 SXM", "--gpus", "8", "--weights", "bf16"]) == 2
    assert "does not fit" in capsys.readouterr().err


def test_cli_prints_the_envelope(capsys):
    rc = main(["frontier", "--preset", "deepseek-v3", "--input-len", "4096", "--gpus", "H800", "b300", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert set(out["by_gpu"]) == {"H800", "B300"} and out["inputs"]["preset"] == "deepseek-v3"
    speeds = [p["tokens_per_s_per_user"] for p in out["envelope"]]
    assert speeds == sorted(speeds) and len(speeds) >= 2
    fr = frontier("deepseek-v3", Shape(4096, 1024), ["H800", "B300"], [RELEASED], model="predicted")  # the page's
    assert [p["label"] for p in out["envelope"]] == [p.label for p in fr.envelope]
    assert main(["frontier", "--gpus", "TPU"]) == 2
    assert "GPU must be one of" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ predict
def _predict_args(m, acceptance):
    args = ["predict", "--preset", "kimi-k3", "--gpu", m.gpu, "--gpus", str(m.n_gpus), "--tp", str(m.tp),
            "--ep", str(m.n_gpus), "--dcp", str(m.dcp), "--weights", m.checkpoint.lower(),
            "--attention", "fp8" if m.checkpoint == "NVFP4" else "bf16", "--concurrency", str(m.concurrency),
            "--input-len", str(m.input_len), "--output-len", str(m.output_len), "--chunk", str(m.chunk_tokens),
            "--json"]
    if m.draft_tokens:
        args += ["--spec", "dspark", "--draft-tokens", str(m.draft_tokens), "--acceptance", str(acceptance)]
    return args


@pytest.mark.parametrize("m", SGLANG_K3, ids=lambda m: m.key)
def test_predict_at_sglang_settings_is_within_the_targets(m, capsys):
    rc = main(_predict_args(m, FITTED.acceptance["sglang-random"]))
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    for key in ("ttft_s", "tpot_s", "output_tokens_per_s_per_gpu", "total_tokens_per_s_per_gpu", "max_concurrency",
                "binding", "fitted_terms"):
        assert key in out, key
    assert set(out["fitted_terms"]) == {"layer_s", "hbm_fraction", "flops_fraction"}
    assert abs(out["ttft_s"] / m.ttft_s - 1) <= 0.35
    assert abs(out["tpot_s"] / m.tpot_s - 1) <= 0.25
    assert abs(out["total_tokens_per_s_per_gpu"] / m.throughput - 1) <= 0.25  # SGLang counts input + output
    assert out["max_concurrency"] >= m.concurrency and out["bound"]["tpot_s"] < out["tpot_s"]


def test_predict_default_dspark_is_the_speculation_defaults(capsys):
    assert main(["predict", "--spec", "dspark", "--json"]) == 0
    spec = json.loads(capsys.readouterr().out)["inputs"]["spec"]
    d = Speculation()
    assert (spec["draft_tokens"], spec["acceptance"], spec["drafter"]) == (d.draft_tokens, d.acceptance, d.drafter)


@pytest.mark.parametrize("gpu", list(GPUS))
def test_predict_takes_every_gpu_of_the_table(gpu, capsys):
    rc = main(["predict", "--gpu", gpu, "--gpus", "8", "--tp", "8", "--json"])
    captured = capsys.readouterr()
    assert rc in (0, 2)
    if rc == 2:  # refused in one line that names what does not fit
        assert captured.err.count("\n") == 1 and "fit" in captured.err
    else:
        assert json.loads(captured.out)["inputs"]["gpu"] == gpu


@pytest.mark.parametrize("args, match", [
    (["--concurrency", "500"], r"concurrency 500 exceeds the \d+ requests that fit \(KDA state binds\)"),
    (["--gpus", "8", "--tp", "16"], r"tp \(16\) must be <= the 8 GPUs"),
    (["--gpu", "H100"], "no request of 9,216 tokens fits.*the weights bind"),
    (["--dcp", "3"], r"dcp \(3\) must be a positive divisor of tp"),
    (["--spec", "dspark", "--acceptance", "12"], "acceptance"),
])
def test_predict_refusals_exit_2_with_one_line(args, match, capsys):
    assert main(["predict", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(match, err), err
