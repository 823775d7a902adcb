"""The serving page as an engineer's tool: a deployment that does not run keeps its error in its own panel (the
frontier and the verdict still render)."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT


def _page(**params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "views" / "serving.py"), default_timeout=300)
    at.query_params.update(params)
    return at.run()


def _text(at) -> str:
    return " ".join(c.value for c in at.caption).replace("\\$", "$")


def test_an_invalid_deployment_keeps_its_error_local():
    at = _page(sv_gpu="H100 SXM")  # 64 x H100 at TP 1: the replicated bf16 non-expert weights overflow 80 GiB
    assert not at.exception, [e.message for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "TP >= 2" in errors[0] and "raise ep" not in errors[0], errors
    assert "no EP can fix it" in errors[0]
    assert len(at.get("plotly_chart")) >= 2  # the published-runs check and the frontier
    assert "is served cheapest on" in _text(at)  # the verdict
