"""`python -m k3lite.bench app` runs and reports a rerun time for a page (smoke test on one light page)."""
from k3lite.bench import app as bench_app


def test_new_values_are_distinct_in_range_and_around_the_default():
    vals = bench_app._around(5, 1, 0, 8)
    assert vals[:4] == [6, 4, 7, 3] and len(set(vals)) == len(vals) and all(0 <= v <= 8 for v in vals)
    assert 5 not in vals and bench_app._around(0.5, 0.25, 0.0, 1.0) == [0.75, 0.25, 1.0, 0.0]


def test_bench_prints_a_row_per_page(capsys):
    rc = bench_app.main(["--pages", "hybrid_attention", "--repeats", "2"])
    out = capsys.readouterr().out
    assert rc == 0, out
    row = next(line for line in out.splitlines() if line.startswith("hybrid_attention"))
    assert "x2" in row and "slider" in row
    assert "pages under the 0.5 s rerun target" in out
