"""The length sweep's follow-ups: the longer cap reruns every run the cap stopped and the table uses the rerun; the
learning-rate check reruns a mixer with a seed at chance one rate lower; what each changed, in words."""
import pytest

from k3lite.experiments import lab_sweep_jobs as protocol
from k3lite.experiments.lab_sweep_aggregate import aggregate, still_rising
from k3lite.experiments.lab_sweep_checks import long_check, long_jobs, lr_check, lr_check_jobs
from k3lite.experiments.lab_sweep_jobs import Job
from test_lab_sweep_jobs import _record, set_protocol, small_protocol  # noqa: F401  (small_protocol: a fixture)


def test_long_jobs_rerun_every_run_the_cap_stopped_and_the_table_uses_the_rerun(small_protocol, monkeypatch):
    set_protocol(monkeypatch, LONG_STEPS=40)
    runs = [_record("mqar", m, 16, lr, 0, a) for m, lr, a in
            [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.95), ("kda", 1e-2, 0.5)]]
    runs += [{**_record("mqar", "kda", 32, 1e-3, s, acc, reason="max_steps"), "steps_done": 30}
             for s, acc in ((0, 0.40), (1, 0.50))]
    runs += [{**_record("mqar", "linear", 32, 1e-2, 1, 0.004, reason="max_steps"), "best_eval_acc": 0.004}]
    runs += [_record("mqar", "linear", 16, 1e-2, 1, 0.6, reason="max_steps")]
    runs += [_record("mqar", "linear", 32, 1e-2, 0, 0.7, reason="plateau")]  # levelled off: no rerun
    runs += [_record("mqar", "kda", 32, 1e-2, 0, 0.3, reason="max_steps")]  # not the chosen LR: no rerun
    jobs = long_jobs(runs)
    assert [(j.mixer, j.seq_len, j.lr, j.seed, j.steps) for j in jobs] == [
        ("kda", 32, 1e-3, 0, 40), ("kda", 32, 1e-3, 1, 40), ("linear", 32, 1e-2, 1, 40), ("linear", 16, 1e-2, 1, 40)], \
        "longest length first, a run that never left chance after those that learned"
    assert jobs[0].name == "mqar_T32_kda_lr0.001_s0_steps40" and "--steps 40 --results assets/lab/long" in jobs[0].command
    assert Job("mqar", "kda", 32, 1e-3, 0).name == "mqar_T32_kda_lr0.001_s0", "main-sweep names unchanged"
    assert Job(**runs[5]["job"]) == Job("mqar", "kda", 32, 1e-3, 1), "files without a cap read as MAX_STEPS"
    assert Job("mqar", "kda", 32, 1e-3, 1, protocol.MAX_STEPS) == Job("mqar", "kda", 32, 1e-3, 1), "one spelling"
    assert long_check(runs, []) == ([], "")
    long_runs = []
    for seed, acc in ((0, 0.8), (1, 0.9)):
        rec = {**_record("mqar", "kda", 32, 1e-3, seed, acc, reason="plateau"), "steps_done": 40}
        rec["job"]["steps"] = 40
        long_runs.append(rec)
    rows, sentence = long_check(runs, long_runs)
    assert len(rows) == 1 and rows[0]["mixer"] == "kda" and rows[0]["n"] == 2 and rows[0]["seeds"] == [0, 1]
    assert rows[0]["long_mean"] == pytest.approx(0.85) and rows[0]["long_std"] == pytest.approx(0.05)
    assert rows[0]["short_mean"] == pytest.approx(0.45), "the same seeds at the main sweep's cap"
    assert sentence.startswith("2 of the 3 runs the 600-step cap stopped at T = 32 have a 40-step rerun so far. Mean "
                               "over the rerun seeds, 600 → 40 steps: KDA 45% → 85% (2 seeds)"), sentence
    assert "linear" not in sentence, "no ranking over mixers whose rerun seeds differ"
    capped = {(r["mixer"], r["seq_len"]): r for r in aggregate(runs)}
    final = {(r["mixer"], r["seq_len"]): r for r in aggregate(runs, long_runs)}
    assert capped[("kda", 32)]["mean"] == pytest.approx(0.45) and capped[("kda", 32)]["extended"] == 0
    assert final[("kda", 32)]["mean"] == pytest.approx(0.85) and final[("kda", 32)]["extended"] == 2, \
        "each seed's rerun stands in for its capped run"
    assert final[("kda", 32)]["not_plateaued"] == 0 and capped[("kda", 32)]["not_plateaued"] == 2
    assert final[("linear", 32)] == capped[("linear", 32)], "no rerun: the capped run stays"
    short = [{**long_runs[0], "steps_done": 20, "final_eval_acc": 0.3}, long_runs[1]]
    kept = {(r["mixer"], r["seq_len"]): r for r in aggregate(runs, short)}[("kda", 32)]
    assert kept["extended"] == 1 and kept["rerun_shorter"] == 1 and kept["accs"] == [0.40, 0.9], \
        "a rerun that plateaued after fewer steps than the capped run trained does not replace it"
    stray = _record("mqar", "linear", 32, 1e-2, 0, 0.99)
    stray["job"]["steps"] = 40  # `run --steps 40` written next to the main runs by mistake
    assert aggregate(runs + [stray]) == aggregate(runs), "a run with another cap is not an extra seed"


def test_lr_check_reruns_a_mixer_with_a_seed_at_chance_one_rate_lower(small_protocol, monkeypatch):
    set_protocol(monkeypatch, LONG_STEPS=40)
    runs = [_record("mqar", m, 16, lr, 0, a) for m, lr, a in
            [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.5), ("kda", 1e-2, 0.95)]]
    runs += [{**_record("mqar", "kda", 32, 1e-2, 0, 0.004, reason="max_steps"), "best_eval_acc": 0.004, "steps_done": 30},
             _record("mqar", "kda", 32, 1e-2, 1, 0.9), _record("mqar", "linear", 32, 1e-2, 0, 0.6),
             _record("mqar", "linear", 32, 1e-2, 1, 0.7)]
    jobs = lr_check_jobs(runs, [])
    assert [(j.mixer, j.seq_len, j.lr, j.seed, j.steps) for j in jobs] == [("kda", 32, 1e-3, 0, 40), ("kda", 32, 1e-3, 1, 40)]
    rescued = {**_record("mqar", "kda", 32, 1e-2, 0, 0.85), "best_eval_acc": 0.85, "steps_done": 40}
    rescued["job"]["steps"] = 40
    assert lr_check_jobs(runs, [rescued]) == [], "its longer-cap rerun left chance: no LR check"
    assert lr_check(runs, [], "mqar") == ([], "")
    low = []
    for seed, acc in ((0, 0.8), (1, 0.9)):
        rec = {**_record("mqar", "kda", 32, 1e-3, seed, acc), "best_eval_acc": acc}
        rec["job"]["steps"] = 40
        low.append(rec)
    rows, text = lr_check(runs, low, "mqar")
    assert rows[0]["mean"] == pytest.approx(0.452) and rows[0]["low_mean"] == pytest.approx(0.85)
    assert "KDA 45% at 0.01 (1 of 2 seeds at chance) → 85% at 0.001 (0 of 2 at chance)" in text
    assert text.endswith("the order at this length is KDA 85% > linear 65% — not comparable yet."), text
    assert [r["final_eval_acc"] for r in runs if r["job"]["mixer"] == "kda" and r["job"]["seq_len"] == 32] == [0.004, 0.9]
    agg = {r["mixer"]: r["mean"] for r in aggregate(runs, low, lr_checked=False) if r["seq_len"] == 32}
    assert agg["kda"] == pytest.approx(0.452), "without the check the chosen LR's runs stand"
    agg = {r["mixer"]: r for r in aggregate(runs, low) if r["seq_len"] == 32}
    assert agg["kda"]["mean"] == pytest.approx(0.85) and agg["kda"]["lr"] == 1e-3, "a complete, better check stands in"


def test_long_check_does_not_say_levelled_off_before_its_cap_for_a_run_that_hit_it(small_protocol, monkeypatch):
    """The sentence said "every rerun levelled off or was solved before its cap" while DeltaNet seed 2 ran all
    1,500 steps. A rerun the longer cap stopped (not still gaining) is now named as having run all its steps."""
    set_protocol(monkeypatch, LONG_STEPS=40)
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
    assert not any(still_rising(r) for r in long_runs)
    rows, sentence = long_check(runs, long_runs)
    assert rows[0]["at_cap"] == 1
    assert "levelled off or was solved before its cap" not in sentence
    assert sentence.endswith(f"; ran all 40 steps, gaining less than {protocol.MIN_GAIN:.0%} accuracy in its last "
                             f"{protocol.PATIENCE}: KDA (1 of 2).")
    rows, sentence = long_check(runs, [long_runs[0]])
    assert sentence.endswith("; every rerun levelled off or was solved before its cap.")
