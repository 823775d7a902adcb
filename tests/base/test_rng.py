"""k3lite/base/rng.py: a seeded build gives the seed's weights whatever other sessions build at the same moment, and
every module build on a server path goes through it."""
from __future__ import annotations

import re
import threading

import torch

from conftest import ROOT
from k3lite.base.rng import seeded

CLI_ONLY = {"k3lite/experiments/lm_train.py", "k3lite/bench/model.py", "k3lite/bench/moe.py"}  # command-line runs, one per process


def build(seed: int) -> torch.Tensor:
    with seeded(seed):
        return torch.nn.Linear(64, 64).weight.detach().clone()


def test_a_seeded_build_is_the_seed_s_weights_while_other_threads_build():
    want = build(0)
    stop, bad, errors = threading.Event(), [], []

    def other_sessions():
        while not stop.is_set():
            with seeded(None):  # a checkpoint load: a build whose init is thrown away
                torch.nn.Linear(256, 256)
            build(1)

    others = [threading.Thread(target=other_sessions) for _ in range(3)]
    for t in others:
        t.start()
    try:
        for _ in range(200):
            got = build(0)
            if not torch.equal(got, want):
                bad.append(got)
    except Exception as e:  # noqa: BLE001 - reported below
        errors.append(e)
    finally:
        stop.set()
        for t in others:
            t.join()
    assert not errors and not bad, f"{len(bad)} of 200 seed-0 builds got other weights"


def test_a_seeded_build_leaves_the_global_generator_as_it_was():
    torch.manual_seed(5)
    state = torch.get_rng_state()
    with seeded(0):
        torch.randn(10)
        with seeded(3):  # re-entrant
            torch.randn(3)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(build(7), build(7)) and not torch.equal(build(7), build(8))


def test_no_server_path_reseeds_the_global_generator():
    """A bare global reseed on a server path races with other sessions' builds: use k3lite.base.rng.seeded."""
    hits = []
    for path in [*sorted((ROOT / "k3lite").rglob("*.py")), *sorted((ROOT / "views").glob("*.py")), ROOT / "app.py"]:
        rel = path.relative_to(ROOT).as_posix()
        if rel in CLI_ONLY or rel == "k3lite/base/rng.py":
            continue
        hits += [f"{rel}:{n}" for n, line in enumerate(path.read_text().splitlines(), 1)
                 if re.search(r"torch\.(random\.)?manual_seed\(", line)]
    assert not hits, hits
