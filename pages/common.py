"""Helpers shared by the pages (the only non-app module allowed to import Streamlit besides pages).

Not a page itself: app.py lists pages explicitly with st.Page.
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
