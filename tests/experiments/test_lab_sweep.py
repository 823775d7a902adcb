"""The length sweep's command line and workers: a resumed sweep runs each job once, runs of the earlier KDA copy are
listed again, the `long` reruns resume, and a run's stored command reproduces it."""
import json
from pathlib import Path

import pytest

from k3lite.experiments import lab_sweep as sweep
from k3lite.experiments import lab_sweep_jobs as protocol
from k3lite.experiments.lab_store import load_runs
from k3lite.experiments.lab_sweep import long_pending, main, pending, work
from k3lite.experiments.lab_sweep_aggregate import aggregate, stale_rows
from k3lite.experiments.lab_sweep_jobs import Job, run_job
from test_lab_sweep_jobs import _record, set_protocol, small_protocol  # noqa: F401  (small_protocol: a fixture)


def test_resume_runs_each_job_once_and_only_missing_ones(small_protocol, tmp_path, monkeypatch):
    calls = []
    acc = {("linear", 1e-3): 0.3, ("linear", 1e-2): 0.6, ("kda", 1e-3): 0.8, ("kda", 1e-2): 0.5}

    def fake_run(job, results_dir, quiet=True):
        calls.append(job.name)
        rec = _record(job.task, job.mixer, job.seq_len, job.lr, job.seed, acc[(job.mixer, job.lr)] - 0.01 * job.seq_len / 16)
        job.path(results_dir).write_text(json.dumps(rec))
        return {**rec, "steps_done": 1}

    monkeypatch.setattr(sweep, "run_job", fake_run)
    claims = tmp_path / "claims"
    n = work(tmp_path, ("mqar",), claims, poll_s=0)
    # LR sweep: 2 mixers x 2 LRs at T=16, seed 0; main: 2 mixers x 2 lengths x 2 seeds at the chosen LR,
    # of which (mixer, T=16, seed 0, chosen LR) is the LR-sweep run itself: 4 + 8 - 2 = 10 runs
    assert n == 10 and len(calls) == len(set(calls)) == 10
    assert "mqar_T32_linear_lr0.01_s1" in calls and "mqar_T32_kda_lr0.001_s1" in calls
    assert not any(c.startswith("mqar_T32_linear_lr0.001") for c in calls), "main runs use the chosen LR only"
    assert work(tmp_path, ("mqar",), tmp_path / "claims2", poll_s=0) == 0, "everything exists: nothing reruns"
    (tmp_path / "mqar_T32_kda_lr0.001_s1.json").unlink()
    calls.clear()
    assert work(tmp_path, ("mqar",), tmp_path / "claims3", poll_s=0) == 1 and calls == ["mqar_T32_kda_lr0.001_s1"]


def test_runs_of_the_labs_earlier_kda_copy_are_rerun_and_flagged(small_protocol, tmp_path, monkeypatch):
    """One KDA: a KDA run made before the lab trained the library's layer (no `init` in its config) is listed again
    by the sweep, and until then its cell says it is stale."""
    for m, lr, a in [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.95), ("kda", 1e-2, 0.5)]:
        rec = _record("mqar", m, 16, lr, 0, a, init=None if m == "kda" else "lab")
        Job(**rec["job"]).path(tmp_path).write_text(json.dumps(rec))
    todo, _ = pending(tmp_path, ("mqar",))
    names = {j.name for j in todo}
    assert {"mqar_T16_kda_lr0.001_s0", "mqar_T16_kda_lr0.01_s0"} <= names
    assert not any(n.startswith("mqar_T16_linear_lr") and n.endswith("_s0") for n in names)
    rows = aggregate(load_runs(tmp_path))
    assert [r["mixer"] for r in stale_rows(rows)] == ["kda"]


def test_long_reruns_resume_and_run_each_capped_run_once(small_protocol, tmp_path, monkeypatch):
    """`lab_sweep long`: the reruns live in <results>/long and are listed from the main runs in <results>."""
    set_protocol(monkeypatch, LONG_STEPS=40)
    runs = [_record("mqar", m, 16, lr, 0, a) for m, lr, a in
            [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.95), ("kda", 1e-2, 0.5)]]
    runs += [{**_record("mqar", "kda", 32, 1e-3, s, 0.4, reason="max_steps"), "steps_done": 30} for s in (0, 1)]
    for r in runs:
        Job(**r["job"]).path(tmp_path).write_text(json.dumps(r))
    calls = []

    def fake_run(job, results_dir, quiet=True):
        calls.append(job.name)
        rec = {**_record(job.task, job.mixer, job.seq_len, job.lr, job.seed, 0.9), "steps_done": job.steps}
        rec["job"]["steps"] = job.steps
        Path(results_dir).mkdir(parents=True, exist_ok=True)
        job.path(results_dir).write_text(json.dumps(rec))
        return {**rec, "steps_done": job.steps}

    monkeypatch.setattr(sweep, "run_job", fake_run)
    long_dir = tmp_path / "long"
    n = work(long_dir, ("mqar",), tmp_path / "c1", poll_s=0, todo_fn=long_pending)
    assert n == 2 and calls == ["mqar_T32_kda_lr0.001_s0_steps40", "mqar_T32_kda_lr0.001_s1_steps40"]
    assert work(long_dir, ("mqar",), tmp_path / "c2", poll_s=0, todo_fn=long_pending) == 0, "all done"
    rows = {(r["mixer"], r["seq_len"]): r for r in aggregate(load_runs(tmp_path), load_runs(long_dir))}
    assert rows[("kda", 32)]["extended"] == 2 and rows[("kda", 32)]["mean"] == pytest.approx(0.9)


def test_run_job_writes_a_reproducible_record(tmp_path, monkeypatch):
    set_protocol(monkeypatch, MAX_STEPS=12)
    set_protocol(monkeypatch, EVAL_EVERY=6)
    set_protocol(monkeypatch, EVAL_EXAMPLES=32)
    job = Job("mqar", "kda", 32, 1e-2, 3)
    a = run_job(job, tmp_path)
    stored = json.loads(job.path(tmp_path).read_text())
    assert stored["command"] == job.command and stored["job"]["seed"] == 3
    assert stored["config"]["num_pairs"] == 8 and stored["config"]["vocab_size"] == protocol.VOCAB
    assert stored["steps_done"] == 12 and stored["evals"]["step"] == [6, 12] and stored["wall_s"] > 0
    assert main(["run", "--task", "mqar", "--mixer", "kda", "--seq-len", "32", "--lr", "0.01", "--seed", "3",
                       "--results", str(tmp_path / "again")]) == 0
    again = json.loads(job.path(tmp_path / "again").read_text())
    assert again["final_eval_acc"] == a["final_eval_acc"] and again["evals"] == a["evals"], "the stored command reproduces"
