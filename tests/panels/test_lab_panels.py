"""The lab page's panels (k3lite.panels.lab, lab_sweep): the code moved out of views/lab.py computes what the page
showed before: the state-size headline and its sentences, the live run's configs and loop (callbacks, stop, the
shared store's bound, the time limit), the sweep's tables, and the assumptions block's headline."""
import pytest

from k3lite.base.guards import TimeLimit, deadline
from k3lite.experiments import lab_state_jobs as state
from k3lite.experiments import lab_sweep_jobs as sweep
from k3lite.experiments.lab_state_aggregate import aggregate, ceiling_gap
from k3lite.experiments.lab_state_sentences import ceiling_sentence, rule_sentence
from k3lite.experiments.lab_store import RESULTS_DIR, load_runs
from k3lite.panels import lab, lab_sweep


@pytest.fixture(scope="module")
def state_data():
    runs = load_runs(state.STATE_DIR)
    return runs, aggregate(runs)


@pytest.fixture(scope="module")
def sweep_data():
    return lab_sweep.SweepData.load(load_runs(RESULTS_DIR), load_runs(sweep.LONG_DIR))


def test_state_panel_is_the_headline_with_its_sentences(state_data):
    runs, rows = state_data
    if not rows:
        pytest.skip("no shipped state-size runs")
    panel = lab.state_panel(runs, rows, list(state.MIXERS))
    assert [s.text for s in panel.sentences] == [t for t in (ceiling_sentence(rows), rule_sentence(rows)) if t]
    assert all(s.evidence == (lab.STATE_RUNS,) for s in panel.sentences)
    shown = {t.name for t in panel.figure.data if t.name}
    one = lab.state_panel(runs, rows, [state.MIXERS[0]])
    assert {t.name for t in one.figure.data if t.name} < shown  # fewer mixers, fewer traces
    assert [s.text for s in one.sentences] == [s.text for s in panel.sentences]  # sentences over every mixer
    assert lab.seed_pick(rows) in {(r["mixer"], r["head_dim"]) for r in rows}
    table = lab.state_table(rows)
    assert len(table) == len(rows) and set(lab.STATE_COLUMNS) <= set(table[0])
    notes = lab.state_notes(runs, rows)
    assert notes[-1].startswith("**Why the lab changes the init.**")
    assert f"{len(runs)} runs so far" in lab.state_protocol(runs)


def test_live_configs_follow_the_sweep():
    lrs, configs = lab.live_configs([], "mqar", ["linear", "kda"], 32, 250, 3)
    assert lrs == {"linear": 1e-2, "kda": 1e-2}  # no shipped LR sweep given: the fallback
    cfg = configs["kda"]
    assert (cfg.task, cfg.mixer, cfg.seq_len, cfg.steps, cfg.seed, cfg.eval_every, cfg.eval_examples) == \
           ("mqar", "kda", 32, 250, 3, 25, 128)
    assert lab.run_key(cfg) == lab.run_key(lab.live_configs([], "mqar", ["kda"], 32, 250, 3)[1]["kda"])
    with pytest.raises(ValueError, match="at least one mixer"):
        lab.live_configs([], "mqar", [], 32, 250, 0)
    assert set(lab.default_configs({"linear": 0.01, "kda": 0.01})) == set(lab.LIVE_DEFAULT_MIXERS)


def _tiny(steps=3, seed=0):
    return lab.live_configs([], "mqar", ["linear"], 16, steps, seed)[1]


def test_train_live_reports_stores_and_comes_back_from_the_store():
    store, live, calls = {}, {}, []
    configs = _tiny()
    lab.train_live(configs, store, live, lambda done, text: calls.append((done, text)), lambda: False,
                   deadline(60, "test"))
    run = live["linear"]
    assert run["steps_done"] == 3 and len(run["curve"]["step"]) == 3 and run["evals"]["acc"]
    assert [round(d, 3) for d, _ in calls] == [round(s / 3, 3) for s in (1, 2, 3)]  # steps 1, 2 and the last
    assert calls[-1][1].startswith("linear attention: step 3/3")
    assert store[lab.run_key(configs["linear"])] is run
    again = {}
    lab.train_live(configs, store, again, lambda *a: pytest.fail("a stored run trains again"), lambda: False,
                   deadline(60, "test"))
    assert again["linear"] is run
    assert lab.live_result(again, "mqar").startswith("Held-out accuracy at the end")
    assert lab.live_table(again, {"linear": 0.01})[0]["steps trained"] == 3


def test_train_live_stops_and_keeps_its_time_bound():
    store, live = {}, {}
    lab.train_live(_tiny(50, 1), store, live, lambda *a: None, lambda: True, deadline(60, "test"))
    assert live["linear"]["steps_done"] == 1 and not store  # stopped after its first step: nothing stored
    with pytest.raises(TimeLimit):
        lab.train_live(_tiny(50, 2), {}, {}, lambda *a: None, lambda: False, deadline(1e-9, "training"))


def test_the_store_keeps_at_most_max_live_runs(monkeypatch):
    monkeypatch.setattr(lab, "MAX_LIVE_RUNS", 2)
    store = {("old", i): {} for i in range(2)}
    lab.train_live(_tiny(2, 5), store, {}, lambda *a: None, lambda: False, deadline(60, "test"))
    assert len(store) == 2 and ("old", 0) not in store


def test_sweep_tables_and_notes(sweep_data):
    d = sweep_data
    if not d.rows:
        pytest.skip("no shipped sweep runs")
    tables = lab_sweep.task_tables(d.rows)
    assert [h.split("**")[1] for h, _ in tables] == d.tasks
    for task, (_, cells) in zip(d.tasks, tables):
        assert all(f"T={T} (%)" in c for c in cells for T in sweep.SEQ_LENS[task])
    assert len(lab_sweep.order_lines(d.rows)) == 2 * len(d.tasks)
    assert f"{len(d.runs)} runs in all" in lab_sweep.protocol_caption(d)
    assert lab_sweep.chance_note(d.rows).rstrip().endswith("would move these numbers.")
    for text, cells in lab_sweep.long_tables(d) + lab_sweep.lr_tables(d):
        assert text and cells


def test_the_assumptions_headline_is_the_gap(state_data):
    runs, rows = state_data
    if not rows:
        pytest.skip("no shipped state-size runs")
    assumptions, also = lab.lab_assumptions()
    assert [a.key for a in assumptions] == ["steps_scale"] and dict(also)["state precision"]
    assert ceiling_gap(runs, **{a.key: a.value for a in assumptions}) == ceiling_gap(runs)


def test_residual_lines_come_from_the_results():
    res = [{"seed": 0, "command": "python -m x", "steps": 10, "batch": 4, "seq_len": 64,
            "runs": [{"mode": "standard", "steps": 10, "final_val": {"mean": 1.23456}, "seconds": 2.0}],
            "standard_steps_to_match": {"block": {"reached": True, "ratio": 1.25},
                                        "full": {"reached": False, "note": "not reached"}}}]
    assert lab.residual_rows(res)[0]["validation loss (nats/byte)"] == 1.2346
    assert lab.residual_lines(res) == ["Seed 0: standard residuals needed **1.25x** the steps to match block AttnRes; "
                                       "full AttnRes: not reached"]
    assert "`python -m x`" in lab.residual_caption(res)


def test_the_sweep_tables_learning_rate_is_each_cells_own(sweep_data):
    """A cell the learning-rate check's lower rate stands in for shows that rate, at its length, and the caption
    names the cell: the column once took the first length's rate for every length."""
    assert lab_sweep.lr_text({64: {"lr": 0.03}, 128: {"lr": 0.01, "lr_checked": True}}) == "0.03; 0.01 at T=128"
    assert lab_sweep.lr_text({64: {"lr": 0.01}, 128: {"lr": 0.01}}) == "0.01"
    d = sweep_data
    checked = [r for r in d.rows if r["lr_checked"]]
    if not checked:
        pytest.skip("no cell of the shipped sweep comes from the learning-rate check")
    tables = dict((h.split("**")[1], cells) for h, cells in lab_sweep.task_tables(d.rows))
    for r in checked:
        row = next(c for c in tables[r["task"]] if c["mixer"] == lab_sweep.MIXER_LABELS[r["mixer"]])
        assert f"{r['lr']:g} at T={r['seq_len']}" in row["learning rate"], row
        assert f"{r['task']} T={r['seq_len']} {lab_sweep.short_name(r['mixer'])}" in lab_sweep.protocol_caption(d)
