import inspect
import os
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

import torch  # noqa: E402

torch.set_num_threads(1)  # small matmuls: 1 thread is faster, and 2 oversubscribe a busy 2-core box badly

# Pages send a lazy expander's body only once it is opened (views/common.py lazy_expander); the tests read every
# body on the first run, as before. tests/app/test_app_pages.py unsets this to check the lazy path itself.
os.environ["K3LITE_EXPANDERS"] = "open"

from views.registry import PAGES  # noqa: E402  (the one page list app.py navigates)

# every page app.py's st.navigation lists, as "views/x.py", in navigation order
APP_PAGE_PATHS = [p.file for p in PAGES]
# views/ also holds the shared helpers (not pages): common.py, levels.py, registry.py, and the Practice page's parts
HELPER_FILES = ("common.py", "registry.py", "__init__.py", "practice_ui.py", "homework_ui.py", "levels.py")
PAGE_FILES = sorted(p.name for p in (ROOT / "views").glob("*.py") if p.name not in HELPER_FILES)


# ------------------------------------------------------------------------------------------- the lanes
# Markers split the suite into a fast lane (unit + kernel-vs-reference: `python -m pytest -m "not slow"`) and the
# rest. Set here from what a test does, so a new test lands in the right lane without remembering a decorator:
#   page     renders a page (Streamlit's AppTest, or a test helper that does)
#   browser  drives Chromium against a live server
#   load     starts servers / many sessions, or times the app (the load and app benches' own tests)
#   slow     any of the three
BROWSER_MODULES = {"test_browser", "test_browser_legibility", "test_browser_tour"}
LOAD_MODULES = {"test_load", "test_bench_app", "test_concurrency", "test_class_deploy", "test_homework_load"}
PAGE_SIGNS = ("AppTest", "page_figures(", "render_page(", "run_page(")


def _lane(item) -> str | None:
    module = item.module.__name__.rsplit(".", 1)[-1] if getattr(item, "module", None) else ""
    if module in BROWSER_MODULES or {"browser", "server", "landed"} & set(getattr(item, "fixturenames", ())):
        return "browser"
    if module in LOAD_MODULES:
        return "load"
    try:
        source = inspect.getsource(item.function)
    except (OSError, TypeError, AttributeError):
        return None
    return "page" if any(sign in source for sign in PAGE_SIGNS + _page_helpers(item.module)) else None


def _page_helpers(module) -> tuple[str, ...]:
    """'name(' for each helper function or fixture of a test module that renders a page (its source uses AppTest),
    so a test calling it is a page test too."""
    if module is None:
        return ()
    found = []
    for name, obj in vars(module).items():
        fn = getattr(obj, "__wrapped__", obj)
        if name.startswith("test_") or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
            continue
        try:
            if "AppTest" in inspect.getsource(fn):
                found += [f"{name}(", f"{name},", f"{name})"]  # called, or requested as a fixture
        except (OSError, TypeError):
            continue
    return tuple(found)


def pytest_collection_modifyitems(config, items):
    for item in items:
        lane = _lane(item)
        if lane:
            item.add_marker(getattr(pytest.mark, lane))
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="module")
def full_error_details():
    """AppTest reads .streamlit/config.toml (details redacted for visitors); tests want the real message."""
    from streamlit import config

    before = config.get_option("client.showErrorDetails")
    config.set_option("client.showErrorDetails", "full")
    yield
    config.set_option("client.showErrorDetails", before)


@contextmanager
def heavy_slot_taken(what: str = "another visitor's job", hold_s: float = 120):
    """Another session holds the heavy-work slot (in a thread) for the duration of the block."""
    from k3lite.base import guards

    started, release = threading.Event(), threading.Event()

    def hold():
        with guards.heavy_work(what, timeout_s=5):
            started.set()
            release.wait(hold_s)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert started.wait(10), "could not take the heavy-work slot"
        yield
    finally:
        release.set()
        holder.join(10)
