"""The house rules a new maintainer relies on, checked on the source tree (no imports of the app needed):
the README's "What is where" table lists every module and only paths that exist; k3lite has no import cycle;
a function-local import says why beside it."""
import ast
import re
import subprocess
import sys


from conftest import ROOT

def source_files() -> list[str]:
    """Tracked and new (not ignored) .py files of the app: app.py, k3lite/, views/."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.py"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return sorted(f for f in set(out) if (ROOT / f).exists() and (f == "app.py" or f.startswith(("k3lite/", "views/"))))


def readme_table() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## What is where", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("`"):
            rows.append((cells[0], " | ".join(cells[1:])))
    return rows


def test_readme_lists_every_module_and_only_what_exists():
    rows = readme_table()
    assert rows, "README has no 'What is where' table"
    listed_paths = [p for first, _ in rows for p in re.findall(r"`([^`]+)`", first)]
    missing_paths = [p for p in listed_paths if not (ROOT / p).exists()]
    assert missing_paths == [], f"README lists paths that are not in the tree: {missing_paths}"
    by_dir = {p: what for first, what in rows for p in re.findall(r"`([^`]+/)`", first)}
    unlisted = []
    for f in source_files():
        if f.endswith("/__init__.py"):
            continue
        folder, name = f.rsplit("/", 1) if "/" in f else ("", f)
        named_in_its_folder_row = f"`{name}`" in by_dir.get(folder + "/", "")
        if f not in listed_paths and not named_in_its_folder_row:
            unlisted.append(f)
    assert unlisted == [], f"modules missing from README's 'What is where' table: {unlisted}"


def _imports(path) -> list[tuple[ast.AST, str, bool]]:
    """(node, imported module, inside a function?) for every import of a k3lite module in `path`."""
    tree = ast.parse(path.read_text())
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((child, a.name, in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module:
                found.append((child, child.module, in_function))
                found.extend((child, f"{child.module}.{a.name}", in_function) for a in child.names)  # from pkg import mod
            visit(child, inner)

    visit(tree, False)
    return found


def _module_name(f: str) -> str:
    return f.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def test_k3lite_has_no_import_cycle():
    files = [f for f in source_files() if f.startswith("k3lite/")]
    modules = {_module_name(f): f for f in files}
    graph = {m: sorted({name for _, name, _ in _imports(ROOT / f) if name in modules and name != m})
             for m, f in modules.items()}
    state, cycles = {}, []

    def walk(m, stack):
        state[m] = "open"
        for n in graph[m]:
            if state.get(n) == "open":
                cycles.append(" -> ".join(stack[stack.index(n):] + [n]))
            elif n not in state:
                walk(n, stack + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            walk(m, [m])
    assert cycles == [], f"import cycles: {cycles}"


def unexplained_local_imports(f: str) -> list[int]:
    lines = (ROOT / f).read_text().splitlines()
    bad = []
    for node, _, in_function in _imports(ROOT / f):
        if in_function and node.lineno not in bad:
            here, above = lines[node.lineno - 1], lines[node.lineno - 2].strip() if node.lineno > 1 else ""
            if "#" not in here and not above.startswith("#"):
                bad.append(node.lineno)
    return bad


def test_function_local_imports_say_why():
    offenders = {f: unexplained_local_imports(f) for f in source_files()}
    offenders = {f: lines for f, lines in offenders.items() if lines}
    assert offenders == {}, f"imports inside functions without a reason written beside them: {offenders}"


# ------------------------------------------------------------------------------------------- the layers
# bottom to top; a module may import its own layer and the layers below it, never one above
LAYERS = ("base", "model", "interconnect", "analytic", "experiments", "viz", "panels", "tour", "bench")


def layer_of(module: str) -> int | None:
    """The layer index of a k3lite module ('k3lite.model.kda.ops' -> 1); the package root counts as the model
    layer (it re-exports the config); None for anything outside k3lite."""
    parts = module.split(".")
    if parts[0] != "k3lite":
        return None
    if len(parts) == 1:
        return LAYERS.index("model")
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else None


def upward_imports(files) -> list[str]:
    bad = []
    for f in files:
        here = layer_of(_module_name(f))
        for node, name, _ in _imports(ROOT / f):
            there = layer_of(name)
            if here is not None and there is not None and there > here:
                bad.append(f"{f}:{node.lineno} ({LAYERS[here]}) imports {name} ({LAYERS[there]})")
    return sorted(set(bad))


def test_every_k3lite_module_sits_in_a_layer():
    stray = [f for f in source_files() if f.startswith("k3lite/") and f != "k3lite/__init__.py"
             and layer_of(_module_name(f)) is None]
    assert stray == [], f"modules outside the layer packages {LAYERS}: {stray}"


def test_layers_import_only_downward():
    files = [f for f in source_files() if f.startswith("k3lite/")]
    assert upward_imports(files) == []


def test_the_layer_check_catches_an_upward_import(tmp_path, monkeypatch):
    """The check above can fail: a model module importing the analytic layer is reported."""
    bad = ROOT / "k3lite" / "model" / "_upward_probe.py"
    bad.write_text("from k3lite.analytic.memory import weight_bytes\n")
    try:
        found = upward_imports(["k3lite/model/_upward_probe.py"])
    finally:
        bad.unlink()
    assert found and "(model) imports k3lite.analytic.memory (analytic)" in found[0]


def test_the_library_never_imports_streamlit():
    """Importing every k3lite module (a fresh interpreter) leaves Streamlit unloaded: the library runs without the
    app, and a page's Streamlit state never leaks into it."""
    script = ("import importlib, pkgutil, sys, k3lite\n"
              "mods = [m.name for m in pkgutil.walk_packages(k3lite.__path__, 'k3lite.') if not m.name.endswith('__main__')]\n"
              "for m in mods: importlib.import_module(m)\n"
              "print(len(mods), 'streamlit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    n, loaded = out.stdout.split()
    assert int(n) > 60 and loaded == "False", f"importing the {n} k3lite modules loaded Streamlit"


def test_paths_named_in_docs_and_docstrings_exist():
    """A docstring, comment or README line that names a source file names one that exists (kda.py became a
    package, pages/ became views/: the old names must not linger as directions to nowhere)."""
    docs = ["README.md", *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").glob("*.md")))]
    texts = {f: (ROOT / f).read_text() for f in source_files() + docs}
    stale = sorted({(f, p) for f, text in texts.items()
                    for p in re.findall(r"\b((?:k3lite|views)/[a-z0-9_/]+\.py)\b", text)
                    if not (ROOT / p).exists() and len(p.rsplit("/", 1)[1]) > len("x.py")})
    assert stale == [], f"files named that do not exist: {stale}"


# ------------------------------------------------------------------------------------------- size and words
MAX_MODULE_LINES = 450  # one idea a module: past this, a module has always held several (runs + storage + sentences)
TRACKER_REF = re.compile(r"\b[Ii]ssues? ?#?\d+|\bitem \d+ of #\d+|(?<![\w&/])#\d{1,3}\b(?!\w)")


def long_modules(files) -> dict[str, int]:
    counts = {f: len((ROOT / f).read_text().splitlines()) for f in files}
    return {f: n for f, n in counts.items() if n > MAX_MODULE_LINES}


MAX_PAGE_LINES = 200  # a page holds widgets and lays panels out (k3lite/panels does the work): past this it computes


def long_pages() -> dict[str, int]:
    pages = [f"views/{p.name}" for p in sorted((ROOT / "views").glob("*.py"))
             if p.name not in ("common.py", "registry.py", "__init__.py")]
    counts = {f: len((ROOT / f).read_text().splitlines()) for f in pages}
    return {f: n for f, n in counts.items() if n > MAX_PAGE_LINES}


def test_no_page_is_over_200_lines():
    assert long_pages() == {}


def test_no_library_module_is_over_450_lines():
    assert long_modules([f for f in source_files() if f.startswith("k3lite/")]) == {}


def test_the_size_check_catches_a_long_module():
    probe = ROOT / "k3lite" / "base" / "_long_probe.py"
    probe.write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    try:
        assert long_modules(["k3lite/base/_long_probe.py"]) == {"k3lite/base/_long_probe.py": MAX_MODULE_LINES + 1}
    finally:
        probe.unlink()


def tracker_references(text: str) -> list[str]:
    """Tracker numbers ("issue 16", "Issue 28 item 3", "#27"): a reader of the code has no tracker, so a comment
    says the reason itself. Colours (#1f77b4) and pull requests named with their repository (streamlit#16052) are
    not tracker numbers of this project."""
    return [m.group(0) for m in TRACKER_REF.finditer(text)]


def test_no_tracker_numbers_in_code_comments_or_test_names():
    tests = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.py"))
    tools = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tools").glob("*.py"))
    files = source_files() + tools + [f for f in tests if f != "tests/test_structure.py"]  # this file spells them out
    found = {f: refs for f in files if (refs := tracker_references((ROOT / f).read_text()))}
    assert found == {}


def test_the_tracker_check_reads_the_forms_used():
    assert tracker_references('"""Issue 28 item 3: it broke (issue 16, #27)."""') == ["Issue 28", "issue 16", "#27"]
    assert tracker_references("color='#1f77b4'; streamlit/streamlit#16052; x = 1  # see 3#4") == []
