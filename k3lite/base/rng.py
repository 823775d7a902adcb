"""Seeded builds that other threads cannot disturb.

torch's default generator is one per process, and a Streamlit server runs every visitor's script in its own
thread of one process. `torch.manual_seed(0); layer = Layer()` in one session while another session builds a
model (every nn.Linear draws its init from that same generator) interleaves the two sequences of draws: the
"seed 0" layer gets other weights than seed 0 gives, a page caches it for everyone, and its numbers are no
longer the ones a fresh server shows.

    with seeded(0):          # the lock, a private copy of the generator state, reseeded
        layer = Layer()
    with seeded(None):       # the lock only: a build whose random init is thrown away (weights loaded after)
        model = K3Model(cfg)

Every module construction a server runs goes through `seeded` (tests/base/test_rng.py checks the call sites), so
builds never interleave. On exit the generator's state is restored (torch.random.fork_rng), so a seeded build
does not reseed anyone else either. Hold it only around construction, not around training: it serialises.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

import torch

_LOCK = threading.RLock()  # re-entrant: a seeded build may call another (lab.build inside a seeded job)


@contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """Hold the process's build lock; with a `seed`, draw from torch's default generator seeded with it and
    restore the generator's previous state on exit."""
    with _LOCK:
        if seed is None:
            yield
            return
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            yield
