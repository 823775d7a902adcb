"""Benchmarks that print ratios measured in one run: `python -m k3lite.bench NAME`.

Each NAME in BENCHES is a module k3lite/bench/NAME.py with a `main(argv) -> int` (a dash in NAME is an underscore
in the module's name: serving-peer is serving_peer.py). The benches of the app
itself (APP_BENCHES) import Streamlit, so they live in tools/ (nothing under k3lite/ imports Streamlit);
the same command runs them in a child process.
"""
BENCHES = ("kda", "moe", "balance", "model", "train", "serving-peer")
APP_BENCHES = {"app": "tools.bench_app", "load": "tools.bench_load", "browser": "tools.bench_browser",
               "figures": "tools.bench_figures", "class": "tools.bench_class"}  # NAME -> module run with `python -m`
