"""The state-size sweep's numbers: the LR grid's choice, mean, spread, n and flatness per cell, the init ablation's
rows; the seed explorer draws exactly the runs behind them."""
import pytest

from k3lite.experiments.lab_state_aggregate import ablation_rows, aggregate, chosen_lr
from k3lite.experiments.lab_state_jobs import state_bytes
from k3lite.experiments.lab_state_sentences import ablation_sentence
from test_lab_state_jobs import _cells, _rec


def test_lr_is_chosen_per_mixer_and_size_once_the_grid_is_complete():
    runs = [_rec("kda", 16, 3e-3, 0, 0.5), _rec("kda", 16, 1e-2, 0, 0.7)]
    assert chosen_lr(runs, "kda", 16) is None
    runs.append(_rec("kda", 16, 3e-2, 0, 0.6))
    assert chosen_lr(runs, "kda", 16) == 1e-2
    runs.append(_rec("kda", 8, 3e-3, 0, 0.4))
    assert chosen_lr(runs, "kda", 8) is None, "another size's grid is its own"


def test_aggregate_gives_mean_spread_n_and_flatness():
    runs = _cells({("kda", 16): [0.6, 0.7, 0.8], ("attention", 16): [1.0, 1.0, 1.0]})
    rising = next(r for r in runs if r["job"]["mixer"] == "kda" and r["job"]["seed"] == 2 and r["job"]["lr"] == 1e-2)
    rising["evals"] = {"step": [500, 1000, 1500, 2000], "acc": [0.1, 0.2, 0.3, 0.8]}  # still gaining at the end
    rows = {r["mixer"]: r for r in aggregate(runs)}
    assert rows["kda"]["mean"] == pytest.approx(0.7) and rows["kda"]["n"] == 3 and rows["kda"]["not_flat"] == 1
    assert rows["kda"]["state_bytes"] == state_bytes("kda", 16)
    assert rows["attention"]["std"] == 0 and rows["attention"]["not_flat"] == 0


def test_ablation_compares_the_same_seeds_and_rate():
    runs = _cells({("deltanet", 16): [0.7, 0.7, 0.7], ("kda", 16): [0.8, 0.8, 0.8]})
    runs += [_rec("deltanet", 16, 1e-2, s, 0.01, init="reference") for s in (0, 1)]
    runs += [_rec("kda", 16, 1e-2, s, 0.79, init="reference") for s in (0, 1)]
    rows = {r["mixer"]: r for r in ablation_rows(runs)}
    assert rows["deltanet"]["seeds"] == [0, 1] and rows["deltanet"]["ref_mean"] == pytest.approx(0.01)
    text = ablation_sentence(list(rows.values()))
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
    rows = aggregate(runs)
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
