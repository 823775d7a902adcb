"""Where the lab's sweeps keep their runs, and how several workers share one sweep.

Each finished run is one JSON file under `assets/lab/` (each sweep its own folder), written atomically
(`save_record`) and read back skipping what cannot be read (`load_runs`). A worker claims a run by creating its lock
file first (`_claim`, in the folder `claims_dir_for` names), so two workers never train the same run, and a claim
whose worker died is taken over; `run_workers` starts the workers. Used by both sweeps,
`k3lite.experiments.lab_sweep` and `k3lite.experiments.lab_state`.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "assets" / "lab"


# ------------------------------------------------------------------------------------------------- files
def save_record(record: dict, path: Path) -> None:
    """Write one run's JSON atomically (a temp file renamed into place): a reader or a killed worker never sees
    half a file, so a resumed sweep trusts every file it finds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(record, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)


def load_runs(results_dir: Path = RESULTS_DIR) -> list[dict]:
    """Every finished run under `results_dir` (unreadable files are skipped, never fatal)."""
    runs = []
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            runs.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return runs


# ------------------------------------------------------------------------------------------------ claims
def claims_dir_for(results_dir: Path, kind: str = "lab") -> Path:
    """The claims folder of one results folder, the same for every invocation on this machine: two `... all` or
    `... long` commands started apart share the sweep instead of training the same run twice (a folder per process
    did exactly that: two `long` commands each ran the same hour-long run)."""
    key = hashlib.sha1(str(Path(results_dir).resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"k3lite_{kind}_claims_{key}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _claim(job, claims_dir: Path) -> bool:
    """Claim `job` (either sweep's `Job`: only its `name` is read) by creating its lock file (holding this process's
    pid); False if a live worker holds it. A claim whose worker is gone (killed, crashed: its run never finished) is
    taken over."""
    claims_dir.mkdir(parents=True, exist_ok=True)
    path = claims_dir / f"{job.name}.claim"
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        try:
            holder = int(path.read_text() or 0)
        except (OSError, ValueError):
            return False  # being written or removed right now: leave it to its owner
        if holder and _alive(holder):
            return False
        try:  # the owner is gone: move its claim aside (only one taker's rename succeeds), then claim afresh
            os.rename(path, path.with_name(f"{path.name}.stale-{os.getpid()}"))
        except OSError:
            return False
        return _claim(job, claims_dir)
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    return True


# ----------------------------------------------------------------------------------------------- workers
def run_workers(n: int, target, args: tuple, kwargs: dict | None = None) -> int:
    """Run `target(*args, **kwargs)` in this process (n = 1) or in n worker processes that share one sweep through
    its claim files; the worst exit code."""
    if n == 1:
        target(*args, **(kwargs or {}))
        return 0
    import multiprocessing as mp  # only the multi-worker driver needs it

    procs = [mp.Process(target=target, args=args, kwargs=kwargs or {}) for _ in range(n)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    return max((proc.exitcode or 0) for proc in procs)
