"""Real-browser end-to-end tests: Debian's Chromium, driven by Playwright, against `streamlit run app.py`.

One server (a free loopback port, the repo's .streamlit/config.toml) and one browser serve every page.
Each page (url paths read from app.py, so a new page is covered automatically):
  1. opens and runs to idle (websocket CONNECTED, script notRunning, no loading skeletons),
  2. shows a title, no `stException` element and no st.error at its defaults (and app.py's navigation),
  3. gets one control moved (a per-page SPEC, else the first slider by keyboard arrows, else the first
     number input's "+", else the first selectbox's next option) and the picture must change
     (plotly trace data, a metric value, or text outside the widgets),
  4. gets its main button pressed where it has one (SPEC or the first st.button) and must still be clean,
  5. is saved as a screenshot in test-output/browser/<url_path>.png.
A page with no controls yet (still a placeholder) only has to render.

Skips (with the reason) only when /usr/bin/chromium is missing outside CI; with CI=true it must run.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from views.common import SECTIONS_LABEL
from views.registry import DEFAULT_PAGE, PAGES

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
OUT = ROOT / "test-output" / "browser"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) and not IN_CI,
    reason=f"browser tests need Debian's Chromium at {CHROMIUM} (apt-get install chromium; .ci/run installs it)",
)

# url_path of every page app.py navigates (views/registry.py), in order; the default page is served at "/"
ROUTES = [p.url_path for p in PAGES]
DEFAULT_ROUTE = DEFAULT_PAGE.url_path


def url_of(route: str) -> str:
    """The path a visitor uses: Streamlit serves the default page at "/" (its url_path is not routable)."""
    return "" if route == DEFAULT_ROUTE else route

# Per-page interaction, when the generic "first slider, first button" is not the right one.
#   move:   ("slider", label) | ("number", label) | ("select", label, option)
#   keys:   keys pressed on a slider thumb (default: ArrowRight, or ArrowLeft when at the maximum)
#   button: label of the main button, or None for "no button to press"
#   timeout_s: how long the button's work may take
#   query:  a query string to open the page with (a shared link, e.g. small sizes for heavy pages)
#   tab:    a section to open first (below the first picture, views/common.lazy_sections)
SPECS: dict[str, dict] = {
    "home": {"move": ("select", "Configuration", "lite")},
    # the last stage (End key) shows the next-byte table and the "Generate" button
    "forward_pass": {"move": ("slider", "stage"), "keys": ["End"], "button": "Generate"},
    # opened with step 1 revealed, so the guess shows in a metric; the move is the guess's "+"
    "tour": {"query": "tour_revealed=1", "move": ("number", "your guess"), "button": "Next step ▶"},
    # training behind "Train": opened from a shared link with one mixer and 10 steps so the suite stays short;
    # the move is sequence length 64 -> 32 tokens
    "lab": {"query": "lab_mixers=linear&lab_steps=10", "tab": "Train it yourself", "move": ("slider", "sequence length"),
            "keys": ["ArrowLeft"], "button": "Train", "timeout_s": 180},
    # a problem's numbers come from the seed: the move is the seed's "+"; its first screen has no button to press
    "practice": {"move": ("number", "seed"), "button": None},
}

LOAD_TIMEOUT_MS = 120_000  # first page: the server imports torch and builds caches
RERUN_TIMEOUT_S = 60


# ----------------------------------------------------------------------------------- server + browser
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _log_tail(path: Path, n: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return "(no server log)"


@contextmanager
def streamlit_server(script: str, cwd: Path, log_path: Path):
    """`streamlit run <script>` on a free loopback port; always stopped (its whole process group) at exit."""
    port = _free_port()
    log = open(log_path, "w")
    cmd = [sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true",
           "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    # the app as a visitor gets it: lazy expanders and tabs send their body only once opened (conftest turns that
    # off for the in-process AppTest runs, which read every body)
    env = {k: v for k, v in os.environ.items() if k != "K3LITE_EXPANDERS"}
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode}:\n{_log_tail(log_path)}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200 and r.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit did not answer {url}/_stcore/health in 90 s:\n{_log_tail(log_path)}")
            time.sleep(0.5)
        yield {"url": url, "proc": proc, "log": log_path}
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(15)
        log.close()


@pytest.fixture(scope="module")
def server():
    """The app itself, with the repo's .streamlit/config.toml (what visitors get)."""
    OUT.mkdir(parents=True, exist_ok=True)
    for old in [*OUT.glob("*.png"), *OUT.glob("*.json")]:  # screenshots of this run only
        old.unlink()
    with streamlit_server("app.py", ROOT, OUT / "streamlit-server.log") as srv:
        yield srv


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"CI=true but {CHROMIUM} is missing: .ci/run must apt-get install chromium")
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()


# ----------------------------------------------------------------------------------- page helpers
def wait_idle(page, timeout_ms: int = RERUN_TIMEOUT_S * 1000) -> None:
    """Streamlit's own e2e signal: websocket CONNECTED, script notRunning, and no loading skeletons,
    still true 300 ms later (a st.rerun() passes through notRunning for an instant)."""
    from playwright.sync_api import expect

    deadline = time.monotonic() + timeout_ms / 1000
    idle = page.locator("[data-testid='stApp'][data-test-script-state='notRunning']")
    while True:
        left = int(max(1.0, deadline - time.monotonic()) * 1000)
        page.locator("[data-testid='stApp'][data-test-connection-state='CONNECTED']").wait_for(
            state="attached", timeout=left)
        idle.wait_for(state="attached", timeout=left)
        expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=left)
        page.wait_for_timeout(300)
        if idle.count() or time.monotonic() > deadline:
            return


FINGERPRINT_JS = """
() => {
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  const fresh = (el) => !el.closest('[data-stale="true"]');
  const all = (sel) => [...main.querySelectorAll(sel)].filter(fresh);
  const plots = all('.js-plotly-plot').map(el => JSON.stringify((el.data || []).map(t => (
      {x: t.x, y: t.y, z: t.z, values: t.values, labels: t.labels, text: t.text, name: t.name,
       source: t.source, target: t.target, value: t.value, r: t.r, theta: t.theta})))
    + JSON.stringify(el.layout ? [el.layout.title, el.layout.annotations, el.layout.shapes] : null));
  const metrics = all('[data-testid="stMetric"]').map(e => e.innerText);
  const text = all('[data-testid="stMarkdown"], [data-testid="stCaptionContainer"], [data-testid="stCode"],'
                   + ' [data-testid="stTable"], [data-testid="stAlert"], [data-testid="stJson"],'
                   + ' [data-testid="stHeading"], [data-testid="stImage"] img, [data-testid="stVegaLiteChart"]')
    .map(e => e.tagName === 'IMG' ? e.src.length + ':' + e.src.slice(-80) : e.innerText);
  const exceptions = all('[data-testid="stException"]').length;
  return {plots, metrics, text, exceptions};
}
"""


def fingerprint(page) -> dict:
    return page.evaluate(FINGERPRINT_JS)


def picture_changed(before: dict, after: dict) -> bool:
    return any(before[k] != after[k] for k in ("plots", "metrics", "text"))


def exception_texts(page) -> list[str]:
    return page.locator("[data-testid='stException']").all_inner_texts()


def screenshot(page, path: Path) -> None:
    """The whole page: Streamlit scrolls inside stMain, so grow the viewport to its height first."""
    height = page.evaluate("() => (document.querySelector('[data-testid=\"stMain\"]') || document.body).scrollHeight")
    width = page.viewport_size["width"] if page.viewport_size else 1400
    page.set_viewport_size({"width": width, "height": max(600, min(int(height) + 40, 12_000))})
    page.wait_for_timeout(300)
    page.screenshot(path=str(path), full_page=True)


def assert_clean(page, server, where: str) -> None:
    dialogs = page.get_by_role("dialog").all_inner_texts()
    assert not any("Page not found" in d for d in dialogs), f"{where}: Streamlit says 'Page not found': {dialogs}"
    errors = exception_texts(page)
    assert not errors, (f"{where}: the page shows an exception: {errors}\n"
                        f"--- server log tail ---\n{_log_tail(server['log'])}")


def wait_for_change(page, before: dict, timeout_s: float = RERUN_TIMEOUT_S) -> dict:
    """Poll until the picture differs from `before` and the script is idle again; return the new one."""
    deadline = time.monotonic() + timeout_s
    page.wait_for_timeout(150)
    while True:
        wait_idle(page, timeout_ms=int(max(1.0, deadline - time.monotonic()) * 1000))
        after = fingerprint(page)
        if picture_changed(before, after) or after["exceptions"] or time.monotonic() > deadline:
            return after
        page.wait_for_timeout(250)


def _main(page):
    return page.get_by_test_id("stMain")


def move_control(page, spec: dict) -> str | None:
    """Change one control; return what was done (None when the page has no control to move)."""
    main = _main(page)
    move = spec.get("move")
    if move is None:
        if main.get_by_role("slider").count():
            move = ("slider", None)
        elif main.get_by_test_id("stNumberInput").count():
            move = ("number", None)
        elif main.get_by_test_id("stSelectbox").count():
            move = ("select", None, None)
        else:
            return None
    kind, label = move[0], move[1]
    if kind == "slider":  # st.slider / st.select_slider render an <input type="range"> (react-aria)
        sliders = main.get_by_role("slider", name=label) if label else main.get_by_role("slider")
        thumb = sliders.first
        thumb.scroll_into_view_if_needed()
        now, top = thumb.input_value(), thumb.get_attribute("max")
        keys = spec.get("keys") or (["ArrowLeft"] if now == top else ["ArrowRight"])
        thumb.focus()
        for key in keys:
            thumb.press(key)
        return f"slider {label or '(first)'}: {thumb.get_attribute('aria-valuetext') or now} after {keys}"
    if kind == "number":
        box = main.get_by_test_id("stNumberInput")
        box = box.filter(has_text=label).first if label else box.first
        box.scroll_into_view_if_needed()
        box.get_by_test_id("stNumberInputStepUp").click()
        return f"number input {label or '(first)'}: +1 step"
    if kind == "select":
        option = move[2]
        box = main.get_by_test_id("stSelectbox")
        box = box.filter(has_text=label).first if label else box.first
        box.scroll_into_view_if_needed()
        current = box.inner_text()
        box.click()
        options = page.get_by_role("option")
        options.first.wait_for(timeout=10_000)
        if option is None:  # the first option that is not the current one
            texts = options.all_inner_texts()
            option = next(t for t in texts if t.strip() and t.strip() not in current)
        options.filter(has_text=option).first.click()
        return f"selectbox {label or '(first)'}: -> {option}"
    raise ValueError(f"unknown move kind {kind!r}")


def main_buttons(page, spec: dict):
    """The page's main button(s): SPEC's label, else its primary (type="primary") buttons, else any st.button."""
    buttons = _main(page).get_by_test_id("stButton").locator("button")
    if spec.get("button"):
        return buttons.filter(has_text=spec["button"])
    primary = _main(page).get_by_test_id("stButton").get_by_test_id("stBaseButton-primary")
    return primary if primary.count() else buttons


def press_main_button(page, spec: dict) -> str | None:
    if "button" in spec and spec["button"] is None:
        return None
    buttons = main_buttons(page, spec)
    for i in range(buttons.count()):
        b = buttons.nth(i)
        if b.is_visible() and b.is_enabled():
            b.scroll_into_view_if_needed()
            label = b.inner_text()
            b.click()
            return label
    if spec.get("button"):
        raise AssertionError(f"no enabled button labelled {spec['button']!r}")
    return None


# ----------------------------------------------------------------------------------- the tests
def test_routes_were_found():
    assert "home" in ROUTES and len(ROUTES) >= 9, ROUTES


NAV_TITLE = DEFAULT_PAGE.title


def sidebar_nav(page, expect_title: str | None = NAV_TITLE, timeout_ms: int = 30_000) -> str:
    """The sidebar navigation's text, once it shows `expect_title` (or after timeout_ms without it)."""
    nav = page.get_by_test_id("stSidebarNav")
    nav.wait_for(state="attached", timeout=timeout_ms)
    if expect_title:
        try:
            page.wait_for_function("([t]) => { const n = document.querySelector('[data-testid=\"stSidebarNav\"]');"
                                   " return n && n.innerText.includes(t); }", arg=[expect_title], timeout=timeout_ms)
        except Exception:  # noqa: BLE001 - the caller's assertion reports what the nav shows instead
            pass
    return nav.inner_text()


def test_a_deep_link_as_first_visit_gets_the_apps_navigation(server, browser):
    """A shared link (/kda?...) opened on a freshly started server must run app.py's st.navigation.

    Must run before any visit to "/" (the defect it guards is process-wide): with a `pages/` folder next to
    the main script, Streamlit's legacy multipage mode served pages/<name>.py directly on a fresh server (no
    set_page_config, no shared sidebar, every file listed as a page). The pages now live in views/, which
    Streamlit never scans; this test fails if a pages/ folder, or anything like it, comes back.
    """
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{server['url']}/{url_of(ROUTES[-1])}", timeout=LOAD_TIMEOUT_MS)
        wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS)
        nav = sidebar_nav(page)
        page.screenshot(path=str(OUT / "first-visit-deep-link.png"))
        assert NAV_TITLE in nav and "common" not in nav.split(), (
            f"a first visit to /{ROUTES[-1]} got Streamlit's legacy pages/ navigation, not app.py's: {nav!r}")
    finally:
        context.close()


@pytest.fixture(scope="module")
def landed(server, browser):
    """One visit to the landing page "/" first, as a visitor would (it also runs app.py's st.navigation)."""
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(server["url"] + "/", timeout=LOAD_TIMEOUT_MS)
        wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS)
        assert_clean(page, server, "/ (landing page)")
        assert NAV_TITLE in sidebar_nav(page)
    finally:
        context.close()
    return server


@pytest.mark.parametrize("route", ROUTES)
def test_page_in_real_browser(landed, browser, route):
    server = landed
    spec = SPECS.get(route, {})
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    js_errors: list[str] = []
    page.on("pageerror", lambda e: js_errors.append(str(e)))
    try:
        query = f"?{spec['query']}" if spec.get("query") else ""
        page.goto(f"{server['url']}/{url_of(route)}{query}", timeout=LOAD_TIMEOUT_MS)
        page.get_by_test_id("stAppViewContainer").wait_for(state="attached", timeout=LOAD_TIMEOUT_MS)
        wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS)
        assert_clean(page, server, f"/{route} on load")
        errors_at_defaults = _main(page).get_by_test_id("stAlertContentError").all_inner_texts()
        assert not errors_at_defaults, f"/{route} shows st.error at its default settings: {errors_at_defaults}"
        assert _main(page).locator("h1").count() >= 1, f"/{route} shows no title"
        assert NAV_TITLE in sidebar_nav(page), f"/{route} is not running under app.py's navigation"
        if spec.get("tab"):  # a section below the first picture (views/common.lazy_sections): pick it as a reader would
            _main(page).get_by_role("radiogroup", name=SECTIONS_LABEL).get_by_role(
                "radio", name=spec["tab"], exact=True).click()
            wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS)
        before = fingerprint(page)
        has_button = bool(spec.get("button")) or (
            "button" not in spec and any(b.is_visible() and b.is_enabled() for b in main_buttons(page, spec).all()))

        did = move_control(page, spec)
        if did is not None:
            # with a main button the heavy work (and so the picture) may wait for the button
            after = wait_for_change(page, before, timeout_s=10 if has_button else RERUN_TIMEOUT_S)
            assert_clean(page, server, f"/{route} after {did}")
            if not has_button:
                assert picture_changed(before, after), f"/{route}: {did} did not change the picture"
            before = after

        label = press_main_button(page, spec) if has_button else None  # may have appeared only now: SPEC
        if label is not None:
            after = wait_for_change(page, before, timeout_s=spec.get("timeout_s", 120))
            assert_clean(page, server, f"/{route} after pressing {label!r}")
            assert picture_changed(before, after), f"/{route}: pressing {label!r} did not change the picture"
        screenshot(page, OUT / f"{route}.png")
        (OUT / f"{route}.json").write_text(json.dumps({"moved": did, "button": label, "js_errors": js_errors}))
    except Exception:
        screenshot(page, OUT / f"{route}-FAILED.png")
        raise
    finally:
        context.close()


def test_live_server_has_xsrf_protection(server):
    """XSRF protection is on in the running server (config.toml), not just in the file."""
    # the health endpoint hands out the XSRF cookie only when XSRF protection is on
    with urllib.request.urlopen(f"{server['url']}/_stcore/health", timeout=5) as r:
        assert r.status == 200
        cookies = r.headers.get_all("Set-Cookie") or []
    assert any(c.startswith("_streamlit_xsrf=") for c in cookies), cookies


BROKEN_APP = """
import streamlit as st
st.title("a page that breaks")
n = st.slider("n", 0, 10, 3)
st.metric("n squared", n * n)
if st.button("Break it"):
    raise RuntimeError("boom: this page raised")
"""


def test_the_checks_catch_a_page_that_raises(browser, tmp_path):
    """The suite can fail: on a tiny app that raises on its button, the same helpers see the change and
    the exception (shown as a generic stException with the repo's showErrorDetails = "none")."""
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "config.toml").write_text((ROOT / ".streamlit" / "config.toml").read_text())
    (tmp_path / "broken.py").write_text(BROKEN_APP)
    with streamlit_server("broken.py", tmp_path, tmp_path / "server.log") as srv:
        context = browser.new_context()
        page = context.new_page()
        try:
            page.goto(srv["url"] + "/", timeout=LOAD_TIMEOUT_MS)
            wait_idle(page, timeout_ms=LOAD_TIMEOUT_MS)
            assert_clean(page, srv, "broken app on load")
            before = fingerprint(page)
            assert move_control(page, {}).startswith("slider")
            after = wait_for_change(page, before)
            assert picture_changed(before, after) and "16" in after["metrics"][0]  # slider 3 -> 4: 4 squared
            assert press_main_button(page, {}) == "Break it"
            wait_for_change(page, after)
            with pytest.raises(AssertionError, match="shows an exception"):
                assert_clean(page, srv, "broken app after the button")
            shown = " ".join(exception_texts(page))
            assert "boom" not in shown  # error details are not shown in full to visitors
        finally:
            context.close()
