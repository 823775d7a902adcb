"""Helpers shared by the pages (the only non-page module besides app.py that imports Streamlit).

Not a page itself: app.py builds its navigation from `views.registry`.
"""
from __future__ import annotations

from contextlib import contextmanager

import streamlit as st


@contextmanager
def user_errors():
    """Show a ValueError (a constraint the user broke) as st.error and stop the page, never a traceback."""
    try:
        yield
    except ValueError as e:
        st.error(f"⚠️ {e}")
        st.stop()


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
        return int(raw)
    if isinstance(default, float):
        value = float(raw)
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("expected a finite number")
        return value
    if isinstance(default, (list, tuple)):
        return [part for part in raw.split(",") if part]
    return raw


def url_state(key: str, default, *, choices=None, lo=None, hi=None) -> None:
    """Seed the widget state `key` from `?key=...` in the URL, once per session.

    Use with a keyed widget that gets no `value=`:  url_state("moe_top_k", 8, lo=1, hi=32);
    st.slider("top-k", 1, 32, key="moe_top_k"); then push_url("moe_top_k", ...).
    An invalid value falls back to `default` with a visible notice naming the constraint.
    """
    if key in st.session_state:
        return
    value = default
    raw = st.query_params.get(key)
    if raw is not None:
        try:
            parsed = _parse(raw, default)
            items = parsed if isinstance(parsed, list) else [parsed]
            if choices is not None and any(item not in choices for item in items):
                raise ValueError(f"must be one of {list(choices)}")
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


def interconnect_query(deployment, preset: str) -> dict[str, str]:
    """The Interconnect page's URL settings (its ic_* keys) that show `deployment` for `preset`, so a link from
    another page opens it on the same number instead of its own defaults."""
    from k3lite.interconnect import TOPOLOGIES  # here, not at the top: only the pages that link there pay the import
    topology = next(k for k, t in TOPOLOGIES.items() if t == deployment.topology)
    return {"ic_preset": preset, "ic_topology": topology, "ic_ep": str(deployment.ep_size),
            "ic_scheme": deployment.scheme, "ic_node_limit": str(deployment.node_limit),
            "ic_dispatch": deployment.dispatch, "ic_combine": deployment.combine}
