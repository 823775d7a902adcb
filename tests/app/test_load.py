"""A few real sessions on a real server (`python -m k3lite.bench load`, short): no errors, no cross-talk, bounded
RSS. Latency is printed by the bench, never asserted here. The detectors are checked to be able to fail."""
from __future__ import annotations

import pytest
from streamlit.proto.Slider_pb2 import Slider
from streamlit.proto.WidgetStates_pb2 import WidgetState

from tools import bench_load
from tools.bench_load import Findings
from tools.streamlit_session import RunResult

RSS_BOUND_BYTES = 3 * 10**9  # issue target for a class of 30 after 10 minutes; a few sessions stay far below


def test_percentile_and_the_url_echo():
    assert bench_load.percentile([3.0, 1.0, 2.0, 4.0, 5.0], 0.5) == 3.0
    assert bench_load.percentile([0.0, 10.0], 0.95) == pytest.approx(9.5)
    q = "moe_experts=64&moe_prompt=the+k3load-3-00ab12+cat"
    assert bench_load.echoed(q, "moe_prompt", "the k3load-3-00ab12 cat") is True
    assert bench_load.echoed(q, "moe_prompt", "the k3load-4-00ab12 cat") is False  # another session's text
    assert bench_load.echoed(q, "moe_experts", 64) is True and bench_load.echoed(q, "moe_experts", 65) is False
    assert bench_load.echoed(q, "moe_top_k", 8) is None  # not mirrored: nothing to check
    assert bench_load.widget_key("$$ID-84aceb92-moe_experts") == "moe_experts"
    assert bench_load.widget_key("$$ID-84aceb92-None") is None


def test_another_sessions_marker_is_cross_talk():
    """The check can fail: a frame carrying session 4's marker, received by session 3, is reported."""
    findings = Findings()
    r = RunResult("moe", 0.1, [], [], {}, "", {"k3load-4-00ab12"})
    bench_load.note(findings, 3, r, "typing")
    assert findings.cross_talk and "k3load-4-00ab12" in findings.cross_talk[0]
    assert bench_load.MARKER_RE.search(b"...k3load-17-a1b2c3...").group(1) == b"17"


def test_a_visitor_moves_every_kind_of_control_within_range():
    slider = Slider(id="$$ID-a-s", label="E", min=8, max=896, step=1, data_type=Slider.INT, default=[64])
    rng = bench_load.random.Random(0)
    held: dict = {}
    for _ in range(50):
        wid, ws, _what, value = bench_load.choose_action({"$$ID-a-s": ("slider", slider)}, held, rng, "k3load-1-000000")
        assert isinstance(ws, WidgetState) and 8 <= value <= 896 and ws.double_array_value.data[0] == value
        assert held["$$ID-a-s"] == value  # the next move starts where this one left the slider


def test_a_refusal_later_than_the_stated_wait_is_an_error():
    assert bench_load.late_refusal(2, 31.0, True, 30.0) is None, "within the margin for rendering"
    assert bench_load.late_refusal(2, 30.0 + bench_load.HEAVY_MARGIN_S + 1, True, 30.0).startswith("session 2:")
    assert bench_load.late_refusal(2, 300.0, False, 30.0) is None, "a press that ran may take its training time"


def test_the_slowest_reruns_name_their_page_and_control():
    R = bench_load.Record
    recs = [R(0, "moe", "rerun", 3.0, "slider E = 896"), R(1, "moe", "rerun", 0.2, "selectbox method"),
            R(2, "moe", "first", 9.0, "open"), R(0, "kda", "rerun", 0.5, "slider head = 1")]
    rows = bench_load.slowest_reruns(recs, per_page=1)
    assert rows == [{"page": "moe", "seconds": 3.0, "action": "slider E = 896"},
                    {"page": "kda", "seconds": 0.5, "action": "slider head = 1"}], "reruns only, slowest first"


@pytest.mark.timeout(600)
def test_a_few_sessions_on_a_real_server_see_no_errors_and_no_cross_talk():
    args = bench_load.parse_args(["--sessions", "4", "--heavy", "1", "--heavy-steps", "10", "--minutes", "0.4",
                                  "--pages", "moe,kda", "--think", "0.5,1.5", "--ramp", "2"])
    rep = bench_load.measure(args)
    bench_load.print_report(rep)  # shown with -s; never asserted
    assert not rep["errors"], rep["errors"]
    assert not rep["cross_talk"], rep["cross_talk"]
    assert rep["reruns"] >= 3, "the sessions hardly moved a control"
    assert rep["heavy"]["presses"] >= 1, "the heavy session never got to press Train"
    assert rep["own_echoes_verified"] >= 1, "no own value was found echoed: the cross-talk check saw nothing"
    peak = max(s["bytes"] for s in rep["rss"])
    assert 0 < peak < RSS_BOUND_BYTES, peak
