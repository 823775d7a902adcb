"""Server configuration for public visitors: every option in .streamlit/config.toml is a real Streamlit
option with a valid value, and the safety-relevant ones are set; nothing loads pickles.

(The browser suite also checks the live server hands out an XSRF cookie and redacts error details.)
"""
from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest
import torch
from streamlit import config

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / ".streamlit" / "config.toml"
ENUMS = {  # allowed values, as listed in streamlit/config.py's option descriptions (streamlit 1.67)
    "client.showErrorDetails": {o.value for o in config.ShowErrorDetailsConfigOptions},
    "client.toolbarMode": {"auto", "developer", "viewer", "minimal"},
    "theme.base": {"light", "dark"},
    "server.fileWatcherType": {"auto", "watchdog", "poll", "none"},
    "server.xsrfCookieSameSite": {"lax", "strict", "none"},
}


def flat(table: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in table.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


OPTIONS = flat(tomllib.loads(CONFIG.read_text()))


def test_config_file_exists_and_is_not_empty():
    assert OPTIONS, f"{CONFIG} sets nothing"


@pytest.mark.parametrize("key", sorted(OPTIONS))
def test_every_option_is_a_streamlit_option_with_a_valid_value(key):
    template = config.get_config_options()  # public: name -> ConfigOption (type, deprecated)
    assert key in template, f"{key} is not a Streamlit option (see streamlit/config.py)"
    option, value = template[key], OPTIONS[key]
    if option.type is bool:
        assert isinstance(value, bool), f"{key} must be true/false, got {value!r}"
    elif option.type is int:
        assert isinstance(value, int) and not isinstance(value, bool), f"{key} must be an integer, got {value!r}"
    elif option.type is str:
        assert isinstance(value, str), f"{key} must be a string, got {value!r}"
    if key in ENUMS:
        assert value in ENUMS[key], f"{key} = {value!r}; allowed: {sorted(ENUMS[key])}"
    assert not option.deprecated, f"{key} is deprecated: {option.deprecation_text}"


def test_settings_for_public_visitors():
    assert OPTIONS.get("browser.gatherUsageStats") is False, "usage statistics must be off"
    assert OPTIONS.get("server.enableXsrfProtection", True) is True, "XSRF protection must stay on"
    assert OPTIONS.get("client.showErrorDetails") in ("none", "type"), "visitors must not see tracebacks/messages"
    assert OPTIONS.get("server.maxUploadSize", 200) <= 10, "no page takes uploads: keep the limit small (MB)"
    assert OPTIONS.get("server.enableCORS", True) is True


def test_settings_for_a_class_on_one_server():
    """Measured with py-spy under `python -m k3lite.bench load` (30 sessions, 2 cores): a full gc.collect(2) after
    every script run took 37% of the server's CPU and the source watcher's path resolution 20%."""
    assert OPTIONS.get("runner.postScriptGC", True) is False, "no full garbage collection after every rerun"
    assert OPTIONS.get("server.fileWatcherType", "auto") == "none", "no source watching on a class server"


def test_streamlit_reads_the_file_as_written(monkeypatch):
    """Parsed by Streamlit itself from the repo root (where `streamlit run app.py` starts)."""
    monkeypatch.chdir(ROOT)
    try:
        config.get_config_options(force_reparse=True)
        for key, value in OPTIONS.items():
            assert config.get_option(key) == value, key
            assert str(CONFIG) in config.get_where_defined(key) or config.get_where_defined(key).endswith(
                ".streamlit/config.toml"), (key, config.get_where_defined(key))
    finally:
        config.get_config_options(force_reparse=True)


def _calls(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def test_nothing_unpickles():
    """Checkpoints are safetensors; torch.load keeps its weights_only=True default (torch >= 2.6)."""
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    assert (major, minor) >= (2, 6), "torch < 2.6 defaults torch.load to weights_only=False"
    offenders = []
    for path in [ROOT / "app.py", *(ROOT / "k3lite").rglob("*.py"), *(ROOT / "views").glob("*.py")]:
        for node in _calls(path):
            if isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg == "weights_only" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} weights_only=False")
            else:
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
                if any(n and n.split(".")[0] in ("pickle", "dill", "joblib", "cloudpickle") for n in names):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports a pickle library")
    assert not offenders, offenders
    src = (ROOT / "k3lite" / "model" / "checkpoint.py").read_text()
    assert "safetensors" in src



def test_the_favicon_is_a_file_this_server_serves(monkeypatch):
    """page_icon=":material/memory:" makes Streamlit's frontend fetch the icon from fonts.gstatic.com
    (it fails offline). The page icon must be an image file shipped in the repository, not a ":material/" or
    emoji shortcode, nor a URL. (tests/app/test_browser_legibility.py also checks that loading a page requests
    nothing from another host.)"""
    import streamlit as st
    from PIL import Image
    from streamlit.testing.v1 import AppTest

    captured = {}
    real = st.set_page_config

    def spy(*args, **kwargs):
        captured.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(st, "set_page_config", spy)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    icon = captured.get("page_icon")
    assert isinstance(icon, str) and not icon.startswith((":", "http")), f"page_icon {icon!r} is fetched from a CDN"
    path = Path(icon).resolve()
    assert path.is_file() and ROOT in path.parents, f"{icon} is not a file in the repository"
    with Image.open(path) as im:
        assert im.size[0] >= 32 and im.size[0] == im.size[1]
