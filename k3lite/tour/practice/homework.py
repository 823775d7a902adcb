"""Homework: a teacher's token, the numbers only a homework link draws, how a typed answer is read, and the store
of submissions (SQLite by default, PostgreSQL by a URL). No Streamlit here: views/practice_ui.py draws it.

- The server secret: `K3LITE_SECRET`, else the file at `K3LITE_SECRET_FILE` (default ~/.k3lite/secret), made on
  first use with mode 0600. Every replica of a hall must see the same one (tools/hall.py passes the file on).
- A class id is made by the page when a teacher sets homework (`new_class_id`); the teacher's token is
  HMAC-SHA256(secret, class id), so only the server can make it and a student's link never carries it.
- A homework draws each problem at `homework_seed(class id, seed)`, a number past the Practice page's seed range
  and keyed by the secret: the open Practice page cannot show a homework's solution.
- The store: `K3LITE_HOMEWORK_DB`, a file path (SQLite, WAL) or a `postgresql://` URL (psycopg, imported only then).
  One table; a submission carries the page's id for it (`submission_id`) under a UNIQUE constraint, so a retried
  submit is stored once.
"""
from __future__ import annotations

import hashlib
import hmac
import importlib
import math
import os
import re
import secrets
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path

MAX_NAME = 200  # characters of a student's name kept for display; the store keeps what was typed
MAX_ANSWER = 10_000  # characters of a typed answer the page accepts
TRIES = 2  # default tries on a choice question
PRACTICE_SEEDS = 10**6  # the Practice page's seeds run 0..this; homework seeds lie above it


# ------------------------------------------------------------------------------------------ the secret and tokens
def secret_path() -> Path:
    return Path(os.environ.get("K3LITE_SECRET_FILE") or Path.home() / ".k3lite" / "secret")


def server_secret() -> bytes:
    """K3LITE_SECRET, else the secret file's bytes (made with 32 random bytes, mode 0600, on first use)."""
    if os.environ.get("K3LITE_SECRET"):
        return os.environ["K3LITE_SECRET"].encode()
    path = secret_path()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:  # O_EXCL: two replicas starting at once make one file, and the loser reads it
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))
        except FileExistsError:
            pass
    text = path.read_text().strip()
    if len(text) < 32:
        raise ValueError(f"the secret file {path} holds fewer than 32 characters: delete it to make a new one")
    return text.encode()


_CLASS = re.compile(r"[a-z0-9][a-z0-9-]{0,40}-[0-9a-f]{8}")


def new_class_id(label: str = "") -> str:
    """A fresh class id: the label's letters and digits (up to 24) and 8 random hex digits ("kda-week-3-1a2b3c4d")."""
    words = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:24].strip("-") or "class"
    return f"{words}-{secrets.token_hex(4)}"


def check_class_id(class_id: str) -> str:
    if not isinstance(class_id, str) or not _CLASS.fullmatch(class_id):
        raise ValueError("the class id in the link is not one this page made (letters, digits and dashes, ending "
                         "in 8 hex digits): ask the teacher for the link again")
    return class_id


def teacher_token(class_id: str) -> str:
    """HMAC-SHA256(server secret, class id), 32 hex digits: the teacher's key and results open with it."""
    return hmac.new(server_secret(), f"teacher:{check_class_id(class_id)}".encode(), hashlib.sha256).hexdigest()[:32]


def token_ok(class_id: str, token: str | None) -> bool:
    return bool(token) and hmac.compare_digest(teacher_token(class_id), str(token))


def homework_seed(class_id: str, seed: int) -> int:
    """The seed a homework draws a student's numbers at: above the Practice page's range, keyed by the secret."""
    digest = hmac.new(server_secret(), f"draw:{check_class_id(class_id)}:{int(seed)}".encode(), hashlib.sha256)
    return PRACTICE_SEEDS + 1 + int(digest.hexdigest()[:12], 16)


# ------------------------------------------------------------------------------------------ reading a typed answer
def read_number(text: str) -> float:
    """A typed number: "166.3", "166,3" (a decimal comma), "12,345" / "1,234.5" (thousands), "1.234,5", "3e9",
    spaces ignored. ValueError names what is wrong: empty, not a number, an ambiguous comma, not finite."""
    raw = (text or "").strip().replace(" ", "").replace("\u00a0", "").replace("\u2009", "")
    if not raw:
        raise ValueError("type a number first")
    shown = raw if len(raw) <= 40 else raw[:40] + "…"
    if raw.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        raise ValueError(f"{shown!r} is not a finite number: type a number such as 166.3")
    if "," in raw:
        if "." in raw:  # both: the last one is the decimal mark
            raw = raw.replace(",", "") if raw.rfind(".") > raw.rfind(",") else raw.replace(".", "").replace(",", ".")
        elif re.fullmatch(r"[+-]?\d{1,3}(,\d{3}){2,}", raw):
            raw = raw.replace(",", "")
        elif re.fullmatch(r"[+-]?\d{1,3},\d{3}", raw):
            raise ValueError(f"{shown!r} could be a thousand-separated number or a decimal comma: write it without "
                             f"the comma, or with a decimal point")
        elif raw.count(",") == 1:
            raw = raw.replace(",", ".")  # a decimal comma: 166,3 is 166.3
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?", raw, flags=re.IGNORECASE):
        raise ValueError(f"{shown!r} is not a number: type digits, a decimal point or comma, and an optional "
                         f"exponent (3e9)")
    value = float(raw)
    if not math.isfinite(value):
        raise ValueError(f"{shown!r} is too large to be a number here")
    return value


def clean_name(name: str) -> str:
    """A student's name as typed, or ValueError: it must hold a visible character."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("type your name first: the teacher sees your answers under it")
    if "\x00" in name:  # PostgreSQL's text cannot hold it: refused on every backend alike
        raise ValueError("a name cannot hold the NUL character (\\x00)")
    if len(name) > MAX_ANSWER:
        raise ValueError(f"a name of at most {MAX_ANSWER:,} characters")
    return name


def shown(text: str, limit: int = MAX_NAME) -> str:
    """Text a student typed, safe to put in Markdown: control characters as \\xNN, markup characters escaped,
    cut to `limit` characters with the length said."""
    s = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    cut = s if len(s) <= limit else f"{s[:limit]}… ({len(s):,} characters)"
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>$~:])", r"\\\1", cut)


# ------------------------------------------------------------------------------------------ the store
SCHEMA = ("CREATE TABLE IF NOT EXISTS submissions (id TEXT PRIMARY KEY, class TEXT NOT NULL, name TEXT NOT NULL, "
          "seed BIGINT NOT NULL, problem TEXT NOT NULL, answer TEXT NOT NULL, verdict TEXT NOT NULL, "
          "correct INTEGER NOT NULL, time TEXT NOT NULL)")
INDEX = "CREATE INDEX IF NOT EXISTS submissions_by_class ON submissions (class, name, seed, problem)"
INSERT = ("INSERT INTO submissions (id, class, name, seed, problem, answer, verdict, correct, time) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING")
FIELDS = ("id", "class", "name", "seed", "problem", "answer", "verdict", "correct", "time")


def store_url() -> str:
    return os.environ.get("K3LITE_HOMEWORK_DB") or str(Path.home() / ".k3lite" / "homework.sqlite3")


def submission_id(class_id: str, name: str, seed: int, problem: str, attempt: int, answer: str) -> str:
    """The id the page gives a submission: the same answer at the same attempt gets the same id, so a press sent
    twice, or sent again to another replica after one died, is stored once (the store's UNIQUE id)."""
    key = "\x1f".join((class_id, name, str(int(seed)), problem, str(int(attempt)), answer))
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Store:
    """Submissions in one table, the same SQL on SQLite (a path) and PostgreSQL (a postgresql:// URL)."""

    def __init__(self, url: str | None = None):
        self.url = url or store_url()
        self.postgres = self.url.startswith(("postgresql://", "postgres://"))
        self._local = threading.local()
        with self._connect() as db:
            if self.postgres:  # two replicas starting at once would race on CREATE ... IF NOT EXISTS
                db.execute("SELECT pg_advisory_xact_lock(4136)")
            self._run(db, SCHEMA)
            self._run(db, INDEX)

    def _connect(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self.postgres:
                try:  # only a PostgreSQL store needs it: not one of the app's requirements (requirements-dev.txt)
                    psycopg = importlib.import_module("psycopg")
                except ImportError:
                    raise ValueError("a postgresql:// store needs psycopg: pip install 'psycopg[binary]==3.3.9'") \
                        from None
                conn = psycopg.connect(self.url)
            else:
                Path(self.url).parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.url, timeout=30)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")  # an acknowledged row survives a killed process
            self._local.conn = conn
        return _Tx(conn)

    def _run(self, db, sql: str, args: tuple = ()):
        return db.execute(sql.replace("?", "%s") if self.postgres else sql, args)

    def submit(self, submission_id: str, class_id: str, name: str, seed: int, problem: str, answer: str,
               verdict: str, correct: bool) -> bool:
        """Store one submission; True if it is new, False if that id was stored before (a retry)."""
        if not submission_id or len(submission_id) > 100:
            raise ValueError("a submission id of 1 to 100 characters")
        if "\x00" in str(answer):
            raise ValueError("an answer cannot hold the NUL character (\\x00)")
        when = datetime.now(timezone.utc).isoformat(timespec="microseconds")
        row = (submission_id, check_class_id(class_id), clean_name(name), int(seed), problem, str(answer)[:MAX_ANSWER],
               verdict, int(bool(correct)), when)
        with self._connect() as db:
            return self._run(db, INSERT, row).rowcount == 1

    def rows(self, class_id: str) -> list[dict]:
        """Every submission of the class, in the order they were stored."""
        with self._connect() as db:
            cur = self._run(db, f"SELECT {', '.join(FIELDS)} FROM submissions WHERE class = ? ORDER BY time, id",
                            (check_class_id(class_id),))
            return [dict(zip(FIELDS, r)) for r in cur.fetchall()]

    def tries(self, class_id: str, name: str, seed: int, problem: str) -> list[dict]:
        """One student's submissions on one problem, oldest first."""
        with self._connect() as db:
            cur = self._run(db, f"SELECT {', '.join(FIELDS)} FROM submissions WHERE class = ? AND name = ? AND "
                                "seed = ? AND problem = ? ORDER BY time, id", (class_id, name, int(seed), problem))
            return [dict(zip(FIELDS, r)) for r in cur.fetchall()]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


class _Tx:
    """`with` a connection: commit on success, roll back on an error (sqlite3's and psycopg's alike)."""

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        return self.conn

    def __exit__(self, exc_type, *_):
        (self.conn.rollback if exc_type else self.conn.commit)()


def score(rows: list[dict], problems: list[str], tries: dict[str, int]) -> dict:
    """A student's score from their rows: a problem counts once it is right within its allowed tries
    (`tries[problem]`, 0 for no limit). {problem: (right, tries used, last answer)} and the count right."""
    by: dict = {}
    for r in rows:
        by.setdefault(r["problem"], []).append(r)
    out = {}
    for p in problems:
        mine = by.get(p, [])
        limit = tries.get(p, 0)
        counted = mine[:limit] if limit else mine
        out[p] = (any(r["correct"] for r in counted), len(mine), mine[-1]["answer"] if mine else None)
    return {"problems": out, "right": sum(v[0] for v in out.values()), "of": len(problems)}


def results(rows: list[dict], problems: list[str], tries: dict[str, int], labels: list[str] | None = None
            ) -> list[dict]:
    """The teacher's table: one row per (name, seed), its score and each problem's right / tries (columns named by
    `labels`, default 1, 2, ...)."""
    students: dict = {}
    for r in rows:
        students.setdefault((r["name"], r["seed"]), []).append(r)
    table = []
    for (name, seed), mine in sorted(students.items(), key=lambda kv: (str(kv[0][0]).lower(), kv[0][1])):
        s = score(mine, problems, tries)
        table.append({"name": name, "seed": seed, "score": f"{s['right']}/{s['of']}",
                      **{label: ("right" if ok else "wrong" if used else "—") + (f" ({used})" if used else "")
                         for label, (ok, used, _) in zip(labels or map(str, range(1, len(problems) + 1)),
                                                         s["problems"].values())},
                      "last submitted": max(r["time"] for r in mine)})
    return table


def csv_safe(rows: list[dict]) -> list[dict]:
    """Rows for a CSV a spreadsheet opens: a text cell starting with = + - @ gets a leading ' (it would run as a
    formula). The store keeps what was typed; only the export is guarded."""
    return [{k: "'" + v if isinstance(v, str) and v[:1] in ("=", "+", "-", "@") else v for k, v in r.items()}
            for r in rows]
