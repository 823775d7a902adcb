"""A PostgreSQL server of a test's own: initdb + pg_ctl on a temporary folder, loopback only, a free port (as user
nobody when the tests run as root: PostgreSQL refuses root). `None` with the reason when the binaries or psycopg
are missing."""
from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path

SEARCH = "/usr/local/bin:/usr/lib/postgresql/15/bin:" + os.environ.get("PATH", "")


def missing() -> str | None:
    """Why no server can start here, or None."""
    if None in (shutil.which("initdb", path=SEARCH), shutil.which("pg_ctl", path=SEARCH)):
        return "PostgreSQL's initdb / pg_ctl are not installed: the PostgreSQL store is not tested here"
    if importlib.util.find_spec("psycopg") is None:
        return "psycopg is not installed (requirements-dev.txt pins it)"
    return None


@contextmanager
def postgres_server():
    """Yields the server's postgresql:// URL; stops the server and removes its folder after."""
    initdb, pg_ctl = shutil.which("initdb", path=SEARCH), shutil.which("pg_ctl", path=SEARCH)
    folder = Path(tempfile.mkdtemp(prefix="k3lite-pg-"))
    as_user = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(folder, "nobody")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = folder / "data"
    try:
        subprocess.run(as_user + [initdb, "-D", str(data), "-A", "trust", "-U", "k3lite", "--no-sync", "-E", "UTF8"],
                       check=True, capture_output=True, timeout=120)
        subprocess.run(as_user + [pg_ctl, "-D", str(data), "-l", str(folder / "log"), "-w", "-t", "60", "-o",
                                  f"-h 127.0.0.1 -p {port} -k {folder} -c max_connections=200", "start"],
                       check=True, capture_output=True, timeout=90)
        yield f"postgresql://k3lite@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(as_user + [pg_ctl, "-D", str(data), "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)
