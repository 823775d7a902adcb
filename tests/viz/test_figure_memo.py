"""k3lite/viz/memo.py: a figure is built once per distinct input and shared; any changed input builds anew."""
from __future__ import annotations

import pathlib
import re
import threading

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from k3lite.viz.memo import FigureMemo, content_bytes
from k3lite.viz.moe import load_bars


CALLS: list = []  # every build, in order (a module global: an argument would change the key it is part of)


@pytest.fixture(autouse=True)
def fresh_calls():
    CALLS.clear()


def build(*args, **kwargs):
    CALLS.append(args)
    return object()


def build_tagged(tag: int):
    CALLS.append(tag)
    return (tag, object())


def test_equal_inputs_share_one_figure_and_build_once():
    memo, calls = FigureMemo(), CALLS
    a = memo(build, np.arange(5), {"x": 1.5}, title="t")
    b = memo(build, np.arange(5), {"x": 1.5}, title="t")
    assert a is b and len(calls) == 1 and (memo.hits, memo.misses) == (1, 1)


@pytest.mark.parametrize("changed", [
    lambda: (np.array([0, 1, 2, 3, 5]), {"x": 1.5}, {"title": "t"}),  # one array element
    lambda: (np.arange(5.0), {"x": 1.5}, {"title": "t"}),  # same numbers, another dtype
    lambda: (np.arange(5), {"x": 1.5000001}, {"title": "t"}),
    lambda: (np.arange(5), {"x": 1.5}, {"title": "u"}),  # a keyword argument
    lambda: (torch.arange(5), {"x": 1.5}, {"title": "t"}),  # a tensor is not the array
])
def test_any_changed_input_builds_a_new_figure(changed):
    memo, calls = FigureMemo(), CALLS
    first = memo(build, np.arange(5), {"x": 1.5}, title="t")
    arr, d, kw = changed()
    assert memo(build, arr, d, **kw) is not first and len(calls) == 2


def test_two_builders_with_equal_arguments_do_not_share():
    memo = FigureMemo()
    loads = {"none": [3, 1, 0, 4], "quantile": [2, 2, 2, 2]}
    bars = memo(load_bars, loads)
    other = memo(lambda x: ("other", x), loads)  # a lambda cannot be pickled by name: built, not cached
    assert other == ("other", loads) and memo.uncached == 1 and memo(load_bars, loads) is bars


def test_the_memo_is_bounded_and_keeps_the_most_recent():
    memo, calls = FigureMemo(max_entries=3), CALLS
    figs = [memo(build, i) for i in range(5)]
    assert len(memo) == 3
    assert memo(build, 4) is figs[4] and len(calls) == 5  # still there
    assert memo(build, 0) is not figs[0] and len(calls) == 6  # evicted, built again
    with pytest.raises(ValueError, match="max_entries"):
        FigureMemo(max_entries=0)


def build_array(n: int):
    CALLS.append(n)
    return np.zeros(n, dtype=np.uint8)  # content_bytes: n


def test_the_memo_is_bounded_by_the_bytes_its_figures_hold():
    """256 slots bounded no memory: a KDA animation holds ~100x a bar chart's numbers. The byte budget evicts the
    least recently used until the held figures fit; one figure over the whole budget is returned, kept alone."""
    memo, calls = FigureMemo(max_entries=100, max_bytes=3000), CALLS
    figs = [memo(build_array, 1000 + i) for i in range(5)]  # 1000..1004 bytes each: two fit in 3000
    assert len(memo) == 2 and memo.bytes == 1003 + 1004 <= 3000
    assert memo(build_array, 1004) is figs[4] and len(calls) == 5  # still there
    assert memo(build_array, 1000) is not figs[0] and len(calls) == 6  # evicted, built again
    big = memo(build_array, 5000)
    assert big.size == 5000 and len(memo) == 1 and memo.bytes == 5000
    small = memo(build_array, 10)
    assert len(memo) == 1 and memo.bytes == 10 and memo(build_array, 10) is small
    with pytest.raises(ValueError, match="max_bytes"):
        FigureMemo(max_bytes=0)


def test_content_bytes_tracks_what_a_figure_sends():
    """The budget's measure stays within 1.5x of the figure's JSON either way, for an animation (frames), a heatmap
    stage of the forward pass, the forward pass's flip-book and a bar chart; and it sees the frames."""
    from k3lite.base.tokenizer import token_label, validate_prompt
    from k3lite.model.checkpoint import load_lite_model
    from k3lite.viz.kda_state import kda_layers, state_animation, trained_kda_run
    from k3lite.viz.model import stage_figure, stages

    model, _ = load_lite_model()
    ids = list(validate_prompt("the delta rule writes and forgets " * 2, max_bytes=256))
    r = trained_kda_run(model, ids, kda_layers(model)[0])._asdict()
    anim = state_animation(r["states"][:, 0], r["correction"][:, 0], r["v"][:, 0], r["beta"][:, 0],
                           [token_label(b) for b in ids], "t")
    with torch.inference_mode():
        trace = model(torch.tensor([ids]), trace=True).trace
    embed = stage_figure(trace, stages(trace)[1])
    bars = load_bars({"a": np.arange(1.0, 33.0), "b": np.arange(33.0, 1.0, -1)})
    for fig in (anim, embed, bars):
        ratio = content_bytes(fig) / len(fig.to_json())
        assert 1 / 1.5 <= ratio <= 1.5, (fig.layout.title.text, ratio)
    still = go.Figure(data=anim.data, layout=anim.layout)  # the animation's first picture, without its frames
    assert len(anim.frames) > 10 and content_bytes(anim) > 10 * content_bytes(still)


def test_a_builder_error_is_raised_and_nothing_is_cached():
    memo = FigureMemo()

    def boom(x):
        raise ValueError("bad input")
    with pytest.raises(ValueError, match="bad input"):
        memo(boom, 1)
    assert len(memo) == 0


def test_concurrent_sessions_get_the_figure_for_their_own_inputs():
    memo, seen, errors = FigureMemo(max_entries=8), {}, []

    def session(i):
        try:
            for _ in range(50):
                fig = memo(build_tagged, i % 12)
                if fig[0] != i % 12:
                    errors.append((i, fig))
            seen[i] = True
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=session, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(seen) == 24 and len(memo) <= 8


def test_every_page_figure_builder_goes_through_the_memo_or_says_why():
    """A page figure built outside the memo costs every rerun its build time again; the exceptions are
    figures a page mutates or that change during one run (the lab's live training curves)."""
    allowed = {"curves_figure", "fig", "map_figure"}  # live training curves; home/AttnRes build then plot
    views = pathlib.Path(__file__).resolve().parents[2] / "views"
    direct = [f"{p.name}: {m.group(1)}" for p in views.glob("*.py")
              for m in re.finditer(r"plotly_chart\((?:with_evidence\()?([a-z_]+)(\.figure)?\(?", p.read_text())
              if m.group(1) not in allowed | {"shared_figure"} and not m.group(2)]  # a panel's figure: below
    assert not direct, direct
    # a panel (k3lite/panels) builds its figure through the memo: no module there builds one by calling a builder
    # bare inside a Panel(...) without shared_figure
    panels = pathlib.Path(__file__).resolve().parents[2] / "k3lite" / "panels"
    bare = [f"{p.name}: {m.group(1)}" for p in panels.glob("*.py")
            for m in re.finditer(r"Panel\((?!shared_figure)([a-z_]+_figure)\(", p.read_text())]
    assert not bare, bare
