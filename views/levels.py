"""The sidebar's *Explain for* (app.py draws it on every page; `?level=first|engineer|paper`, default engineer),
the `level()` a page asks, and the drawing of a paper-level block of equations (k3lite.panels.words.Formula).

Done as the app-wide *Compare K3 with* is (views.common.compare_control / compared): one session key, seeded from
the URL once, held by the sidebar's widget, written back to the URL when it is not the default."""
from __future__ import annotations

import streamlit as st

from k3lite.panels.words import DEFAULT, LABELS, LEVELS
from views.common import sentence, url_state

LEVEL_KEY = "level"


def _mirror() -> None:
    if st.session_state[LEVEL_KEY] == DEFAULT:
        st.query_params.pop(LEVEL_KEY, None)
    else:
        st.query_params[LEVEL_KEY] = st.session_state[LEVEL_KEY]


def level_control() -> None:
    """The sidebar's selectbox (the choice follows the reader from page to page)."""
    url_state(LEVEL_KEY, DEFAULT, choices=LEVELS)  # a bad ?level= falls back with the notice naming the three
    st.selectbox("Explain for", LEVELS, key=LEVEL_KEY, format_func=LABELS.get,
                 help="The same pictures and controls, in other words: first look (no formulas, the one number "
                      "that matters), engineer (the mechanism), paper (the report's equations, each symbol mapped "
                      "to the code, with citations).")
    _mirror()


def level() -> str:
    """The level the page writes for. Seeds it from `?level=` on a page opened alone (under AppTest)."""
    if LEVEL_KEY not in st.session_state:  # once drawn, the sidebar's widget holds it: seeding again would raise
        url_state(LEVEL_KEY, DEFAULT, choices=LEVELS)
    _mirror()
    return st.session_state[LEVEL_KEY]


def draw_formulas(title: str, formulas, notes=()) -> None:
    """A paper-level block: each equation in st.latex, its symbols mapped to the code, its computed sentence (with
    its evidence class) and citation; `notes`: markdown paragraphs in an expander after them (the derivation steps,
    neighbours, the sources in full)."""
    st.markdown(f"**{title}**")
    for f in formulas:
        st.latex(f.latex)
        st.caption("  \n".join(f"${symbol}$ → `{name}`" for symbol, name in f.symbols))  # one symbol a line
        sentence(f.text, f.evidence)
    if notes:  # the derivation one click away: the equations and their sources stay in view
        with st.expander("The derivation, and the sources"):
            for note in notes:
                st.markdown(note)
