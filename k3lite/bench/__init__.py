"""Benchmarks that print ratios measured in one run: `python -m k3lite.bench NAME`.

Each NAME is a module k3lite/bench/NAME.py with a `main(argv) -> int`.
"""
BENCHES = ("kda", "moe", "balance", "model", "app", "train")
