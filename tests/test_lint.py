"""The linter is part of the test command: ruff (pyflakes + pycodestyle's error classes, pyproject.toml) passes."""
import shutil
import subprocess
import sys

from conftest import ROOT


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff") or str(ROOT / ".venv" / "bin" / "ruff")
    cmd = [ruff, "check", "."] if shutil.which(ruff) else [sys.executable, "-m", "ruff", "check", "."]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
