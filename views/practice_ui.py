"""The Practice page's parts (not a page: views/practice.py and the pages' Try it blocks draw them): one problem with
its answer box, and the block that makes a class link and sets homework. views/homework_ui.py draws homework."""
from __future__ import annotations

from urllib.parse import urlsplit

import streamlit as st

from k3lite.base.evidence import derived
from k3lite.tour.practice.core import class_link  # (only the Practice page and an opened Try it block import this module)
from k3lite.tour.practice.homework import new_class_id, read_number, teacher_token
from views.common import metric


def escaped(text: str) -> str:
    """$ escaped for Markdown: two dollar signs in one text would otherwise render as LaTeX."""
    return text.replace("$", "\\$")


def answer_box(inst, key: str, *, disabled: bool = False):
    """The answer widget: a choice's radio, or a text box read by `read_number` (a decimal comma is a point); an
    entry it cannot read gets a message naming why. Returns the choice, the number, or None."""
    if inst.is_choice:
        return st.radio("your answer", inst.choices, index=None, key=key, horizontal=True, disabled=disabled)
    text = st.text_input(f"your answer ({inst.unit})" if inst.unit else "your answer", key=key, disabled=disabled,
                         placeholder="type a number, e.g. 166.3 or 166,3", max_chars=200)
    if not text:
        return None
    try:
        return read_number(text)
    except ValueError as e:
        st.error(f"⚠️ Not read: {e}.")
        return None


def practice_problem(problem, seed: int, key: str, number: str = "", *, homework: bool = False,
                     draw_seed: int | None = None, disabled: bool = False):
    """One practice problem (k3lite.tour.practice) at `seed`: the question and its picture, an answer box checked
    by the library's computation (how far off, in words), then the hint (a link to the page at the drawn setting)
    and the worked solution, each behind a toggle. Widget keys start with `key` (include the seed in it: a new seed
    gives empty boxes). `homework`: no verdict, no hint link, no solution; returns (instance, the entry)."""
    # here: the figures' module pulls plotly, needed only once a problem is drawn
    from k3lite.tour.practice import KIND_WORDS, check
    from k3lite.viz.memo import shared_figure  # (the reason above)

    inst = problem.draw(seed if draw_seed is None else draw_seed)
    level = "●" * problem.difficulty + "○" * (3 - problem.difficulty)
    st.markdown(f"**{number}{problem.title}** :gray[· {KIND_WORDS[problem.kind]} · {level}]")
    st.markdown(escaped(inst.question))
    if inst.figure is not None:
        builder, args = inst.figure
        st.plotly_chart(shared_figure(builder, *args, evidence=inst.evidence), width="stretch", key=f"{key}_fig")
    guess = answer_box(inst, f"{key}_answer", disabled=disabled)
    if homework:  # the hint's words and its page, not the page at the drawn setting (that would show the answer)
        st.caption(escaped(f"Hint: {inst.hint} (the [{inst.hint_page}]({inst.hint_page}) page)."))
        return inst, guess
    if guess is not None:
        verdict = check(inst, guess)
        (st.success if verdict.right else st.warning)(escaped(verdict.text) + f" :gray[{derived(check).marker}]")
    hint_col, solution_col = st.columns(2)
    show_hint = hint_col.toggle("hint", key=f"{key}_hint")
    show_solution = solution_col.toggle("solution", key=f"{key}_solution")
    if show_hint:
        st.markdown(escaped(f"Hint: {inst.hint}: [open it at these settings]({inst.hint_link})"))
    if show_solution:
        for step in inst.steps:
            st.markdown(escaped(step))
        st.code(inst.code, language="python", wrap_lines=True)
        metric(st, "computed answer", inst.answer_text, inst.evidence,
               help=f"the check accepts {100 * inst.tolerance:g}% either side" if not inst.is_choice else None)
    return inst, guess


def site_url() -> str:
    """The app's address as the reader's browser reached it (st.context.url), "" where unknown (then links stay
    relative)."""
    try:
        url = st.context.url
    except Exception:  # noqa: BLE001 (no request behind this run: AppTest, a bare script)
        return ""
    if not url:
        return ""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def absolute(link: str) -> str:
    base = site_url()
    return f"{base}/{link}" if base else link


def share_block(set_name: str, seed: int, difficulty: int | None, problems: list, tries: int) -> None:
    """A class link (the set, the difficulty, the problems chosen of `problems`), and homework: a class id, the students' link
    and the teacher's (with the token) for the key and the results."""

    titles = {p.id: p.title for p in problems}
    st.multiselect("only these problems (none chosen: all of them)", list(titles), key="pr_only",
                   format_func=titles.get)
    problems = list(st.session_state.pr_only)
    link = absolute(class_link(set_name, seed, difficulty=difficulty, problems=problems))
    st.markdown("**Practice link** (solutions shown; each student changes the seed to their own):")
    st.code(link, language=None, wrap_lines=True)
    st.markdown("**Homework**: no solutions, hints without their answers, answers collected under each "
                "student's name, a score; the key and the results open only with the teacher's link.")
    c1, c2 = st.columns([3, 1])
    label = c1.text_input("class name (e.g. kda-week-3)", key="pr_hw_label", max_chars=40)
    c2.number_input("tries per choice question", 1, 5, key="pr_hw_tries")
    if st.button("Make the homework links", key="pr_hw_make"):
        st.session_state.pr_hw_class = new_class_id(label)
    class_id = st.session_state.get("pr_hw_class")
    if class_id:
        common = {"difficulty": difficulty, "problems": problems, "homework": 1, "class": class_id, "tries": tries}
        st.markdown("Students open (it carries no token):")
        st.code(absolute(class_link(set_name, seed, **common)), language=None, wrap_lines=True)
        st.markdown("Your link, for the key and the results (keep it to yourself: it carries the token):")
        st.code(absolute(class_link(set_name, seed, **common, teacher=teacher_token(class_id))), language=None, wrap_lines=True)
