"""App speed as a visitor feels it: time to first render of every page and the median rerun after a slider move.

    python -m k3lite.bench app [--repeats 7] [--pages moe,kda] [--every-control] [--threads N] [--json]

For each page in views/registry.py (the list app.py navigates), in one process and one run (Streamlit's
AppTest, no browser):
  cold first render   the first session of a fresh server: imports, st.cache_resource / st.cache_data builds
  warm first render   a later visitor's first view (a new session, caches warm)
  rerun median / max  that session moves its first slider (else number input, else selectbox) to `repeats`
                      NEW values one step apart around the default (so st.cache_data misses, as for a
                      visitor exploring), timing each rerun; with --every-control, every keyed control
                      of the page in turn (the median is then over all of them, and each is listed)
Target: every page's median rerun at default settings < 0.5 s on 2 CPU cores. The machine's load
average is printed because other processes slow every number alike.

It imports Streamlit (it measures the app itself), so it lives in tools/, outside k3lite/; the command
above runs it as `python -m tools.bench_app` from the repository root.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
from streamlit import config
from streamlit.testing.v1 import AppTest

from k3lite.base.guards import bounded_threads
from views.registry import PAGES  # the app's one page list

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 0.5


def page_paths() -> list[str]:
    return [p.file for p in PAGES]


def _controls(at) -> list:
    """Every control a visitor can move, in page order of kind: [(widget, new values or None for by-index)]."""
    found = []
    for w in at.slider:
        v = w.value
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not w.proto.disabled:
            found.append((w, _around(v, w.step or 1, w.min, w.max)))
    for w in at.number_input:
        v = w.value
        if isinstance(v, (int, float)) and not w.proto.disabled:
            lo = w.min if w.min is not None else v - 100 * (w.step or 1)
            hi = w.max if w.max is not None else v + 100 * (w.step or 1)
            found.append((w, _around(v, w.step or 1, lo, hi)))
    for w in at.selectbox:
        if len(w.options) > 1 and not w.proto.disabled:
            found.append((w, None))  # by index, cycling through the options
    return found


def _control(at, key: str | None = None):
    """The control a visitor moves first (or the one with this key): (widget, new values) or (None, [])."""
    for w, values in _controls(at):
        if key is None or w.key == key:
            return w, values
    return None, []


def _around(v, step, lo, hi, n: int = 64) -> list:
    """New values one step apart, alternating around v: v+s, v-s, v+2s, v-2s, ... within [lo, hi]."""
    out = []
    for k in range(1, n):
        for cand in (v + k * step, v - k * step):
            if lo <= cand <= hi:
                out.append(round(cand, 10) if isinstance(cand, float) else cand)
    return out


def _move(at, key: str | None, repeats: int, errors: list) -> tuple[str, list[float]]:
    """Move one control (the first, or the one with `key`) to `repeats` new values; time each rerun."""
    widget, values = _control(at, key)
    if widget is None:
        return "—", []
    label = f"{widget.type} '{widget.label[:28]}'"
    times = []
    for i in range(repeats):
        widget, values = _control(at, key)  # re-find: the tree is rebuilt by every run
        if widget is None:
            break
        if values is None:
            widget.select_index((i + 1) % len(widget.options))
        elif i < len(values):
            widget.set_value(values[i])
        else:
            break
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
        errors += [e.message for e in at.exception]
    return label, times


def bench_page(page: str, repeats: int, timeout: float, every_control: bool = False) -> dict:
    path = str(ROOT / page)
    t0 = time.perf_counter()
    at = AppTest.from_file(path, default_timeout=timeout).run()
    cold = time.perf_counter() - t0
    errors = [e.message for e in at.exception]
    t0 = time.perf_counter()
    at = AppTest.from_file(path, default_timeout=timeout).run()
    warm = time.perf_counter() - t0
    errors += [e.message for e in at.exception]
    per_control = {}
    if every_control:  # each keyed control in turn (unkeyed ones cannot be found again after a rerun)
        for key in [w.key for w, _ in _controls(at) if w.key]:
            label, times = _move(at, key, repeats, errors)
            if times:
                per_control[label] = times
        times = [t for ts in per_control.values() for t in ts]
        label = f"{len(per_control)} controls, each"
    else:
        label, times = _move(at, None, repeats, errors)
    return {
        "page": page, "cold_s": cold, "warm_s": warm, "control": label, "reruns": len(times),
        "rerun_median_s": statistics.median(times) if times else None,
        "rerun_max_s": max(times) if times else None, "errors": errors,
        "per_control_median_s": {k: statistics.median(v) for k, v in per_control.items()},
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lite.bench app", description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7, help="reruns per page after a control change")
    ap.add_argument("--pages", default="", help="comma-separated file stems (default: every page in views/registry.py)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: k3lite.base.guards.bounded_threads)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds one script run may take")
    ap.add_argument("--every-control", action="store_true",
                    help="move every keyed control of the page in turn (default: the first control only)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        print("error: --repeats must be >= 1", file=sys.stderr)
        return 2
    cwd, details, threads = os.getcwd(), config.get_option("client.showErrorDetails"), torch.get_num_threads()
    os.chdir(ROOT)  # AppTest reads .streamlit/config.toml from here, as `streamlit run` does
    config.set_option("client.showErrorDetails", "full")  # the bench reports errors verbatim
    try:
        return _run(args)
    finally:
        config.set_option("client.showErrorDetails", details)
        os.chdir(cwd)
        torch.set_num_threads(threads)


def _run(args) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads() if args.threads else bounded_threads()
    pages = page_paths()
    if args.pages:
        wanted = {p.strip() for p in args.pages.split(",")}
        pages = [p for p in pages if Path(p).stem in wanted]
        if not pages:
            print(f"error: no page matches {sorted(wanted)}", file=sys.stderr)
            return 2
    t_all = time.perf_counter()
    rows = [bench_page(p, args.repeats, args.timeout, args.every_control) for p in pages]
    total = time.perf_counter() - t_all
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    if args.json:
        print(json.dumps({"torch_threads": threads, "cpus": os.cpu_count(), "load1": load, "rows": rows}, indent=2))
        return 1 if any(r["errors"] for r in rows) else 0
    print(f"app bench: {len(pages)} pages, {args.repeats} reruns each; torch threads {threads}, "
          f"{os.cpu_count()} CPUs, load average {load:.1f} (other processes slow every number alike)")
    print(f"{'page':<30}{'cold 1st (s)':>13}{'warm 1st (s)':>13}{'rerun med (s)':>14}{'max (s)':>9}"
          f"{'  < 0.5 s':>9}  control moved")
    for r in rows:
        med, mx = r["rerun_median_s"], r["rerun_max_s"]
        ok = "—" if med is None else ("yes" if med < TARGET_S else "NO")
        print(f"{Path(r['page']).stem:<30}{r['cold_s']:>13.2f}{r['warm_s']:>13.2f}"
              f"{'—' if med is None else f'{med:.3f}':>14}{'—' if mx is None else f'{mx:.2f}':>9}{ok:>9}  "
              f"{r['control']} x{r['reruns']}")
        for name, med in r["per_control_median_s"].items():
            print(f"    {name:<44} rerun median {med:.3f} s")
        for e in r["errors"][:3]:
            print(f"    ERROR: {e[:200]}")
    meds = [r["rerun_median_s"] for r in rows if r["rerun_median_s"] is not None]
    if meds:
        print(f"pages under the {TARGET_S} s rerun target: {sum(m < TARGET_S for m in meds)}/{len(meds)}; "
              f"slowest median {max(meds):.3f} s; whole bench {total:.0f} s")
    return 1 if any(r["errors"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
