"""The architecture map as a flip-book of the forward pass's stages, stepped in the browser (no Streamlit).

`stepper_map` takes a map built without a highlight and adds one Plotly frame per stage (k3lite.viz.model.stages):
each frame moves the highlight band to that stage's row(s) and names the stage in the title. A slider under the
map plays the frames in the browser, so stepping through the 42 stages of the lite model costs no server round
trip. The band is drawn as architecture_map draws it (same shape, same colour).

`at_stage` re-opens a built flip-book on another stage by copying that stage's frame into the figure (a few ms):
building the flip-book (its 42 frames) is the expensive part and happens once per prompt.
"""
from __future__ import annotations

import copy

import plotly.graph_objects as go

from k3lite.model.config import K3Config
from k3lite.viz.archmap import BRACKET_X, LANE, layout
from k3lite.viz.style import HIGHLIGHT_LINE, HIGHLIGHT_MARKER, color


def stage_rows(cfg: K3Config, stage_list) -> list[list[int]]:
    """For each stage, the map rows its nodes sit on (the rows the band covers)."""
    nodes = layout(cfg).nodes
    return [sorted({n.row for n in nodes if (n.stage, n.layer) == (s.kind, s.layer) and n.row >= 0})
            for s in stage_list]


def stage_points(cfg: K3Config, stage_list) -> list[tuple[list[float], list[int]]]:
    """For each stage, (x, y) of its nodes on the map: the ring that marks the stage inside its row."""
    nodes = layout(cfg).nodes
    out = []
    for s in stage_list:
        on = [n for n in nodes if (n.stage, n.layer) == (s.kind, s.layer) and n.row >= 0]
        out.append(([n.x for n in on], [n.row for n in on]))
    return out


RING_NAME = "current stage"  # the ring trace's name (the browser tests find the marked stage by it)


def _ring(points: tuple[list[float], list[int]]) -> go.Scatter:
    return go.Scatter(x=points[0], y=points[1], mode="markers", hoverinfo="skip", showlegend=False, name=RING_NAME,
                      marker=dict(size=34, color=HIGHLIGHT_MARKER["color"], line=dict(width=3, color=HIGHLIGHT_LINE["color"])))


def _band(row: int) -> dict:
    return dict(type="rect", x0=LANE + 0.1, x1=BRACKET_X - 0.2, y0=row - 0.45, y1=row + 0.45, layer="below",
                line=dict(width=0), fillcolor=color("baseline"), opacity=0.35)


def stepper_map(base: go.Figure, cfg: K3Config, stage_list, start: int = 0) -> go.Figure:
    """`base` (an architecture map of `cfg` with no highlight) with a browser-side slider over `stage_list`."""
    if not 0 <= start < len(stage_list):
        raise ValueError(f"start must be a stage in 0..{len(stage_list) - 1}, got {start}")
    fixed = [s.to_plotly_json() for s in base.layout.shapes]
    rows = stage_rows(cfg, stage_list)
    n = len(stage_list)
    titles = [f"stage {i + 1}/{n} · {s.title}" for i, s in enumerate(stage_list)]
    points = stage_points(cfg, stage_list)
    fig = go.Figure(base)
    fig.add_trace(_ring(points[0]))
    ring = len(fig.data) - 1
    # a frame changes the band (shapes) and the ring (its own trace); the stage's name is the slider's label, shown
    # as its current value (a frame's title or annotations are not redrawn by Plotly.animate; shapes and traces are).
    # The frames are plain dicts added without plotly's validation (it took ~0.3 s for 42 frames, most of a new
    # prompt's rerun): each is the validated ring of the first stage with other coordinates, and its bands
    ring_json = fig.data[ring].to_plotly_json()
    frames = [dict(name=str(i), data=[{**ring_json, "x": list(points[i][0]), "y": list(points[i][1])}], traces=[ring],
                   layout=dict(shapes=[_band(r) for r in rows[i]] + fixed)) for i in range(n)]
    fig.update_layout(
        title=None,
        sliders=[dict(active=0, x=0, len=1, y=1.0, yanchor="bottom", pad=dict(t=0, b=30),
                      currentvalue=dict(prefix="", font=dict(size=12, color=HIGHLIGHT_LINE["color"])),
                      font=dict(size=1, color=HIGHLIGHT_MARKER["color"]),  # 42 tick labels would overprint: hidden
                      steps=[dict(method="animate", label=titles[i],
                                  args=[[str(i)], dict(mode="immediate", frame=dict(duration=0, redraw=True),
                                                       transition=dict(duration=0))])
                             for i in range(n)])])
    # the slider takes the top margin; the figure grows by what the margin grows so the map's rows keep their
    # spacing (a fixed height squeezed them: 26 px rows for 25 px boxes at 390 px)
    old_top = base.layout.margin.t if base.layout.margin.t is not None else 80
    if base.layout.height:
        fig.update_layout(height=base.layout.height + max(0, 90 - old_top))
    fig.update_layout(margin=dict(t=90))
    # opened on `start` from its own frame, as `at_stage` re-opens it later (`_opened`): one way to show a stage, so the
    # figure as first drawn marks it exactly as the slider would (a band merged by update_layout once went missing)
    return go.Figure(_opened(fig.to_dict(), frames[start], start) | {"frames": frames}, _validate=False)


SHOWN_TOP = 40  # px above the map opened without its slider: the stage's name


def at_stage(fig: go.Figure, start: int, slider: bool = True) -> go.Figure:
    """A flip-book from `stepper_map` opened on stage `start`: the same figure `stepper_map(..., start)` builds (its
    band, ring and slider position are frame `start`'s), copied from `fig` without rebuilding the frames.

    `slider=False`: the map only shows stage `start`, named in its title, with no slider and no frames, for a page
    whose own control picks the stage (two pickers, one in the browser and one on the server, drifted apart).

    Opening on a stage changes no frame, so the copy shares `fig`'s validated frames: plotly validates every frame
    again in `go.Figure(...)`, even with `_validate=False` (~40 ms for the lite model's 42 frames on every stage
    move, against ~5 ms for the rest). Neither figure is mutated afterwards (both are only read by st.plotly_chart).
    """
    n = len(fig.frames)
    if not 0 <= start < n:
        raise ValueError(f"start must be a stage in 0..{n - 1}, got {start}")
    # every part was validated when `fig` was built; the deep copies are what fig.to_dict() makes of data and layout
    d = _opened({"data": copy.deepcopy(fig._data), "layout": copy.deepcopy(fig._layout)},
                fig.frames[start].to_plotly_json(), start)
    if not slider:  # the slider's top margin becomes the stage's title
        label = d["layout"].pop("sliders")[0]["steps"][start]["label"]
        spare = d["layout"]["margin"]["t"] - SHOWN_TOP
        d["layout"]["margin"]["t"] = SHOWN_TOP
        if d["layout"].get("height"):
            d["layout"]["height"] -= spare
        d["layout"]["title"] = dict(text=label, x=0, xanchor="left", font=dict(size=13, color=HIGHLIGHT_LINE["color"]))
        return go.Figure(d, _validate=False)
    opened = go.Figure(d, _validate=False)
    opened._frame_objs = fig._frame_objs  # plotly 7.1's store of a figure's frames (what to_dict reads)
    return opened


def _opened(d: dict, frame: dict, start: int) -> dict:
    """A flip-book's dict (data, layout) shown at stage `start`, in place: its band, ring and slider position are
    those of `frame`, the flip-book's frame `start` (copied, so the figure and the frame share no dict)."""
    d["data"][frame["traces"][0]] = copy.deepcopy(frame["data"][0])  # the ring
    d["layout"]["shapes"] = copy.deepcopy(frame["layout"]["shapes"])  # the band (and the map's fixed shapes)
    d["layout"]["sliders"][0]["active"] = start
    return d
