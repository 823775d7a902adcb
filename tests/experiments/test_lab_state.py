"""The state-size sweep's command line: what is pending, in order (the LR grid, the seeds, the ablation, then the
longer reruns of the seeds the cap cut short), and resumability."""
import json

from k3lite.experiments import lab_state_jobs as protocol
from k3lite.experiments.lab_state import pending
from k3lite.experiments.lab_state_aggregate import aggregate, chosen_lr
from k3lite.experiments.lab_state_jobs import Job
from test_lab_state_jobs import _cells, _rec


def test_pending_runs_the_grid_then_the_seeds_in_size_order(tmp_path):
    todo, waiting = pending(tmp_path)
    assert waiting and todo[0] == Job("attention", protocol.HEAD_DIMS[0], protocol.LRS[0], 0)
    assert all(j.seed == 0 for j in todo), "no seed before its LR is chosen"
    for rec in [_rec("kda", 16, lr, 0, a) for lr, a in zip(protocol.LRS, (0.5, 0.7, 0.6))]:
        Job(**rec["job"]).path(tmp_path).write_text(json.dumps(rec))
    todo, _ = pending(tmp_path)
    names = [j.name for j in todo]
    assert "mqar_T128_K16_kda_lr0.01_s1" in names and "mqar_T128_K16_kda_lr0.01_s0" not in names
    assert not any("K16_kda_lr0.003_s1" in n for n in names), "seeds only at the chosen LR"
    assert names.index("mqar_T128_K16_kda_lr0.01_s4") < names.index(f"mqar_T128_K8_attention_lr{protocol.LRS[0]:g}_s0")
    assert names.index(f"mqar_T128_K16_linear_lr{protocol.LRS[-1]:g}_s0") < \
        names.index("mqar_T128_K16_kda_lr0.01_s1"), "every grid run of a head dim before its seeds"
    for rec in [_rec("gdn", 16, lr, 0, a) for lr, a in zip(protocol.LRS, (0.5, 0.6, 0.7))]:
        Job(**rec["job"]).path(tmp_path).write_text(json.dumps(rec))
    names = [j.name for j in pending(tmp_path)[0]]
    assert names.index("mqar_T128_K16_kda_lr0.01_s1") < names.index("mqar_T128_K16_gdn_lr0.03_s4"), \
        "seeds round-robin across mixers"
    ablation = [j for j in todo if j.init == "reference"]
    assert [(j.mixer, j.head_dim, j.lr) for j in ablation] == [("kda", 16, 1e-2)] * 3


def test_a_seed_the_cap_cut_short_is_rerun_longer_and_replaced(tmp_path):
    """A seed still rising at STEPS gets a LONG_STEPS rerun (queued after every other run); the table then shows
    the rerun in its place and counts it; the LR grid and the ablation keep reading the STEPS runs."""
    runs = _cells({("kda", 16): [0.6, 0.7, 0.8]})
    rising = next(r for r in runs if r["job"]["seed"] == 1 and r["job"]["lr"] == 1e-2)
    rising["evals"] = {"step": [500, 1000, 1500, 2000], "acc": [0.1, 0.3, 0.5, 0.7]}
    for r in runs:
        Job(**r["job"]).path(tmp_path).write_text(json.dumps(r))
    todo, _ = pending(tmp_path)
    long_jobs = [j for j in todo if j.steps == protocol.LONG_STEPS]
    assert [(j.mixer, j.head_dim, j.seed, j.lr) for j in long_jobs] == [("kda", 16, 1, 1e-2)]
    assert todo.index(long_jobs[0]) > max(i for i, j in enumerate(todo) if j.steps == protocol.STEPS), "long runs last"
    assert long_jobs[0].name.endswith("_s1_steps6000") and "--steps 6000" in long_jobs[0].command
    assert long_jobs[0].config().steps == protocol.LONG_STEPS
    longer = _rec("kda", 16, 1e-2, 1, 0.95)
    longer["job"]["steps"] = protocol.LONG_STEPS
    row = next(r for r in aggregate(runs + [longer]) if r["mixer"] == "kda")
    assert row["accs"] == [0.6, 0.95, 0.8] and row["extended"] == 1 and row["n"] == 3
    assert chosen_lr(runs + [longer], "kda", 16) == 1e-2
    from k3lite.viz.lab import seed_runs
    shown = seed_runs(runs + [longer], [row])
    assert sorted(r["final_eval_acc"] for r in shown) == [0.6, 0.8, 0.95], "one point per seed, the rerun's"
    Job(**longer["job"]).path(tmp_path).write_text(json.dumps(longer))
    assert not [j for j in pending(tmp_path)[0] if j.steps == protocol.LONG_STEPS]
