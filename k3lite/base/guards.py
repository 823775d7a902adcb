"""Resource guards: bound threads, queue heavy work, bound long jobs.

A public server runs one Python process for every visitor, on a small machine (2 cores here). These rules
keep one visitor from hurting the others (the memory estimate before a live build is k3lite/analytic/budget.py):

1. **Bounded threads.** torch's intra-op pool is process-wide; `bounded_threads()` caps it
   (`K3LITE_TORCH_THREADS`, default half the cores, at least 1) so a matmul cannot take every core.
2. **Heavy work behind a small semaphore.** `with heavy_work("training"):` lets at most
   `K3LITE_HEAVY_SLOTS` (default 1) heavy jobs run at once; a visitor who waits longer than `timeout_s`
   (`K3LITE_HEAVY_TIMEOUT_S`, default 30) gets `ServerBusy` (a ValueError, so `user_errors()` shows it)
   instead of a hung page: it names what runs and for how long, how many others wait, and "try again in at most
   N s" (the running job's time bound, rule 3, minus what it has used). Re-entrant per thread. The slot is per
   process: behind a proxy each replica has its own (deploy/README.md), so one class cannot starve the next.
   `heavy_queue()` says where a waiting visitor stands, for a page's "waiting for a free slot" line.
3. **Time bounds.** Long loops call `deadline().check(step)`, which raises `TimeLimit` (a ValueError) after
   `K3LITE_JOB_LIMIT_S` (default 300 s).
4. **Rare full garbage collections.** A full collection walks every tracked object (~640,000 in a busy server:
   the imports, the shared figures, 30 sessions' state) and no session runs meanwhile. With Python's default
   thresholds (700, 10, 10) a rerun's short-lived objects outlive two young collections, count as long-lived, and
   trigger a full pass every ~12 s under a 30-session load (15 passes in 3 minutes, 0.3 s each, up to 0.69 s).
   `quiet_gc()` sets (10,000, 20, 10): the young generation holds a whole rerun's temporaries, which die there.
   Measured: 1 full pass in 3 minutes, 9 in 15. The price: ~0.1 GB more RSS (cyclic garbage waits longer) and each
   rare pass is longer (up to ~1.5 s at ~1 million objects); docs/performance.md, "Garbage collection".

No Streamlit import here (k3lite/ never imports it).
"""
from __future__ import annotations

import gc
import math
import os
import threading
import time
from contextlib import contextmanager

import torch


def env_number(name: str, default: float, unit: str, *, allow_zero: bool = False) -> float:
    """A finite number from the environment variable `name` (> 0, or >= 0 with allow_zero)."""
    raw = os.environ.get(name, str(default))
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of {unit}, got {raw!r}") from None
    ok = (value >= 0 if allow_zero else value > 0) and not math.isinf(value)  # NaN fails both comparisons
    if not ok:
        raise ValueError(f"{name} must be {'>=' if allow_zero else '>'} 0 and finite, got {raw!r}")
    return value


# ------------------------------------------------------------------------------------------- garbage collector
GC_THRESHOLDS = (10_000, 20, 10)  # Python's default: (700, 10, 10)


def quiet_gc(thresholds: tuple[int, int, int] = GC_THRESHOLDS) -> tuple[int, int, int]:
    """Set the process-wide garbage-collector thresholds (rule 4); returns them. Every threshold must be >= 1
    (0 would turn collection off, and reference cycles would then never be freed)."""
    if len(thresholds) != 3 or any(not isinstance(t, int) or t < 1 for t in thresholds):
        raise ValueError(f"gc thresholds must be three integers >= 1, got {thresholds!r}")
    gc.set_threshold(*thresholds)
    return gc.get_threshold()


# ------------------------------------------------------------------------------------------- threads
def bounded_threads(cap: int | None = None) -> int:
    """Cap torch's (process-wide) intra-op thread pool; returns the thread count now in use.

    cap: explicit limit; default env K3LITE_TORCH_THREADS, else half the CPU cores (at least 1).
    Never raises the count above what torch already uses.
    """
    if cap is None:
        raw = os.environ.get("K3LITE_TORCH_THREADS")
        if raw is not None:
            try:
                cap = int(raw)
            except ValueError:
                raise ValueError(f"K3LITE_TORCH_THREADS must be an integer, got {raw!r}") from None
        else:
            cap = max(1, (os.cpu_count() or 2) // 2)
    if cap < 1:
        raise ValueError(f"thread cap must be >= 1, got {cap}")
    if torch.get_num_threads() > cap:
        torch.set_num_threads(cap)
    return torch.get_num_threads()


# ------------------------------------------------------------------------------------------- heavy work
class ServerBusy(ValueError):
    """Raised when heavy work could not start in time. A ValueError so pages' user_errors() shows it."""


class TimeLimit(ValueError):
    """Raised by Deadline.check() when a long job ran past its time bound."""


def _slots_from_env() -> int:
    raw = os.environ.get("K3LITE_HEAVY_SLOTS", "1")
    try:
        slots = int(raw)
    except ValueError:
        raise ValueError(f"K3LITE_HEAVY_SLOTS must be an integer, got {raw!r}") from None
    if slots < 1:
        raise ValueError(f"K3LITE_HEAVY_SLOTS must be >= 1, got {slots}")
    return slots


HEAVY_SLOTS = _slots_from_env()
_heavy = threading.BoundedSemaphore(HEAVY_SLOTS)
_held = threading.local()  # per-thread depth, so nested heavy_work() in one session does not deadlock
_running: dict[int, tuple[str, float, float]] = {}  # thread id -> (what, started (monotonic), time bound s)
_waiting: list[int] = []  # thread ids waiting for a slot, in arrival order
_running_lock = threading.Lock()


def heavy_timeout_from_env() -> float:
    """How long a visitor waits for a heavy-work slot: env K3LITE_HEAVY_TIMEOUT_S (seconds), default 30."""
    return env_number("K3LITE_HEAVY_TIMEOUT_S", 30, "seconds", allow_zero=True)


def heavy_queue() -> tuple[int, int]:
    """(jobs running, visitors waiting ahead of the calling thread) on this process's heavy-work slot; a thread
    that is not waiting counts every waiter as ahead of it."""
    me = threading.get_ident()
    with _running_lock:
        ahead = _waiting.index(me) if me in _waiting else len(_waiting)
        return len(_running), ahead


def busy_message(what: str, waited_s: float, ahead: int, now: float | None = None) -> str:
    """The refusal a visitor reads: what runs and for how long, who else waits, and when to try again (the
    soonest a running job must end: its time bound minus what it has used, at least 1 s)."""
    now = time.monotonic() if now is None else now
    with _running_lock:
        jobs = sorted(_running.values(), key=lambda job: job[1])
    if jobs:
        running = "; ".join(f"{name} running for {now - started:.0f} s" for name, started, _ in jobs)
        free_in = max(1, math.ceil(min(started + bound - now for _, started, bound in jobs)))
        again = f"try again in at most {free_in} s (the running job's time bound)"
    else:
        running, again = "another job running", "try again in a moment"
    others = f"{ahead} other visitor(s) waiting before you" if ahead else "no one else waiting"
    return (f"the server is busy ({running}; at most {HEAVY_SLOTS} heavy job(s) at a time on this server "
            f"process, {others}); {what} waited {waited_s:g} s — {again}")


@contextmanager
def heavy_work(what: str = "a heavy job", timeout_s: float | None = None, bound_s: float | None = None):
    """Run the block while holding one of the process-wide heavy-work slots.

    Waits up to `timeout_s` seconds (default: env K3LITE_HEAVY_TIMEOUT_S, else 30) for a slot, then raises
    ServerBusy (busy_message: what is running, how many wait, when to try again). `bound_s`: this job's own time
    bound, from which the next visitor's "try again in" is computed (default: K3LITE_JOB_LIMIT_S, rule 3).
    Call it where user_errors() can show the refusal (not bare in a page).
    """
    if timeout_s is None:
        timeout_s = heavy_timeout_from_env()
    depth = getattr(_held, "depth", 0)
    if depth:  # already holding a slot in this thread
        _held.depth = depth + 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    me = threading.get_ident()
    with _running_lock:
        _waiting.append(me)
    try:
        got = _heavy.acquire(timeout=max(0.0, timeout_s))
        if not got:
            _, ahead = heavy_queue()
            raise ServerBusy(busy_message(what, timeout_s, ahead))
    finally:
        with _running_lock:
            _waiting.remove(me)
    _held.depth = 1
    with _running_lock:
        _running[me] = (what, time.monotonic(), job_limit_from_env() if bound_s is None else float(bound_s))
    try:
        yield
    finally:
        with _running_lock:
            _running.pop(me, None)
        _held.depth = 0
        _heavy.release()


class Deadline:
    """A time bound for a long loop: call .check() each step; raises TimeLimit once past `seconds`."""

    def __init__(self, seconds: float, what: str = "this job"):
        if not seconds > 0:
            raise ValueError(f"a time bound must be > 0 seconds, got {seconds}")
        self.seconds = float(seconds)
        self.what = what
        self.start = time.monotonic()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def expired(self) -> bool:
        return self.elapsed > self.seconds

    def check(self, step: int | None = None) -> None:
        if self.expired():
            at = f" at step {step}" if step is not None else ""
            raise TimeLimit(f"{self.what} stopped{at}: it ran past its time bound of {self.seconds:g} s "
                            f"on this shared server; choose fewer steps or a smaller size")


def job_limit_from_env() -> float:
    """Default time bound of one long job (training, measured run): env K3LITE_JOB_LIMIT_S, default 300 s."""
    return env_number("K3LITE_JOB_LIMIT_S", 300, "seconds")


def deadline(seconds: float | None = None, what: str = "this job") -> Deadline:
    """A Deadline of `seconds` (default: K3LITE_JOB_LIMIT_S, else 300 s) for a long loop."""
    return Deadline(job_limit_from_env() if seconds is None else seconds, what)
