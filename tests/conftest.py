import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("K3LITE_TEST", "1")

import torch  # noqa: E402

torch.set_num_threads(1)  # small matmuls: 1 thread is faster, and 2 oversubscribe a busy 2-core box badly

PAGE_FILES = sorted(p.name for p in (ROOT / "pages").glob("*.py") if p.name not in ("common.py", "__init__.py"))


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
