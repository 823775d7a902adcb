"""Tools that measure the app itself (they import Streamlit, so they live outside k3lite/).

    python -m k3lite.bench app    -> tools/bench_app.py   (first render and rerun time per page, AppTest)
    python -m k3lite.bench load   -> tools/bench_load.py  (N real sessions over Streamlit's websocket)

k3lite/bench/__main__.py runs them as `python -m tools.bench_NAME` in a child process from the repository
root, so nothing under k3lite/ imports Streamlit.
"""
