"""The serving CLI (k3lite/analytic/serving/__main__.py): its JSON, its frontier subcommand, its refusals."""
import json


from k3lite.analytic.serving.__main__ import main
from k3lite.analytic.serving.frontier import (
    frontier,
)



def test_cli_json(capsys):
    rc = main(["--preset", "kimi-k2", "--gpu", "H200", "--gpus", "16", "--ep", "16", "--weights", "fp8",
               "--context", "8192", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    for key in ("weight_bytes_per_gpu", "free_hbm_bytes_per_gpu", "max_batch_per_gpu", "batch_per_gpu", "step_time_s",
                "tokens_per_s_per_gpu", "usd_per_m_output_tokens"):
        assert key in out, key
    assert out["batch_per_gpu"] == out["max_batch_per_gpu"]  # no --batch: the most that fit
    assert out["inputs"]["preset"] == "kimi-k2" and out["inputs"]["n_gpus"] == 16 and out["inputs"]["context"] == 8192
    assert main(["--preset", "kimi-k2", "--gpu", "H200", "--gpus", "16", "--context", "8192", "--batch", "7",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["batch_per_gpu"] == 7
    assert main(["--preset", "kimi-k3", "--gpu", "H100 SXM", "--gpus", "8", "--weights", "bf16"]) == 2
    assert "does not fit" in capsys.readouterr().err


def test_cli_prints_the_envelope(capsys):
    rc = main(["frontier", "--preset", "deepseek-v3", "--context", "4096", "--gpus", "H800", "b300", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert set(out["by_gpu"]) == {"H800", "B300"} and out["inputs"]["preset"] == "deepseek-v3"
    speeds = [p["tokens_per_s_per_user"] for p in out["envelope"]]
    assert speeds == sorted(speeds) and len(speeds) >= 2
    fr = frontier("deepseek-v3", 4096, ["H800", "B300"])
    assert [p["label"] for p in out["envelope"]] == [p.label for p in fr.envelope]
    assert main(["frontier", "--gpus", "TPU"]) == 2
    assert "GPU must be one of" in capsys.readouterr().err
