"""A Streamlit server and its visitors as the load bench sees them: start `streamlit run app.py` on loopback,
sample its memory and CPU, and speak the browser's websocket protocol to it (tools/bench_load.py drives this).

The protocol: one websocket on `/_stcore/stream`; the client sends `BackMsg` protobufs (`rerun_script` with
the page's url path, the query string and every widget value it has set) and reads `ForwardMsg`s back (deltas
with the page's elements, `page_info_changed` with the URL the page mirrors its widgets into, and
`script_finished`), exactly the messages in the installed `streamlit.proto` that the frontend uses.
"""
from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import websockets
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from views.registry import DEFAULT_PAGE  # the root URL opens it

ROOT = Path(__file__).resolve().parents[1]
WIDGETS = ("slider", "number_input", "selectbox", "radio", "text_input", "text_area", "checkbox", "toggle", "button")
RUN_TIMEOUT_S = 180.0
MEDIA_RE = re.compile(rb"/media/[0-9a-f]{20,}(?:\.[A-Za-z0-9]+)?")


# ------------------------------------------------------------------------------------------ the server
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, log_path: Path, script: str = "app.py") -> subprocess.Popen:
    """`streamlit run <script>` on 127.0.0.1:port (the repo's .streamlit/config.toml applies), log to a file."""
    cmd = [sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true", "--server.fileWatcherType", "none",
           "--browser.gatherUsageStats", "false"]
    with open(log_path, "wb") as log:
        return subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)


def wait_healthy(url: str, timeout_s: float = 120.0, proc: subprocess.Popen | None = None) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited with status {proc.returncode} before it answered")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"no healthy server at {url} within {timeout_s:g} s")


def check_loopback(url: str) -> str:
    """The URL without a trailing slash, or ValueError: the load test only talks to this machine."""
    parsed = urlparse(url)
    if parsed.scheme != "http" or parsed.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"--url must be http:// on loopback (127.0.0.1 / localhost), got {url!r}")
    return url.rstrip("/")


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of `pid` and all its descendants (Linux /proc), in bytes."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            with open(f"/proc/{p}/status") as f:
                total += next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
    return total


def tree_cpu_seconds(pid: int) -> float:
    """CPU time (user + system) used so far by `pid` and its finished-and-waited children (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    ticks = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


class RssSampler(threading.Thread):
    """Samples tree_rss_bytes(pid) every `every_s` seconds: self.samples = [(seconds since start, bytes)]."""

    def __init__(self, pid: int, every_s: float = 1.0):
        super().__init__(daemon=True)
        self.pid, self.every_s, self.samples = pid, every_s, []
        self._stop_event = threading.Event()
        self._t0 = time.monotonic()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.samples.append((time.monotonic() - self._t0, tree_rss_bytes(self.pid)))
            self._stop_event.wait(self.every_s)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)


# ------------------------------------------------------------------------------------------ one session
@dataclass
class RunResult:
    page: str
    seconds: float
    exceptions: list[str]  # exception elements, compile errors, socket / timeout failures
    alerts: list[str]  # st.error messages (answers to the visitor, not failures)
    widgets: dict  # widget id -> (kind, proto) of this run
    query_string: str  # the URL the page mirrored its widgets into (last page_info_changed)
    foreign_markers: set  # other sessions' markers seen in this run's frames
    media: list = field(default_factory=list)  # /media/... URLs in this run's frames (downloads, images):
    # plain HTTP requests that only the replica holding the session can answer


class Session:
    """One visitor: a websocket speaking Streamlit's protobuf protocol, as the browser frontend does."""

    def __init__(self, url: str, index: int, marker_re: re.Pattern | None = None):
        self.url = url
        self.ws_url = url.replace("http://", "ws://", 1) + "/_stcore/stream"
        self.index = index
        self.marker_re = marker_re  # `(\\d+)` = the session a marker belongs to: others' are reported
        self.ws = None
        self.headers: dict[str, str] = {}  # sent with the websocket handshake (a proxy's affinity cookie)

    async def connect(self) -> None:
        # the subprotocol list is how the frontend passes (protocol, xsrf token, session id); we send the first
        self.ws = await websockets.connect(self.ws_url, subprotocols=["streamlit"], max_size=None,
                                           open_timeout=60, ping_interval=None, additional_headers=self.headers)

    def response_header(self, name: str) -> str | None:
        """A header of the websocket handshake's answer (e.g. which replica a proxy chose), None if absent."""
        return self.ws.response.headers.get(name) if self.ws is not None and self.ws.response else None

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def run(self, page: str, states: list[WidgetState], query: str,
                  timeout_s: float = RUN_TIMEOUT_S) -> RunResult:
        """One rerun of `page` (its url path) with these widget values; returns when the script finished."""
        msg = BackMsg()
        msg.rerun_script.page_name = "" if page == DEFAULT_PAGE.url_path else page  # the root URL opens it
        msg.rerun_script.query_string = query
        msg.rerun_script.widget_states.widgets.extend(states)
        exceptions, alerts, widgets, foreign, media = [], [], {}, set(), []
        query_string = query
        t0 = time.perf_counter()
        try:
            await self.ws.send(msg.SerializeToString())
            async with asyncio.timeout(timeout_s):
                while True:
                    raw = await self.ws.recv()
                    for m in (self.marker_re.finditer(raw) if self.marker_re else ()):
                        if int(m.group(1)) != self.index:
                            foreign.add(m.group(0).decode())
                    media += [m.group(0).decode() for m in MEDIA_RE.finditer(raw)]
                    fwd = ForwardMsg()
                    fwd.ParseFromString(raw)
                    kind = fwd.WhichOneof("type")
                    if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                        el = fwd.delta.new_element
                        et = el.WhichOneof("type")
                        if et == "exception":
                            exceptions.append(f"{el.exception.type}: {el.exception.message}")
                        elif et == "alert" and el.alert.format == Alert.ERROR:
                            alerts.append(el.alert.body)
                        elif et in WIDGETS:
                            w = getattr(el, et)
                            widgets[w.id] = (et, w)
                    elif kind == "page_info_changed":
                        query_string = fwd.page_info_changed.query_string
                    elif kind == "page_not_found":
                        exceptions.append(f"page not found: {page!r}")
                    elif kind == "session_event" and fwd.session_event.WhichOneof("type") == \
                            "script_compilation_exception":
                        exceptions.append(f"compile error: {fwd.session_event.script_compilation_exception.message}")
                    elif kind == "script_finished":
                        status = fwd.script_finished
                        if status == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                            exceptions.append("script finished with a compile error")
                        if status in (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR):
                            break
        except TimeoutError:
            exceptions.append(f"no script_finished within {timeout_s:g} s")
        except websockets.ConnectionClosed as e:
            exceptions.append(f"websocket closed: {e}")
        return RunResult(page, time.perf_counter() - t0, exceptions, alerts, widgets, query_string, foreign,
                         list(dict.fromkeys(media)))
