"""A practice key comes from the same function and data as the page its hint opens: the lab problems' keys are the
lab page's own rows (`SweepData.load` over the shipped runs and the longer cap's reruns, as views/lab.py loads
them), cell for cell, over 200 seeds; and the question states every input the answer is computed from."""
import re

import pytest

from k3lite.experiments import lab_sweep_jobs as sweep
from k3lite.experiments.lab import MIXER_LABELS
from k3lite.experiments.lab_store import RESULTS_DIR, load_runs
from k3lite.panels.lab_sweep import SweepData
from k3lite.tour.practice import BY_ID
from k3lite.tour.practice.lab import direction

SEEDS = range(1, 201)
LABEL_TO_MIXER = {label: m for m, label in MIXER_LABELS.items()}


@pytest.fixture(scope="module")
def page_cells() -> dict:
    """(task, mixer, seq_len) -> mean, from what the lab page's length sweep draws."""
    data = SweepData.load(load_runs(RESULTS_DIR), load_runs(sweep.LONG_DIR))
    assert data.rows_cap != data.rows, "the reruns change no cell: this test could not tell the two sources apart"
    return {(r["task"], r["mixer"], r["seq_len"]): r["mean"] for r in data.rows}


def test_lab_read_sweep_key_is_the_lab_pages_cell(page_cells):
    for seed in SEEDS:
        inst = BY_ID["lab-read-sweep"].draw(seed)
        m = re.search(r"length sweep for \*\*(\w+)\*\*\. Read the \*\*(.+?)\*\* line at \*\*(\d+) tokens", inst.question)
        cell = (m[1], LABEL_TO_MIXER[m[2]], int(m[3]))
        assert inst.answer == pytest.approx(100 * page_cells[cell], rel=1e-12), f"seed {seed}: {cell}"
        rows, task = inst.figure[1]  # the problem's own picture draws the same rows
        assert task == cell[0] and {(r["task"], r["mixer"], r["seq_len"]): r["mean"] for r in rows} == page_cells


def test_lab_longer_key_is_the_direction_the_lab_page_shows(page_cells):
    for seed in SEEDS:
        inst = BY_ID["lab-longer"].draw(seed)
        m = re.search(r"\*\*(.+?)\*\* on \*\*(\w+)\*\*: the sequence doubles from \*\*(\d+)\*\* to \*\*(\d+)\*\*",
                      inst.question)
        mixer, task, a, b = LABEL_TO_MIXER[m[1]], m[2], int(m[3]), int(m[4])
        shown = direction(100 * (page_cells[(task, mixer, b)] - page_cells[(task, mixer, a)]))
        assert inst.answer == shown, f"seed {seed}: {mixer} {task} {a}->{b}"


PRICE = re.compile(r"\$([\d.]+) / \$([\d.]+) per M input / output tokens, cached input \$([\d.]+)")


def _stated_prices(question: str):
    from k3lite.analytic.cost import ModelPrice
    return [ModelPrice("stated", float(a), float(b), 1 - float(c) / float(a)) for a, b, c in PRICE.findall(question)]


def test_the_cost_keys_follow_from_the_prices_the_question_states():
    """Read literally, with only the prices the question writes (input, cached input, output), a student gets the
    key: the cached-input discounts were once left out (28 of 200 cost-cheaper-model seeds flipped)."""
    from k3lite.analytic.cost import PRICES, analyze, planner_worker, savings, single_model
    for seed in SEEDS:
        inst = BY_ID["cost-cheaper-model"].draw(seed)
        ns: dict = {}
        exec(inst.code, ns)  # p (K3's task), q (the other model's)
        k3, other = _stated_prices(inst.question)
        cheaper = analyze(single_model(k3, ns["p"])).per_completed_task < analyze(
            single_model(other, ns["q"])).per_completed_task
        assert inst.answer == (inst.choices[0] if cheaper else inst.choices[1]), f"seed {seed}"
        assert inst.choices[0] == PRICES["kimi-k3"].name
        inst = BY_ID["cost-split"].draw(seed)
        ns = {}
        exec(inst.code, ns)
        k3, worker = _stated_prices(inst.question)
        factor = savings(single_model(k3, ns["p"]), planner_worker(k3, worker, ns["p"], inst.given["share"], 0.98,
                                                                    inst.given["worker_success"]))
        assert factor == pytest.approx(float(inst.answer), rel=inst.tolerance), f"seed {seed}"


def test_questions_state_the_record_layout_formats_and_what_stays_bf16():
    from k3lite.analytic import memory
    from k3lite.interconnect.deployment import RECORD_LAYOUTS, SCHEME_LABELS, TOPOLOGIES
    from k3lite.model.presets import get_preset
    from k3lite.tour.practice.core import num
    for seed in range(1, 41):
        inst = BY_ID["moe-latent-wire"].draw(seed)
        assert RECORD_LAYOUTS["normal"] in inst.question and "uniform routing" in inst.question
        for pid in ("ic-token-bytes", "ic-nic-bytes"):
            inst = BY_ID[pid].draw(seed)
            scheme = next(s for s, label in SCHEME_LABELS.items() if label in inst.question)
            assert RECORD_LAYOUTS[scheme] in inst.question and "fp8 dispatch + bf16 combine" in inst.question
        inst = BY_ID["ic-link-time"].draw(seed)
        topo = TOPOLOGIES["multi-node-8x8"]
        assert f"NVLink {num(topo.intra_bw / 1e9)} GB/s and NIC {num(topo.inter_bw / 1e9)} GB/s" in inst.question
        for pid in ("params-weights-gb", "params-active-bytes"):
            inst = BY_ID[pid].draw(seed)
            assert "stay in bf16" in inst.question
        assert "conv tail of q, k and v" in BY_ID["kda-break-even"].draw(seed).question
    cfg = get_preset("kimi-k3")  # what the params questions say: the router, norms and AttnRes stay bf16
    assert memory.weight_bytes(cfg, "fp8")["other"] == 2 * memory.component_params(cfg)["other"]
