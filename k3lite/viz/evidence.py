"""A figure's evidence in its hover: every trace a reader can hover says what kind of number it shows.

`with_evidence(fig, ev)` adds one grey line, "ᵈ derived: k3lite.analytic.ledger.ledger", to the hover of every
trace not tagged yet (a builder may tag some traces itself, e.g. measured points beside a model's line, with
`tag_trace`). Traces with hoverinfo "skip" or "none" (decoration) are left alone.
"""
from __future__ import annotations

from k3lite.base.evidence import Evidence, kind_of
from k3lite.viz.style import NEUTRAL

# the hover a trace type shows when it has no hovertemplate of its own, written as a template
_DEFAULT_HOVER = {
    "heatmap": "%{x}, %{y}: %{z}", "contour": "%{x}, %{y}: %{z}", "histogram2d": "%{x}, %{y}: %{z}",
    "pie": "%{label}: %{value}", "sunburst": "%{label}: %{value}", "treemap": "%{label}: %{value}",
    "icicle": "%{label}: %{value}", "funnel": "%{y}: %{x}", "waterfall": "%{x}: %{y}",
    "sankey": None, "table": None, "parcoords": None, "indicator": None,
}
_HIDDEN = ("skip", "none")


def _line(ev: Evidence) -> str:
    source = ev.source if len(ev.source) <= 90 else ev.source[:87] + "…"
    return f"<span style='color:{NEUTRAL}'>{ev.marker} {ev.kind}: {source}</span>"


def is_hoverable(trace) -> bool:
    """Whether a reader can hover this trace (not decoration, not a trace type without a hover template)."""
    info = getattr(trace, "hoverinfo", None)
    if isinstance(info, str) and info in _HIDDEN:
        return False
    return _DEFAULT_HOVER.get(trace.type, "") is not None


def tag_trace(trace, ev: Evidence):
    """Add `ev`'s line to one trace's hover (its own template kept), once. Returns the trace."""
    if not is_hoverable(trace):
        return trace
    template = trace.hovertemplate
    if isinstance(template, (list, tuple)):  # one template per point
        trace.hovertemplate = [_tagged(t, ev) for t in template]
        return trace
    if template and kind_of(template):
        return trace  # tagged already
    if not template:
        base = _DEFAULT_HOVER.get(trace.type)
        if base is None:  # scatter, bar, box, ...: their x and y, and the trace's name in the side box
            orientation = getattr(trace, "orientation", None)
            base = "%{y}: %{x}" if orientation == "h" else "%{x}: %{y}"
        extra = "%{fullData.name}" if trace.name else ""
        template = f"{base}<extra>{extra}</extra>"
    trace.hovertemplate = _tagged(template, ev)
    return trace


def _tagged(template: str, ev: Evidence) -> str:
    if kind_of(template or ""):
        return template
    body, sep, extra = (template or "").partition("<extra>")
    return f"{body}<br>{_line(ev)}{sep}{extra}"


def with_evidence(fig, ev: Evidence, by_name: dict[str, Evidence] | None = None):
    """Tag every hoverable trace of `fig` not tagged yet: by its name in `by_name`, else with `ev`. Returns `fig`."""
    if getattr(fig, "data", None) is None:
        return fig
    for trace in fig.data:
        tag_trace(trace, (by_name or {}).get(trace.name, ev))
    return fig


def is_hoverable_json(trace: dict) -> bool:
    """is_hoverable for a trace as JSON (what the browser gets)."""
    info = trace.get("hoverinfo")
    return not (isinstance(info, str) and info in _HIDDEN) and _DEFAULT_HOVER.get(trace.get("type", "scatter"), "") is not None


def untagged(fig_json: dict) -> list[str]:
    """The names (or types) of the hoverable traces in a figure's JSON whose hover names no evidence (the tests)."""
    out = []
    for trace in fig_json.get("data", []):
        if not is_hoverable_json(trace):
            continue
        template = trace.get("hovertemplate") or ""
        templates = template if isinstance(template, list) else [template]
        if not templates or not all(kind_of(t or "") for t in templates):
            out.append(str(trace.get("name") or trace.get("type")))
    return out
