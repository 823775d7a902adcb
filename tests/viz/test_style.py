"""One visual language: every figure takes its colours and byte units from k3lite/viz/style.py.

Three nets, each able to fail on its own:
  1. the sources: no colour literal (hex, rgb(), a CSS name passed to a colour argument, a named colour
     scale) and no binary / upper-case byte unit in k3lite/viz/ (outside style.py) or views/;
  2. the figures each page actually draws at its defaults (AppTest, the Plotly JSON Streamlit ships): every
     trace and shape colour is in style.PALETTE, every line/bar trace has an explicit colour (else Plotly's
     default colorway decides), every heatmap scale is one of the two style scales, every log axis is
     labelled once per decade, and no text carries a forbidden unit;
  3. the formatter itself, and the theme colour of the controls.
"""
from __future__ import annotations

import json
import re
import tomllib

import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from conftest import PAGE_FILES, ROOT
from figure_checks import log_shape_problems
from k3lite.viz import style

SOURCES = sorted([*(ROOT / "k3lite" / "viz").glob("*.py"), *(ROOT / "views").glob("*.py")])
SOURCES = [p for p in SOURCES if p.name != "style.py"]

HEX = re.compile(r"#[0-9A-Fa-f]{6}\b|#[0-9A-Fa-f]{3}\b")
RGB = re.compile(r"\brgba?\(")
COLOUR_LITERAL = re.compile(r"\b(?:color|colour|fillcolor|line_color|marker_color|bgcolor)\s*=\s*['\"]")
SCALE_LITERAL = re.compile(r"\bcolorscale\s*=\s*['\"]")
UNIT = re.compile(r"\b(?:" + "|".join(style.FORBIDDEN_UNITS) + r")\b")
BINARY_DIVISOR = re.compile(r"/\s*(?:2\s*\*\*\s*(?:10|20|30|40)|1024\b)")


def _code_lines(path):
    for no, line in enumerate(path.read_text().splitlines(), 1):
        code = line.split("  # ", 1)[0]  # trailing comments may name colours in words
        if not code.lstrip().startswith("#"):
            yield no, code


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_source_takes_colours_and_units_from_style(path):
    bad = []
    for no, code in _code_lines(path):
        for name, pattern in (("hex colour", HEX), ("rgb() colour", RGB), ("colour literal", COLOUR_LITERAL),
                              ("named colour scale", SCALE_LITERAL), ("binary/upper-case byte unit", UNIT),
                              ("binary byte divisor (use style.fmt_bytes)", BINARY_DIVISOR)):
            if pattern.search(code):
                bad.append(f"{path.name}:{no}: {name}: {code.strip()[:100]}")
    assert not bad, "use k3lite.viz.style instead:\n" + "\n".join(bad)


def test_the_source_net_catches_what_it_should():
    """The patterns above are not vacuous: each fires on the kind of line a reading of the app found."""
    for line in ('marker_color="#e8734c"', 'line=dict(color="grey")', 'colorscale="Blues"',
                 'hovertemplate="%{y:.1f} KiB"', 'f"{x / 2**20:.2f}"', 'fillcolor="rgba(1,2,3,0.1)"'):
        assert any(p.search(line) for p in (HEX, RGB, COLOUR_LITERAL, SCALE_LITERAL, UNIT, BINARY_DIVISOR)), line
    assert not UNIT.search("1.54 kB, 32.0 GB, 3 MB")


# ------------------------------------------------------------------------------------------ built figures
# the two scales as Plotly serialises them (a named scale becomes its list of [position, colour] stops)
ALLOWED_SCALES = [json.loads(go.Figure(go.Heatmap(z=[[0]], colorscale=s)).to_json())["data"][0]["colorscale"]
                  for s in (style.SEQUENTIAL_SCALE, style.DIVERGING_SCALE)]
PALETTE = {c.upper() for c in style.PALETTE}
COLOUR_KEYS = ("color", "fillcolor", "fgcolor")


def _colours(obj, path=""):
    """Every (path, colour string) under a Plotly JSON object, skipping colour scales and fonts."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("colorscale", "font", "hoverlabel", "colorbar", "template"):
                continue
            if k in COLOUR_KEYS:
                for c in (v if isinstance(v, list) else [v]):
                    if isinstance(c, str):
                        yield f"{path}.{k}", c
            else:
                yield from _colours(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _colours(v, f"{path}[{i}]")


def figure_problems(spec: dict) -> list[str]:
    """What in one figure's Plotly JSON breaks the style rules (empty = fine)."""
    problems = []
    for where, c in _colours(spec):
        if c.upper() not in PALETTE and style.opaque(c).upper() not in PALETTE:  # translucent(): same hue
            problems.append(f"colour {c} at {where} is not in style.PALETTE")
    for i, t in enumerate(spec.get("data", [])):
        kind = t.get("type", "scatter")
        if kind in ("bar", "scatter") and t.get("mode") != "text":
            explicit = (t.get("marker", {}).get("color") if kind == "bar" or "markers" in t.get("mode", "")
                        else t.get("line", {}).get("color")) or t.get("line", {}).get("color") or t.get("fillcolor")
            if explicit is None:
                problems.append(f"trace {i} ({t.get('name')!r}, {kind}) has no explicit colour: Plotly's default "
                                "colorway would pick one")
        if "colorscale" in t and t["colorscale"] not in ALLOWED_SCALES:
            problems.append(f"trace {i} ({kind}) uses a colour scale that is not style.SEQUENTIAL/DIVERGING_SCALE")
    layout = spec.get("layout", {})
    for k, axis in layout.items():
        if re.fullmatch(r"[xy]axis\d*", k) and axis.get("type") == "log" and axis.get("dtick") not in (1, "1") \
                and not axis.get("tickvals"):  # explicit ticks (e.g. the lengths actually run) are fine too
            problems.append(f"{k} is a log axis not built by style.log_axis (labels once per decade)")
    problems += log_shape_problems(spec)
    unit = UNIT.search(json.dumps({"layout": layout, "data": [{k: v for k, v in t.items() if k in (
        "name", "hovertemplate", "text", "texttemplate")} for t in spec.get("data", [])]}))
    if unit:
        problems.append(f"byte unit {unit.group()!r} in the figure's text (style.fmt_bytes is decimal)")
    return problems


def test_figure_check_catches_a_stray_colour_and_a_binary_unit():
    fig = go.Figure(go.Bar(x=[1], y=[1], marker_color="#e45756", name="x"))
    fig.update_layout(yaxis=dict(title="KiB / token", type="log"))
    fig.add_scatter(x=[1], y=[2], mode="lines")
    problems = " | ".join(figure_problems(json.loads(fig.to_json())))
    assert "#e45756" in problems and "KiB" in problems and "log axis" in problems and "default" in problems
    line = go.Figure(go.Scatter(x=[10, 100], y=[1, 2], mode="lines", line_color=style.color("kda")))
    line.update_layout(xaxis=style.log_axis("tok/s"))
    assert not figure_problems(json.loads(style.log_vline(go.Figure(line), 50).to_json()))
    assert not figure_problems(json.loads(style.log_vline(go.Figure(line), 50, annotation_text="50").to_json()))
    bad = line.add_vline(x=50, annotation_text="50")  # plotly: the line at 50, its label at 10^50
    assert "use style.log_vline" in " ".join(figure_problems(json.loads(bad.to_json())))
    good = go.Figure(go.Bar(x=[1], y=[1], marker_color=style.color("kda")))
    good.update_layout(yaxis=style.log_axis("bytes"))
    assert figure_problems(json.loads(good.to_json())) == []


def page_figures(page: str, **query) -> list[dict]:
    at = AppTest.from_file(str(ROOT / "views" / page), default_timeout=180)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


@pytest.mark.parametrize("page", PAGE_FILES)
def test_page_figures_use_the_palette_and_units(page):
    figs = page_figures(page)
    bad = [f"figure {i} ({(f.get('layout', {}).get('title') or {}).get('text', '')!r}): {p}"
           for i, f in enumerate(figs) for p in figure_problems(f)]
    assert not bad, f"{page}:\n" + "\n".join(bad)


# ------------------------------------------------------------------------------------ formatter, theme
@pytest.mark.parametrize("n, text", [(0, "0 B"), (999, "999 B"), (1000, "1.00 kB"), (1536, "1.54 kB"),
                                     (3.2e10, "32.0 GB"), (14.3e6, "14.3 MB"), (2.5e12, "2.50 TB")])
def test_fmt_bytes_is_decimal(n, text):
    assert style.fmt_bytes(n) == text


def test_fmt_bytes_rejects_non_finite():
    with pytest.raises(ValueError, match="finite"):
        style.fmt_bytes(float("nan"))


def test_model_colours_by_any_spelling():
    assert style.model_color("DeepSeek-V3") == style.model_color("deepseek-v3") == style.MODEL["deepseek-v3"]
    assert style.model_color("Kimi K2") == style.MODEL["kimi-k2"]
    assert style.model_color("Kimi K3") == style.model_color("kimi-k3") == style.MODEL["k3"]
    assert style.model_color("something else", 1) == style.SERIES[1]
    # a name is a card's or none: a model's word inside another name no longer picks its colour
    assert style.model_color("K3 alone", 1) == style.model_color("a deepseek distill", 1) == style.SERIES[1]
    assert style.model_color("Kimi K3 plans + small worker (assumed) works") == style.MODEL["k3"]


def test_controls_take_the_neutral_theme_colour():
    """Sliders were red on every page (Streamlit's default primary colour), the hue of half the concepts."""
    theme = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text()).get("theme", {})
    assert theme.get("primaryColor", "").upper() == style.CONTROL.upper()


def test_fmt_seconds_picks_the_unit():
    from k3lite.viz.style import fmt_seconds

    assert fmt_seconds(2.5e-6) == "2.50 µs" and fmt_seconds(4.1e-10) == "0.410 ns"
    assert fmt_seconds(0.0123) == "12.3 ms" and fmt_seconds(3.0) == "3.00 s" and fmt_seconds(0) == "0 ns"
    with pytest.raises(ValueError, match="finite"):
        fmt_seconds(float("nan"))


def test_shared_figures_put_the_legend_under_the_plot():
    """Legends beside or above the plot took most of a 390 px screen or met the title; every
    figure built through shared_figure gets the one placement (style.legend_below), in the bottom margin."""
    from k3lite.viz.memo import FigureMemo

    memo = FigureMemo()
    fig = memo(_two_series_figure)
    legend = fig.layout.legend
    assert (legend.orientation, legend.yref, legend.y, legend.yanchor, legend.x) == ("h", "container", 0, "bottom", 0)
    assert memo(_two_series_figure) is fig  # cached with the placement already applied


def _two_series_figure():
    fig = go.Figure()
    fig.add_scatter(x=[1, 2], y=[1, 2], name="a")
    fig.add_scatter(x=[1, 2], y=[2, 1], name="b")
    fig.update_layout(legend=dict(x=1.02, y=1))  # beside the plot, as plotly places it by default
    return fig


def test_app_injects_the_shared_css_on_every_page():
    """The toolbar rule, the table cue and the label wrapping live in style.APP_CSS; app.py injects it before
    any page runs, so every page gets them."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    bodies = [e.proto.body for e in at.get("html")]
    assert style.APP_CSS in bodies, bodies
    assert ".modebar-container" in style.APP_CSS and style.TABLE_CUE in style.APP_CSS
