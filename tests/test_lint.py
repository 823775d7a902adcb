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


# ------------------------------------------------------------------------------------------- dependencies
# import name -> distribution name, where they differ
DIST = {"PIL": "pillow", "yaml": "pyyaml", "axe_playwright_python": "axe-playwright-python",
        "aiconfigurator_core": "aiconfigurator-core"}


def _pins(lines) -> dict[str, str]:
    out = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if line and not line.startswith("-r") and "==" in line:
            name, version = line.split("==")
            out[name.strip().lower()] = version.strip()
    return out


def _pyproject():
    import tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_pyproject_and_requirements_pin_the_same_versions():
    project = _pyproject()
    runtime = _pins(project["dependencies"])
    dev = _pins(project["optional-dependencies"]["dev"])
    assert runtime == _pins((ROOT / "requirements.txt").read_text().splitlines())
    assert dev == _pins((ROOT / "requirements-dev.txt").read_text().splitlines())


def _third_party_imports(folders, skip=()) -> set[str]:
    import ast
    local = {"k3lite", "views", "tools"} | {  # and every module of the test tree: the tests and their shared helpers
        p.stem for p in (ROOT / "tests").rglob("*.py")}
    found = set()
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py") if folder != "app.py" else [ROOT / "app.py"]:
            if any(path.is_relative_to(ROOT / s) for s in skip):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [node.module]
                else:
                    continue
                found |= {n.split(".")[0] for n in names}
    return {n for n in found - local if n not in sys.stdlib_module_names}


def test_every_imported_third_party_module_is_declared():
    """The app and library (runtime dependencies) and the tests, tools and k3lite/bench (runtime + dev) import only
    what pyproject.toml declares, so `pip install -e .[dev]` gives everything the code needs. The benches are run
    by a developer, never by the app: one of them compares against a dev-only package (aiconfigurator-core)."""
    project = _pyproject()
    runtime = set(_pins(project["dependencies"]))
    dev = set(_pins(project["optional-dependencies"]["dev"]))
    app = {DIST.get(n, n).lower() for n in _third_party_imports(["k3lite", "views", "app.py"], skip=["k3lite/bench"])}
    rest = {DIST.get(n, n).lower() for n in _third_party_imports(["tools", "tests", "k3lite/bench"])}
    assert app - runtime == set(), f"the app imports undeclared packages: {app - runtime}"
    assert rest - runtime - dev == set(), f"tests/tools import undeclared packages: {rest - runtime - dev}"
