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
