"""Full-page screenshots of every page for review: test-output/screenshots/<url_path>-<width>.png.

    python -m tools.screenshots                       # every page at 390 px (a phone), starts its own server
    python -m tools.screenshots --width 1400 --first-screen   # the first 1400 x 900 screen only
    python -m tools.screenshots --url http://127.0.0.1:8726 --pages moe,home   # against a running server
    python -m tools.screenshots --pages moe --query vs=deepseek-v3   # with a comparison on: <route>-<width>-vs-deepseek-v3.png

Debian's Chromium driven by Playwright (the browser tests' launcher and idle wait), no network.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "app"))  # test_browser.py lives with the other app tests
sys.path.insert(0, str(ROOT))

from test_browser import CHROMIUM, CHROMIUM_ARGS, LOAD_TIMEOUT_MS, streamlit_server, url_of, wait_idle  # noqa: E402
from views.registry import PAGES  # noqa: E402

OUT = ROOT / "test-output" / "screenshots"


def shoot(base_url: str, routes: list[str], width: int, first_screen: bool, height: int = 900,
          query: str = "") -> list[Path]:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for route in routes:
                page = browser.new_page(viewport={"width": width, "height": height})
                url = f"{base_url}/{url_of(route)}"
                if query:
                    url += ("&" if "?" in url else "?") + query
                page.goto(url, timeout=LOAD_TIMEOUT_MS)
                wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS * 3)
                page.wait_for_timeout(1500)  # plotly lays out after the script is idle
                if not first_screen:  # Streamlit scrolls inside stMain: grow the viewport to its height
                    full = page.evaluate(
                        "() => (document.querySelector('[data-testid=stMain]') || document.body).scrollHeight")
                    page.set_viewport_size({"width": width, "height": max(height, min(int(full) + 40, 16_000))})
                    page.wait_for_timeout(800)
                tag = "-" + query.replace("=", "-").replace("&", "-") if query else ""
                path = OUT / f"{route}-{width}{'-first' if first_screen else ''}{tag}.png"
                page.screenshot(path=str(path), full_page=not first_screen)
                written.append(path)
                print(path.relative_to(ROOT), flush=True)
                page.close()
        finally:
            browser.close()
    return written


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=390)
    ap.add_argument("--first-screen", action="store_true", help="only the first screen (900 px tall)")
    ap.add_argument("--pages", default="", help="comma-separated url paths (default: every page)")
    ap.add_argument("--url", default="", help="a running server; default: start one on a free port")
    ap.add_argument("--query", default="", help="query string added to every page's URL, e.g. vs=deepseek-v3")
    args = ap.parse_args(argv)
    routes = [r for r in args.pages.split(",") if r] or [p.url_path for p in PAGES]
    if args.url:
        shoot(args.url.rstrip("/"), routes, args.width, args.first_screen, query=args.query)
    else:
        OUT.mkdir(parents=True, exist_ok=True)
        with streamlit_server("app.py", ROOT, OUT / "streamlit-server.log") as srv:
            shoot(srv["url"], routes, args.width, args.first_screen, query=args.query)


if __name__ == "__main__":
    main()
