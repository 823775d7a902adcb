"""The sweeps' files and claims: one claims folder per results folder, shared by separate commands; a dead
worker's claim is taken over, a live one is not."""
import os

from k3lite.experiments.lab_store import _claim, claims_dir_for
from k3lite.experiments.lab_sweep_jobs import Job


def test_claims_are_shared_by_separate_commands_and_a_dead_workers_claim_is_taken_over(tmp_path):
    """Two `lab_sweep long` commands started apart each ran the same hour-long run: the claims folder was per
    process. It is now one per results folder; a claim whose worker has exited is taken over, a live one is not."""
    import subprocess
    import sys

    assert claims_dir_for(tmp_path / "a") == claims_dir_for(tmp_path / "b" / ".." / "a")
    assert claims_dir_for(tmp_path / "a") != claims_dir_for(tmp_path / "long")
    job = Job("mqar", "kda", 32, 1e-3, 0)
    claims = tmp_path / "claims"
    claims.mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (claims / f"{job.name}.claim").write_text(gone.stdout.strip())  # a worker that has exited
    assert _claim(job, claims), "a dead worker's claim is taken over"
    assert (claims / f"{job.name}.claim").read_text() == str(os.getpid())
    assert not _claim(job, claims), "and now this live process holds it"
    other = Job("mqar", "kda", 32, 1e-3, 1)
    (claims / f"{other.name}.claim").write_text("1")  # pid 1 is alive
    assert not _claim(other, claims)


def test_a_claimed_job_is_not_taken_twice(tmp_path):
    job = Job("mqar", "kda", 16, 1e-2, 0)
    assert _claim(job, tmp_path) and not _claim(job, tmp_path)
