"""`python -m k3lite.bench app` (tools/bench_app.py) runs and reports a rerun time for a page (smoke test on one light page)."""
import ast

from tools import bench_app


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


def test_nothing_under_k3lite_imports_streamlit(root):
    """The library stays UI-free: the app benches that need Streamlit live in tools/ (run by the same command)."""
    offenders = []
    for path in sorted((root / "k3lite").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(root)}:{node.lineno} {n}" for n in names
                          if n == "streamlit" or n.startswith("streamlit.")]
    assert not offenders, offenders


def test_every_control_moves_each_keyed_control(capsys):
    rc = bench_app.main(["--pages", "hybrid_attention", "--repeats", "1", "--every-control"])
    out = capsys.readouterr().out
    assert rc == 0, out
    row = next(line for line in out.splitlines() if line.startswith("hybrid_attention"))
    n = int(row.split(" controls, each")[0].rsplit(None, 1)[-1])
    listed = [line for line in out.splitlines() if "rerun median" in line and line.startswith("    ")]
    assert n >= 2 and len(listed) == n, out
