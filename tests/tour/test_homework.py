"""Homework's library (k3lite/tour/practice/homework.py): the secret and the teacher's token, the homework's own
draws, how a typed answer is read, the verdict's rounding, class links and the key's numbering, and the store
(SQLite here, the same SQL on a real PostgreSQL server the test starts, or skipped with the reason)."""
from __future__ import annotations

import postgres_server
import pytest

from k3lite.tour.practice import answer_key, check, class_link, problems_in
from k3lite.tour.practice.core import off_percent
from k3lite.tour.practice.homework import (PRACTICE_SEEDS, Store, check_class_id, clean_name, csv_safe,
                                           homework_seed, new_class_id, read_number, results, score, server_secret,
                                           shown, teacher_token, token_ok)

HOSTILE = ["<script>alert(1)</script>", "Robert'); DROP TABLE submissions;--", "x" * 10_000, "a\x07b\x1b[31mc\u202e\r\n",
           "**bold** [link](javascript:alert(1)) $x$ `code`", "Zoë 王"]


@pytest.fixture
def secret_env(tmp_path, monkeypatch):
    monkeypatch.delenv("K3LITE_SECRET", raising=False)
    monkeypatch.setenv("K3LITE_SECRET_FILE", str(tmp_path / "sub" / "secret"))
    return tmp_path / "sub" / "secret"


# ------------------------------------------------------------------------------------------ the secret, the token
def test_the_secret_file_is_made_once_private_and_the_token_follows_it(secret_env, monkeypatch):
    first = server_secret()
    assert secret_env.stat().st_mode & 0o777 == 0o600 and len(first) >= 64
    assert server_secret() == first, "a second call (another replica) reads the same file"
    class_id = new_class_id("KDA week 3!")
    assert class_id.startswith("kda-week-3-") and check_class_id(class_id) == class_id
    token = teacher_token(class_id)
    assert token_ok(class_id, token) and not token_ok(class_id, token[:-1] + "0" if token[-1] != "0" else "1")
    assert not token_ok(class_id, "") and not token_ok(new_class_id("kda week 3"), token), "one token, one class"
    monkeypatch.setenv("K3LITE_SECRET", "another-server-secret-of-32-characters!")
    assert not token_ok(class_id, token), "another server's secret makes another token"
    with pytest.raises(ValueError, match="not one this page made"):
        teacher_token("../etc")


def test_homework_numbers_lie_past_the_practice_pages_seeds(secret_env):
    class_id = new_class_id("x")
    seeds = {homework_seed(class_id, s) for s in range(50)}
    assert len(seeds) == 50 and min(seeds) > PRACTICE_SEEDS
    assert homework_seed(class_id, 3) == homework_seed(class_id, 3) != homework_seed(new_class_id("x"), 3)


# ------------------------------------------------------------------------------------------ reading an answer
@pytest.mark.parametrize("typed, value", [("166.3", 166.3), ("166,3", 166.3), (" 1 234,5 ", 1234.5),
                                          ("12,345,678", 12345678), ("1,234.5", 1234.5), ("1.234,5", 1234.5),
                                          ("3e9", 3e9), ("-0,5", -0.5), (".5", 0.5)])
def test_a_typed_number_is_read_with_a_decimal_comma(typed, value):
    assert read_number(typed) == pytest.approx(value)


@pytest.mark.parametrize("typed, said", [("", "type a number"), ("abc", "is not a number"), ("1e999", "too large"),
                                         ("nan", "not a finite"), ("-inf", "not a finite"), ("1,663", "decimal comma"),
                                         ("1,2,3", "is not a number"), ("x" * 10_000, "…")])
def test_every_unreadable_entry_is_refused_by_name(typed, said):
    with pytest.raises(ValueError, match=said):
        read_number(typed)


def test_the_verdict_quotes_the_miss_as_finely_as_its_band():
    assert off_percent(0.022, 0.02) == "2.2" and off_percent(0.1, 0.02) == "10" and off_percent(0.0201, 0.02) == "2.01"
    problem = next(p for p in problems_in("all") if not p.draw(1).is_choice and p.draw(1).tolerance == 0.02)
    inst = problem.draw(1)
    verdict = check(inst, float(inst.answer) * 1.022)
    assert not verdict.right and "2.2% too high" in verdict.text and "within 2%" in verdict.text


# ------------------------------------------------------------------------------------------ links and the key
def test_a_class_link_carries_the_difficulty_and_the_problem_list():
    link = class_link("kda", 7, difficulty=2, problems=["a-b", "c-d"], homework=1, **{"class": "k-1a2b3c4d"})
    assert link == "practice?set=kda&seed=7&pr_difficulty=2&pr_only=a-b%2Cc-d&homework=1&class=k-1a2b3c4d"
    assert "key=" not in link and "teacher=" not in link
    assert class_link("kda", 7, teacher="abc").endswith("&teacher=abc")


def test_the_key_keeps_the_problems_number_in_the_set_and_its_text(secret_env):
    every = problems_in("kda")
    chosen = [every[1], every[3]]
    class_id = new_class_id("k")
    rows = answer_key(chosen, [5], [2, 4], draw_seed=lambda s: homework_seed(class_id, s))
    assert [r["question"] for r in rows] == [2, 4]
    inst = every[3].draw(homework_seed(class_id, 5))
    assert rows[1]["question text"] == inst.question and rows[1]["id"] == every[3].id
    assert rows[1]["answer"] == (inst.answer if inst.is_choice else pytest.approx(float(inst.answer), rel=1e-5))


# ------------------------------------------------------------------------------------------ the store
def exercise_store(store: Store) -> None:
    """What the page does with a store, on any backend: idempotent ids, names and answers stored as typed, tries."""
    class_id = new_class_id("c")
    assert store.submit("s1", class_id, "Ann", 4, "p1", "166.3", "Right", True)
    assert not store.submit("s1", class_id, "Ann", 4, "p1", "166.3", "Right", True), "a retry is stored once"
    assert store.submit("s2", class_id, "Ann", 4, "p2", "abc", "Not 'abc'", False)
    for i, name in enumerate(HOSTILE):
        assert store.submit(f"h{i}", class_id, name, i, "p1", name, "Not yet", False)
    rows = store.rows(class_id)
    assert len(rows) == 2 + len(HOSTILE) and len({r["id"] for r in rows}) == len(rows)
    hostile = sorted((r for r in rows if r["id"].startswith("h")), key=lambda r: int(r["id"][1:]))
    assert [r["name"] for r in hostile] == HOSTILE and [r["answer"] for r in hostile] == HOSTILE, "as typed"
    assert [r["id"] for r in store.tries(class_id, "Ann", 4, "p1")] == ["s1"]
    assert store.rows(new_class_id("other")) == [], "a class sees only its own rows"
    with pytest.raises(ValueError, match="type your name"):
        store.submit("s3", class_id, "  ", 4, "p1", "1", "x", False)
    for name, answer in [("a\x00b", "1"), ("Ann", "1\x00")]:  # PostgreSQL's text cannot hold NUL: refused alike
        with pytest.raises(ValueError, match="NUL"):
            store.submit("s4", class_id, name, 4, "p1", answer, "x", False)
    assert len(store.rows(class_id)) == 2 + len(HOSTILE)


def test_the_sqlite_store_uses_wal_and_keeps_rows_as_typed(tmp_path):
    store = Store(str(tmp_path / "hw.sqlite3"))
    exercise_store(store)
    with store._connect() as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    assert Store(str(tmp_path / "hw.sqlite3")).rows, "reopens the same file"


@pytest.fixture(scope="module")
def postgres():
    if postgres_server.missing():
        pytest.skip(postgres_server.missing())
    with postgres_server.postgres_server() as url:
        yield url


def test_the_postgresql_store_runs_the_same_sql(postgres):
    store = Store(postgres)
    assert store.postgres
    exercise_store(store)
    store.close()


# ------------------------------------------------------------------------------------------ scores and display
def test_a_choice_counts_only_within_its_tries_and_the_results_table_numbers_by_the_set():
    rows = [{"problem": "c", "correct": 0, "answer": "A", "name": "n", "seed": 1, "time": "1"},
            {"problem": "c", "correct": 0, "answer": "B", "name": "n", "seed": 1, "time": "2"},
            {"problem": "c", "correct": 1, "answer": "C", "name": "n", "seed": 1, "time": "3"},
            {"problem": "x", "correct": 1, "answer": "5", "name": "n", "seed": 1, "time": "4"}]
    s = score(rows, ["c", "x"], {"c": 2, "x": 0})
    assert s["right"] == 1 and s["problems"]["c"] == (False, 3, "C"), "the third try of two does not count"
    assert score(rows, ["c", "x"], {"c": 3, "x": 0})["right"] == 2
    table = results(rows, ["c", "x"], {"c": 2, "x": 0}, ["3", "7"])
    assert table == [{"name": "n", "seed": 1, "score": "1/2", "3": "wrong (3)", "7": "right (1)",
                      "last submitted": "4"}]


def test_hostile_text_is_shown_inert_and_exported_without_formulas():
    for name in HOSTILE:
        out = shown(name)
        assert "<script>" not in out and "\x07" not in out and "\x1b" not in out and "](" not in out
        assert len(out) < 260
    assert shown("a_b") == "a\\_b"
    assert csv_safe([{"name": "=HYPERLINK(1)", "n": 3}]) == [{"name": "'=HYPERLINK(1)", "n": 3}]
    assert clean_name(HOSTILE[2]) == HOSTILE[2]
