"""The length sweep's protocol: the stopping rule, the LR choice, one run's record; and the records and the smaller
protocol the sweep's other tests build on (`_record`, `small_protocol`, `set_protocol`)."""
import pytest

from k3lite.experiments import lab_sweep, lab_sweep_aggregate, lab_sweep_checks, lab_sweep_jobs, lab_sweep_sentences
from k3lite.experiments.lab_sweep_jobs import Job, Stopper, chosen_lr, run_job


# Each module of the sweep binds the protocol's constants it reads (`from lab_sweep_jobs import MIXERS`), so a test's
# smaller protocol is set in every one of them that has the name.
SWEEP_MODULES = (lab_sweep_jobs, lab_sweep_aggregate, lab_sweep_sentences, lab_sweep_checks, lab_sweep)


def set_protocol(monkeypatch, **values):
    for name, value in values.items():
        assert hasattr(lab_sweep_jobs, name), f"{name} is not a constant of the sweep's protocol"
        for module in SWEEP_MODULES:
            if hasattr(module, name):
                monkeypatch.setattr(module, name, value)


def _record(task, mixer, T, lr, seed, acc, loss=1.0, reason="plateau", init="lab"):
    """A run record as `run_job` writes it (`init=None`: a KDA run of the lab's earlier private copy)."""
    config = {} if init is None else {"init": init}
    return {"job": {"task": task, "mixer": mixer, "seq_len": T, "lr": lr, "seed": seed}, "config": config,
            "final_eval_acc": acc, "final_eval_loss": loss, "stop_reason": reason}


@pytest.fixture
def small_protocol(monkeypatch):
    set_protocol(monkeypatch, MIXERS=("linear", "kda"), LRS=(1e-3, 1e-2), SEEDS=(0, 1), SEQ_LENS={"mqar": (16, 32)},
                 LR_SEQ_LEN={"mqar": 16})


# ------------------------------------------------------------------------------------------ stopping rule
def test_stopper_solved_plateau_and_min_steps():
    s = Stopper(solved=0.99, min_gain=0.01, patience=100, min_steps=200)
    assert not s.should_stop(50, 0.2) and not s.should_stop(100, 0.5)
    assert s.should_stop(150, 0.995) and s.reason == "solved"
    p = Stopper(solved=0.99, min_gain=0.01, patience=100, min_steps=200)
    for step, acc in [(50, 0.3), (100, 0.5), (150, 0.505), (200, 0.506)]:
        stop = p.should_stop(step, acc)
    assert stop and p.reason == "plateau", "best 0.506 vs 0.5 a patience ago: gain < 0.01"
    q = Stopper(solved=0.99, min_gain=0.01, patience=100, min_steps=200)
    for step, acc in [(50, 0.1), (100, 0.2), (150, 0.3), (200, 0.4)]:
        assert not q.should_stop(step, acc), "still improving: no plateau"
    assert q.reason == "max_steps"
    assert not q.should_stop(210, None), "steps without an evaluation never stop a run"


def test_stopper_never_calls_a_run_at_chance_a_plateau():
    """MQAR learns in a phase transition (chance for hundreds of steps, then a jump): a flat curve at chance is
    not a plateau, so such a run goes on to MAX_STEPS (stop_reason 'max_steps')."""
    s = Stopper(solved=0.99, min_gain=0.01, patience=100, min_steps=200, escape=0.05)
    for step, acc in [(50, 0.004), (100, 0.004), (150, 0.004), (200, 0.004), (250, 0.004), (300, 0.004)]:
        assert not s.should_stop(step, acc)
    assert s.reason == "max_steps"
    assert not s.should_stop(350, 0.3) and not s.should_stop(400, 0.301), "left chance: still gaining vs step <= 300"
    assert s.should_stop(500, 0.302) and s.reason == "plateau", "no gain of 0.01 over the 100 steps since 400"


# ---------------------------------------------------------------------------------------------- the runs
def test_chosen_lr_waits_for_the_whole_grid_and_takes_the_best(small_protocol):
    runs = [_record("mqar", "kda", 16, 1e-3, 0, 0.40)]
    assert chosen_lr(runs, "mqar", "kda") is None, "one LR of two finished: no choice yet"
    runs.append(_record("mqar", "kda", 16, 1e-2, 0, 0.90))
    assert chosen_lr(runs, "mqar", "kda") == 1e-2
    tie = [_record("mqar", "linear", 16, 1e-3, 0, 0.50, loss=0.7), _record("mqar", "linear", 16, 1e-2, 0, 0.501, loss=0.9)]
    assert chosen_lr(tie, "mqar", "linear") == 1e-3, "accuracies within 0.005: the lower loss wins"


def test_a_long_run_stores_its_cap_and_its_command_reproduces_it(tmp_path):
    job = Job("mqar", "linear", 16, 1e-2, 0, steps=20)
    rec = run_job(job, tmp_path)
    assert rec["config"]["steps"] == 20 and rec["steps_done"] <= 20 and rec["job"]["steps"] == 20
    assert Job(**rec["job"]) == job and job.path(tmp_path).exists()
