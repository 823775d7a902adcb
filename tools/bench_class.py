"""A lecture hall under load: N real sessions through nginx onto R replicas of the app (tools/hall.py), measured.

    python -m k3lite.bench class [--replicas 3] [--sessions 60] [--minutes 10] [--baseline] [--fault]
                                 [--fault-minutes 4] [--pages home,moe,...] [--think 3,10] [--affinity cookie|none]
                                 [--seed 0] [--json FILE]

The runs, one after the other, each on fresh servers:
  hall      --replicas replicas behind nginx (deploy/nginx.conf.template), --sessions sessions for --minutes
  baseline  (--baseline) one replica behind the same nginx, the same sessions for the same time: the same sessions
            per core (same machine), so the rerun p95 of the hall can be compared with it
  fault     (--fault) the hall again for --fault-minutes; halfway, the replica holding the most sessions is killed
            (SIGKILL); its sessions reconnect through nginx, land on another replica, and rerun their page with the
            URL they had (the view comes back from the link); the others must see nothing
Each session is tools/bench_load.py's visitor (Streamlit's own websocket protocol, think time, cross-talk markers)
speaking to nginx as a browser does: it first GETs `/` (nginx answers with the `k3lite_pin` cookie and the header
X-K3lite-Replica naming the replica), then a static file, then opens its websocket with the cookie; every
/media/... URL a page sends (downloads, images) is fetched with the cookie too.

Affinity check: every connection of a session (page, static file, websocket, media, reconnection) must be answered
by the same replica and never 4xx; after the fault, by the replica its sessions moved to. `--affinity none`
serves through round-robin instead, and the check reports the breaks (that is how the check is tested).
Printed: the load table (per run: replicas, sessions, sessions per core, rerun p95, errors, cross-talk, affinity
breaks, RSS and CPU per replica), rerun p95 per page with the hall / baseline ratio, and the fault run's story.
Exit status 1 on any error, cross-talk or affinity break (in the fault run: in a session the fault did not hit,
or a view that did not come back).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs

from k3lite.viz.style import fmt_bytes  # the one byte formatter (decimal units)
from tools import bench_load
from tools.hall import PIN_COOKIE, REPLICA_HEADER, Hall
from tools.streamlit_session import RUN_TIMEOUT_S, RssSampler, Session, tree_cpu_seconds

STATIC_PATH = "/favicon.png"  # a static file every replica serves alike: a 4xx means the proxy lost the session
RATIO_TARGET = 1.5  # the hall's rerun p95 may be at most this many times the one-replica figure


@dataclass
class Move:
    session: int
    page: str
    from_replica: int | None
    to_replica: int | None
    seconds: float  # from the dropped run's start to the reconnected page's script_finished
    restored: bool  # the reconnected page echoes every query parameter the session had


@dataclass
class HallFindings:
    pinned: dict = field(default_factory=dict)  # session -> replica it was first pinned to
    breaks: list = field(default_factory=list)  # affinity breaks, in words
    moves: list = field(default_factory=list)  # Move per reconnection after a replica died
    requests: int = 0  # HTTP requests and websocket handshakes whose replica was checked
    lost: list = field(default_factory=list)  # answers after the session's replica died, before it reconnected


def http_get(url: str, cookie: str = "") -> tuple[int, dict]:
    """(status, headers) of a GET; a 4xx/5xx is returned, not raised."""
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            r.read()
            return r.status, dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers)


def pin_of(headers: dict) -> str:
    m = re.search(rf"{PIN_COOKIE}=([^;]+)", headers.get("Set-Cookie", ""))
    return m.group(1) if m else ""


def restored(sent: str, got: str) -> bool:
    """Whether the page's URL after a reconnection echoes every parameter the session had before."""
    before, after = parse_qs(sent, keep_blank_values=True), parse_qs(got, keep_blank_values=True)
    return all(after.get(k) == v for k, v in before.items())


class ProxiedSession(Session):
    """A visitor going through nginx as a browser does: pinned by cookie; every answer's replica is checked."""

    def __init__(self, url: str, index: int, marker_re, hall: Hall, found: HallFindings):
        super().__init__(url, index, marker_re)
        self.hall, self.found = hall, found
        self.pin, self.replica = "", None

    def check(self, what: str, headers: dict | None, status: int = 200) -> None:
        got = self.hall.replica_of((headers or {}).get(REPLICA_HEADER, ""))
        self.found.requests += 1
        if self.replica in self.hall.killed:  # its replica died before the session noticed: the fault, not a break
            self.found.lost.append(f"session {self.index}: {what} answered {status} by replica {got} after its "
                                   f"replica {self.replica} died")
        elif status >= 400:
            self.found.breaks.append(f"session {self.index}: {what} answered {status} (replica {got})")
        elif got != self.replica:
            self.found.breaks.append(f"session {self.index}: {what} answered by replica {got}, its pin is on "
                                     f"replica {self.replica}")

    async def connect(self) -> None:
        if not self.pin:  # a browser's first request: the page, which pins it
            status, headers = await asyncio.to_thread(http_get, self.url + "/")
            self.pin, self.replica = pin_of(headers), self.hall.replica_of(headers.get(REPLICA_HEADER, ""))
            self.found.pinned[self.index] = self.replica
            self.found.requests += 1
            if status != 200 or not self.pin:
                self.found.breaks.append(f"session {self.index}: the page answered {status} without a pin cookie")
            status, headers = await asyncio.to_thread(http_get, self.url + STATIC_PATH, f"{PIN_COOKIE}={self.pin}")
            self.check("a static file", headers, status)
        self.headers = {"Cookie": f"{PIN_COOKIE}={self.pin}"}
        await super().connect()
        self.check("the websocket", {REPLICA_HEADER: self.response_header(REPLICA_HEADER) or ""})

    async def run(self, page, states, query, timeout_s=RUN_TIMEOUT_S):
        t0 = time.perf_counter()
        r = await super().run(page, states, query, timeout_s)
        if self.replica in self.hall.killed and any("websocket closed" in e for e in r.exceptions):
            # its replica died: reconnect as the frontend does (nginx sends the pin to the next replica) and
            # rerun the page with the URL it had
            old = self.replica
            await self.close()
            headers: dict = {}
            try:
                status, headers = await asyncio.to_thread(http_get, self.url + "/", f"{PIN_COOKIE}={self.pin}")
                self.replica = self.hall.replica_of(headers.get(REPLICA_HEADER, ""))
                await super().connect()
                self.check("the websocket after the reconnection", {REPLICA_HEADER: self.response_header(REPLICA_HEADER) or ""})
            except OSError as e:
                r.exceptions.append(f"could not reconnect: {e}")
                return r
            back = await super().run(page, [], query, timeout_s)  # the page opened from the URL it had
            self.found.moves.append(Move(self.index, page, old, self.replica, time.perf_counter() - t0,
                                         not back.exceptions and restored(query, back.query_string)))
            if back.exceptions:
                return back
            r = await super().run(page, states, back.query_string, timeout_s)  # then the move that was lost
        for path in r.media:
            status, headers = await asyncio.to_thread(http_get, self.url + path, f"{PIN_COOKIE}={self.pin}")
            self.check(f"media {path[:24]}...", headers, status)
        return r


# ------------------------------------------------------------------------------------------ one run
async def warm(hall: Hall, pages: list[str], records: list) -> None:
    """The teacher opens every page once on every replica (directly), so the caches are warm before class."""
    for port in [port for i, port in enumerate(hall.ports) if i not in hall.killed]:
        teacher = Session(f"http://127.0.0.1:{port}", 0, bench_load.MARKER_RE)
        await teacher.connect()
        try:
            for page in pages:
                r = await teacher.run(page, [], "")
                records.append(bench_load.Record(0, page, "cold", r.seconds, "open"))
        finally:
            await teacher.close()


async def class_period(hall: Hall, url: str, args, seconds: float, fault_at_s: float | None, found: HallFindings,
                       warmup: bool = True):
    cold: list = []
    if warmup:
        await warm(hall, args.pages, cold)
    fault: dict = {}

    async def kill_busiest() -> None:
        await asyncio.sleep(fault_at_s)
        counts = {i: sum(1 for r in found.pinned.values() if r == i) for i in range(hall.replicas)}
        victim = max(counts, key=counts.get)
        fault.update(replica=victim, sessions=counts[victim], at_s=fault_at_s)
        await asyncio.to_thread(hall.kill, victim)

    def make(url, index, marker_re):
        return ProxiedSession(url, index, marker_re, hall, found)

    load = bench_load.run_load(url, args.sessions, seconds, args.pages, args.think, args.ramp, args.seed,
                               False, make_session=make)
    if fault_at_s is None:
        findings = await load
    else:
        findings, _ = await asyncio.gather(load, kill_busiest())
    findings.records[:0] = cold
    return findings, fault


def run_setup(label: str, replicas: int, args, minutes: float, fault: bool = False) -> dict:
    """One run on fresh servers: `replicas` replicas behind nginx with args.affinity."""
    with Hall(replicas, affinity=args.affinity) as hall:
        return measure_hall(hall, hall.url, label, args, minutes, fault)


def measure_hall(hall: Hall, url: str, label: str, args, minutes: float, fault: bool = False,
                 warmup: bool = True) -> dict:
    """args.sessions sessions through the nginx at `url` onto `hall`'s replicas for `minutes` (a replica killed
    halfway with `fault`): the run's report."""
    found = HallFindings()
    replicas = hall.replicas
    live = [i for i in range(replicas) if i not in hall.killed]
    samplers = {i: RssSampler(hall.procs[i].pid) for i in live}
    for sampler in samplers.values():
        sampler.start()
    cpu0 = {i: tree_cpu_seconds(hall.procs[i].pid) for i in live}
    load0, t0 = os.getloadavg()[0], time.monotonic()
    try:
        findings, fault_info = asyncio.run(class_period(hall, url, args, 60 * minutes,
                                                        30 * minutes if fault else None, found, warmup))
    finally:
        for sampler in samplers.values():
            sampler.stop()
    wall = time.monotonic() - t0
    cpu = [tree_cpu_seconds(hall.procs[i].pid) - cpu0[i] if i in live and i not in hall.killed else float("nan")
           for i in range(replicas)]
    logs = [(hall.prefix / f"replica-{i}.log").read_text(errors="replace") for i in range(replicas)]
    hit = {s for s, r in found.pinned.items() if fault_info and r == fault_info["replica"]}
    errors = findings.errors + [f"replica {i} logged {log.count('Traceback (most recent call last)')} traceback(s)"
                                for i, log in enumerate(logs) if "Traceback (most recent call last)" in log]
    session_of = [int(m.group(1)) if (m := re.match(r"session (\d+)", e)) else None for e in errors]
    return {
        "label": label, "replicas": replicas, "sessions": args.sessions, "cpus": os.cpu_count(), "minutes": minutes,
        "wall_s": wall, "load_avg": (load0, os.getloadavg()[0]),
        "latency": bench_load.summarize(findings.records), "reruns": sum(r.kind == "rerun" for r in findings.records),
        "errors": errors, "errors_elsewhere": [e for e, s in zip(errors, session_of) if s not in hit],
        "alerts": findings.alerts, "cross_talk": findings.cross_talk, "own_echoes_verified": findings.own_echoes,
        "affinity_breaks": found.breaks, "affinity_checked": found.requests,
        "pinned": {i: sum(1 for r in found.pinned.values() if r == i) for i in range(replicas)},
        "rss_peak": [max((b for _, b in samplers[i].samples), default=0) if i in samplers else 0
                     for i in range(replicas)],
        "cpu_s": cpu, "fault": fault_info, "fault_hit_sessions": sorted(hit),
        "moves": [vars(m) for m in found.moves], "lost_to_fault": found.lost,
    }


# ------------------------------------------------------------------------------------------ the report
def rerun_p95(rep: dict) -> dict:
    return {row["page"]: row["p95_s"] for row in rep["latency"] if row["kind"] == "rerun"}


def pooled_p95(rep: dict) -> float:
    """The rerun p95 over all pages: per-page p95s weighted by their rerun counts (a summary, not a quantile)."""
    rows = [row for row in rep["latency"] if row["kind"] == "rerun"]
    n = sum(row["n"] for row in rows)
    return sum(row["p95_s"] * row["n"] for row in rows) / n if n else float("nan")


def failed(rep: dict) -> list[str]:
    """Why a run fails the class's bar (empty: it passes)."""
    why = []
    errors = rep["errors_elsewhere"] if rep["fault"] else rep["errors"]
    if errors:
        why.append(f"{len(errors)} error(s)" + (" in sessions the fault did not hit" if rep["fault"] else ""))
    if rep["cross_talk"]:
        why.append(f"{len(rep['cross_talk'])} cross-talk")
    if rep["affinity_breaks"]:
        why.append(f"{len(rep['affinity_breaks'])} affinity break(s)")
    if rep["fault"] and not all(m["restored"] for m in rep["moves"]):
        why.append(f"{sum(not m['restored'] for m in rep['moves'])} view(s) not restored after the fault")
    return why


def ratio_sentence(hall: dict, base: dict) -> str:
    """The hall's rerun p95 against the one-replica baseline, page by page; the worst ratio decides."""
    h, b = rerun_p95(hall), rerun_p95(base)
    ratios = {p: h[p] / b[p] for p in h if p in b and b[p] > 0}
    if not ratios:
        return "no page was rerun in both runs: no ratio"
    worst = max(ratios, key=ratios.get)
    verdict = "within" if ratios[worst] <= RATIO_TARGET else "beyond"
    return (f"rerun p95, {hall['replicas']} replicas vs 1 at {hall['sessions'] / hall['cpus']:g} sessions per core: "
            f"worst page {worst} {ratios[worst]:.2f}x ({h[worst]:.2f} s vs {b[worst]:.2f} s), {verdict} the "
            f"{RATIO_TARGET:g}x target")


def print_reports(reps: list[dict]) -> None:
    print(f"{'run':<10}{'replicas':>9}{'sessions':>9}{'per core':>9}{'reruns':>8}{'p95 (s)':>9}{'errors':>8}"
          f"{'x-talk':>7}{'breaks':>7}  RSS peak per replica / CPU s per replica")
    for rep in reps:
        rss = ", ".join(fmt_bytes(b) for b in rep["rss_peak"])
        cpu = ", ".join("killed" if c != c else f"{c:.0f}" for c in rep["cpu_s"])
        print(f"{rep['label']:<10}{rep['replicas']:>9}{rep['sessions']:>9}{rep['sessions'] / rep['cpus']:>9g}"
              f"{rep['reruns']:>8}{pooled_p95(rep):>9.2f}{len(rep['errors']):>8}{len(rep['cross_talk']):>7}"
              f"{len(rep['affinity_breaks']):>7}  {rss} / {cpu}")
    pages = list(dict.fromkeys(p for rep in reps for p in rerun_p95(rep)))
    print("rerun p95 per page (s): " + "; ".join(
        f"{p} " + " / ".join(f"{rerun_p95(rep).get(p, float('nan')):.2f}" for rep in reps) for p in pages)
        + f"  ({' / '.join(rep['label'] for rep in reps)})")
    by = {rep["label"]: rep for rep in reps}
    if "hall" in by and "baseline" in by:
        print(ratio_sentence(by["hall"], by["baseline"]))
    for rep in reps:
        print(f"{rep['label']}: sessions pinned per replica {rep['pinned']}; {rep['affinity_checked']} answers' "
              f"replica checked; load average {rep['load_avg'][0]:.1f} -> {rep['load_avg'][1]:.1f}")
        if rep["fault"]:
            f, moves = rep["fault"], rep["moves"]
            took = sorted(m["seconds"] for m in moves)
            print(f"fault: replica {f['replica']} (holding {f['sessions']} sessions) killed after {f['at_s']:.0f} s; "
                  f"{len(moves)} session(s) reconnected to replica(s) {sorted({m['to_replica'] for m in moves})}, "
                  f"{sum(m['restored'] for m in moves)} with their view restored from the URL"
                  + (f", in {took[0]:.1f}-{took[-1]:.1f} s" if took else "")
                  + f"; {len(rep['lost_to_fault'])} answer(s) came from another replica before the session noticed "
                  f"(a page's media after its replica died); errors in the other sessions: {len(rep['errors_elsewhere'])}")
        for e in (rep["errors"] + rep["affinity_breaks"] + rep["cross_talk"])[:10]:
            print(f"  {e}")
        why = failed(rep)
        print(f"{rep['label']}: " + ("; ".join(why) if why else "no errors, no cross-talk, no affinity breaks"))


def parse_args(argv: list[str]):
    ap = argparse.ArgumentParser(prog="python -m k3lite.bench class", description=__doc__.split("\n")[0])
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=60, help="sessions in all (not per replica)")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--baseline", action="store_true", help="also run one replica with the same sessions")
    ap.add_argument("--fault", action="store_true", help="also run the hall again and kill a replica halfway")
    ap.add_argument("--fault-minutes", type=float, default=4.0)
    ap.add_argument("--only-fault", action="store_true", help="the fault run alone")
    ap.add_argument("--affinity", default="cookie", choices=("cookie", "none"))
    ap.add_argument("--pages", default=",".join(bench_load.DEFAULT_PAGES), help="comma-separated url paths")
    ap.add_argument("--think", default="3,10", help="think time between moves: min,max seconds")
    ap.add_argument("--ramp", type=float, default=20.0, help="the sessions arrive within this many seconds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default="", help="also write every run's report to this file")
    args = ap.parse_args(argv)
    checked = bench_load.parse_args(["--pages", args.pages, "--think", args.think, "--sessions", str(args.sessions),
                                     "--minutes", str(args.minutes), "--ramp", str(args.ramp)])
    args.pages, args.think = checked.pages, checked.think
    if args.replicas < 1 or (args.fault or args.only_fault) and args.replicas < 2:
        ap.error("--replicas must be >= 1, and >= 2 with --fault (a session needs somewhere to go)")
    if not args.fault_minutes > 0:
        ap.error("--fault-minutes must be > 0")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    reps = []
    if not args.only_fault:
        reps.append(run_setup("hall", args.replicas, args, args.minutes))
        if args.baseline:
            reps.append(run_setup("baseline", 1, args, args.minutes))
    if args.fault or args.only_fault:
        reps.append(run_setup("fault", args.replicas, args, args.fault_minutes, fault=True))
    print(f"class bench: {args.sessions} sessions through nginx, pages {args.pages}, think {args.think} s, "
          f"{os.cpu_count()} CPUs")
    print_reports(reps)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(reps, indent=1))
        print(f"full report: {args.json}")
    return 1 if any(failed(rep) for rep in reps) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
