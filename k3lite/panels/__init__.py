"""Panels: what a page shows, as functions of (config, the compared config or None) -> figure and sentences.

A page holds widgets and lays panels out; the work of a panel (its computation, its figure, its computed
sentences with their evidence classes) lives here, without Streamlit, so a test can run every panel over every
comparison (k3lite.model.variants.COMPARISONS) and check each sentence against the numbers it came from.
This layer sits above viz (it builds figures) and below tour; `core` has the shared types.
"""
