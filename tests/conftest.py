import re
import threading
from contextlib import contextmanager
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

torch.set_num_threads(1)  # small matmuls: 1 thread is faster, and 2 oversubscribe a busy 2-core box badly

from views.registry import PAGES  # noqa: E402  (the one page list app.py navigates)

# every page app.py's st.navigation lists, as "views/x.py", in navigation order
APP_PAGE_PATHS = [p.file for p in PAGES]
PAGE_FILES = sorted(p.name for p in (ROOT / "views").glob("*.py") if p.name not in ("common.py", "registry.py", "__init__.py"))


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
    from k3lite import guards

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
