"""The ONE place the tests touch Streamlit internals (private names), each for a reason public API cannot serve.

Pinned: these names are checked against the Streamlit version requirements.txt pins; importing this module
under another version fails with this list, so whoever upgrades re-checks each use (the app itself uses
only public API; tests/app/test_load.py drives a real server over the public websocket protocol instead).

1. `make_apptest_thread_safe` (tests/app/test_concurrency.py). AppTest is built for one session at a time:
   each run swaps a mock `Runtime` in (`Runtime.instance`/`exists`) and sets it to None at the end, pulling
   it from under a concurrent run ("Runtime hasn't been created!"); it patches `config.get_option` for
   `global.appTest` with mock.patch (`app_test.patch_config_options`), which concurrent runs restore out of
   order (widgets then miss their format_func registration: KeyError in get_widget_states); and it gives
   every AppTest its own `ScriptCache`, so pages compile on many threads at once, where CPython 3.11's
   parser is not thread-safe ("SystemError: AST constructor recursion depth mismatch"). A real server has
   one Runtime and one ScriptCache whose lock serialises compiles; this recreates that. Public alternative
   for "many sessions at once": the real-server load test (tests/app/test_load.py); kept because only
   in-process sessions let a test look at the cached model afterwards (2).
2. `cached_modules` reads `cache_resource_api._resource_caches` to find every nn.Module an
   st.cache_resource entry holds, so the test can hash the shared model's weights before and after the
   crowd without a hard-coded list. Streamlit has no public API to enumerate cached values.
3. `send_display_string` (tests/app/test_fuzz_pages.py): AppTest's choice widgets serialise a *value* through
   the page's format_func; a browser sends the option's display string. To fuzz what the browser really
   sends, the widget's `_widget_state` property is overridden in a subclass. No public AppTest hook sets
   the raw string.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path
from unittest.mock import MagicMock

import streamlit
import torch
from streamlit import config
from streamlit.components.v2.component_manager import BidiComponentManager
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.runtime import Runtime
from streamlit.runtime.caching.cache_resource_api import _resource_caches
from streamlit.runtime.caching.storage.dummy_cache_storage import MemoryCacheStorageManager
from streamlit.runtime.dataframe_source_manager import DataframeSourceManager
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import app_test

REQUIREMENTS = Path(__file__).resolve().parent.parent / "requirements.txt"
PINNED = next(line.split("==", 1)[1].strip() for line in REQUIREMENTS.read_text().splitlines()
              if line.startswith("streamlit=="))
if streamlit.__version__ != PINNED:
    raise ImportError(
        f"tests/streamlit_internals.py was checked against streamlit {PINNED} (requirements.txt), this is "
        f"{streamlit.__version__}: re-check Runtime.instance/exists, app_test.patch_config_options, "
        "ScriptCache.get_bytecode, cache_resource_api._resource_caches and the AppTest widgets' _widget_state, "
        "then update the pin")


# ------------------------------------------------------------------------------------------ (1)
def make_apptest_thread_safe(monkeypatch) -> None:
    """One shared fallback Runtime, `global.appTest` on for the whole test, one process-wide compile lock."""
    fallback = MagicMock(spec=Runtime)  # built as AppTest builds its per-run mock
    fallback.media_file_mgr = MediaFileManager(MemoryMediaFileStorage("/mock/media"))
    fallback.cache_storage_manager = MemoryCacheStorageManager()
    fallback.dataframe_source_mgr = DataframeSourceManager()
    fallback.bidi_component_registry = BidiComponentManager()
    monkeypatch.setattr(Runtime, "instance", classmethod(lambda cls: cls._instance or fallback))
    monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: True))
    real_get_option = config.get_option

    def get_option(key):
        return True if key == "global.appTest" else real_get_option(key)

    @contextmanager
    def no_patch(_overrides):
        yield

    monkeypatch.setattr(config, "get_option", get_option)
    monkeypatch.setattr(app_test, "patch_config_options", no_patch)
    compile_lock = threading.Lock()
    real_get_bytecode = ScriptCache.get_bytecode

    def get_bytecode(self, script_path):
        with compile_lock:
            return real_get_bytecode(self, script_path)

    monkeypatch.setattr(ScriptCache, "get_bytecode", get_bytecode)


# ------------------------------------------------------------------------------------------ (2)
def _modules_in(value, depth: int = 0):
    if isinstance(value, torch.nn.Module):
        yield value
    elif depth < 3 and isinstance(value, (tuple, list)):
        for v in value:
            yield from _modules_in(v, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for v in value.values():
            yield from _modules_in(v, depth + 1)


def cached_modules() -> dict[str, torch.nn.Module]:
    """Every nn.Module held (directly or in a tuple/list/dict) by an st.cache_resource entry."""
    with _resource_caches._caches_lock:
        caches = [(fkey, cache) for per_session in _resource_caches._function_caches.values()
                  for fkey, cache in per_session.items()]
    found = {}
    for fkey, cache in caches:
        with cache._mem_cache_lock:
            entries = list(cache._mem_cache.items())
        for vkey, result in entries:
            for i, module in enumerate(_modules_in(result.value)):
                found[f"{cache.display_name}:{fkey[:8]}:{vkey[:8]}:{i}:{type(module).__name__}"] = module
    return found


# ------------------------------------------------------------------------------------------ (3)
def _raw_state(self) -> WidgetState:
    ws = WidgetState()
    ws.id = self.id
    if isinstance(self._raw, str):
        ws.string_value = self._raw
    else:
        ws.string_array_value.data[:] = self._raw
    return ws


_RAW_CLASSES: dict[type, type] = {}


def send_display_string(w, raw: str | list[str]) -> None:
    """Make AppTest widget `w` send the display string(s) `raw` of the chosen option(s), as the browser does."""
    base = type(w)
    if base not in _RAW_CLASSES:
        _RAW_CLASSES[base] = type(f"Raw{base.__name__}", (base,), {"_widget_state": property(_raw_state)})
    w.__class__ = _RAW_CLASSES[base]
    w._raw = raw
