"""Homework under load, loopback only: 60 students submitting at once from 3 OS processes (as 3 replicas would,
through the library function the page calls) into one SQLite file, and into PostgreSQL when a server can start,
lose no row and duplicate none, a resent submit included; a writer killed mid-submission loses nothing it had
acknowledged; and real Streamlit sessions through the hall (3 replicas behind nginx) store every submit once,
one replica killed mid-class. Each prints its numbers (pytest -s shows them)."""
from __future__ import annotations

import asyncio
import random
import signal
import sqlite3
import subprocess
import sys
import time
from urllib.parse import urlencode

import postgres_server
import pytest

from conftest import ROOT
from k3lite.tour.practice.homework import Store, new_class_id

STUDENTS, PROCESSES, PROBLEMS = 60, 3, 3

# one writer process: its students (threads) start together, each submits PROBLEMS answers through Store.submit,
# sends each one twice (a resent press), and prints "ACK <id>" once the store has returned for it
WRITER = """
import sys, threading, time
sys.path.insert(0, {root!r})
from k3lite.tour.practice.homework import Store, submission_id
url, class_id, first, count, problems, start_at, pause = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6]), \\
    float(sys.argv[6]), float(sys.argv[7])
store, lock = Store(url), threading.Lock()
def student(i):
    time.sleep(max(0.0, start_at - time.time()))
    for p in range(problems):
        sid = submission_id(class_id, f"student {{i}}", i, f"p{{p}}", 0, str(i * 10 + p))
        for _ in range(2):
            store.submit(sid, class_id, f"student {{i}}", i, f"p{{p}}", str(i * 10 + p), "Right", True)
        with lock:
            print("ACK", sid, flush=True)
        time.sleep(pause)
threads = [threading.Thread(target=student, args=(i,)) for i in range(first, first + count)]
[t.start() for t in threads]
[t.join() for t in threads]
"""


def writers(url: str, class_id: str, pause: float = 0.0) -> list[subprocess.Popen]:
    start_at = time.time() + 1.5  # after every process has imported the library
    per = STUDENTS // PROCESSES
    code = WRITER.format(root=str(ROOT))
    return [subprocess.Popen([sys.executable, "-c", code, url, class_id, str(k * per), str(per), str(PROBLEMS),
                              str(start_at), str(pause)], stdout=subprocess.PIPE, text=True)
            for k in range(PROCESSES)]


def check_rows(store: Store, class_id: str) -> tuple[int, int]:
    rows = store.rows(class_id)
    pairs = [(r["name"], r["problem"]) for r in rows]
    return len(rows), len(pairs) - len(set(pairs))


def sixty_at_once(url: str) -> None:
    class_id, t0 = new_class_id("load"), time.perf_counter()
    procs = writers(url, class_id)
    acks = [line for p in procs for line in p.communicate(timeout=60)[0].splitlines() if line.startswith("ACK")]
    assert [p.returncode for p in procs] == [0] * PROCESSES
    stored, duplicates = check_rows(Store(url), class_id)
    print(f"\n{'postgresql' if url.startswith('postgresql') else 'sqlite'}: {STUDENTS} students x {PROBLEMS} answers, each sent twice, from {PROCESSES} "
          f"processes: {2 * len(acks)} submits, {len(acks)} acknowledged, {stored} rows stored, {duplicates} "
          f"duplicates, {time.perf_counter() - t0:.1f} s")
    assert len(acks) == STUDENTS * PROBLEMS and stored == STUDENTS * PROBLEMS and duplicates == 0


def test_sixty_students_at_once_into_sqlite(tmp_path):
    sixty_at_once(str(tmp_path / "hw.sqlite3"))


def test_sixty_students_at_once_into_postgresql():
    if postgres_server.missing():
        pytest.skip(postgres_server.missing())
    with postgres_server.postgres_server() as url:
        sixty_at_once(url)


def test_a_writer_killed_mid_submission_loses_nothing_it_acknowledged(tmp_path):
    url, class_id, t0 = str(tmp_path / "hw.sqlite3"), new_class_id("kill"), time.perf_counter()
    procs = writers(url, class_id, pause=0.05)
    victim = procs[1]
    acked_by_victim = []
    for line in victim.stdout:  # kill it once it has acknowledged some, while its other students are mid-way
        acked_by_victim.append(line.split()[1])
        if len(acked_by_victim) == 12:
            victim.send_signal(signal.SIGKILL)
            break
    victim.wait(10)
    acked_by_victim += [line.split()[1] for line in victim.stdout.read().splitlines() if line.startswith("ACK")]
    others = [line.split()[1] for p in (procs[0], procs[2]) for line in p.communicate(timeout=60)[0].splitlines()]
    stored = {r["id"] for r in Store(url).rows(class_id)}
    lost = set(acked_by_victim + others) - stored
    print(f"\nkilled writer 1 (SIGKILL) after {len(acked_by_victim)} acknowledged submits of its "
          f"{STUDENTS // PROCESSES * PROBLEMS}: {len(stored)} rows stored, {len(lost)} acknowledged lost, "
          f"{time.perf_counter() - t0:.1f} s")
    assert victim.returncode == -signal.SIGKILL and len(acked_by_victim) < STUDENTS // PROCESSES * PROBLEMS
    assert not lost and len(others) == 2 * STUDENTS // PROCESSES * PROBLEMS
    with sqlite3.connect(url) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# ------------------------------------------------------------------------------------------ through the hall
SESSIONS = STUDENTS  # real Streamlit sessions at once (each three page runs), through nginx


async def one_student(url: str, i: int, class_id: str, results: list) -> None:
    from tools.hall import PIN_COOKIE
    from tools.streamlit_session import Session, WidgetState

    query = urlencode({"set": "moe", "seed": i, "homework": 1, "class": class_id})
    s = Session(url, i)
    s.headers = {"Cookie": f"{PIN_COOKIE}=student-{i}-{random.random()}"}
    for attempt in range(3):  # a replica killed mid-class: the student reloads and sends the same answer again
        try:
            await s.connect()
            r = await s.run("practice", [], query)
            name = next(w for w, (k, _) in r.widgets.items() if w.endswith("-hw_name"))
            states = [WidgetState(id=name, string_value=f"student {i}")]
            r = await s.run("practice", states, query)
            box = next(w for w, (k, _) in r.widgets.items() if k == "text_input" and w.endswith("_answer"))
            press = next(w for w, (k, _) in r.widgets.items() if k == "button" and w.endswith("_submit"))
            states += [WidgetState(id=box, string_value=f"{i},5"), WidgetState(id=press, trigger_value=True)]
            r = await s.run("practice", states, query)
            if not r.exceptions:
                results.append((i, attempt))
                return
        except (StopIteration, OSError, Exception):  # noqa: BLE001 (a closed socket, a replica gone)
            pass
        finally:
            await s.close()
        await asyncio.sleep(1)


@pytest.mark.skipif(__import__("tools.hall", fromlist=["x"]).nginx_binary() is None, reason="nginx is not installed")
def test_real_sessions_through_the_hall_store_every_submit_once_with_a_replica_killed(tmp_path):
    from tools.hall import Hall

    db, class_id = tmp_path / "hw.sqlite3", new_class_id("hall")
    env = {"K3LITE_HOMEWORK_DB": str(db), "K3LITE_SECRET_FILE": str(tmp_path / "secret")}
    with Hall(3, prefix=tmp_path, env=env) as hall:
        t0, results = time.perf_counter(), []

        async def period():
            tasks = [asyncio.create_task(one_student(hall.url, i, class_id, results)) for i in range(SESSIONS)]
            await asyncio.sleep(2.0)
            await asyncio.to_thread(hall.kill, 1)  # mid-class
            await asyncio.gather(*tasks)

        asyncio.run(period())
        seconds = time.perf_counter() - t0
    rows = Store(str(db)).rows(class_id)
    names = [r["name"] for r in rows]
    acked = {f"student {i}" for i, _ in results}
    print(f"\nhall (3 replicas behind nginx, replica 1 killed at 2 s): {SESSIONS} sessions, {len(results)} "
          f"acknowledged ({sum(1 for _, a in results if a)} after a retry), {len(rows)} rows stored, "
          f"{len(names) - len(set(names))} duplicates, {seconds:.1f} s")
    assert acked <= set(names), f"acknowledged but not stored: {acked - set(names)}"
    assert len(names) == len(set(names)), "a resent submit was stored twice"
    assert len(results) == SESSIONS
