"""The lab's shipped sweep: stopping rule, LR choice, resume, aggregation and the computed order sentences;
the page renders the shipped data (the delta-rule regressions: test_lab_mixers.py)."""
import json
import os
from pathlib import Path

import pytest

from conftest import ROOT
from k3lite.experiments import lab_sweep as sweep


# ------------------------------------------------------------------------------------------ stopping rule
def test_stopper_solved_plateau_and_min_steps():
    s = sweep.Stopper(solved=0.99, min_gain=0.01, patience=100, min_steps=200)
    assert not s.should_stop(50, 0.2) and not s.should_stop(100, 0.5)
    assert s.should_stop(150, 0.995) and s.reason == "solved"
    p = sweep.Stopper(solved=0.99, min_gain=0.01, patience=100, min_steps=200)
    for step, acc in [(50, 0.3), (100, 0.5), (150, 0.505), (200, 0.506)]:
        stop = p.should_stop(step, acc)
    assert stop and p.reason == "plateau", "best 0.506 vs 0.5 a patience ago: gain < 0.01"
    q = sweep.Stopper(solved=0.99, min_gain=0.01, patience=100, min_steps=200)
    for step, acc in [(50, 0.1), (100, 0.2), (150, 0.3), (200, 0.4)]:
        assert not q.should_stop(step, acc), "still improving: no plateau"
    assert q.reason == "max_steps"
    assert not q.should_stop(210, None), "steps without an evaluation never stop a run"



def test_stopper_never_calls_a_run_at_chance_a_plateau():
    """MQAR learns in a phase transition (chance for hundreds of steps, then a jump): a flat curve at chance is
    not a plateau, so such a run goes on to MAX_STEPS (stop_reason 'max_steps')."""
    s = sweep.Stopper(solved=0.99, min_gain=0.01, patience=100, min_steps=200, escape=0.05)
    for step, acc in [(50, 0.004), (100, 0.004), (150, 0.004), (200, 0.004), (250, 0.004), (300, 0.004)]:
        assert not s.should_stop(step, acc)
    assert s.reason == "max_steps"
    assert not s.should_stop(350, 0.3) and not s.should_stop(400, 0.301), "left chance: still gaining vs step <= 300"
    assert s.should_stop(500, 0.302) and s.reason == "plateau", "no gain of 0.01 over the 100 steps since 400"

# ------------------------------------------------------------------------------------ synthetic records
def _record(task, mixer, T, lr, seed, acc, loss=1.0, reason="plateau", init="lab"):
    """A run record as `run_job` writes it (`init=None`: a KDA run of the lab's earlier private copy)."""
    config = {} if init is None else {"init": init}
    return {"job": {"task": task, "mixer": mixer, "seq_len": T, "lr": lr, "seed": seed}, "config": config,
            "final_eval_acc": acc, "final_eval_loss": loss, "stop_reason": reason}


@pytest.fixture
def small_protocol(monkeypatch):
    monkeypatch.setattr(sweep, "MIXERS", ("linear", "kda"))
    monkeypatch.setattr(sweep, "LRS", (1e-3, 1e-2))
    monkeypatch.setattr(sweep, "SEEDS", (0, 1))
    monkeypatch.setattr(sweep, "SEQ_LENS", {"mqar": (16, 32)})
    monkeypatch.setattr(sweep, "LR_SEQ_LEN", {"mqar": 16})


def test_chosen_lr_waits_for_the_whole_grid_and_takes_the_best(small_protocol):
    runs = [_record("mqar", "kda", 16, 1e-3, 0, 0.40)]
    assert sweep.chosen_lr(runs, "mqar", "kda") is None, "one LR of two finished: no choice yet"
    runs.append(_record("mqar", "kda", 16, 1e-2, 0, 0.90))
    assert sweep.chosen_lr(runs, "mqar", "kda") == 1e-2
    tie = [_record("mqar", "linear", 16, 1e-3, 0, 0.50, loss=0.7), _record("mqar", "linear", 16, 1e-2, 0, 0.501, loss=0.9)]
    assert sweep.chosen_lr(tie, "mqar", "linear") == 1e-3, "accuracies within 0.005: the lower loss wins"


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
    n = sweep.work(tmp_path, ("mqar",), claims, poll_s=0)
    # LR sweep: 2 mixers x 2 LRs at T=16, seed 0; main: 2 mixers x 2 lengths x 2 seeds at the chosen LR,
    # of which (mixer, T=16, seed 0, chosen LR) is the LR-sweep run itself: 4 + 8 - 2 = 10 runs
    assert n == 10 and len(calls) == len(set(calls)) == 10
    assert "mqar_T32_linear_lr0.01_s1" in calls and "mqar_T32_kda_lr0.001_s1" in calls
    assert not any(c.startswith("mqar_T32_linear_lr0.001") for c in calls), "main runs use the chosen LR only"
    assert sweep.work(tmp_path, ("mqar",), tmp_path / "claims2", poll_s=0) == 0, "everything exists: nothing reruns"
    (tmp_path / "mqar_T32_kda_lr0.001_s1.json").unlink()
    calls.clear()
    assert sweep.work(tmp_path, ("mqar",), tmp_path / "claims3", poll_s=0) == 1 and calls == ["mqar_T32_kda_lr0.001_s1"]


def test_runs_of_the_labs_earlier_kda_copy_are_rerun_and_flagged(small_protocol, tmp_path, monkeypatch):
    """One KDA: a KDA run made before the lab trained the library's layer (no `init` in its config) is listed again
    by the sweep, and until then its cell says it is stale."""
    for m, lr, a in [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.95), ("kda", 1e-2, 0.5)]:
        rec = _record("mqar", m, 16, lr, 0, a, init=None if m == "kda" else "lab")
        sweep.Job(**rec["job"]).path(tmp_path).write_text(json.dumps(rec))
    todo, _ = sweep.pending(tmp_path, ("mqar",))
    names = {j.name for j in todo}
    assert {"mqar_T16_kda_lr0.001_s0", "mqar_T16_kda_lr0.01_s0"} <= names
    assert not any(n.startswith("mqar_T16_linear_lr") and n.endswith("_s0") for n in names)
    rows = sweep.aggregate(sweep.load_runs(tmp_path))
    assert [r["mixer"] for r in sweep.stale_rows(rows)] == ["kda"]


def test_a_stale_longer_rerun_never_stands_in_for_a_fresh_run(small_protocol):
    """A seed rerun on the library's KDA that its cap no longer stopped keeps its own number: the longer-cap rerun
    of the earlier KDA copy (still on disk) does not replace it, and the cell is not stale."""
    runs = [_record("mqar", m, 16, lr, s, a) for m, lr, a in
            [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.5), ("kda", 1e-2, 0.9)] for s in (0, 1)]
    old = {**_record("mqar", "kda", 16, 1e-2, 0, 0.3, reason="max_steps", init=None), "steps_done": 10_000}
    old["job"] = {**old["job"], "steps": sweep.LONG_STEPS}
    for r in runs:
        r["steps_done"] = 100
    kda = next(r for r in sweep.aggregate(runs, [old]) if r["mixer"] == "kda" and r["seq_len"] == 16)
    assert kda["accs"] == [0.9, 0.9] and kda["stale"] == 0 and kda["extended"] == 0
    stale_main = [dict(r, config={}) if r["job"]["mixer"] == "kda" else r for r in runs]
    kda = next(r for r in sweep.aggregate(stale_main, [old]) if r["mixer"] == "kda" and r["seq_len"] == 16)
    assert kda["accs"] == [0.3, 0.9], "a stale run's own stale rerun still stands in, flagged"
    assert kda["stale"] == 2


def test_lr_check_stands_in_where_a_lower_rate_did_better(small_protocol):
    """The DeltaNet-on-Palindrome case: the rate chosen at another length left a seed stuck; the learning-rate check
    ran every seed one rate lower at this length and did better, so the cell shows those seeds and that rate."""
    runs = [_record("mqar", m, 16, lr, 0, a) for m, lr, a in
            [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.5), ("kda", 1e-2, 0.9)]]
    runs += [_record("mqar", "kda", 32, 1e-2, s, a, reason="max_steps") for s, a in ((0, 0.9), (1, 0.01))]
    runs += [_record("mqar", "linear", 32, 1e-2, s, 0.8) for s in (0, 1)]
    checks = [_record("mqar", "kda", 32, 1e-3, s, 0.95) for s in (0, 1)]
    row = next(r for r in sweep.aggregate(runs, checks) if r["mixer"] == "kda" and r["seq_len"] == 32)
    assert row["lr"] == 1e-3 and row["lr_checked"] and row["mean"] == pytest.approx(0.95)
    worse = [_record("mqar", "kda", 32, 1e-3, s, 0.3) for s in (0, 1)]
    row = next(r for r in sweep.aggregate(runs, worse) if r["mixer"] == "kda" and r["seq_len"] == 32)
    assert row["lr"] == 1e-2 and not row["lr_checked"]
    one_seed = checks[:1]
    row = next(r for r in sweep.aggregate(runs, one_seed) if r["mixer"] == "kda" and r["seq_len"] == 32)
    assert row["lr"] == 1e-2, "a check with a seed missing does not stand in"


def test_long_reruns_resume_and_run_each_capped_run_once(small_protocol, tmp_path, monkeypatch):
    """`lab_sweep long`: the reruns live in <results>/long and are listed from the main runs in <results>."""
    monkeypatch.setattr(sweep, "LONG_STEPS", 40)
    runs = [_record("mqar", m, 16, lr, 0, a) for m, lr, a in
            [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.95), ("kda", 1e-2, 0.5)]]
    runs += [{**_record("mqar", "kda", 32, 1e-3, s, 0.4, reason="max_steps"), "steps_done": 30} for s in (0, 1)]
    for r in runs:
        sweep.Job(**r["job"]).path(tmp_path).write_text(json.dumps(r))
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
    n = sweep.work(long_dir, ("mqar",), tmp_path / "c1", poll_s=0, todo_fn=sweep.long_pending)
    assert n == 2 and calls == ["mqar_T32_kda_lr0.001_s0_steps40", "mqar_T32_kda_lr0.001_s1_steps40"]
    assert sweep.work(long_dir, ("mqar",), tmp_path / "c2", poll_s=0, todo_fn=sweep.long_pending) == 0, "all done"
    rows = {(r["mixer"], r["seq_len"]): r for r in sweep.aggregate(sweep.load_runs(tmp_path), sweep.load_runs(long_dir))}
    assert rows[("kda", 32)]["extended"] == 2 and rows[("kda", 32)]["mean"] == pytest.approx(0.9)


def test_claims_are_shared_by_separate_commands_and_a_dead_workers_claim_is_taken_over(tmp_path):
    """Two `lab_sweep long` commands started apart each ran the same hour-long run: the claims folder was per
    process. It is now one per results folder; a claim whose worker has exited is taken over, a live one is not."""
    import subprocess
    import sys

    assert sweep.claims_dir_for(tmp_path / "a") == sweep.claims_dir_for(tmp_path / "b" / ".." / "a")
    assert sweep.claims_dir_for(tmp_path / "a") != sweep.claims_dir_for(tmp_path / "long")
    job = sweep.Job("mqar", "kda", 32, 1e-3, 0)
    claims = tmp_path / "claims"
    claims.mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (claims / f"{job.name}.claim").write_text(gone.stdout.strip())  # a worker that has exited
    assert sweep._claim(job, claims), "a dead worker's claim is taken over"
    assert (claims / f"{job.name}.claim").read_text() == str(os.getpid())
    assert not sweep._claim(job, claims), "and now this live process holds it"
    other = sweep.Job("mqar", "kda", 32, 1e-3, 1)
    (claims / f"{other.name}.claim").write_text("1")  # pid 1 is alive
    assert not sweep._claim(other, claims)


def test_a_claimed_job_is_not_taken_twice(tmp_path):
    job = sweep.Job("mqar", "kda", 16, 1e-2, 0)
    assert sweep._claim(job, tmp_path) and not sweep._claim(job, tmp_path)


# ---------------------------------------------------------------------------------- aggregate + sentences
def test_aggregate_mean_spread_and_order_sentence(small_protocol):
    runs = [_record("mqar", m, 16, lr, 0, a) for m, lr, a in
            [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.95), ("kda", 1e-2, 0.5)]]
    runs += [_record("mqar", "linear", 16, 1e-2, 1, 0.7), _record("mqar", "kda", 16, 1e-3, 1, 0.85, reason="max_steps"),
             _record("mqar", "linear", 32, 1e-2, 0, 0.30), _record("mqar", "linear", 32, 1e-2, 1, 0.10),
             _record("mqar", "kda", 32, 1e-3, 0, 0.80), _record("mqar", "kda", 32, 1e-3, 1, 0.60)]
    rows = {(r["mixer"], r["seq_len"]): r for r in sweep.aggregate(runs)}
    assert set(rows) == {("linear", 16), ("linear", 32), ("kda", 16), ("kda", 32)}
    assert rows[("linear", 16)]["accs"] == [0.9, 0.7] and rows[("linear", 16)]["mean"] == pytest.approx(0.8)
    assert rows[("linear", 16)]["std"] == pytest.approx(0.1) and rows[("kda", 16)]["not_plateaued"] == 1
    assert rows[("kda", 32)]["lr"] == 1e-3 and rows[("linear", 32)]["min"] == 0.10
    sentences = sweep.order_sentences(list(rows.values()), "mqar")
    assert sentences[0].startswith("T = 16: KDA 90% ≈ linear 80% (mean over 2 seeds per mixer)"), "within spread"
    assert sentences[1].startswith("T = 32: KDA 70% > linear 20%")
    spread = sweep.spread_sentence(list(rows.values()), "mqar")
    assert "largest drop is linear's (80% → 20%)" in spread and "KDA is best with 70%" in spread


def test_mechanism_sentence_one_idea_at_a_time_and_chance_count():
    def row(m, T, mean, std=0.01, at_chance=0):
        return {"task": "mqar", "mixer": m, "seq_len": T, "lr": 0.01, "n": 3, "mean": mean, "std": std,
                "at_chance": at_chance}
    rows = [row(m, T, a) for T in (128, 256) for m, a in
            [("linear", 0.69), ("mamba2", 0.30), ("deltanet", 0.95), ("gdn", 0.90), ("kda", 0.91, )]]
    rows[-1]["std"] = 0.05  # KDA at T=256: KDA vs GDN (+1 point) is inside its seed spread
    text = sweep.mechanism_sentence(rows, "mqar")
    assert text.startswith("At T = 256, the delta rule (DeltaNet vs linear): +26 points (95% vs 69%)")
    assert "a scalar decay on top of it (GDN vs DeltaNet): -5 points (90% vs 95%)" in text
    assert "(KDA vs GDN): +1 points (91% vs 90%; within seed spread)" in text
    assert sweep.mechanism_sentence([r for r in rows if r["mixer"] != "deltanet"], "mqar") == "", "needs the control"
    assert "still gaining" not in text
    rows[-1]["rising"] = 2  # two KDA runs at T=256 hit the cap while still learning
    assert sweep.mechanism_sentence(rows, "mqar").endswith(
        "(2 of these runs were still gaining at their step cap, so read these differences as learning speed as "
        "much as capacity.)")
    rows[-1]["at_chance"] = 1
    assert "; 1 never left chance, which pulls its mixer's mean down" in sweep.mechanism_sentence(rows, "mqar")
    recs = [{**_record("mqar", "kda", 256, 1e-2, s, 0.004, reason="max_steps"), "best_eval_acc": 0.006} for s in (0, 1)]
    recs += [_record("mqar", "kda", 128, 1e-2, 0, 0.6)] + [_record("mqar", "kda", 128, lr, 0, 0.1) for lr in (3e-3, 3e-2)]
    agg = {r["seq_len"]: r for r in sweep.aggregate(recs) if r["mixer"] == "kda"}
    assert agg[256]["at_chance"] == 2 and agg[128]["at_chance"] == 0


def test_a_run_the_cap_stopped_while_gaining_is_flagged_and_the_sentence_says_so(small_protocol):
    def run(T, seed, accs, reason="max_steps", lr=1e-2):
        steps = [50 * (i + 1) for i in range(len(accs))]
        return {**_record("mqar", "kda", T, lr, seed, accs[-1], reason=reason), "best_eval_acc": max(accs),
                "evals": {"step": steps, "acc": accs, "loss": [1.0] * len(accs)}}
    gaining = run(32, 1, [0.0, 0.1, 0.3, 0.5, 0.6, 0.7])  # +0.4 over the last 200 steps: still learning at the cap
    flat = run(32, 0, [0.0, 0.7, 0.7, 0.7, 0.7, 0.705])  # +0.005 over the last 200 steps: levelled off
    assert sweep.still_rising(gaining) and not sweep.still_rising(flat)
    assert not sweep.still_rising({**gaining, "stop_reason": "plateau"}), "only the cap leaves a run unfinished"
    runs = [run(16, 0, [0.9], "solved"), run(16, 0, [0.2], "solved", lr=1e-3), gaining, flat]
    rows = sweep.aggregate(runs)
    assert [r["rising"] for r in rows if r["seq_len"] == 32] == [1]
    text = sweep.order_sentences(rows, "mqar")[-1]
    assert text.startswith("T = 32: KDA") and "Not final: 1 of these runs (KDA) was still gaining" in text
    assert "Not final" not in sweep.order_sentences(rows, "mqar")[0]


def test_capacity_sentence_names_the_longest_length_and_the_best_delta_rule(small_protocol):
    def row(m, T, mean, capped=0, extended=0):
        return {"task": "mqar", "mixer": m, "seq_len": T, "lr": 0.01, "n": 2, "mean": mean, "std": 0.0,
                "not_plateaued": capped, "extended": extended}
    rows = [row("linear", 16, 0.99), row("kda", 16, 0.99), row("linear", 32, 0.6, 2), row("kda", 32, 0.9, 1)]
    runs = [{**_record("mqar", m, 32, 0.01, s, 0.5), "wall_s": w} for m, s, w in
            [("linear", 0, 60.0), ("linear", 1, 120.0), ("kda", 0, 240.0), ("kda", 1, 300.0)]]
    text = sweep.capacity_sentence(rows, runs)
    assert text.startswith("At T = 32, with the 600-step cap, linear attention reached 60% against KDA 90% (mean "
                           "over 2 seeds)")
    assert "took 3.0 minutes" in text, "median of 60, 120, 240, 300 s"
    assert "cap they reach" not in text, "no reruns given"
    assert sweep.capacity_sentence([r for r in rows if r["mixer"] == "linear"], runs) == ""
    closes = sweep.capacity_sentence(rows, runs, [row("linear", 32, 0.96, extended=2), row("kda", 32, 0.97, extended=1)])
    assert "rerun with a 1500-step cap they reach 96% and 97%: the gap closes, so at this length it was learning speed" \
        in closes
    stays = sweep.capacity_sentence(rows, runs, [row("linear", 32, 0.70, extended=2), row("kda", 32, 0.97, extended=1)])
    assert "the gap stays, so at this length it is room in the state" in stays
    partial = sweep.capacity_sentence(rows, runs, [row("linear", 32, 0.96, extended=1), row("kda", 32, 0.97, extended=1)])
    assert "1500" not in partial, "one of linear's two capped runs has no rerun yet: no verdict on the gap"
    kept = sweep.capacity_sentence(rows, runs, [{**row("linear", 32, 0.96, extended=1), "rerun_shorter": 1},
                                               row("kda", 32, 0.97, extended=1)])
    assert "they reach 96% and 97%" in kept, "a rerun that stopped earlier still counts as the run's rerun"


def test_long_jobs_rerun_every_run_the_cap_stopped_and_the_table_uses_the_rerun(small_protocol, monkeypatch):
    monkeypatch.setattr(sweep, "LONG_STEPS", 40)
    runs = [_record("mqar", m, 16, lr, 0, a) for m, lr, a in
            [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.95), ("kda", 1e-2, 0.5)]]
    runs += [{**_record("mqar", "kda", 32, 1e-3, s, acc, reason="max_steps"), "steps_done": 30}
             for s, acc in ((0, 0.40), (1, 0.50))]
    runs += [{**_record("mqar", "linear", 32, 1e-2, 1, 0.004, reason="max_steps"), "best_eval_acc": 0.004}]
    runs += [_record("mqar", "linear", 16, 1e-2, 1, 0.6, reason="max_steps")]
    runs += [_record("mqar", "linear", 32, 1e-2, 0, 0.7, reason="plateau")]  # levelled off: no rerun
    runs += [_record("mqar", "kda", 32, 1e-2, 0, 0.3, reason="max_steps")]  # not the chosen LR: no rerun
    jobs = sweep.long_jobs(runs)
    assert [(j.mixer, j.seq_len, j.lr, j.seed, j.steps) for j in jobs] == [
        ("kda", 32, 1e-3, 0, 40), ("kda", 32, 1e-3, 1, 40), ("linear", 32, 1e-2, 1, 40), ("linear", 16, 1e-2, 1, 40)], \
        "longest length first, a run that never left chance after those that learned"
    assert jobs[0].name == "mqar_T32_kda_lr0.001_s0_steps40" and "--steps 40 --results assets/lab/long" in jobs[0].command
    assert sweep.Job("mqar", "kda", 32, 1e-3, 0).name == "mqar_T32_kda_lr0.001_s0", "main-sweep names unchanged"
    assert sweep.Job(**runs[5]["job"]) == sweep.Job("mqar", "kda", 32, 1e-3, 1), "files without a cap read as MAX_STEPS"
    assert sweep.Job("mqar", "kda", 32, 1e-3, 1, sweep.MAX_STEPS) == sweep.Job("mqar", "kda", 32, 1e-3, 1), "one spelling"
    assert sweep.long_check(runs, []) == ([], "")
    long_runs = []
    for seed, acc in ((0, 0.8), (1, 0.9)):
        rec = {**_record("mqar", "kda", 32, 1e-3, seed, acc, reason="plateau"), "steps_done": 40}
        rec["job"]["steps"] = 40
        long_runs.append(rec)
    rows, sentence = sweep.long_check(runs, long_runs)
    assert len(rows) == 1 and rows[0]["mixer"] == "kda" and rows[0]["n"] == 2 and rows[0]["seeds"] == [0, 1]
    assert rows[0]["long_mean"] == pytest.approx(0.85) and rows[0]["long_std"] == pytest.approx(0.05)
    assert rows[0]["short_mean"] == pytest.approx(0.45), "the same seeds at the main sweep's cap"
    assert sentence.startswith("2 of the 3 runs the 600-step cap stopped at T = 32 have a 40-step rerun so far. Mean "
                               "over the rerun seeds, 600 → 40 steps: KDA 45% → 85% (2 seeds)"), sentence
    assert "linear" not in sentence, "no ranking over mixers whose rerun seeds differ"
    capped = {(r["mixer"], r["seq_len"]): r for r in sweep.aggregate(runs)}
    final = {(r["mixer"], r["seq_len"]): r for r in sweep.aggregate(runs, long_runs)}
    assert capped[("kda", 32)]["mean"] == pytest.approx(0.45) and capped[("kda", 32)]["extended"] == 0
    assert final[("kda", 32)]["mean"] == pytest.approx(0.85) and final[("kda", 32)]["extended"] == 2, \
        "each seed's rerun stands in for its capped run"
    assert final[("kda", 32)]["not_plateaued"] == 0 and capped[("kda", 32)]["not_plateaued"] == 2
    assert final[("linear", 32)] == capped[("linear", 32)], "no rerun: the capped run stays"
    short = [{**long_runs[0], "steps_done": 20, "final_eval_acc": 0.3}, long_runs[1]]
    kept = {(r["mixer"], r["seq_len"]): r for r in sweep.aggregate(runs, short)}[("kda", 32)]
    assert kept["extended"] == 1 and kept["rerun_shorter"] == 1 and kept["accs"] == [0.40, 0.9], \
        "a rerun that plateaued after fewer steps than the capped run trained does not replace it"
    stray = _record("mqar", "linear", 32, 1e-2, 0, 0.99)
    stray["job"]["steps"] = 40  # `run --steps 40` written next to the main runs by mistake
    assert sweep.aggregate(runs + [stray]) == sweep.aggregate(runs), "a run with another cap is not an extra seed"


def test_lr_check_reruns_a_mixer_with_a_seed_at_chance_one_rate_lower(small_protocol, monkeypatch):
    monkeypatch.setattr(sweep, "LONG_STEPS", 40)
    runs = [_record("mqar", m, 16, lr, 0, a) for m, lr, a in
            [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.5), ("kda", 1e-2, 0.95)]]
    runs += [{**_record("mqar", "kda", 32, 1e-2, 0, 0.004, reason="max_steps"), "best_eval_acc": 0.004, "steps_done": 30},
             _record("mqar", "kda", 32, 1e-2, 1, 0.9), _record("mqar", "linear", 32, 1e-2, 0, 0.6),
             _record("mqar", "linear", 32, 1e-2, 1, 0.7)]
    jobs = sweep.lr_check_jobs(runs, [])
    assert [(j.mixer, j.seq_len, j.lr, j.seed, j.steps) for j in jobs] == [("kda", 32, 1e-3, 0, 40), ("kda", 32, 1e-3, 1, 40)]
    rescued = {**_record("mqar", "kda", 32, 1e-2, 0, 0.85), "best_eval_acc": 0.85, "steps_done": 40}
    rescued["job"]["steps"] = 40
    assert sweep.lr_check_jobs(runs, [rescued]) == [], "its longer-cap rerun left chance: no LR check"
    assert sweep.lr_check(runs, [], "mqar") == ([], "")
    low = []
    for seed, acc in ((0, 0.8), (1, 0.9)):
        rec = {**_record("mqar", "kda", 32, 1e-3, seed, acc), "best_eval_acc": acc}
        rec["job"]["steps"] = 40
        low.append(rec)
    rows, text = sweep.lr_check(runs, low, "mqar")
    assert rows[0]["mean"] == pytest.approx(0.452) and rows[0]["low_mean"] == pytest.approx(0.85)
    assert "KDA 45% at 0.01 (1 of 2 seeds at chance) → 85% at 0.001 (0 of 2 at chance)" in text
    assert text.endswith("the order at this length is KDA 85% > linear 65% — not comparable yet."), text
    assert [r["final_eval_acc"] for r in runs if r["job"]["mixer"] == "kda" and r["job"]["seq_len"] == 32] == [0.004, 0.9]
    agg = {r["mixer"]: r["mean"] for r in sweep.aggregate(runs, low, lr_checked=False) if r["seq_len"] == 32}
    assert agg["kda"] == pytest.approx(0.452), "without the check the chosen LR's runs stand"
    agg = {r["mixer"]: r for r in sweep.aggregate(runs, low) if r["seq_len"] == 32}
    assert agg["kda"]["mean"] == pytest.approx(0.85) and agg["kda"]["lr"] == 1e-3, "a complete, better check stands in"


def test_a_long_run_stores_its_cap_and_its_command_reproduces_it(tmp_path):
    job = sweep.Job("mqar", "linear", 16, 1e-2, 0, steps=20)
    rec = sweep.run_job(job, tmp_path)
    assert rec["config"]["steps"] == 20 and rec["steps_done"] <= 20 and rec["job"]["steps"] == 20
    assert sweep.Job(**rec["job"]) == job and job.path(tmp_path).exists()


@pytest.mark.parametrize("means, verdict", [
    ({"kda": (0.9, 0.01), "gdn": (0.7, 0.01), "mamba2": (0.3, 0.01)}, "matches the report"),
    ({"kda": (0.5, 0.01), "gdn": (0.7, 0.01), "mamba2": (0.3, 0.01)}, "differs from the report (GDN > KDA)"),
    ({"kda": (0.71, 0.05), "gdn": (0.7, 0.05), "mamba2": (0.3, 0.01)}, "matches up to ties within seed spread (KDA ≈ GDN)"),
    ({"kda": (0.9, 0.0)}, "not comparable yet"),
])
def test_report_verdict(means, verdict):
    order = sorted(((m, a, s) for m, (a, s) in means.items()), key=lambda x: -x[1])
    assert sweep.report_verdict(order) == verdict


# ------------------------------------------------------------------------------------------- real runs
def test_run_job_writes_a_reproducible_record(tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "MAX_STEPS", 12)
    monkeypatch.setattr(sweep, "EVAL_EVERY", 6)
    monkeypatch.setattr(sweep, "EVAL_EXAMPLES", 32)
    job = sweep.Job("mqar", "kda", 32, 1e-2, 3)
    a = sweep.run_job(job, tmp_path)
    stored = json.loads(job.path(tmp_path).read_text())
    assert stored["command"] == job.command and stored["job"]["seed"] == 3
    assert stored["config"]["num_pairs"] == 8 and stored["config"]["vocab_size"] == sweep.VOCAB
    assert stored["steps_done"] == 12 and stored["evals"]["step"] == [6, 12] and stored["wall_s"] > 0
    assert sweep.main(["run", "--task", "mqar", "--mixer", "kda", "--seq-len", "32", "--lr", "0.01", "--seed", "3",
                       "--results", str(tmp_path / "again")]) == 0
    again = json.loads(job.path(tmp_path / "again").read_text())
    assert again["final_eval_acc"] == a["final_eval_acc"] and again["evals"] == a["evals"], "the stored command reproduces"


# ------------------------------------------------------------------------------------------------ page
def test_lab_page_shows_the_shipped_sweep_with_computed_sentences():
    from streamlit.testing.v1 import AppTest

    import streamlit as st

    st.cache_data.clear()  # the page rereads the folders every 5 minutes; an earlier test may hold an older read
    rows = sweep.aggregate(sweep.load_runs(), sweep.load_runs(sweep.LONG_DIR))
    if not rows:
        pytest.skip("no finished sweep runs under assets/lab/ yet")
    at = AppTest.from_file(str(ROOT / "views" / "lab.py"), default_timeout=120).run()
    assert not at.exception, [e.message for e in at.exception]
    text = "\n".join(m.value for m in at.markdown)
    for task in {r["task"] for r in rows}:
        for sentence in sweep.order_sentences(rows, task):
            assert sentence in text, f"page does not show the computed sentence {sentence!r}"
    assert len(at.get("plotly_chart")) >= len({r["task"] for r in rows})
    shown = text + "\n".join(c.value for c in at.caption)
    import re
    assert not re.search(r"\{[a-z_]+[\[(.]", shown), "an f-string placeholder reached the page unformatted"


def test_long_check_does_not_say_levelled_off_before_its_cap_for_a_run_that_hit_it(small_protocol, monkeypatch):
    """Issue 28 item 8: "every rerun levelled off or was solved before its cap" while DeltaNet seed 2 ran all
    1,500 steps. A rerun the longer cap stopped (not still gaining) is now named as having run all its steps."""
    monkeypatch.setattr(sweep, "LONG_STEPS", 40)
    runs = [_record("mqar", m, 16, lr, 0, a) for m, lr, a in
            [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.95), ("kda", 1e-2, 0.5)]]
    runs += [{**_record("mqar", "kda", 32, 1e-3, s, acc, reason="max_steps"), "steps_done": 30}
             for s, acc in ((0, 0.40), (1, 0.50))]
    long_runs = []
    for seed, reason in ((0, "plateau"), (1, "max_steps")):
        rec = {**_record("mqar", "kda", 32, 1e-3, seed, 0.8, reason=reason), "steps_done": 40 if seed else 35,
               "evals": {"step": [10, 20, 30, 40], "acc": [0.7, 0.8, 0.8, 0.8], "loss": [1.0] * 4}}
        rec["job"]["steps"] = 40
        long_runs.append(rec)
    assert not any(sweep.still_rising(r) for r in long_runs)
    rows, sentence = sweep.long_check(runs, long_runs)
    assert rows[0]["at_cap"] == 1
    assert "levelled off or was solved before its cap" not in sentence
    assert sentence.endswith(f"; ran all 40 steps, gaining less than {sweep.MIN_GAIN:.0%} accuracy in its last "
                             f"{sweep.PATIENCE}: KDA (1 of 2).")
    rows, sentence = sweep.long_check(runs, [long_runs[0]])
    assert sentence.endswith("; every rerun levelled off or was solved before its cap.")
