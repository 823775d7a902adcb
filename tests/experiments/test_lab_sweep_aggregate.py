"""The length sweep's numbers per cell: mean and spread over seeds, the reruns and the learning-rate check standing
in, stale and still-rising runs counted."""
import pytest

from k3lite.experiments import lab_sweep_jobs as protocol
from k3lite.experiments.lab_sweep_aggregate import aggregate, still_rising
from k3lite.experiments.lab_sweep_sentences import order_sentences, spread_sentence
from test_lab_sweep_jobs import _record, set_protocol, small_protocol  # noqa: F401  (small_protocol: a fixture)


def test_a_stale_longer_rerun_never_stands_in_for_a_fresh_run(small_protocol):
    """A seed rerun on the library's KDA that its cap no longer stopped keeps its own number: the longer-cap rerun
    of the earlier KDA copy (still on disk) does not replace it, and the cell is not stale."""
    runs = [_record("mqar", m, 16, lr, s, a) for m, lr, a in
            [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.5), ("kda", 1e-2, 0.9)] for s in (0, 1)]
    old = {**_record("mqar", "kda", 16, 1e-2, 0, 0.3, reason="max_steps", init=None), "steps_done": 10_000}
    old["job"] = {**old["job"], "steps": protocol.LONG_STEPS}
    for r in runs:
        r["steps_done"] = 100
    kda = next(r for r in aggregate(runs, [old]) if r["mixer"] == "kda" and r["seq_len"] == 16)
    assert kda["accs"] == [0.9, 0.9] and kda["stale"] == 0 and kda["extended"] == 0
    stale_main = [dict(r, config={}) if r["job"]["mixer"] == "kda" else r for r in runs]
    kda = next(r for r in aggregate(stale_main, [old]) if r["mixer"] == "kda" and r["seq_len"] == 16)
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
    row = next(r for r in aggregate(runs, checks) if r["mixer"] == "kda" and r["seq_len"] == 32)
    assert row["lr"] == 1e-3 and row["lr_checked"] and row["mean"] == pytest.approx(0.95)
    worse = [_record("mqar", "kda", 32, 1e-3, s, 0.3) for s in (0, 1)]
    row = next(r for r in aggregate(runs, worse) if r["mixer"] == "kda" and r["seq_len"] == 32)
    assert row["lr"] == 1e-2 and not row["lr_checked"]
    one_seed = checks[:1]
    row = next(r for r in aggregate(runs, one_seed) if r["mixer"] == "kda" and r["seq_len"] == 32)
    assert row["lr"] == 1e-2, "a check with a seed missing does not stand in"


def test_aggregate_mean_spread_and_order_sentence(small_protocol):
    runs = [_record("mqar", m, 16, lr, 0, a) for m, lr, a in
            [("linear", 1e-3, 0.2), ("linear", 1e-2, 0.9), ("kda", 1e-3, 0.95), ("kda", 1e-2, 0.5)]]
    runs += [_record("mqar", "linear", 16, 1e-2, 1, 0.7), _record("mqar", "kda", 16, 1e-3, 1, 0.85, reason="max_steps"),
             _record("mqar", "linear", 32, 1e-2, 0, 0.30), _record("mqar", "linear", 32, 1e-2, 1, 0.10),
             _record("mqar", "kda", 32, 1e-3, 0, 0.80), _record("mqar", "kda", 32, 1e-3, 1, 0.60)]
    rows = {(r["mixer"], r["seq_len"]): r for r in aggregate(runs)}
    assert set(rows) == {("linear", 16), ("linear", 32), ("kda", 16), ("kda", 32)}
    assert rows[("linear", 16)]["accs"] == [0.9, 0.7] and rows[("linear", 16)]["mean"] == pytest.approx(0.8)
    assert rows[("linear", 16)]["std"] == pytest.approx(0.1) and rows[("kda", 16)]["not_plateaued"] == 1
    assert rows[("kda", 32)]["lr"] == 1e-3 and rows[("linear", 32)]["min"] == 0.10
    sentences = order_sentences(list(rows.values()), "mqar")
    assert sentences[0].startswith("T = 16: KDA 90% ≈ linear 80% (mean over 2 seeds per mixer)"), "within spread"
    assert sentences[1].startswith("T = 32: KDA 70% > linear 20%")
    spread = spread_sentence(list(rows.values()), "mqar")
    assert "largest drop is linear's (80% → 20%)" in spread and "KDA is best with 70%" in spread


def test_a_run_the_cap_stopped_while_gaining_is_flagged_and_the_sentence_says_so(small_protocol):
    def run(T, seed, accs, reason="max_steps", lr=1e-2):
        steps = [50 * (i + 1) for i in range(len(accs))]
        return {**_record("mqar", "kda", T, lr, seed, accs[-1], reason=reason), "best_eval_acc": max(accs),
                "evals": {"step": steps, "acc": accs, "loss": [1.0] * len(accs)}}
    gaining = run(32, 1, [0.0, 0.1, 0.3, 0.5, 0.6, 0.7])  # +0.4 over the last 200 steps: still learning at the cap
    flat = run(32, 0, [0.0, 0.7, 0.7, 0.7, 0.7, 0.705])  # +0.005 over the last 200 steps: levelled off
    assert still_rising(gaining) and not still_rising(flat)
    assert not still_rising({**gaining, "stop_reason": "plateau"}), "only the cap leaves a run unfinished"
    runs = [run(16, 0, [0.9], "solved"), run(16, 0, [0.2], "solved", lr=1e-3), gaining, flat]
    rows = aggregate(runs)
    assert [r["rising"] for r in rows if r["seq_len"] == 32] == [1]
    text = order_sentences(rows, "mqar")[-1]
    assert text.startswith("T = 32: KDA") and "Not final: 1 of these runs (KDA) was still gaining" in text
    assert "Not final" not in order_sentences(rows, "mqar")[0]
