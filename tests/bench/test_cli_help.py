"""Every command-line entry point answers --help with exit 0 and names what it runs."""
import pytest

from k3lite.bench import APP_BENCHES, BENCHES
from k3lite.bench.__main__ import main as bench_main
from k3lite.experiments.train import main as train_main


def test_bench_help_lists_every_bench_and_exits_0(capsys):
    assert bench_main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in (*BENCHES, *APP_BENCHES):
        assert f"  {name} " in out
    assert bench_main(["nope"]) == 2 and "usage:" in capsys.readouterr().err


def test_train_help_mentions_the_task_runs(capsys):
    with pytest.raises(SystemExit) as e:
        train_main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--task {mqar,palindrome,stack}" in out and "--task attnres" in out


def test_browser_bench_refuses_unknown_pages_before_starting_anything(capsys):
    from tools.bench_browser import main as browser_main

    assert browser_main(["--pages", "home,nope", "--repeats", "1"]) == 2
    assert "unknown pages ['nope']" in capsys.readouterr().err
    assert browser_main(["--repeats", "0"]) == 2


def test_an_unknown_bench_is_named_before_the_list():
    import subprocess  # here: only this test runs the CLI as a user would
    import sys

    from conftest import ROOT

    done = subprocess.run([sys.executable, "-m", "k3lite.bench", "warp"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("unknown bench 'warp'; choose one of kda, moe")
