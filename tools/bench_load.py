"""A class on one server: N real sessions speaking Streamlit's own websocket protocol to a running k3lite.

    python -m k3lite.bench load [--sessions 30] [--minutes 2] [--url http://127.0.0.1:PORT [--pid PID]]
                                [--pages home,moe,kda,...] [--think 3,10] [--seed 0] [--json FILE]

Without --url it starts `streamlit run app.py` on a free loopback port (and stops it at the end); --url
takes a server already running on loopback (its RSS is sampled only if --pid names its process).

Each session is one websocket on `/_stcore/stream`, sending the BackMsg protobufs a browser sends
(`rerun_script` with the page, the query string and every widget value it has set) and reading the
ForwardMsgs back, as the frontend does. A session picks a page, renders it, then moves its controls with
think time between moves (a numeric control one to three steps, or now and then anywhere in its range, as a
drag; another option of a select box; its own prompt typed into a text box), and after a few moves picks
another page. These visitors press no buttons. `--heavy K` of the N sessions are instead students who keep
pressing the lab's **Train** (a short run of `--heavy-steps` steps): the heavy jobs queue on the heavy-work
slot (k3lite/base/guards), and the bench checks that a press that could not get the slot is answered ("the
server is busy ... waited N s") within the slot's stated wait (K3LITE_HEAVY_TIMEOUT_S, default 30 s) plus
`HEAVY_MARGIN_S`, and that every press is answered at all; the other sessions' latencies show what the
running jobs cost them.

Before the class arrives one session opens every page once (a teacher's check: the server's caches warm up;
reported as "cold"). Then the N sessions start within --ramp seconds.

Reported:
  latency     per page: first render and rerun after a control move, p50 / p95 / max (send -> script_finished);
              "heavy": a Train press, from the press to the end of its run (waiting + training, or the refusal)
  heavy       presses, how many ran and how many were refused, the longest wait before a refusal vs the
              stated wait (a longer one is an error: a heavy job blocked another session beyond its promise)
  errors      every exception element, compile error, dropped socket or timeout any session saw (st.error
              messages, a constraint the visitor broke or a busy server, are listed apart: they are answers)
  RSS         the server's resident memory (with its child processes) every second: start, peak, end
  cross-talk  whether any session ever saw another session's state: every prompt carries its session's
              marker `k3load-<session>-<nonce>`; a frame holding another session's marker, or a query string
              (the page mirrors its widgets into the URL) that does not echo this session's own last values,
              is cross-talk. The check can see: the number of own echoes it verified is printed.
  load        the machine's load average and this client's own CPU time (it shares the cores with the server);
              the server's CPU seconds per script run, which other processes on the machine inflate far less
              than wall-clock latency, so the capacity of the cores can be read off even on a shared box
Exit status 1 if any error or cross-talk was seen. Latency is printed, never asserted.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs

import websockets
from streamlit.proto.NumberInput_pb2 import NumberInput
from streamlit.proto.Slider_pb2 import Slider
from streamlit.proto.WidgetStates_pb2 import WidgetState

from k3lite.base.guards import heavy_timeout_from_env, job_limit_from_env
from k3lite.viz.style import fmt_bytes  # the one byte formatter (decimal units)
from tools.streamlit_session import (RssSampler, RunResult, Session, check_loopback, free_port, start_server,
                                     tree_cpu_seconds, wait_healthy)
from views.registry import DEFAULT_PAGE, PAGES  # the app's one page list

MECHANISM_PAGES = tuple(p.url_path for p in PAGES if p.section == "Mechanisms")
DEFAULT_PAGES = (DEFAULT_PAGE.url_path, *MECHANISM_PAGES, "forward_pass")
MARKER_RE = re.compile(rb"k3load-(\d+)-[0-9a-f]{6}")
HEAVY_PAGE, HEAVY_STEPS_KEY, HEAVY_BUTTON_KEY = "lab", "lab_steps", "lab_train"
HEAVY_MARGIN_S = 10.0  # a refusal may arrive this long after the stated wait (rendering the page on busy cores)
BUSY_TEXT = "the server is busy"  # k3lite.base.guards.ServerBusy's message
PROMPT_WORDS = ("the", "cat", "sat", "on", "mat", "42", "experts", "route", "tokens", "delta", "3.14", "über")


# ------------------------------------------------------------------------------------------ what the bench records
@dataclass
class Record:
    session: int
    page: str
    kind: str  # "cold" (the warm-up visit), "first" (a session opens the page), "rerun" (a control moved),
    # or "heavy" (a Train press: waiting for the heavy-work slot + training, or the refusal)
    seconds: float
    action: str


@dataclass
class Findings:
    records: list[Record] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    alerts: dict[str, int] = field(default_factory=dict)  # st.error text -> count
    cross_talk: list[str] = field(default_factory=list)
    own_echoes: int = 0  # own values found back in this session's query string (the check can see)
    heavy: list[tuple[int, float, bool]] = field(default_factory=list)  # (session, seconds, refused) per press


# ------------------------------------------------------------------------------------------ what a visitor does
def current_number(kind: str, w) -> float | None:
    if kind == "slider":
        values = w.value if w.set_value and len(w.value) else w.default
        return values[0] if len(values) == 1 else None  # a range slider: left alone
    return w.value if w.set_value else (w.default if w.HasField("default") else None)


def choose_action(widgets: dict, held: dict, rng: random.Random, marker: str):
    """(widget id, WidgetState, description, value to find echoed in the URL or None), or None."""
    movable = [(wid, kind, w) for wid, (kind, w) in widgets.items() if not w.disabled and kind != "button"]
    if not movable:
        return None
    wid, kind, w = rng.choice(movable)
    ws = WidgetState(id=wid)
    if kind == "slider" and w.type == Slider.SELECT_SLIDER:
        option = rng.choice(list(w.options))
        ws.string_array_value.data[:] = [option]
        return wid, ws, f"select_slider {w.label[:24]!r} = {option}", None
    if kind in ("slider", "number_input"):
        lo = w.min if (kind == "slider" or w.has_min) else None
        hi = w.max if (kind == "slider" or w.has_max) else None
        now = held.get(wid, current_number(kind, w))
        if now is None or not w.step:
            return None
        if lo is not None and hi is not None and rng.random() < 0.2:  # a drag anywhere in range
            value = lo + w.step * rng.randint(0, int((hi - lo) // w.step))
        else:
            value = now + w.step * rng.choice((-3, -2, -1, 1, 2, 3))
        value = min(hi, value) if hi is not None else value
        value = max(lo, value) if lo is not None else value
        is_int = w.data_type == (Slider.INT if kind == "slider" else NumberInput.INT)
        value = int(round(value)) if is_int else round(float(value), 10)
        held[wid] = value
        if kind == "slider":
            ws.double_array_value.data[:] = [float(value)]
        elif is_int:
            ws.int_value = value
        else:
            ws.double_value = value
        return wid, ws, f"{kind} {w.label[:24]!r} = {value}", value
    if kind in ("selectbox", "radio"):
        if not w.options:
            return None
        option = rng.choice(list(w.options))
        ws.string_value = option
        return wid, ws, f"{kind} {w.label[:24]!r} = {option}", None
    if kind in ("text_input", "text_area"):
        words = rng.sample(PROMPT_WORDS, rng.randint(2, 6))
        text = " ".join(words[:1] + [marker] + words[1:])
        ws.string_value = text
        return wid, ws, f"{kind} {w.label[:24]!r} = {text!r}", text
    if kind in ("checkbox", "toggle"):
        value = not held.get(wid, w.value if w.set_value else w.default)
        held[wid] = value
        ws.bool_value = value
        return wid, ws, f"{kind} {w.label[:24]!r} = {value}", None
    return None


def echoed(query_string: str, key: str, expected) -> bool | None:
    """Whether the URL echoes `expected` under `key` (None: the page does not mirror this key)."""
    values = parse_qs(query_string, keep_blank_values=True).get(key)
    if not values:
        return None
    got = values[-1]
    if isinstance(expected, str):
        return got == expected
    try:
        return float(got) == float(expected)
    except ValueError:
        return False


def widget_key(wid: str) -> str | None:
    """The user key of a keyed widget id (`$$ID-<hash>-<key>`), which url_state mirrors into the URL."""
    parts = wid.split("-", 2)
    return parts[2] if len(parts) == 3 and parts[0] == "$$ID" and parts[2] != "None" else None


def note(findings: Findings, session: int, r: RunResult, action: str) -> None:
    for e in r.exceptions:
        findings.errors.append(f"session {session} on {r.page!r} after {action}: {e[:300]}")
    for a in r.alerts:
        key = f"{r.page}: {a[:160]}"
        findings.alerts[key] = findings.alerts.get(key, 0) + 1
    for m in sorted(r.foreign_markers):
        findings.cross_talk.append(f"session {session} on {r.page!r} received another session's marker {m}")


async def connected(session: Session, findings: Findings) -> bool:
    """Open the session's websocket; a failure is recorded as an error (and the visitor gives up)."""
    try:
        await session.connect()
    except (OSError, websockets.InvalidHandshake, TimeoutError) as e:
        findings.errors.append(f"session {session.index} could not connect: {e}")
        return False
    return True

async def visitor(url: str, index: int, pages: list[str], end: float, think: tuple[float, float],
                  findings: Findings, rng: random.Random, start_delay: float = 0.0, make_session=Session) -> None:
    await asyncio.sleep(start_delay)
    marker = f"k3load-{index}-{rng.getrandbits(24):06x}"
    session = make_session(url, index, MARKER_RE)
    if not await connected(session, findings):
        return
    try:
        while time.monotonic() < end:
            page = rng.choice(pages)
            r = await session.run(page, [], "")
            note(findings, index, r, "opening the page")
            findings.records.append(Record(index, page, "first", r.seconds, "open"))
            states: dict[str, WidgetState] = {}
            held: dict = {}
            query, widgets = r.query_string, r.widgets
            for _ in range(rng.randint(3, 6)):
                await asyncio.sleep(rng.uniform(*think))
                if time.monotonic() >= end or r.exceptions:
                    break
                act = choose_action(widgets, held, rng, marker)
                if act is None:
                    break
                wid, ws, what, expect = act
                states[wid] = ws
                states = {k: v for k, v in states.items() if k in widgets or k == wid}  # widgets still shown
                r = await session.run(page, list(states.values()), query)
                note(findings, index, r, what)
                findings.records.append(Record(index, page, "rerun", r.seconds, what))
                key = widget_key(wid)
                if expect is not None and key is not None and not r.exceptions:
                    seen = echoed(r.query_string, key, expect)
                    if seen is True:
                        findings.own_echoes += 1
                    elif seen is False:
                        findings.cross_talk.append(
                            f"session {index} on {page!r} set {key} = {expect!r} but its URL now says "
                            f"{parse_qs(r.query_string).get(key)}")
                query, widgets = r.query_string, r.widgets
    finally:
        await session.close()


def late_refusal(session: int, seconds: float, refused: bool, stated_s: float) -> str | None:
    """The error to report when a press was refused later than the heavy-work slot promised, else None."""
    if refused and seconds > stated_s + HEAVY_MARGIN_S:
        return (f"session {session}: Train was refused after {seconds:.1f} s, beyond the heavy-work slot's stated "
                f"wait of {stated_s:g} s (+{HEAVY_MARGIN_S:g} s)")
    return None

async def heavy_visitor(url: str, index: int, end: float, think: tuple[float, float], findings: Findings,
                        rng: random.Random, steps: int, start_delay: float = 0.0, make_session=Session) -> None:
    """A student who keeps pressing the lab's Train (with `steps` training steps) until the class ends."""
    await asyncio.sleep(start_delay)
    session = make_session(url, index, MARKER_RE)
    stated = heavy_timeout_from_env()
    if not await connected(session, findings):
        return
    try:
        r = await session.run(HEAVY_PAGE, [], "")
        note(findings, index, r, "opening the page")
        findings.records.append(Record(index, HEAVY_PAGE, "first", r.seconds, "open"))
        ids = {widget_key(wid): wid for wid in r.widgets}
        if HEAVY_STEPS_KEY not in ids or HEAVY_BUTTON_KEY not in ids:
            findings.errors.append(f"session {index}: no {HEAVY_STEPS_KEY!r} slider or {HEAVY_BUTTON_KEY!r} button "
                                   f"on {HEAVY_PAGE!r}")
            return
        query = r.query_string
        while time.monotonic() < end:
            await asyncio.sleep(rng.uniform(*think))
            if time.monotonic() >= end:
                break
            n_steps = WidgetState(id=ids[HEAVY_STEPS_KEY])
            n_steps.double_array_value.data[:] = [float(steps)]
            press = WidgetState(id=ids[HEAVY_BUTTON_KEY], trigger_value=True)
            r = await session.run(HEAVY_PAGE, [n_steps, press], query,
                                  timeout_s=stated + job_limit_from_env() + 60)
            refused = any(BUSY_TEXT in a for a in r.alerts)
            note(findings, index, r, "pressing Train")
            findings.records.append(Record(index, HEAVY_PAGE, "heavy", r.seconds, "Train"))
            findings.heavy.append((index, r.seconds, refused))
            late = late_refusal(index, r.seconds, refused, stated)
            if late:
                findings.errors.append(late)
            query = r.query_string
    finally:
        await session.close()

# ------------------------------------------------------------------------------------------ the run
def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation between order statistics."""
    v = sorted(values)
    if not v:
        return float("nan")
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summarize(records: list[Record]) -> list[dict]:
    rows = []
    for page in dict.fromkeys(r.page for r in records):
        for kind in ("cold", "first", "rerun", "heavy"):
            times = [r.seconds for r in records if r.page == page and r.kind == kind]
            if times:
                rows.append({"page": page, "kind": kind, "n": len(times), "p50_s": statistics.median(times),
                             "p95_s": percentile(times, 0.95), "max_s": max(times)})
    return rows


async def run_load(url: str, sessions: int, seconds: float, pages: list[str], think: tuple[float, float],
                   ramp_s: float, seed: int, warmup: bool, heavy: int = 0, heavy_steps: int = 20,
                   make_session=Session) -> Findings:
    """The class: `sessions` visitors (the first `heavy` press Train) until `seconds` have passed.
    make_session(url, index, marker_re): the Session class to use (tools/bench_class.py passes one that goes
    through a proxy and checks affinity)."""
    findings = Findings()
    rng = random.Random(seed)
    if warmup:  # the teacher opens every page once before the class arrives
        teacher = Session(url, 0, MARKER_RE)
        await teacher.connect()
        try:
            for page in pages:
                r = await teacher.run(page, [], "")
                note(findings, 0, r, "the warm-up visit")
                findings.records.append(Record(0, page, "cold", r.seconds, "open"))
        finally:
            await teacher.close()
    end = time.monotonic() + seconds
    def delay(i: int) -> float:
        return ramp_s * (i - 1) / max(1, sessions)

    # sessions 1..heavy press Train; the others move controls
    await asyncio.gather(*(heavy_visitor(url, i, end, think, findings, random.Random(rng.getrandbits(32)),
                                         heavy_steps, start_delay=delay(i), make_session=make_session) if i <= heavy
                           else visitor(url, i, pages, end, think, findings, random.Random(rng.getrandbits(32)),
                                        start_delay=delay(i), make_session=make_session)
                           for i in range(1, sessions + 1)))
    return findings


def slowest_reruns(records: list[Record], per_page: int = 3) -> list[dict]:
    """The slowest reruns of each page with the control that was moved: where a p95 comes from."""
    out = []
    for page in dict.fromkeys(r.page for r in records):
        reruns = sorted((r for r in records if r.page == page and r.kind == "rerun"), key=lambda r: -r.seconds)
        out += [{"page": page, "seconds": round(r.seconds, 2), "action": r.action} for r in reruns[:per_page]]
    return out


def report(findings: Findings, rss: list, args, cpu_client_s: float, load: tuple, wall_s: float) -> dict:
    return {
        "sessions": args.sessions, "minutes": args.minutes, "pages": args.pages, "think_s": args.think,
        "cpus": os.cpu_count(), "load_avg_start": load[0], "load_avg_end": load[1], "wall_s": wall_s,
        "client_cpu_s": cpu_client_s, "latency": summarize(findings.records),
        "errors": findings.errors, "alerts": findings.alerts, "cross_talk": findings.cross_talk,
        "own_echoes_verified": findings.own_echoes, "reruns": sum(r.kind == "rerun" for r in findings.records),
        "slowest": slowest_reruns(findings.records),
        "rss": [{"t_s": round(t, 1), "bytes": b} for t, b in rss],
        "heavy": {"sessions": args.heavy, "steps": args.heavy_steps, "presses": len(findings.heavy),
                  "refused": sum(f for _, _, f in findings.heavy), "stated_wait_s": heavy_timeout_from_env(),
                  "longest_refusal_s": max((s for _, s, f in findings.heavy if f), default=0.0),
                  "longest_press_s": max((s for _, s, _ in findings.heavy), default=0.0)},
    }


def print_report(rep: dict) -> None:
    print(f"load bench: {rep['sessions']} sessions for {rep['minutes']:g} min on pages {rep['pages']}; think "
          f"{rep['think_s']} s; {rep['cpus']} CPUs, load average {rep['load_avg_start']:.1f} at start, "
          f"{rep['load_avg_end']:.1f} at end; this client used {rep['client_cpu_s']:.1f} s of CPU "
          f"in {rep['wall_s']:.0f} s")
    runs = len(rep["latency"]) and sum(row["n"] for row in rep["latency"])
    if rep.get("server_cpu_s", float("nan")) == rep.get("server_cpu_s", float("nan")) and runs:
        per_run = rep["server_cpu_s"] / runs
        busy = rep["server_cpu_s"] / rep["wall_s"]
        print(f"server CPU: {rep['server_cpu_s']:.0f} s for {runs} script runs = {per_run:.2f} s per run (other load "
              f"inflates it far less than latency); the server was busy {busy:.2f} cores on average, and since its "
              f"Python runs under one GIL (torch kernels release it) about one core, ~{1 / per_run:.1f} runs/s, is "
              f"its practical ceiling; this class asked for {runs / rep['wall_s']:.1f}/s")
    print(f"{'page':<22}{'kind':<7}{'n':>5}{'p50 (s)':>9}{'p95 (s)':>9}{'max (s)':>9}")
    for row in rep["latency"]:
        print(f"{row['page']:<22}{row['kind']:<7}{row['n']:>5}{row['p50_s']:>9.2f}{row['p95_s']:>9.2f}"
              f"{row['max_s']:>9.2f}")
    mech = [row for row in rep["latency"] if row["kind"] == "rerun" and row["page"] in MECHANISM_PAGES]
    if mech:
        worst = max(mech, key=lambda row: row["p95_s"])
        print(f"mechanism pages: worst rerun p95 {worst['p95_s']:.2f} s ({worst['page']}); target < 2 s")
    if rep.get("slowest"):
        print("slowest reruns per page (control moved):")
        for row in rep["slowest"]:
            print(f"  {row['page']:<22}{row['seconds']:>7.2f} s  {row['action'][:70]}")
    if rep["rss"]:
        values = [s["bytes"] for s in rep["rss"]]
        print(f"server RSS: start {fmt_bytes(values[0])}, peak {fmt_bytes(max(values))}, end {fmt_bytes(values[-1])} "
              f"({len(values)} samples, 1 s apart)")
    h = rep.get("heavy", {})
    if h.get("sessions"):
        print(f"heavy: {h['sessions']} sessions pressed Train ({h['steps']} steps) {h['presses']} times: "
              f"{h['presses'] - h['refused']} ran, {h['refused']} refused as busy; longest wait before a refusal "
              f"{h['longest_refusal_s']:.1f} s (stated {h['stated_wait_s']:g} s); longest press {h['longest_press_s']:.1f} s")
    print(f"errors: {len(rep['errors'])}")
    for e in rep["errors"][:20]:
        print(f"  {e}")
    print(f"st.error answers: {sum(rep['alerts'].values())}")
    for text, n in list(rep["alerts"].items())[:10]:
        print(f"  {n} x {text}")
    print(f"cross-talk: {len(rep['cross_talk'])} (own values verified echoed in their own URL: "
          f"{rep['own_echoes_verified']} of {rep['reruns']} reruns)")
    for c in rep["cross_talk"][:20]:
        print(f"  {c}")


def parse_args(argv: list[str]):
    ap = argparse.ArgumentParser(prog="python -m k3lite.bench load", description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--minutes", type=float, default=2.0)
    ap.add_argument("--url", default="", help="a running server on loopback (default: start one)")
    ap.add_argument("--pid", type=int, default=0, help="with --url: the server's process id, to sample its RSS")
    ap.add_argument("--pages", default=",".join(DEFAULT_PAGES), help="comma-separated url paths")
    ap.add_argument("--think", default="3,10", help="think time between moves: min,max seconds")
    ap.add_argument("--ramp", type=float, default=10.0, help="the sessions arrive within this many seconds")
    ap.add_argument("--no-warmup", action="store_true", help="skip the teacher's first visit of every page")
    ap.add_argument("--heavy", type=int, default=0,
                    help="this many of the sessions keep pressing the lab's Train instead of moving controls")
    ap.add_argument("--heavy-steps", type=int, default=20, help="training steps per Train press (10..800)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default="", help="also write the full report (every sample) to this file")
    args = ap.parse_args(argv)
    known = {p.url_path for p in PAGES}
    args.pages = [p.strip() for p in args.pages.split(",") if p.strip()]
    bad = [p for p in args.pages if p not in known]
    if bad or not args.pages:
        ap.error(f"--pages must be url paths from views/registry.py {sorted(known)}, got {bad or 'none'}")
    try:
        lo, hi = (float(x) for x in args.think.split(","))
    except ValueError:
        ap.error(f"--think must be min,max seconds, got {args.think!r}")
    if not 0 <= lo <= hi:
        ap.error(f"--think needs 0 <= min <= max, got {args.think!r}")
    args.think = (lo, hi)
    if args.sessions < 1 or not args.minutes > 0 or args.ramp < 0:
        ap.error("--sessions must be >= 1, --minutes > 0 and --ramp >= 0")
    if not 0 <= args.heavy <= args.sessions or not 10 <= args.heavy_steps <= 800 or args.heavy_steps % 10:
        ap.error("--heavy must be in 0..--sessions and --heavy-steps a multiple of 10 in 10..800 (the lab's slider)")
    if args.url:
        try:
            args.url = check_loopback(args.url)
        except ValueError as e:
            ap.error(str(e))
    return args


def measure(args) -> dict:
    """Run the load test (starting a server unless args.url); returns the report dict."""
    proc = None
    url, pid = args.url, args.pid
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"k3lite-load-{os.getpid()}.log"
    if not url:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start_server(port, log_path)
        pid = proc.pid
    sampler = None
    try:
        wait_healthy(url, proc=proc)
        if pid:
            sampler = RssSampler(pid)
            sampler.start()
        load0 = os.getloadavg()[0]
        server_cpu0 = tree_cpu_seconds(pid) if pid else float("nan")
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.monotonic()
        findings = asyncio.run(run_load(url, args.sessions, 60 * args.minutes, args.pages, args.think,
                                        args.ramp, args.seed, not args.no_warmup, args.heavy,
                                        args.heavy_steps))
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
        wall = time.monotonic() - t0
        server_cpu = (tree_cpu_seconds(pid) - server_cpu0) if pid else float("nan")
    finally:
        if sampler is not None:
            sampler.stop()
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
    rep = report(findings, sampler.samples if sampler else [], args, cpu, (load0, os.getloadavg()[0]), wall)
    rep["server_cpu_s"] = server_cpu
    if proc is not None:  # tracebacks the server logged (an exception a page swallowed would still show here)
        text = log_path.read_text(errors="replace")
        rep["server_log_tracebacks"] = text.count("Traceback (most recent call last)")
        if rep["server_log_tracebacks"]:
            rep["errors"].append(f"the server logged {rep['server_log_tracebacks']} traceback(s); see {log_path}")
    return rep


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    rep = measure(args)
    print_report(rep)
    if args.json:
        Path(args.json).write_text(json.dumps(rep, indent=1))
        print(f"full report: {args.json}")
    return 1 if rep["errors"] or rep["cross_talk"] else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
