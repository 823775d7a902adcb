"""A lecture hall: N Streamlit replicas of the app behind one nginx on loopback, each browser tab pinned to one.

    python -m tools.hall --replicas 3 [--port 8500] [--replica-port 8601] [--dir DIR] [--check]

Starts `streamlit run app.py` N times (ports --replica-port, +1, ...), waits until each answers
`/_stcore/health`, renders deploy/nginx.conf.template into DIR (default a fresh temporary folder), checks it with
`nginx -t` and starts nginx on 127.0.0.1:--port in the foreground. Ctrl-C (or SIGTERM) stops nginx, then the
replicas, and says so. `--check` only renders the configuration and runs `nginx -t`. Needs Debian's `nginx`
(`apt-get install -y nginx`; the package's own service is not used: this nginx runs with its own prefix and
configuration, as whoever starts it). Why each nginx rule is there: deploy/README.md.

Affinity: every request of a browser carries the `k3lite_pin` cookie, which nginx hashes onto the ring of replicas
(`hash $k3lite_pin consistent`); a first request has no cookie, so nginx uses its request id and returns it as the
cookie. Not `ip_hash`: every student behind one NAT (or every bench session on loopback) shares an address and
would land on one replica. `affinity="none"` renders plain round-robin, which breaks Streamlit (tools/bench_class.py
shows it: that is how its affinity check is tested).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tools.streamlit_session import ROOT, free_port, start_server, wait_healthy

TEMPLATE = ROOT / "deploy" / "nginx.conf.template"
PIN_COOKIE = "k3lite_pin"
REPLICA_HEADER = "X-K3lite-Replica"
AFFINITIES = {"cookie": "        hash $k3lite_pin consistent;  # the tab's pin cookie on a ring of replicas",
              "none": "        # no affinity: round-robin (breaks Streamlit; only the bench's own check uses it)"}


def nginx_binary() -> str | None:
    """Debian's nginx (`/usr/sbin` may be missing from a user's PATH), or None when it is not installed."""
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


def render_config(listen_port: int, replica_ports: list[int], prefix: Path, affinity: str = "cookie",
                  max_fails: int = 1, fail_timeout_s: int = 10) -> str:
    """deploy/nginx.conf.template filled in for these loopback ports, writing only under `prefix`."""
    if affinity not in AFFINITIES:
        raise ValueError(f"affinity must be one of {sorted(AFFINITIES)}, got {affinity!r}")
    if not replica_ports:
        raise ValueError("a hall needs at least one replica")
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails={max_fails} fail_timeout={fail_timeout_s}s;"
                        for p in replica_ports)
    text = TEMPLATE.read_text()
    for name, value in (("BALANCE", AFFINITIES[affinity]), ("SERVERS", servers), ("LISTEN", str(listen_port)),
                        ("PREFIX", str(prefix)), ("MAX_FAILS", str(max_fails)),
                        ("FAIL_TIMEOUT", str(fail_timeout_s))):
        text = text.replace(f"@@{name}@@", value)
    assert "@@" not in text, "a placeholder of the template was left unfilled"
    return text


def write_config(prefix: Path, text: str, name: str = "nginx.conf") -> Path:
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (prefix / "tmp" / sub).mkdir(parents=True, exist_ok=True)
    path = prefix / name
    path.write_text(text)
    return path


def nginx_test(conf: Path, prefix: Path) -> tuple[bool, str]:
    """`nginx -t` on this configuration: (accepted, what nginx said)."""
    binary = nginx_binary()
    if binary is None:
        return False, "nginx is not installed (apt-get install -y nginx)"
    r = subprocess.run([binary, "-t", "-p", str(prefix), "-c", str(conf), "-e", str(prefix / "error.log")],
                       capture_output=True, text=True, timeout=30)
    return r.returncode == 0, (r.stdout + r.stderr).strip()


def shared_homework_env() -> dict:
    """What every replica must share for homework: the secret (its file made here, once, before any replica starts,
    so all of them sign the teacher's token alike) and the store's path. K3LITE_SECRET, if set, is passed as is."""
    from k3lite.tour.practice.homework import secret_path, server_secret, store_url

    env = {"K3LITE_HOMEWORK_DB": store_url()}
    if not os.environ.get("K3LITE_SECRET"):
        server_secret()
        env["K3LITE_SECRET_FILE"] = str(secret_path())
    return env


@dataclass
class Hall:
    """Replicas and one or more nginx front doors on loopback; `with Hall(3) as hall:` starts and stops them."""
    replicas: int
    port: int = 0  # nginx's port (0: a free one)
    replica_port: int = 0  # the first replica's port (0: free ones)
    prefix: Path | None = None
    affinity: str = "cookie"
    env: dict = field(default_factory=dict)  # extra environment for the replicas (K3LITE_*)
    procs: list = field(default_factory=list)  # the replicas' Popen, in port order
    ports: list = field(default_factory=list)
    doors: list = field(default_factory=list)  # (url, nginx Popen)
    killed: set = field(default_factory=set)  # indices of replicas killed on purpose (the fault run)

    def __enter__(self) -> Hall:
        if nginx_binary() is None:
            raise RuntimeError("nginx is not installed (apt-get install -y nginx)")
        if self.prefix is None:
            self.prefix = Path(tempfile.mkdtemp(prefix="k3lite-hall-"))
        try:
            self.start_replicas()
            self.url = self.open_door(self.affinity, self.port)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start_replicas(self) -> None:
        env_before = {k: os.environ.get(k) for k in (*self.env, "K3LITE_HOMEWORK_DB", "K3LITE_SECRET_FILE")}
        os.environ.update(self.env)  # start_server passes the environment on
        try:
            os.environ.update(shared_homework_env())  # with the hall's own K3LITE_* in place
            for i in range(self.replicas):
                port = self.replica_port + i if self.replica_port else free_port()
                self.ports.append(port)
                self.procs.append(start_server(port, self.prefix / f"replica-{i}.log"))
        finally:
            for k, v in env_before.items():
                os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
        for port, proc in zip(self.ports, self.procs):
            wait_healthy(f"http://127.0.0.1:{port}", timeout_s=180, proc=proc)

    def open_door(self, affinity: str, port: int = 0) -> str:
        """Start an nginx in front of the replicas with this affinity rule; returns its URL."""
        port = port or free_port()
        name = f"door-{len(self.doors)}"
        (self.prefix / name).mkdir(exist_ok=True)
        prefix = self.prefix / name
        conf = write_config(prefix, render_config(port, self.ports, prefix, affinity))
        ok, said = nginx_test(conf, prefix)
        if not ok:
            raise RuntimeError(f"nginx -t refused {conf}: {said}")
        proc = subprocess.Popen([nginx_binary(), "-p", str(prefix), "-c", str(conf), "-e", str(prefix / "error.log"),
                                 "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        self.doors.append((url, proc))
        end = time.monotonic() + 30
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise RuntimeError(f"nginx exited with status {proc.returncode}: {(prefix / 'error.log').read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/hall/health", timeout=2) as r:
                    if r.status == 200:
                        return url
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"nginx did not answer on {url} within 30 s")

    def replica_of(self, address: str) -> int | None:
        """The replica index behind an upstream address such as '127.0.0.1:8601' (the last one nginx tried)."""
        last = address.split(",")[-1].strip()
        try:
            return self.ports.index(int(last.rsplit(":", 1)[1]))
        except (ValueError, IndexError):
            return None

    def kill(self, index: int) -> None:
        """Kill one replica at once (SIGKILL: a crash, not a clean stop), as the fault run does."""
        self.killed.add(index)
        self.procs[index].kill()
        self.procs[index].wait(10)

    def stop(self) -> None:
        """nginx first (SIGQUIT: a graceful exit), then the replicas (SIGTERM); SIGKILL whatever lingers."""
        for proc, sig in [(p, signal.SIGQUIT) for _, p in self.doors] + [(p, signal.SIGTERM) for p in self.procs]:
            if proc.poll() is None:
                proc.send_signal(sig)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.hall", description=__doc__.split("\n")[0])
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--port", type=int, default=8500, help="nginx listens on 127.0.0.1:PORT")
    ap.add_argument("--replica-port", type=int, default=8601, help="the first replica's port; the next ones follow")
    ap.add_argument("--dir", default="", help="where the rendered configuration and the logs go (default: a new "
                                                "temporary folder)")
    ap.add_argument("--check", action="store_true", help="only render the configuration and run nginx -t")
    args = ap.parse_args(argv)
    if args.replicas < 1:
        ap.error("--replicas must be >= 1")
    prefix = Path(args.dir).resolve() if args.dir else Path(tempfile.mkdtemp(prefix="k3lite-hall-"))
    prefix.mkdir(parents=True, exist_ok=True)
    if args.check:
        ports = [args.replica_port + i for i in range(args.replicas)]
        conf = write_config(prefix, render_config(args.port, ports, prefix))
        ok, said = nginx_test(conf, prefix)
        print(f"{conf}: {said}")
        return 0 if ok else 1
    print(f"starting {args.replicas} replica(s) on 127.0.0.1:{args.replica_port}.. and nginx on "
          f"127.0.0.1:{args.port}; logs in {prefix}", flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with Hall(args.replicas, args.port, args.replica_port, prefix) as hall:
        print(f"open {hall.url} (each tab is pinned to one replica); Ctrl-C stops everything", flush=True)
        try:
            while not stop:
                for i, proc in enumerate(hall.procs):
                    if proc.poll() is not None and i not in hall.killed:
                        hall.killed.add(i)
                        print(f"replica {i} (port {hall.ports[i]}) exited with status {proc.returncode}; its tabs "
                              f"reconnect to the next replica", flush=True)
                time.sleep(1)
        except KeyboardInterrupt:
            pass
    print("stopped nginx and the replicas", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
