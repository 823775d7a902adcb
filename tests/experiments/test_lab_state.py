"""The state-size sweep: its bytes, its protocol (LR grid, seeds, order, resumability) and its computed sentences."""
import json

import pytest

import k3lite.experiments.lab_state as state
from k3lite.analytic import memory
from k3lite.experiments.lab import LabModel


def _rec(mixer, K, lr, seed, acc, loss=1.0, init="lab", wall_s=10.0, evals=None, solved=False):
    job = {"mixer": mixer, "head_dim": K, "lr": lr, "seed": seed, "init": init}
    return {"job": job, "final_eval_acc": acc, "final_eval_loss": loss, "wall_s": wall_s, "solved": solved,
            "evals": evals or {"step": [1000, 1500, 2000], "acc": [acc, acc, acc]}, "steps_done": 2000}


def _cells(table):
    """{(mixer, K): [acc per seed]} -> records with seed 0 best at lr 1e-2 (the LR grid) and every seed there."""
    runs = []
    for (mixer, K), accs in table.items():
        runs += [_rec(mixer, K, lr, 0, accs[0] - 0.2, loss=2.0) for lr in state.LRS if lr != 1e-2]
        runs += [_rec(mixer, K, 1e-2, s, a) for s, a in enumerate(accs)]
    return runs


def test_state_bytes_are_the_layers_memory():
    """A recurrent layer's H x K x K fp32 state (the KDA cache's state, no conv tail); attention's KV cache at T."""
    assert state.state_bytes("kda", 16) == 2 * 16 * 16 * 4 == memory.kda_state_bytes(2, 16, conv_size=0)
    assert state.state_bytes("attention", 16) == 2 * 128 * 2 * 16 * 4
    with pytest.raises(ValueError, match="mixer must be one of"):
        state.state_bytes("rnn", 16)


def test_a_job_builds_the_model_whose_state_it_counts():
    job = state.Job("gdn", 8, 1e-2, 0)
    cfg = job.config()
    assert (cfg.seq_len, cfg.num_pairs, cfg.head_dim, cfg.n_heads) == (128, 32, 8, 2) and cfg.steps == state.STEPS
    model = LabModel(cfg)
    assert model.mixers[0].head_dim == 8
    assert job.command == "python -m k3lite.experiments.lab_state run --mixer gdn --head-dim 8 --lr 0.01 --seed 0"
    assert state.Job("kda", 16, 1e-2, 1, "reference").command.endswith("--seed 1 --init reference")


def test_lr_is_chosen_per_mixer_and_size_once_the_grid_is_complete():
    runs = [_rec("kda", 16, 3e-3, 0, 0.5), _rec("kda", 16, 1e-2, 0, 0.7)]
    assert state.chosen_lr(runs, "kda", 16) is None
    runs.append(_rec("kda", 16, 3e-2, 0, 0.6))
    assert state.chosen_lr(runs, "kda", 16) == 1e-2
    runs.append(_rec("kda", 8, 3e-3, 0, 0.4))
    assert state.chosen_lr(runs, "kda", 8) is None, "another size's grid is its own"


def test_pending_runs_the_grid_then_the_seeds_in_size_order(tmp_path):
    todo, waiting = state.pending(tmp_path)
    assert waiting and todo[0] == state.Job("attention", state.HEAD_DIMS[0], state.LRS[0], 0)
    assert all(j.seed == 0 for j in todo), "no seed before its LR is chosen"
    for rec in [_rec("kda", 16, lr, 0, a) for lr, a in zip(state.LRS, (0.5, 0.7, 0.6))]:
        state.Job(**rec["job"]).path(tmp_path).write_text(json.dumps(rec))
    todo, _ = state.pending(tmp_path)
    names = [j.name for j in todo]
    assert "mqar_T128_K16_kda_lr0.01_s1" in names and "mqar_T128_K16_kda_lr0.01_s0" not in names
    assert not any("K16_kda_lr0.003_s1" in n for n in names), "seeds only at the chosen LR"
    assert names.index("mqar_T128_K16_kda_lr0.01_s4") < names.index(f"mqar_T128_K8_attention_lr{state.LRS[0]:g}_s0")
    assert names.index(f"mqar_T128_K16_linear_lr{state.LRS[-1]:g}_s0") < names.index("mqar_T128_K16_kda_lr0.01_s1"), \
        "every grid run of a head dim before its seeds"
    for rec in [_rec("gdn", 16, lr, 0, a) for lr, a in zip(state.LRS, (0.5, 0.6, 0.7))]:
        state.Job(**rec["job"]).path(tmp_path).write_text(json.dumps(rec))
    names = [j.name for j in state.pending(tmp_path)[0]]
    assert names.index("mqar_T128_K16_kda_lr0.01_s1") < names.index("mqar_T128_K16_gdn_lr0.03_s4"), \
        "seeds round-robin across mixers"
    ablation = [j for j in todo if j.init == "reference"]
    assert [(j.mixer, j.head_dim, j.lr) for j in ablation] == [("kda", 16, 1e-2)] * 3


def test_aggregate_gives_mean_spread_n_and_flatness():
    runs = _cells({("kda", 16): [0.6, 0.7, 0.8], ("attention", 16): [1.0, 1.0, 1.0]})
    rising = next(r for r in runs if r["job"]["mixer"] == "kda" and r["job"]["seed"] == 2 and r["job"]["lr"] == 1e-2)
    rising["evals"] = {"step": [500, 1000, 1500, 2000], "acc": [0.1, 0.2, 0.3, 0.8]}  # still gaining at the end
    rows = {r["mixer"]: r for r in state.aggregate(runs)}
    assert rows["kda"]["mean"] == pytest.approx(0.7) and rows["kda"]["n"] == 3 and rows["kda"]["not_flat"] == 1
    assert rows["kda"]["state_bytes"] == state.state_bytes("kda", 16)
    assert rows["attention"]["std"] == 0 and rows["attention"]["not_flat"] == 0


def test_sentences_follow_the_numbers():
    runs = _cells({("attention", 16): [1.0, 1.0, 1.0], ("kda", 16): [0.70, 0.72, 0.68], ("gdn", 16): [0.69, 0.7, 0.71],
                   ("linear", 16): [0.3, 0.35, 0.25], ("mamba2", 16): [0.5, 0.52, 0.48]})
    rows = state.aggregate(runs)
    ceiling = state.ceiling_sentence(rows)
    assert "softmax attention recalls 100%" in ceiling and "KDA, 70% ± 2 (3 seeds)" in ceiling
    assert "30 points apart" in ceiling
    rule = state.rule_sentence(rows)
    assert "KDA 70% ≈ GDN 70% > Mamba-2 50% > linear 30%" in rule
    assert rule.endswith("at K = 16 the update rule matters: KDA beats linear beyond seed spread.")
    assert "matches up to ties" in state.report_sentence(rows)
    tied = state.aggregate(_cells({("kda", 8): [0.3, 0.5, 0.4], ("linear", 8): [0.35, 0.45, 0.4]}))
    assert state.rule_sentence(tied).endswith("at K = 8 all are within seed spread: the size of the state decides.")
    run_out = state.aggregate(_cells({("kda", 8): [0.02, 0.02, 0.02], ("linear", 8): [0.09, 0.1, 0.11]}))
    assert "linear 10% > KDA 2%" in state.rule_sentence(run_out), "beyond spread, so '>'"
    assert "K = 8: not a test of the order" in state.report_sentence(state.aggregate(_cells(
        {("kda", 8): [0.02] * 3, ("gdn", 8): [0.1] * 3, ("mamba2", 8): [0.15] * 3})))
    assert state.rule_sentence(run_out).endswith("at K = 8 every update rule has run out of state (the best recalls 10%).")


def test_report_sentence_prices_the_reports_setting_from_measured_time():
    runs = _cells({("kda", 32): [0.5, 0.5, 0.5], ("gdn", 32): [0.8, 0.8, 0.8], ("mamba2", 32): [0.9, 0.9, 0.9]})
    text = state.report_sentence(state.aggregate(runs))
    assert "differs from the report" in text
    per_step = 10.0 / state.STEPS  # every record took 10 s
    hours = per_step * (128 / 32) ** 2 * (2048 / state.SEQ_LEN) * 20_000 / 3600
    assert f"about {hours:,.0f} CPU-hours" in text


def test_ablation_compares_the_same_seeds_and_rate():
    runs = _cells({("deltanet", 16): [0.7, 0.7, 0.7], ("kda", 16): [0.8, 0.8, 0.8]})
    runs += [_rec("deltanet", 16, 1e-2, s, 0.01, init="reference") for s in (0, 1)]
    runs += [_rec("kda", 16, 1e-2, s, 0.79, init="reference") for s in (0, 1)]
    rows = {r["mixer"]: r for r in state.ablation_rows(runs)}
    assert rows["deltanet"]["seeds"] == [0, 1] and rows["deltanet"]["ref_mean"] == pytest.approx(0.01)
    text = state.ablation_sentence(list(rows.values()))
    assert "DeltaNet 70% → 1%" in text and "Beyond seed spread: DeltaNet." in text
    assert "Order with the lab's init: KDA 80% > DeltaNet 70%; with the reference init: KDA 79% > DeltaNet 1%." in text
    assert "With the reference init DeltaNet stays under 20%" in text and "KDA stay" not in text


def test_seed_explorer_links_each_seed_to_its_own_curve():
    """The per-seed explorer (k3lite.viz.lab.seed_explorer): the points are the headline figure's seeds (chosen LR,
    lab init; not the LR grid, not the ablation), the curves are those runs' stored held-out evals, and clicking
    a point filters the curves to its (mixer, K) cell, which starts at `pick`."""
    from k3lite.viz.lab import seed_explorer, seed_runs
    runs = _cells({("kda", 16): [0.6, 0.7, 0.8], ("gdn", 8): [0.1, 0.2, 0.3]})
    runs[-1]["evals"] = {"step": [100, 200, 300, 400], "acc": [0.05, 0.1, 0.2, 0.3]}
    runs.append(_rec("kda", 16, 1e-2, 0, 0.01, init="reference"))
    rows = state.aggregate(runs)
    shown = seed_runs(runs, rows)
    assert sorted((r["job"]["mixer"], r["job"]["seed"]) for r in shown) == [("gdn", s) for s in range(3)] + \
        [("kda", s) for s in range(3)], "the chosen-LR, lab-init runs only"
    spec = seed_explorer(runs, rows, pick=("kda", 16)).to_dict()
    data = spec["datasets"]
    finals = next(v for v in data.values() if v and "steps" in v[0])
    curves = next(v for v in data.values() if v and "step" in v[0])
    assert len(finals) == 6 and sorted(p["recall"] for p in finals) == [10, 20, 30, 60, 70, 80]
    assert len(curves) == sum(len(r["evals"]["step"]) for r in shown)
    assert [c["recall"] for c in curves if c["K"] == 8 and c["seed"] == 2] == [5, 10, 20, 30]
    top, bottom = spec["vconcat"]
    cell = next(p for p in spec["params"] if p["name"] == "cell")  # altair lifts a concat's params to the top
    assert cell["select"]["fields"] == ["mixer", "K"] and cell["views"] == [top["name"]]
    assert cell["value"] == [{"mixer": "KDA", "K": 16}]
    assert bottom["transform"] == [{"filter": {"param": "cell", "empty": False}}]
    with pytest.raises(ValueError, match="at least one finished run"):
        seed_explorer([], [])


def test_a_seed_the_cap_cut_short_is_rerun_longer_and_replaced(tmp_path):
    """A seed still rising at STEPS gets a LONG_STEPS rerun (queued after every other run); the table then shows
    the rerun in its place and counts it; the LR grid and the ablation keep reading the STEPS runs."""
    runs = _cells({("kda", 16): [0.6, 0.7, 0.8]})
    rising = next(r for r in runs if r["job"]["seed"] == 1 and r["job"]["lr"] == 1e-2)
    rising["evals"] = {"step": [500, 1000, 1500, 2000], "acc": [0.1, 0.3, 0.5, 0.7]}
    for r in runs:
        state.Job(**r["job"]).path(tmp_path).write_text(json.dumps(r))
    todo, _ = state.pending(tmp_path)
    long_jobs = [j for j in todo if j.steps == state.LONG_STEPS]
    assert [(j.mixer, j.head_dim, j.seed, j.lr) for j in long_jobs] == [("kda", 16, 1, 1e-2)]
    assert todo.index(long_jobs[0]) > max(i for i, j in enumerate(todo) if j.steps == state.STEPS), "long runs last"
    assert long_jobs[0].name.endswith("_s1_steps6000") and "--steps 6000" in long_jobs[0].command
    assert long_jobs[0].config().steps == state.LONG_STEPS
    longer = _rec("kda", 16, 1e-2, 1, 0.95)
    longer["job"]["steps"] = state.LONG_STEPS
    row = next(r for r in state.aggregate(runs + [longer]) if r["mixer"] == "kda")
    assert row["accs"] == [0.6, 0.95, 0.8] and row["extended"] == 1 and row["n"] == 3
    assert state.chosen_lr(runs + [longer], "kda", 16) == 1e-2
    from k3lite.viz.lab import seed_runs
    shown = seed_runs(runs + [longer], [row])
    assert sorted(r["final_eval_acc"] for r in shown) == [0.6, 0.8, 0.95], "one point per seed, the rerun's"
    state.Job(**longer["job"]).path(tmp_path).write_text(json.dumps(longer))
    assert not [j for j in state.pending(tmp_path)[0] if j.steps == state.LONG_STEPS]


def test_verdicts_need_two_seeds_and_read_the_whole_chain():
    """A cell with one seed has no spread: no 'within seed spread' for it. Ties are not transitive: 'A ≈ B > C'
    with A ≈ C is still a separation, named."""
    one = state.aggregate(_cells({("attention", 32): [1.0], ("kda", 32): [0.99], ("gdn", 32): [0.98]}))
    assert "1 seed so far, no spread yet" in state.ceiling_sentence(one)
    assert state.rule_sentence(one).endswith("at K = 32 too few seeds yet to tell (1 for some mixer).")
    chain = state.aggregate(_cells({("kda", 16): [0.2, 0.5, 0.8], ("gdn", 16): [0.45, 0.45, 0.45],
                                    ("linear", 16): [0.3, 0.3, 0.3]}))
    text = state.rule_sentence(chain)
    assert "KDA 50% ≈ GDN 45% > linear 30%" in text
    assert text.endswith("at K = 16 the update rule matters: GDN beats linear beyond seed spread.")
    # the shipped K = 16 shape: a separation between the best and the worst, but the plain additive rule ties
    # with the best, so the refinements of the rule are not what separates them
    plain = state.aggregate(_cells({("gdn", 16): [0.73, 0.71, 0.75], ("linear", 16): [0.72, 0.73, 0.71],
                                    ("kda", 16): [0.66, 0.68, 0.70]}))
    text = state.rule_sentence(plain)
    assert "GDN beats KDA beyond seed spread, yet the plain additive rule (linear, 72%) ties with the best" in text
    plain_loses = state.aggregate(_cells({("gdn", 16): [0.80, 0.81, 0.79], ("linear", 16): [0.60, 0.61, 0.59],
                                          ("kda", 16): [0.70, 0.71, 0.69]}))
    assert "plain additive" not in state.rule_sentence(plain_loses)
    assert "Not final" not in state.rule_sentence(plain_loses), "every run here is flat"


def test_rule_sentence_says_which_cells_are_still_rising():
    """A seed still gaining at its cap makes its cell's mean a lower bound: the sentence names the cell and count."""
    rows = state.aggregate(_cells({("gdn", 16): [0.73, 0.71, 0.75], ("kda", 16): [0.66, 0.68, 0.70]}))
    flat_text = state.rule_sentence(rows)
    assert "Not final" not in flat_text
    for r in rows:
        if r["mixer"] == "kda":
            r["not_flat"] = 2
    text = state.rule_sentence(rows)
    assert text.startswith(flat_text[:-1]) and text.endswith(
        "Not final: at K = 16, 2 of 6 recurrent runs (KDA 2) still gained ≥ 2 points over their last 25% of steps, "
        "so those cells' means are lower bounds.")


def test_report_cost_uses_time_per_step_done():
    """Runs that solve stop early: the per-step time is wall time over the steps each run did, not over STEPS."""
    runs = _cells({("kda", 32): [0.5, 0.5, 0.5], ("gdn", 32): [0.8, 0.8, 0.8], ("mamba2", 32): [0.9, 0.9, 0.9]})
    for r in runs:
        r["steps_done"] = 1000  # 10 s each over 1,000 steps: 10 ms a step, not 5
    text = state.report_sentence(state.aggregate(runs))
    assert "(10 ms median)" in text
