"""The lab: every mixer trains, the residual variants too, training is seeded and stoppable; the CLI and the page
work. The mixers themselves: test_lab_mixers.py."""
import json

import pytest

from k3lite.experiments.lab import MIXERS, LabConfig, LabModel, build, evaluate, summary_rows, train
from k3lite.experiments.lm_train import steps_to_reach
from k3lite.experiments.train import main
from k3lite.viz.lab import curves_figure, smooth

from conftest import ROOT

TINY = dict(task="mqar", seq_len=16, vocab_size=32, num_pairs=2, d_model=16, n_heads=2, ffn_mult=2, batch_size=16,
            steps=25, lr=1e-2, eval_every=25, eval_examples=32, chunk_size=8)


@pytest.mark.parametrize("mixer", MIXERS)
def test_tiny_run_of_each_mixer_lowers_the_loss(mixer):
    cfg = LabConfig(mixer=mixer, **TINY)
    model, _ = build(cfg)
    before, _ = evaluate(model, cfg)
    result = train(cfg)
    assert result.steps_done == cfg.steps and not result.stopped
    assert result.final_eval_loss < before - 0.3, (before, result.final_eval_loss)
    assert len(result.curve["loss"]) == cfg.steps


@pytest.mark.parametrize("residual", ["full", "block"])
def test_attention_residual_variants_train(residual):
    cfg = LabConfig(mixer="gdn", residual=residual, **TINY)
    model, _ = build(cfg)
    assert len(model.depth_attn) == 2 * cfg.n_layers, "one depth query per sublayer (mixer and FFN)"
    assert len(LabModel(LabConfig(mixer="gdn", residual=residual)).depth_attn) == 2, "no FFN: mixers only"
    before, _ = evaluate(model, cfg)
    assert train(cfg).final_eval_loss < before - 0.3


def test_hybrid_is_kda_then_attention():
    assert LabConfig(mixer="hybrid").layer_mixers() == ["kda", "attention"]
    assert LabConfig(mixer="hybrid", n_layers=4).layer_mixers() == ["kda", "kda", "kda", "attention"]


def test_training_is_deterministic_with_a_seed():
    cfg = LabConfig(mixer="kda", **{**TINY, "steps": 5, "eval_every": 5})
    assert train(cfg).curve == train(cfg).curve
    other = train(LabConfig(mixer="kda", seed=1, **{**TINY, "steps": 5, "eval_every": 5}))
    assert other.curve != train(cfg).curve


@pytest.mark.parametrize("bad", [dict(mixer="rnn"), dict(residual="dense"), dict(d_model=15),
                                 dict(seq_len=8, num_pairs=4), dict(steps=0)])
def test_bad_configs_name_the_constraint(bad):
    with pytest.raises(ValueError):
        LabConfig(**{**TINY, **bad})


def test_cli_writes_valid_json(tmp_path):
    out = tmp_path / "lab.json"
    argv = ["--task", "mqar", "--mixer", "kda,attention", "--seq-len", "16", "--steps", "6", "--num-pairs", "2",
            "--vocab", "32", "--d-model", "16", "--batch-size", "8", "--eval-every", "3", "--eval-examples", "16",
            "--json", str(out), "--quiet"]
    assert main(argv) == 0
    data = json.loads(out.read_text())
    assert data["command"].startswith("python -m k3lite.experiments.train --task mqar")
    assert [r["config"]["mixer"] for r in data["runs"]] == ["kda", "attention"]
    for run in data["runs"]:
        assert run["steps_done"] == 6 and len(run["curve"]["loss"]) == 6
        assert run["evals"]["step"] == [3, 6]
        assert 0.0 <= run["final_eval_acc"] <= 1.0
    rows = summary_rows(data["runs"])
    assert rows[0]["task"] == "mqar" and set(rows[0]["acc"]) == {"kda", "attention"}


def test_cli_rejects_bad_arguments(capsys):
    assert main(["--task", "mqar", "--mixer", "transformer", "--quiet"]) == 2
    assert "mixer must be one of" in capsys.readouterr().err


def test_train_dispatches_task_runs_to_the_lab(tmp_path):
    out = tmp_path / "x.json"
    assert main(["--task", "stack", "--mixer", "linear", "--seq-len", "16", "--steps", "2", "--vocab", "16",
                       "--d-model", "8", "--batch-size", "4", "--eval-examples", "4", "--json", str(out),
                       "--quiet"]) == 0
    assert json.loads(out.read_text())["runs"][0]["config"]["task"] == "stack"


def test_every_training_run_speaks_one_flag_convention(capsys):
    """The lab, the AttnRes experiment and the checkpoint share --steps/--batch-size/--seq-len/... with one
    meaning; bad values are refused before any training (exit 2, the flag named)."""
    from k3lite.experiments.train import lab_parser

    shared = ["--steps", "--batch-size", "--seq-len", "--lr", "--seed", "--eval-every", "--threads"]
    lab_flags = {o for a in lab_parser()._actions for o in a.option_strings}
    assert set(shared) <= lab_flags
    for argv, flag in ((["--task", "attnres", "--batch-size", "0"], "batch-size"),
                       (["--preset", "lite", "--seq-len", "0"], "seq-len"),
                       (["--preset", "lite", "--batch", "0"], "batch-size"),  # the checkpoint's old spelling
                       (["--task", "mqar", "--batch-size", "0", "--quiet"], "batch_size"),
                       (["--preset", "lite", "--threads", "0"], "threads")):
        assert main(argv) == 2, argv
        assert flag in capsys.readouterr().err, argv


def test_one_lr_schedule_for_lab_and_lm():
    """lab.lr_at is nn.warmup_cosine_lr with warmup = max(1, warmup_frac x steps), value for value the formula
    the shipped lab runs used."""
    import math

    from k3lite.experiments.lab import lr_at

    cfg = LabConfig(**{**TINY, "steps": 40, "lr": 0.01})
    warmup = max(1, int(cfg.warmup_frac * cfg.steps))
    for step in range(cfg.steps):
        progress = (step - warmup) / max(1, cfg.steps - warmup)
        ref = (cfg.lr * (step + 1) / warmup if step < warmup else
               cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))))
        assert lr_at(step, cfg) == ref


def test_figures():
    assert smooth([0, 10, 20], window=2) == [0, 5, 15]
    run = {"curve": {"step": [1, 2], "loss": [3.0, 2.0], "acc": [0.1, 0.2]},
           "evals": {"step": [2], "loss": [2.1], "acc": [0.25]}}
    fig = curves_figure({"kda": run, "gdn": run}, "acc", total_steps=2)
    assert len(fig.data) == 4 and max(fig.data[1].y) == pytest.approx(25.0)
    with pytest.raises(ValueError):
        curves_figure({}, "perplexity")


def test_page_trains_live_under_apptest():
    from streamlit.testing.v1 import AppTest

    from k3lite.base.evidence import kind_of

    at = AppTest.from_file(str(ROOT / "views" / "lab.py"), default_timeout=120).run()
    assert not at.exception, [e.message for e in at.exception]
    at.select_slider(key="lab_seq_len").set_value(16)
    at.slider(key="lab_steps").set_value(10)
    at.multiselect(key="lab_mixers").set_value(["kda", "attention"])
    at.run()
    at.button(key="lab_train").click().run()
    assert not at.exception, [e.message for e in at.exception]
    def live_table():  # column names end with their evidence marker (measured here)
        frame = next(d.value for d in at.dataframe if any(str(c).startswith("steps trained") for c in d.value.columns))
        return frame.rename(columns=lambda c: str(c).rsplit(" ", 1)[0] if kind_of(str(c)) else c)
    table = live_table()
    assert list(table["steps trained"]) == [10, 10]
    assert table["held-out accuracy (%)"].between(0, 100).all()
    # a second click with the same settings comes from the cache and shows the same numbers
    at.button(key="lab_train").click().run()
    assert list(live_table()["held-out accuracy (%)"]) == list(table["held-out accuracy (%)"])


def test_page_rejects_empty_mixer_choice():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "views" / "lab.py"), default_timeout=60).run()
    at.multiselect(key="lab_mixers").set_value([]).run()
    assert not at.exception
    assert any("at least one mixer" in e.value for e in at.error)


def test_train_stops_when_the_callback_says_so():
    cfg = LabConfig(mixer="linear", **{**TINY, "steps": 10})
    seen = []
    result = train(cfg, on_step=lambda rec: seen.append(rec.step) or rec.step < 3)
    assert result.stopped and result.steps_done == 3 and seen == [1, 2, 3]
    assert result.evals["step"][-1] == 3, "a stopped run is still evaluated where it stopped"


def test_steps_to_reach_interpolates_and_admits_failure():
    runs = [{"steps": 100, "final_val": {"mean": 2.0}}, {"steps": 200, "final_val": {"mean": 1.0}}]
    assert steps_to_reach(runs, 1.5, 100) == {"steps_needed": 150, "ratio": 1.5, "reached": True}
    assert steps_to_reach(runs, 2.5, 100)["ratio"] == 1.0, "standard already as good: no gain"
    assert steps_to_reach(runs, 0.5, 100)["reached"] is False


@pytest.mark.parametrize("name", ["lab_attnres.json", "lab_attnres_seed1.json"])
def test_shipped_attnres_results_are_consistent(name):
    path = ROOT / "assets" / name
    if not path.exists():
        pytest.skip(f"assets/{name} not generated yet")
    data = json.loads(path.read_text())
    modes = {(r["mode"], r["steps"]) for r in data["runs"]}
    assert {("standard", data["steps"]), ("full", data["steps"]), ("block", data["steps"])} <= modes
    for r in data["runs"]:
        assert r["final_val"]["mean"] < r["init_val"]["mean"] - 1.0, "every run trained"
    assert set(data["standard_steps_to_match"]) == {"full", "block"}


def test_live_train_streams_the_curve_and_states_its_measured_time():
    """The curve must appear in the first seconds (redrawn after steps 1, 2, 5, then every 10th, from the
    training loop), and the time a run took is the run's own measurement, not a typed number ("38 s")."""
    from streamlit.testing.v1 import AppTest

    import streamlit as st
    st.cache_resource.clear()  # no finished runs from an earlier test: the default's time is then unknown
    at = AppTest.from_file(str(ROOT / "views" / "lab.py"), default_timeout=120).run()
    assert not at.exception, [e.message for e in at.exception]
    what = next(c.value for c in at.caption if "What it can show" in c.value)
    assert "has not run on this server" in what and "38 s" not in what
    at.select_slider(key="lab_seq_len").set_value(16)
    at.slider(key="lab_steps").set_value(10)
    at.multiselect(key="lab_mixers").set_value(["linear"])
    at.run()
    before = at.session_state["lab_draws"] if "lab_draws" in at.session_state else 0
    at.button(key="lab_train").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.session_state["lab_draws"] - before >= 4  # steps 1, 2, 5, 10 (and the final view)
    run = at.session_state["lab_live"]["linear"]
    assert run["steps_done"] == 10 and run["seconds"] > 0
    sentence = next(m.value for m in at.markdown if "Held-out accuracy at the end" in m.value)
    assert f"({run['seconds']:.1f} s)" in sentence
