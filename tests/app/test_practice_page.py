"""The Practice page under AppTest: the first problem on the first screen, a class link that opens the same numbers
for the same seed and keeps itself in the URL, the check in the page, the teacher's key, and a page's Try it block."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.tour.practice import problems_in

PAGE = str(ROOT / "views" / "practice.py")


def open_practice(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=240)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_the_first_screen_shows_the_first_problem_and_writes_the_link():
    at = open_practice()
    first = problems_in("all")[0].draw(1)
    assert first.question.replace("$", "\\$") in [m.value for m in at.markdown]
    link = dict(at.query_params)
    assert link["set"] == "all" and link["seed"] == "1"


def test_a_class_link_opens_the_set_with_the_seeds_numbers_and_round_trips():
    at = open_practice({"set": "kda", "seed": "7", "pr_n": "2"})
    inst = problems_in("kda")[1].draw(7)
    assert inst.question.replace("$", "\\$") in [m.value for m in at.markdown]
    link = dict(at.query_params)
    assert link["set"] == "kda" and link["seed"] == "7" and link["pr_n"] == "2"
    again = open_practice(link)
    assert inst.question.replace("$", "\\$") in [m.value for m in again.markdown]
    other = open_practice({**link, "seed": "8"})
    assert problems_in("kda")[1].draw(8).question.replace("$", "\\$") in [m.value for m in other.markdown]


def test_the_page_accepts_the_right_answer_and_says_how_far_a_wrong_one_is():
    at = open_practice({"set": "moe", "seed": "3"})
    problem = problems_in("moe")[0]
    inst = problem.draw(3)
    box = at.text_input(key=f"pr_{problem.id}_3_answer")
    box.set_value(f"{float(inst.answer) * 1.005:.6g}".replace(".", ",")).run()  # a decimal comma reads as a point
    assert at.success and at.success[0].value.startswith("Right")
    box.set_value(f"{float(inst.answer) * 2:.6g}").run()
    assert at.warning and "2.0x too high" in at.warning[0].value
    at.toggle(key=f"pr_{problem.id}_3_solution").set_value(True).run()
    assert any(m.value.startswith("**Answer:") for m in at.markdown)
    assert [m.label for m in at.metric] == ["computed answer :gray[ᵈ]"]


def test_a_key_link_alone_opens_no_key():
    at = open_practice({"set": "serving", "seed": "1", "key": "1"})
    assert at.error and "opens only with the teacher's link" in at.error[0].value
    assert not at.dataframe and not at.get("download_button")


def test_an_unreadable_answer_gets_a_message_naming_why():
    at = open_practice({"set": "moe", "seed": "3"})
    box = at.text_input(key=f"pr_{problems_in('moe')[0].id}_3_answer")
    for typed, said in [("abc", "is not a number"), ("1e999", "too large"), ("nan", "not a finite number"),
                        ("1,663", "decimal comma")]:
        box.set_value(typed).run()
        assert at.error and said in at.error[0].value, (typed, [e.value for e in at.error])
        assert not at.success and not at.warning


def test_the_share_block_carries_the_difficulty_and_the_chosen_problems():
    at = open_practice({"set": "kda", "seed": "5", "pr_difficulty": "2"})
    at2 = [p for p in problems_in("kda", 2)]
    at.multiselect(key="pr_only").set_value([at2[0].id]).run()
    link = at.code[0].value
    assert "pr_difficulty=2" in link and f"pr_only={at2[0].id}" in link and "set=kda" in link and "key=" not in link
    number = problems_in("kda").index(at2[0]) + 1
    assert at.selectbox(key="pr_n").options == [f"{number}. {at2[0].title}"], "the set's number is kept"


def test_a_bad_set_in_the_link_falls_back_with_a_notice():
    at = open_practice({"set": "nope", "seed": "-4"})
    notices = " ".join(w.value for w in at.warning)
    assert "Ignored `set=" in notices and "Ignored `seed=" in notices
    at = open_practice({"seed": "abc"})
    assert "expected a whole number" in at.warning[0].value and "invalid literal" not in at.warning[0].value


def test_try_it_renders_a_pages_problems():
    at = AppTest.from_string("from views.common import try_it\ntry_it('hybrid_attention')\n", default_timeout=240)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    questions = [p.draw(1).question.replace("$", "\\$") for p in problems_in("hybrid_attention")]
    shown = [m.value for m in at.markdown]
    assert all(q in shown for q in questions)
    assert at.expander[0].label.startswith(f"Try it: {len(questions)} problems")
