"""Homework on the Practice page under AppTest: a teacher sets it (the links carry the difficulty and the problem
list, the students' link no token); a student's page shows no solution, hint answer or key, keeps answers while
moving between problems, allows a choice its stated tries, stores each submission and shows a score; the
teacher's link opens the results and the key (question text, per-seed numbers, CSV), a wrong token is refused by
name; hostile names are shown inert and stored as typed."""
from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.tour.practice import problems_in
from k3lite.tour.practice.homework import Store, homework_seed, new_class_id, teacher_token

PAGE = str(ROOT / "views" / "practice.py")


@pytest.fixture(autouse=True)
def homework_env(tmp_path, monkeypatch):
    monkeypatch.delenv("K3LITE_SECRET", raising=False)
    monkeypatch.setenv("K3LITE_SECRET_FILE", str(tmp_path / "secret"))
    monkeypatch.setenv("K3LITE_HOMEWORK_DB", str(tmp_path / "hw.sqlite3"))
    from views import homework_ui

    homework_ui.store.clear()  # st.cache_resource: a fresh store for this test's file
    yield tmp_path
    homework_ui.store.clear()


def open_page(query: dict) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=240)
    for k, v in query.items():
        at.query_params[k] = str(v)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def shown_text(at) -> str:
    return "\n".join(e.value for kind in ("markdown", "caption", "info", "warning", "success", "error", "code")
                     for e in at.get(kind) if isinstance(getattr(e, "value", None), str))


def homework_query(set_name="moe", seed=3, **more) -> dict:
    return {"set": set_name, "seed": seed, "homework": 1, "class": new_class_id("test"), **more}


def test_the_teacher_sets_homework_and_the_students_link_carries_no_token():
    at = open_page({"set": "kda", "seed": "5", "pr_difficulty": "2"})
    at.text_input(key="pr_hw_label").set_value("KDA week 3").run()
    at.button(key="pr_hw_make").click().run()
    links = [c.value for c in at.code]
    student, teacher = links[-2], links[-1]
    q = dict(parse_qsl(urlsplit(student).query))
    assert q["homework"] == "1" and q["pr_difficulty"] == "2" and q["class"].startswith("kda-week-3-")
    assert "teacher" not in q and "key" not in q, "a student's link carries no token"
    assert dict(parse_qsl(urlsplit(teacher).query))["teacher"] == teacher_token(q["class"])


def test_a_students_page_has_no_solution_hint_answer_or_key():
    query = homework_query()
    at = open_page(query)
    assert not at.text_input(key="hw_name").value
    at.text_input(key="hw_name").set_value("Ann").run()
    problem = problems_in("moe")[0]
    assert not at.toggle, "no hint or solution toggle"
    text = shown_text(at)
    assert "open it at these settings" not in text and "**Answer:" not in text and "key=1" not in text
    inst = problem.draw(homework_seed(query["class"], 3))
    assert inst.question.replace("$", "\\$") in [m.value for m in at.markdown], "the homework's own numbers"
    assert problem.draw(3).question != inst.question, "not the open Practice page's numbers for that seed"


def test_answers_are_stored_scored_and_kept_while_moving_between_problems(homework_env):
    query = homework_query()
    at = open_page(query)
    at.text_input(key="hw_name").set_value("Ann").run()
    problems = problems_in("moe")
    p1 = problems[0]
    inst = p1.draw(homework_seed(query["class"], 3))
    at.text_input(key=f"hw_{p1.id}_3_answer").set_value(f"{float(inst.answer):.6g}".replace(".", ",")).run()
    at.button(key=f"hw_{p1.id}_3_submit").click().run()
    assert at.success and "Right" in at.success[0].value
    assert at.metric[0].value == f"1 of {len(problems)} right"
    at.selectbox(key="pr_n").set_value(2).run()
    at.selectbox(key="pr_n").set_value(1).run()
    assert at.text_input(key=f"hw_{p1.id}_3_answer").value, "the typed answer stays"
    rows = Store(str(homework_env / "hw.sqlite3")).rows(query["class"])
    assert [(r["name"], r["seed"], r["problem"], r["correct"]) for r in rows] == [("Ann", 3, p1.id, 1)]


def test_a_choice_question_allows_its_stated_tries():
    set_name, index, problem = next((s, i, p) for s in ("moe", "kda", "hybrid_attention", "serving", "all")
                                    for i, p in enumerate(problems_in(s)) if p.draw(0).is_choice)
    query = homework_query(set_name, tries=1, pr_n=index + 1)
    at = open_page(query)
    at.text_input(key="hw_name").set_value("Bo").run()
    inst = problem.draw(homework_seed(query["class"], 3))
    wrong = next(c for c in inst.choices if c != inst.answer)
    at.radio(key=f"hw_{problem.id}_3_answer").set_value(wrong).run()
    at.button(key=f"hw_{problem.id}_3_submit").click().run()
    assert at.button(key=f"hw_{problem.id}_3_submit").disabled, "no second try"
    assert at.radio(key=f"hw_{problem.id}_3_answer").disabled
    assert "tries: 1 of 1 used" in shown_text(at)


def test_the_teachers_link_opens_results_and_key_and_a_wrong_token_is_refused(homework_env):
    query = homework_query("serving", seed=4)
    class_id, problems = query["class"], problems_in("serving")
    store = Store(str(homework_env / "hw.sqlite3"))
    hostile = "<img src=x onerror=alert(1)> **Bob** [x](javascript:1)\x1b"
    store.submit("a", class_id, hostile, 9, problems[0].id, "1", "Not yet", False)
    bad = open_page({**query, "homework": 0, "teacher": "0" * 32})
    assert bad.error and "teacher token in this link is wrong" in bad.error[0].value
    assert not bad.dataframe and not bad.get("download_button")
    at = open_page({**query, "homework": 0, "teacher": teacher_token(class_id)})
    frame = at.dataframe[0].value
    assert list(frame["name"]) == [hostile] and list(frame["seed"]) == ["9"], "the table shows the name as typed"
    assert len(at.get("download_button")) == 3
    assert at.text_input(key="hw_key_seeds").value == "4, 9", "the class's seed and every seed that submitted"
    inst = problems[0].draw(homework_seed(class_id, 9))
    assert any(inst.question.replace("$", "\\$") in m.value for m in at.markdown), "the key shows the question"
    assert "<img" not in shown_text(at) and "onerror" not in shown_text(at).replace("onerror=alert", "")


def test_a_hostile_name_is_shown_inert_in_the_students_page():
    query = homework_query()
    at = open_page(query)
    name = "<b>x</b> [y](javascript:1) " + "z" * 10_000
    at.text_input(key="hw_name").set_value(name).run()
    p1 = problems_in("moe")[0]
    at.text_input(key=f"hw_{p1.id}_3_answer").set_value("1").run()
    at.button(key=f"hw_{p1.id}_3_submit").click().run()
    assert not at.exception and at.warning
    assert "<b>" not in shown_text(at)


def test_a_homework_link_without_a_class_id_is_refused_by_name():
    at = open_page({"set": "moe", "seed": 1, "homework": 1, "class": "nope"})
    assert at.error and "not one this page made" in at.error[0].value
