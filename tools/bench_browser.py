"""App speed as a student feels it, in a real browser: time to the first chart of every page, and to the changed
picture after a control moves, against the floor of a one-chart Streamlit page measured in the same run.

    python -m k3lite.bench browser [--pages home,moe] [--repeats 3] [--json report.json] [--url http://127.0.0.1:PORT]

Per page (Debian's Chromium through playwright, a warm server: every page is opened once before timing):
  fresh     a new browser context (empty cache, new session): navigation start -> the first Plotly chart drawn,
            and -> idle (script not running, no loading skeletons)
  cached    a reload in the same context (browser cache warm, new session)
  bytes     what the server sent for the fresh view: HTTP bodies (scripts, CSS, fonts) and websocket frames
            (the page's elements and figures)
  figures   Plotly charts on the page, and the points they draw (x values over all traces)
  phases    where the fresh first chart's time went, read in the browser (printed after the pages): navigation ->
            Streamlit asks for its Plotly chunk, that chunk's download, Plotly's code run, the first draw
  control   the first slider moved one step with the keyboard (right; left at its maximum) -> the picture changed (the
            charts' data, or a metric / text, differ from before; "-" if nothing changed within the timeout): the
            first press in the page ("control s": one-time costs, chart code compiled and labels measured, included),
            and the median of four more presses back and forth ("after"), as a student moving a slider feels it
The floor is `tools/floor_page.py` (st.title + one st.plotly_chart of 200 points), served by its own server,
measured the same way in the same run; each page's ratio ("x floor") is its median over the floor's median. The
floor is also opened once right before each fresh open of a page ("x pair": the page's median over the median of
those opens), so a slow minute on the machine slows page and floor alike; a run's floor measured only at its start
has differed by 25% between two runs on the same idle machine (2.18 s and 2.75 s).
A second floor, the same page with five controls beside the chart (`?controls=1`: radio, text box, selectbox,
two sliders, as the app's first screens have), is measured too ("x ctl fl"): what Streamlit itself costs for a
picture with its controls; its slider is moved as the pages' are.
Medians over `--repeats` fresh contexts. A benchmark, not a test: it prints and writes numbers, asserts nothing.
The machine's load average is printed: other processes slow every number alike.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from tools.streamlit_session import check_loopback, free_port, start_server, wait_healthy
from views.registry import PAGES

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TIMEOUT_MS = 60_000
MOVES = 5  # key presses per page: the first in a fresh page (one-time costs: chart code compiled, labels measured), then
# four more back and forth, as a student moving a slider feels it

FIRST_CHART_JS = "() => document.querySelectorAll('.js-plotly-plot .main-svg').length > 0"
IDLE_JS = """() => {
  const app = document.querySelector("[data-testid='stApp']");
  return !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && app.getAttribute('data-test-connection-state') === 'CONNECTED'
    && document.querySelectorAll("[data-testid='stSkeleton']").length === 0;
}"""
# the first chart, or the sign that the first run drew none: the script finished and nothing is still loading (a
# Plotly chart shows a skeleton until Plotly has loaded)
CHART_OR_NONE_JS = (f"() => ({FIRST_CHART_JS})() || (({IDLE_JS})()"
                    " && document.querySelectorAll(\"[data-testid='stElementContainer']\").length > 0)")  # ran once
PICTURE_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  const plots = [...main.querySelectorAll('.js-plotly-plot')];
  const data = plots.map(el => JSON.stringify((el.data || []).map(t => [t.x, t.y, t.z, t.values])));
  const text = [...main.querySelectorAll('[data-testid="stMetric"], [data-testid="stMarkdown"]')]
    .map(e => e.innerText);
  const points = plots.reduce((n, el) => n + (el.data || []).reduce(
      (m, t) => m + ((t.x && t.x.length) || (t.values && t.values.length) || 0), 0), 0);  // encoded arrays: 0
  return {key: JSON.stringify([data, text]), figures: plots.length, points};
}"""

# where a fresh open's time to the first chart goes, read in the page (ms since navigation start): the browser's
# long tasks and the moment the first chart's svg appears, recorded from the document's start
PHASES_INIT_JS = """window.__k3phases = {longtasks: []};
new PerformanceObserver(list => list.getEntries().forEach(
  e => window.__k3phases.longtasks.push([e.startTime, e.duration]))).observe({type: 'longtask', buffered: true});
new MutationObserver((_, obs) => {
  if (document.querySelector('.js-plotly-plot .main-svg')) {
    window.__k3phases.chart = performance.now(); obs.disconnect();
  }
}).observe(document, {childList: true, subtree: true});"""
# to_chunk: navigation -> Streamlit asks for its Plotly chunk (HTML, scripts, websocket, the page script up to its
# first chart, the elements before it drawn); fetch: that 4.7 MB chunk downloaded (queued behind the other
# elements' chunks); eval: until Plotly's code has run (the first long task >= 300 ms after the download); draw:
# then until the first chart's svg exists
PHASES_JS = """() => {
  const p = window.__k3phases, e = performance.getEntriesByType('resource').find(r => r.name.includes('/PlotlyChart.'));
  if (!p || !p.chart || !e) return null;
  const ev = p.longtasks.find(([s, d]) => s >= e.responseEnd - 1 && d >= 300);
  const evalEnd = ev ? ev[0] + ev[1] : null;
  return {to_chunk: e.startTime / 1e3, fetch: (e.responseEnd - e.startTime) / 1e3,
          eval: ev ? (evalEnd - e.responseEnd) / 1e3 : null, draw: ev ? (p.chart - evalEnd) / 1e3 : null};
}"""
PHASES = ("to_chunk", "fetch", "eval", "draw")


def _idle(page) -> None:
    page.wait_for_timeout(200)  # let a rerun start before asking whether it finished
    page.wait_for_function(IDLE_JS, timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)
    page.wait_for_function(IDLE_JS, timeout=TIMEOUT_MS)


def open_page(context, url: str) -> dict:
    """Navigate a page of `context` to `url`: seconds to the first chart and to idle, bytes received, picture."""
    page = context.new_page()
    received = {"http": 0, "ws": 0}

    def on_response(response):
        try:
            received["http"] += len(response.body())
        except Exception:  # redirects and aborted requests have no body
            pass

    def on_ws(ws):
        ws.on("framereceived", lambda payload: received.__setitem__(
            "ws", received["ws"] + len(payload if isinstance(payload, (bytes, str)) else b"")))

    page.on("response", on_response)
    page.on("websocket", on_ws)
    start = time.perf_counter()
    page.goto(url)
    first_chart = None
    page.wait_for_function(CHART_OR_NONE_JS, timeout=TIMEOUT_MS, polling=20)
    phases = None
    if page.evaluate(FIRST_CHART_JS):  # else a page without a chart on its first run
        first_chart = time.perf_counter() - start
        phases = page.evaluate(PHASES_JS)
    _idle(page)
    idle = time.perf_counter() - start
    picture = page.evaluate(PICTURE_JS)
    return {"page": page, "first_chart_s": first_chart, "phases": phases, "idle_s": idle,
            "bytes_http": received["http"],
            "bytes_ws": received["ws"], "figures": picture["figures"], "points": picture["points"],
            "picture": picture["key"]}


def move_first_slider(page, moves: int = MOVES) -> dict:
    """The first slider one step with the keyboard (right, or left from its maximum), then back and forth for
    `moves` steps in all; seconds from each key press until the picture changed (None: it did not)."""
    # this Streamlit renders a slider's thumb as a range input (older ones: role="slider"): take whichever exists
    handle = page.locator("[data-testid='stSlider'] input[type='range'], [data-testid='stSlider'] [role='slider']").first
    if not handle.count():
        return {"control": None, "control_s": None, "control_warm_s": None}
    label = page.locator("[data-testid='stSlider']").first.inner_text().split("\n")[0]
    at_max = handle.evaluate("(el) => { const v = el.getAttribute('aria-valuenow') ?? el.value;"
                             " const m = el.getAttribute('aria-valuemax') ?? el.max; return Number(v) >= Number(m); }")
    times = []
    for i in range(moves):  # one step whichever way the slider can move, then back: two pictures, drawn in turn
        away = (i % 2 == 0) != at_max
        before = page.evaluate(PICTURE_JS)["key"]
        handle.focus()
        start = time.perf_counter()
        page.keyboard.press("ArrowRight" if away else "ArrowLeft")
        deadline, took = start + TIMEOUT_MS / 1000, None
        while time.perf_counter() < deadline:
            if page.evaluate(PICTURE_JS)["key"] != before:
                took = time.perf_counter() - start
                break
            page.wait_for_timeout(10)
        times.append(took)
        if took is None:
            break
        _idle(page)  # the rerun finished (and anything drawn after the changed picture) before the next press
    warm = [t for t in times[1:] if t is not None]
    return {"control": label, "control_s": times[0], "control_warm_s": statistics.median(warm) if warm else None,
            "control_moves_s": times}


def fresh_context(browser):
    """A new browser context (empty cache) at the desktop width, recording the phases of its pages' first charts."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.add_init_script(PHASES_INIT_JS)
    return context


def fresh_first_chart(browser, url: str) -> float | None:
    """One fresh context's seconds to the first chart of `url` (the paired floor: see `measure`)."""
    context = fresh_context(browser)
    try:
        opened = open_page(context, url)
        opened["page"].close()
        return opened["first_chart_s"]
    finally:
        context.close()


def measure(browser, url: str, repeats: int, control: bool, floor_url: str | None = None) -> dict:
    """`repeats` fresh contexts of `url` (each then reloaded, and its first slider moved if `control`). With
    `floor_url`, each fresh open of `url` follows a fresh open of the floor, so page and floor share the machine's
    state of that moment (a busy minute slows both): "floor_paired_s" is the median of those floor opens."""
    runs, paired = [], []
    for _ in range(repeats):
        if floor_url:
            paired.append(fresh_first_chart(browser, floor_url))
        context = fresh_context(browser)
        fresh = open_page(context, url)
        fresh["page"].close()
        cached = open_page(context, url)
        moved = move_first_slider(cached["page"]) if control else {"control": None, "control_s": None,
                                                                     "control_warm_s": None}
        cached["page"].close()
        context.close()
        runs.append({"fresh": {k: v for k, v in fresh.items() if k not in ("page", "picture")},
                     "cached": {k: v for k, v in cached.items() if k not in ("page", "picture")}, **moved})

    def med(path):
        vals = [r[path[0]][path[1]] if len(path) == 2 else r[path[0]] for r in runs]
        vals = [v for v in vals if v is not None]
        return statistics.median(vals) if vals else None

    paired = [v for v in paired if v is not None]
    phases = {}
    for name in PHASES:
        vals = [r["fresh"]["phases"][name] for r in runs
                if r["fresh"]["phases"] and r["fresh"]["phases"][name] is not None]
        phases[name] = statistics.median(vals) if vals else None
    return {"url": url, "runs": runs, "phases_s": phases,
            "floor_paired_s": statistics.median(paired) if paired else None,
            "fresh_first_chart_s": med(("fresh", "first_chart_s")), "fresh_idle_s": med(("fresh", "idle_s")),
            "cached_first_chart_s": med(("cached", "first_chart_s")), "cached_idle_s": med(("cached", "idle_s")),
            "bytes": med(("fresh", "bytes_http")) + med(("fresh", "bytes_ws")),
            "bytes_ws": med(("fresh", "bytes_ws")), "figures": runs[-1]["fresh"]["figures"],
            "points": runs[-1]["fresh"]["points"], "control": runs[-1]["control"], "control_s": med(("control_s",)),
            "control_warm_s": med(("control_warm_s",))}


def print_phases(report: dict) -> None:
    """Where each fresh open's time to the first chart went (medians, s): see PHASES_JS."""
    rows = {"floor": report["floor"], "floor, 5 controls": report["floor_controls"],
            **{route: r for route, r in report["pages"].items() if any((r.get("phases_s") or {}).values())}}
    print("\nwhere the time to the first chart goes (fresh opens, medians, s): to_chunk = navigation -> Plotly's chunk "
          "asked for; fetch = its download; eval = until Plotly's code has run; draw = until the chart exists")
    print(f"{'page':<20}" + "".join(f"{name:>10}" for name in PHASES))
    for name, r in rows.items():
        print(f"{name:<20}" + "".join(f"{_fmt(r['phases_s'][p]):>10}" for p in PHASES), flush=True)


def _fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m k3lite.bench browser", description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", default="", help="url paths, comma-separated (default: every page)")
    p.add_argument("--repeats", type=int, default=3, help="fresh browser contexts per page (median)")
    p.add_argument("--no-control", action="store_true", help="skip moving a slider")
    p.add_argument("--url", default=None, help="an app already running on loopback (else one is started)")
    p.add_argument("--json", default=None, help="write the report here")
    args = p.parse_args(argv)
    if args.repeats < 1:
        print("error: --repeats must be >= 1", file=sys.stderr)
        return 2
    if not os.path.exists(CHROMIUM):
        print(f"error: {CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2
    routes = [r for r in args.pages.split(",") if r] or [pg.url_path for pg in PAGES]
    unknown = sorted(set(routes) - {pg.url_path for pg in PAGES})
    if unknown:
        print(f"error: unknown pages {unknown}; choose from {[pg.url_path for pg in PAGES]}", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    procs, logs = [], Path(os.environ.get("TMPDIR", "/tmp"))
    try:
        if args.url:
            app_url = check_loopback(args.url)
        else:
            port = free_port()
            procs.append(start_server(port, logs / f"bench_browser_app_{port}.log"))
            app_url = f"http://127.0.0.1:{port}"
            wait_healthy(app_url, proc=procs[-1])
        floor_port = free_port()
        procs.append(start_server(floor_port, logs / f"bench_browser_floor_{floor_port}.log", "tools/floor_page.py"))
        floor_url = f"http://127.0.0.1:{floor_port}"
        wait_healthy(floor_url, proc=procs[-1])
        report = {"load_average": os.getloadavg(), "repeats": args.repeats, "pages": {}}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            for route in routes:  # warm the server: every page's caches built once before timing
                print(f"warming {route}", file=sys.stderr, flush=True)
                ctx = browser.new_context()
                try:
                    open_page(ctx, f"{app_url}/{route}")["page"].close()
                except Exception as exc:  # a cold build slower than the timeout: its measurement will say so
                    print(f"warming {route}: {type(exc).__name__}", file=sys.stderr, flush=True)
                ctx.close()
            report["floor"] = measure(browser, floor_url, args.repeats, control=False)
            report["floor_controls"] = measure(browser, f"{floor_url}/?controls=1", args.repeats, not args.no_control)
            floor, floor_c = (report[k]["fresh_first_chart_s"] for k in ("floor", "floor_controls"))
            print(f"load average {report['load_average'][0]:.2f}; floor (one-chart page): first chart "
                  f"{_fmt(floor)} s fresh, {_fmt(report['floor']['cached_first_chart_s'])} s cached; with five "
                  f"controls beside it: {_fmt(floor_c)} s fresh (x{_fmt(floor_c / floor)}), its slider "
                  f"{_fmt(report['floor_controls']['control_s'])} s first, {_fmt(report['floor_controls']['control_warm_s'])} s after")
            print(f"{'page':<20}{'1st chart':>10}{'x floor':>8}{'x pair':>7}{'x ctl fl':>9}{'idle':>7}{'cached':>8}"
                  f"{'kB':>8}"
                  f"{'figs':>5}{'points':>8}{'control s':>10}{'after':>7}  control", flush=True)
            for route in routes:  # each row printed and the report written as soon as it is measured
                try:
                    r = measure(browser, f"{app_url}/{route}", args.repeats, not args.no_control, floor_url)
                except Exception as exc:  # a page that times out is reported, and the run goes on
                    report["pages"][route] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}
                    print(f"{route:<20}error: {report['pages'][route]['error']}", flush=True)
                    continue
                first = r["fresh_first_chart_s"]
                r["ratio_to_floor"] = first / floor if first and floor else None
                paired = r["floor_paired_s"]
                r["ratio_to_paired_floor"] = first / paired if first and paired else None
                r["ratio_to_controls_floor"] = first / floor_c if first and floor_c else None
                report["pages"][route] = r
                print(f"{route:<20}{_fmt(first):>10}{_fmt(r['ratio_to_floor']):>8}"
                      f"{_fmt(r['ratio_to_paired_floor']):>7}"
                      f"{_fmt(r['ratio_to_controls_floor']):>9}{_fmt(r['fresh_idle_s']):>7}"
                      f"{_fmt(r['cached_first_chart_s']):>8}{r['bytes'] / 1e3:>8.0f}{r['figures']:>5}{r['points']:>8}"
                      f"{_fmt(r['control_s']):>10}{_fmt(r['control_warm_s']):>7}  {r['control'] or '-'}", flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
            print_phases(report)
            browser.close()
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
