"""Helpers shared by the pages (the only non-page module besides app.py that imports Streamlit).

Not a page itself: app.py builds its navigation from `views.registry`.
"""
from __future__ import annotations

import inspect
import os
import re
from contextlib import contextmanager
from pathlib import Path

import streamlit as st

from k3lite.base.evidence import KINDS, LEGEND, MARKERS, MEANING, assumed, derived, looks_numeric


@contextmanager
def user_errors():
    """Show a ValueError (a constraint the user broke) as st.error and stop the page, never a traceback."""
    try:
        yield
    except ValueError as e:
        st.error(f"⚠️ {e}")
        st.stop()


@contextmanager
def section_errors():
    """Inside one section: show a ValueError as st.error and go on with the page (the sections after it still draw;
    user_errors stops the page, for inputs every panel shares)."""
    try:
        yield
    except ValueError as e:
        st.error(f"⚠️ {e}")


def explain(text: str) -> None:
    """A short 'what to notice' box under a figure."""
    st.caption(text)


# ------------------------------------------------------------------------------------ shareable URLs
def _parse(raw: str, default):
    """Parse a query-string value to the type of `default` (bool, int, float, str, list[str])."""
    if isinstance(default, bool):
        low = raw.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError("expected true or false")
    if isinstance(default, int):
        if not re.fullmatch(r"\s*[+-]?\d+\s*", raw):
            raise ValueError("expected a whole number")
        return int(raw)
    if isinstance(default, float):
        try:
            value = float(raw)
        except ValueError:
            raise ValueError("expected a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("expected a finite number")
        return value
    if isinstance(default, (list, tuple)):
        return [part for part in raw.split(",") if part]
    return raw


def url_state(key: str, default, *, choices=None, lo=None, hi=None) -> None:
    """Seed the widget state `key` from `?key=...` in the URL, once per session; afterwards keep its value for the
    runs in which its widget is not drawn.

    Use with a keyed widget that gets no `value=`:  url_state("moe_top_k", 8, lo=1, hi=32);
    st.slider("top-k", 1, 32, key="moe_top_k"); then push_url("moe_top_k", ...).
    An invalid value falls back to `default` with a visible notice naming the constraint.
    """
    if key in st.session_state:
        # re-set each run: a widget that is not drawn in a run (its lazy expander closed) would otherwise fall back
        # to the value first seeded here when Streamlit drops the widget's own state
        st.session_state[key] = st.session_state[key]
        return
    value = default
    raw = st.query_params.get(key)
    if raw is not None:
        try:
            parsed = _parse(raw, default)
            items = parsed if isinstance(parsed, list) else [parsed]
            if choices is not None and any(item not in choices for item in items):
                raise ValueError("must be one of " + ", ".join(map(str, list(choices)[:8])) + (", …" if len(choices) > 8 else ""))
            if lo is not None and any(item < lo for item in items):
                raise ValueError(f"must be >= {lo}")
            if hi is not None and any(item > hi for item in items):
                raise ValueError(f"must be <= {hi}")
            value = parsed
        except ValueError as e:
            st.warning(f"Ignored `{key}={raw[:40]}` from the link ({e}); using the default {default!r}.")
    st.session_state[key] = value


def push_url(*keys: str) -> None:
    """Mirror widget values into the URL so a copied link reopens the same view."""
    for key in keys:
        if key in st.session_state:
            value = st.session_state[key]
            if isinstance(value, (list, tuple)):
                value = ",".join(str(v) for v in value)
            st.query_params[key] = str(value)


# ------------------------------------------------------------------------------------ callbacks
# Streamlit keeps each widget's metadata (its callback, its format function) for the whole session, one entry per
# widget id, and a keyed chart's id changes with its figure. A function written in a page script holds that run's
# whole namespace (the forward pass's trace, its figures), so every stage opened on the forward-pass map kept one more
# run alive: ~200 forward-pass runs in a 5-minute, 30-session load. So the callbacks and format functions the pages
# hand to Streamlit come from modules (these, bound to small arguments with functools.partial, or a dict's .get),
# never from a page script: tests/app/test_callbacks.py checks every page.
def set_state(key: str, value) -> None:
    """on_click / on_change: st.session_state[key] = value (the value computed when the widget was drawn)."""
    st.session_state[key] = value


def fill_from(key: str, table: dict) -> None:
    """on_change of the widget `key`: set the widgets its new value names in `table` (value -> {key: value})."""
    st.session_state.update(table[st.session_state[key]])


def pick_from_map(chart_key: str, target_key: str, choose) -> None:
    """on_select of a map: st.session_state[target_key] = choose(the clicked node's customdata); arcs carry none."""
    points = [p for p in st.session_state[chart_key].selection.points if p.get("customdata")]
    if points:
        st.session_state[target_key] = choose(points[0]["customdata"])


def one_of(n: int, i: int) -> str:
    """format_func for a 0-based position: "i+1/n" (functools.partial(one_of, n))."""
    return f"{i + 1}/{n}"


def interconnect_query(deployment, preset: str) -> dict[str, str]:
    """The Interconnect page's URL settings (its ic_* keys) that show `deployment` for `preset`, so a link from
    another page opens it on the same number instead of its own defaults."""
    from k3lite.interconnect import TOPOLOGIES  # here, not at the top: only the pages that link there pay the import
    topology = next(k for k, t in TOPOLOGIES.items() if t == deployment.topology)
    return {"ic_preset": preset, "ic_topology": topology, "ic_ep": str(deployment.ep_size),
            "ic_scheme": deployment.scheme, "ic_node_limit": str(deployment.node_limit),
            "ic_dispatch": deployment.dispatch, "ic_combine": deployment.combine}


# ------------------------------------------------------------------------------------ every page
def reset_button(*prefixes: str, label: str = "Reset to defaults") -> None:
    """A button that puts every widget whose key starts with one of `prefixes` back to its default: it forgets
    their session state and their values in the URL (url_state then seeds the defaults again on the rerun)."""
    if not st.button(label, key=f"reset_{'_'.join(prefixes)}", help="Every control on this page back to its default"):
        return
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(prefixes) and k not in LAZY_KEYS]:
        del st.session_state[key]  # which expanders and tab are open is where the reader is, not a setting
    for key in [k for k in st.query_params if k.startswith(prefixes)]:
        del st.query_params[key]
    st.rerun()


LAZY_KEYS: set[str] = set()  # the keys of lazy expanders and tabs (fixed strings in the pages): Reset keeps them


@contextmanager
def lazy_expander(label: str, key: str, **kwargs):
    """An expander whose body runs only while it is open: yields whether it is. Streamlit's state-tracking expander
    (on_change="rerun") reruns the page, or the fragment it sits in, when it is opened, so a closed one costs the
    browser nothing to draw; its open state lives in st.session_state[key], as any widget's. With the environment
    variable K3LITE_EXPANDERS=open it is a plain expander again, its body sent closed on the first run: the tests set
    it (tests/conftest.py) to read every body; tests/app/test_app_pages.py checks the lazy path itself."""
    if os.environ.get("K3LITE_EXPANDERS") == "open":  # every body sent at once, as a plain expander: the tests
        with st.expander(label, **kwargs):
            yield True
        return
    LAZY_KEYS.add(key)
    with st.expander(label, on_change="rerun", key=key, **kwargs) as box:
        yield bool(box.open)


class _LazySection:
    """One section of `lazy_sections`: `with section as is_open:` enters it and says whether it is the picked one."""

    def __init__(self, container, is_open: bool):
        self._container, self.is_open = container, is_open

    def __enter__(self) -> bool:
        self._container.__enter__()
        return self.is_open

    def __exit__(self, *exc):
        return self._container.__exit__(*exc)


SECTIONS_LABEL = "Go deeper: pick a section"


def lazy_sections(labels: list[str], key: str) -> list[_LazySection]:
    """The sections below a page's first picture, as a row of buttons of which none is picked at first: only the
    picked section's body runs (`with section as is_open: if is_open: ...`), so a page's first load draws its first
    screen and nothing below it (Streamlit sends every chart of a first run together, and the browser draws them
    in one go: the first picture waits for the last). Picking one reruns the page, ~0.1 s; picking it again closes
    it. The picked one is mirrored in the URL (`?key=<label>`), so a link can open a section. K3LITE_EXPANDERS=open (the tests) makes them plain tabs with every body sent, as `lazy_expander`."""
    if os.environ.get("K3LITE_EXPANDERS") == "open":
        return [_LazySection(t, True) for t in st.tabs(labels)]
    LAZY_KEYS.add(key)
    url_state(key, None, choices=labels)  # `?key=<label>` opens that section: a shared link, the sidebar's ledger
    picked = st.segmented_control(SECTIONS_LABEL, labels, key=key, selection_mode="single")
    if picked is None:
        st.query_params.pop(key, None)
    else:
        st.query_params[key] = picked
    return [_LazySection(st.container(), picked == label) for label in labels]


def kept_editor(rows: list[dict], key: str, *, draw: bool, **kwargs) -> list[dict]:
    """`rows` with the reader's edits, from an st.data_editor drawn only when `draw` (inside a lazy expander).

    Streamlit keeps a data editor's edits only while it is drawn; here they are folded into
    st.session_state[key + "_edits"] (row -> column -> value) as they happen, so the returned rows carry them in
    every run, drawn or not. Each fold draws a fresh editor (key + "_v<n>") over the edited rows."""
    store = st.session_state.setdefault(f"{key}_edits", {})
    if draw:
        version = st.session_state.setdefault(f"{key}_version", 0)
        widget = f"{key}_v{version}"

        def fold():
            for row, columns in st.session_state[widget].get("edited_rows", {}).items():
                store.setdefault(int(row), {}).update(columns)
            st.session_state[f"{key}_version"] = version + 1

        st.data_editor([{**r, **store.get(i, {})} for i, r in enumerate(rows)], key=widget, on_change=fold, **kwargs)
    return [{**r, **store.get(i, {})} for i, r in enumerate(rows)]


def show_code(*functions, title: str = "The code behind this figure") -> None:
    """An expander with the readable source of the functions that computed a figure, each with its file and line
    (the library's own code, as it just ran)."""
    root = Path(__file__).resolve().parent.parent
    with lazy_expander(title, "code_" + "_".join(inspect.unwrap(fn).__qualname__ for fn in functions)) as is_open:
        if not is_open:  # closed: nothing sent for the browser to highlight and draw
            return
        for fn in functions:
            fn = inspect.unwrap(fn)
            path = Path(inspect.getsourcefile(fn)).resolve()
            where = path.relative_to(root) if path.is_relative_to(root) else path.name
            st.caption(f"`{fn.__qualname__}` — `{where}`, line {inspect.getsourcelines(fn)[1]}")
            st.code(inspect.getsource(fn), language="python", wrap_lines=True)  # a phone shows every line


# ------------------------------------------------------------------------------------ evidence classes
# Every number a page shows says what kind of evidence it is (k3lite.base.evidence): a quiet superscript letter after a
# metric's label or a table column's name, the source in the tooltip; a figure's hover carries it too
# (shared_figure(..., evidence=...)). tests/app/test_evidence.py fails on a metric, a numeric column or a
# hoverable trace without one.
def metric(container, label: str, value, evidence, *, help: str | None = None, **kwargs) -> None:
    """container.metric with `evidence`'s marker after the label and its source first in the tooltip."""
    tip = evidence.note + (f"\n\n{help}" if help else "")
    container.metric(f"{label} :gray[{evidence.marker}]", value, help=tip, **kwargs)


def evidence_columns(data, evidence: dict, default=None):
    """(a DataFrame whose numeric columns' names end with their evidence marker(s), a column_config with each source
    in the tooltip) for st.dataframe / st.data_editor. `evidence`: column -> Evidence, or a tuple when rows differ;
    `default` covers the numeric columns it omits; a numeric column with neither is a ValueError."""
    import pandas as pd  # here: only pages with a table pay pandas' import (~0.3 s) on a cold server

    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    names, config = {}, {}
    for col in frame.columns:
        typed = pd.api.types.is_numeric_dtype(frame[col]) and not pd.api.types.is_bool_dtype(frame[col])
        numeric = typed or looks_numeric(frame[col])
        ev = evidence.get(col, default if numeric else None)
        if ev is None:
            # a column of numbers is a page's mistake, seen at its defaults; a text column only *looks* numeric
            # for some data (byte labels "1", "2"): it must not crash a visitor's page (tests/app/test_evidence.py
            # checks the defaults)
            if typed:
                raise ValueError(f"column {col!r} holds numbers but names no evidence class")
            continue
        evs = ev if isinstance(ev, tuple) else (ev,)  # rows that differ: each row's class
        names[col] = f"{col} " + " ".join(dict.fromkeys(e.marker for e in evs))
        config[names[col]] = st.column_config.Column(help="\n\n".join(dict.fromkeys(e.note for e in evs)))
    return frame.rename(columns=names), config


def table(container, data, evidence: dict | None = None, *, default=None, **kwargs):
    """container.dataframe of `data` with every numeric column's evidence class (evidence_columns)."""
    frame, config = evidence_columns(data, evidence or {}, default)
    return container.dataframe(frame, column_config={**config, **kwargs.pop("column_config", {})}, **kwargs)


def sentence(text: str, *evidence, container=None) -> None:
    """A computed sentence as a caption whose tooltip lists its sources' evidence classes."""
    (container or st).caption(text, help="\n\n".join(ev.note for ev in evidence) or None)


# ------------------------------------------------------------------------------------ compare with
# One app-wide choice (the sidebar's "Compare K3 with", app.py; `?vs=` in the URL): every mechanism page draws K3
# beside it. A page asks `compared()` for the Pair (or None) and hands its panels (k3lite.panels) to show_panel.
COMPARE_KEY = "vs"


def compared(base=None):
    """The Pair the page compares (k3lite.panels.core.pair_of: `base`, K3's preset by default, and the chosen
    config), or None when the control says nothing. Seeds the choice from `?vs=` on a page opened alone."""
    from k3lite.panels.core import CHOICES, NONE, pair_of  # here: app.py imports this module before any model code

    if COMPARE_KEY not in st.session_state:  # once drawn, the sidebar's widget (app.py) holds it: setting it
        url_state(COMPARE_KEY, NONE, choices=CHOICES)  # again in the same run would raise
    key = st.session_state[COMPARE_KEY]
    if key == NONE:
        st.query_params.pop(COMPARE_KEY, None)
        return None
    st.query_params[COMPARE_KEY] = key
    pair = pair_of(key) if base is None else pair_of(key, base)
    st.caption(f"Compared with **{pair.label}** ({pair.comparison.instead}): change it in the sidebar's "
               f"*Compare K3 with*.")
    return pair


def compare_control() -> None:
    """The sidebar's selectbox (app.py draws it on every page, so the choice follows the reader)."""
    from k3lite.panels.core import CHOICES, NONE, choice_label  # (the reason in compared)

    url_state(COMPARE_KEY, NONE, choices=CHOICES)
    st.selectbox("Compare K3 with", CHOICES, key=COMPARE_KEY, format_func=choice_label,
                 help="Every mechanism page draws K3 beside this: another released model, or K3 with one of its "
                      "ideas swapped for the design it replaced. Each is a real config, counted and run by the "
                      "same code (k3lite.model.variants).")
    if st.session_state[COMPARE_KEY] == NONE:
        st.query_params.pop(COMPARE_KEY, None)
    else:
        st.query_params[COMPARE_KEY] = st.session_state[COMPARE_KEY]


def my_gpu() -> tuple[str | None, str]:
    """The reader's own GPU, typed on the serving page ('Your own GPU'; sv_my_* in a link, kept for the session so
    every page with a GPU choice offers it): (its name, hardware.custom_gpu_name, or None; the constraint broken)."""
    from k3lite.analytic.hardware import CUSTOM_DEFAULTS, CUSTOM_FIELDS, custom_or_none  # (the reason in compared)

    for f, *_, lo, hi in CUSTOM_FIELDS:
        url_state(f"sv_my_{f}", CUSTOM_DEFAULTS[f], lo=float(lo), hi=float(hi))
    url_state("sv_my_on", False)
    return custom_or_none({f: st.session_state[f"sv_my_{f}"] for f, *_ in CUSTOM_FIELDS}, st.session_state.sv_my_on)


def show_panel(panel, key: str, container=None) -> None:
    """A panel (k3lite.panels.core.Panel): its title, its figure (built tagged with its evidence), its sentences
    (a "$" escaped: two in one caption would render the text between them as LaTeX)."""
    where = container or st
    if panel.title:
        where.markdown(f"**{panel.title}**")
    if panel.figure is not None:
        where.plotly_chart(panel.figure, width="stretch", key=key)
    for said in panel.sentences:
        sentence(re.sub(r"(?<!\\)\$", r"\\$", said.text), *said.evidence, container=where)


def draw_items(items, key: str, where=None) -> None:
    """A panel function's items in order (k3lite.panels.core): panels, rows of metrics (tuples), tables, notes,
    code."""
    from k3lite.panels.core import Code, Note, Table  # (the reason in compared)

    where = where or st
    for i, item in enumerate(items):
        if isinstance(item, Table):
            table(where, item.rows, item.columns, default=item.default, hide_index=True, width="stretch")
        elif isinstance(item, Note):
            (where.markdown if item.markdown else where.caption)(item.text)
        elif isinstance(item, Code):
            show_code(*item.functions)
        elif isinstance(item, tuple):  # one row of metrics
            for col, m in zip(where.columns(len(item)), item):
                metric(col, m.label, m.value, m.evidence, help=m.help or None)
        else:
            show_panel(item, f"{key}_{i}", container=where)


def evidence_legend() -> None:
    """The sidebar's key to the markers (app.py)."""
    st.caption(f"Evidence: {LEGEND}", help="\n\n".join(f"{MARKERS[k]} **{k}**: {MEANING[k]}" for k in KINDS))


def assumptions_block(key: str, headline_name: str, headline, assumptions: list, fmt, *, also=(),
                      title: str = "What this page assumes, and which assumption matters most") -> None:
    """One expander listing every assumed input of a page (value, why, where to change it), a tornado of the
    headline with each moved ±20%, and a computed sentence naming the one it leans on most. `also`: (name, text)
    pairs for assumptions that are not a number (uniform routing, a format)."""
    # here, not at the top: app.py imports this module for its sidebar, and these pull plotly and torch
    from k3lite.analytic.sensitivity import most_sensitive_sentence, swings
    from k3lite.viz.memo import shared_figure  # (the reason above)
    from k3lite.viz.sensitivity import tornado_figure  # (the reason above)

    with lazy_expander(title, key) as is_open:
        if not is_open:
            return
        ranked = swings(headline, assumptions)
        st.markdown(most_sensitive_sentence(headline_name, ranked, fmt))
        rows = [{"assumption": a.name, "value": f"{a.value:g}{(' ' + a.unit) if a.unit else ''}", "why": a.why,
                 "change it": a.change} for a in assumptions]
        rows += [{"assumption": name, "value": "—", "why": text, "change it": "not adjustable here"}
                 for name, text in also]
        table(st, rows, {"value": assumed("ours: each row says why")}, hide_index=True, width="stretch")
        st.plotly_chart(shared_figure(tornado_figure, ranked, headline_name, fmt,
                                      evidence=derived(swings)),
                        width="stretch", key=f"{key}_tornado")


# ------------------------------------------------------------------------------------ practice problems
def try_it(topic: str) -> None:
    """A page's "Try it" block: its practice problems in an expander (drawn only while open), numbers from a seed."""
    from k3lite.tour.practice import SETS, problems_in  # here: only an opened block pays the problems' imports
    from views.practice_ui import practice_problem  # (it imports this module)

    with lazy_expander(f"Try it: {len(SETS[topic])} problems on this page", f"try_{topic}") as is_open:
        if not is_open:
            return
        seed = st.number_input("seed (your own numbers: e.g. your student number)", 0, 10**6, 1, key=f"try_{topic}_seed")
        st.caption(f"All of them, and a class link: [Practice](practice?set={topic}&seed={seed})")
        for i, problem in enumerate(problems_in(topic), start=1):
            st.divider()
            practice_problem(problem, seed, f"try_{topic}_{problem.id}_{seed}", f"{i}. ")
