"""What each figure costs the browser to draw: every Plotly figure a page sends at its defaults (as a visitor gets
it: closed expanders and unpicked tabs send nothing), drawn alone with plotly.js in headless Chromium, against the
floor page's one 200-point chart drawn the same way in the same run.

    python -m k3lite.bench figures [--pages home,moe] [--repeats 5] [--width 1200] [--json report.json]

Per figure: its key (or its position on the page), traces, points (x values over all traces), animation frames,
JSON kB, and the median milliseconds of `Plotly.newPlot` until the next animation frame (parse included), over
`--repeats` draws into a fresh div. The page's total is what its first paint pays once Plotly has loaded (the
browser bench's "first chart" adds Streamlit's own start-up, the same for every page). The plotly.js is the Python
package's bundle (the same major version Streamlit ships); Streamlit's theme is not applied, so absolute numbers are
a little lower than in the app. A benchmark, not a test: it prints and writes numbers, asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tools.bench_browser import CHROMIUM, CHROMIUM_ARGS
from views.registry import PAGES

ROOT = Path(__file__).resolve().parents[1]

DRAW_JS = """async ([spec, width, repeats]) => {
  const times = [];
  for (let i = 0; i < repeats; i++) {
    const div = document.createElement('div');
    div.style.width = width + 'px';
    document.body.appendChild(div);
    const t0 = performance.now();
    const fig = JSON.parse(spec);
    const layout = Object.assign({}, fig.layout || {}, fig.layout && fig.layout.width ? {} : {width: width});
    await Plotly.newPlot(div, fig.data || [], layout, {responsive: false});
    if (fig.frames && fig.frames.length) await Plotly.addFrames(div, fig.frames);
    await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
    times.push(performance.now() - t0);
    Plotly.purge(div);
    div.remove();
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}"""


def page_figures(file: str) -> list[dict]:
    """The Plotly figures `file` sends at its defaults, in page order, with the lazy sections closed."""
    from streamlit.testing.v1 import AppTest
    os.environ.pop("K3LITE_EXPANDERS", None)  # the visitor's view: closed expanders and unpicked tabs send nothing
    at = AppTest.from_file(str(ROOT / file), default_timeout=300)
    at.run()
    if at.exception:
        raise RuntimeError(f"{file}: {at.exception[0].message}")
    out = []
    for i, el in enumerate(at.get("plotly_chart")):
        spec = el.proto.spec
        fig = json.loads(spec)
        data = fig.get("data", [])
        points = sum(len(t["x"]) if isinstance(t.get("x"), list) else (t.get("x", {}) or {}).get("shape", 0) or 0
                     if isinstance(t.get("x"), (list, dict)) else 0 for t in data)
        key = el.proto.id.rsplit("-", 1)[-1] if el.proto.id else ""
        key = "" if key == "None" else key
        title = ((fig.get("layout", {}).get("title") or {}).get("text") or "")[:40]
        out.append({"index": i, "key": key, "title": title, "traces": len(data), "points": points,
                    "frames": len(fig.get("frames") or []), "kB": len(spec) / 1e3, "spec": spec})
    return out


def floor_figure() -> dict:
    import math

    import plotly.graph_objects as go
    xs = list(range(200))
    spec = go.Figure(go.Scatter(x=xs, y=[math.sin(x / 10) for x in xs])).to_json()
    return {"index": 0, "key": "floor", "title": "one 200-point line", "traces": 1, "points": 200, "frames": 0,
            "kB": len(spec) / 1e3, "spec": spec}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m k3lite.bench figures", description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", default="", help="url paths, comma-separated (default: every page)")
    p.add_argument("--repeats", type=int, default=5, help="draws per figure (median)")
    p.add_argument("--width", type=int, default=1200, help="the div's width in px (a 1400 px window, wide layout)")
    p.add_argument("--json", default=None, help="write the report here")
    args = p.parse_args(argv)
    if args.repeats < 1:
        print("error: --repeats must be >= 1", file=sys.stderr)
        return 2
    if not os.path.exists(CHROMIUM):
        print(f"error: {CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2
    routes = [r for r in args.pages.split(",") if r] or [pg.url_path for pg in PAGES]
    by_route = {pg.url_path: pg for pg in PAGES}
    unknown = sorted(set(routes) - set(by_route))
    if unknown:
        print(f"error: unknown pages {unknown}; choose from {sorted(by_route)}", file=sys.stderr)
        return 2
    import plotly
    from playwright.sync_api import sync_playwright
    bundle = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    report = {"load_average": os.getloadavg(), "repeats": args.repeats, "width": args.width, "pages": {}}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_content("<html><body></body></html>")
        page.add_script_tag(path=str(bundle))
        draw = lambda f: page.evaluate(DRAW_JS, [f["spec"], args.width, args.repeats])  # noqa: E731
        floor = floor_figure()
        draw(floor)  # warm plotly.js's own first-use costs
        floor["ms"] = draw(floor)
        report["floor_ms"] = floor["ms"]
        print(f"load average {report['load_average'][0]:.2f}; floor figure (one 200-point line): {floor['ms']:.0f} ms")
        print(f"{'page':<20}{'#':>3} {'key':<26}{'traces':>7}{'points':>8}{'frames':>7}{'kB':>7}{'ms':>7}{'x floor':>8}")
        for route in routes:
            try:
                figs = page_figures(by_route[route].file)
            except Exception as exc:  # a page that fails is reported, and the run goes on
                report["pages"][route] = {"error": f"{type(exc).__name__}: {exc}"}
                print(f"{route:<20}error: {exc}", flush=True)
                continue
            rows = []
            for f in figs:
                f["ms"] = draw(f)
                rows.append({k: v for k, v in f.items() if k != "spec"})
                print(f"{route:<20}{f['index']:>3} {(f['key'] or f['title'])[:25]:<26}{f['traces']:>7}{f['points']:>8}"
                      f"{f['frames']:>7}{f['kB']:>7.0f}{f['ms']:>7.0f}{f['ms'] / floor['ms']:>8.1f}", flush=True)
            total = sum(r["ms"] for r in rows)
            report["pages"][route] = {"figures": rows, "total_ms": total}
            print(f"{route:<20}    {'total':<26}{'':>7}{'':>8}{'':>7}{sum(r['kB'] for r in rows):>7.0f}{total:>7.0f}"
                  f"{total / floor['ms']:>8.1f}", flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
        browser.close()
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
