"""Homework on the Practice page (not a page: views/practice.py draws it when the link says `homework=1` or carries a
teacher's token): the student's view (a name, the problems without solutions, tries, a score) and the teacher's
(the key with the question text, the class's results, both as CSV). The store and the token: k3lite/tour/practice/
homework.py."""
from __future__ import annotations

import streamlit as st

from k3lite.tour.practice import answer_key, check, key_csv, parse_seeds
from k3lite.tour.practice.homework import (Store, csv_safe, homework_seed, results, score, shown, submission_id,
                                           token_ok)
from views.common import table, user_errors
from views.practice_ui import escaped, practice_problem


@st.cache_resource
def store():
    """One store per server process (K3LITE_HOMEWORK_DB); its connections are per thread."""
    return Store()


def _tries(problems, tries: int) -> dict[str, int]:
    return {p.id: tries if p.draw(0).is_choice else 0 for p in problems}  # numbers: no limit


def student(problems: list, numbers: list[int], class_id: str, tries: int, seed: int) -> None:
    """The student's homework: name, one problem at a time (answers kept while moving), submit, score."""

    st.info(f"Homework for class **{shown(class_id)}**: type your name and the seed your teacher gave you, answer "
            f"each problem and press Submit. Choice questions allow {tries} {'try' if tries == 1 else 'tries'}; "
            f"your answers are stored for the teacher.")
    st.number_input("your seed", 0, 10**6, key="seed", help="the number your teacher gave you (a student number "
                    "works); the same seed gives the same numbers")
    name = st.text_input("your name", key="hw_name", max_chars=10_000)
    if not name.strip():
        st.stop()
    for p in problems:  # keep every typed answer while the student is on another problem
        k = f"hw_{p.id}_{seed}_answer"
        if k in st.session_state:
            st.session_state[k] = st.session_state[k]
    numbered = {i: f"{n}. {p.title}" for i, (n, p) in enumerate(zip(numbers, problems), start=1)}
    st.session_state.pr_n = min(max(int(st.session_state.pr_n), 1), len(problems))
    st.selectbox("problem", list(numbered), key="pr_n", format_func=numbered.get)
    i = int(st.session_state.pr_n) - 1
    problem, draw = problems[i], homework_seed(class_id, seed)
    allowed = _tries(problems, tries)
    mine = [r for r in store().rows(class_id) if r["name"] == name and r["seed"] == seed]
    used = [r for r in mine if r["problem"] == problem.id]
    done = any(r["correct"] for r in used) or (allowed[problem.id] and len(used) >= allowed[problem.id])
    key = f"hw_{problem.id}_{seed}"
    with st.container(border=True):
        inst, guess = practice_problem(problem, seed, key, f"{numbers[i]}. ", homework=True,
                                       draw_seed=draw, disabled=bool(done))
        if allowed[problem.id]:
            st.caption(f"tries: {len(used)} of {allowed[problem.id]} used")
        typed = str(guess) if inst.is_choice else st.session_state.get(f"{key}_answer", "")  # stored as typed
        again = bool(used) and guess is not None and used[-1]["answer"] == typed  # stored already: a resent press
        if st.button("Submit", key=f"{key}_submit", disabled=bool(done) or guess is None, type="primary") \
                and not again:
            verdict = check(inst, guess)
            sid = submission_id(class_id, name, seed, problem.id, len(used), typed)
            store().submit(sid, class_id, name, seed, problem.id, typed, verdict.text, verdict.right)
            st.rerun()
        if used:
            last = used[-1]
            (st.success if last["correct"] else st.warning)(f"Your answer {shown(last['answer'], 60)}: "
                                                            f"{escaped(last['verdict'])}")
    s = score(mine, [p.id for p in problems], allowed)
    st.metric("your score", f"{s['right']} of {s['of']} right")
    rows = [{"problem": f"{n}. {p.title}", "right": "yes" if ok else "no" if used else "—", "tries": str(used),
             "your last answer": last or ""}  # as typed, as text
            for n, p in zip(numbers, problems) for ok, used, last in [s["problems"][p.id]]]
    table(st, rows, hide_index=True, width="stretch")


def teacher(problems: list, numbers: list[int], class_id: str, token: str, tries: int, seed: int,
            set_name: str) -> None:
    """The teacher's view, only with the class's token: the class's results and the key, on screen and as CSV."""

    if not token_ok(class_id, token):
        st.error(f"⚠️ The teacher token in this link is wrong for class {shown(class_id)}: the key and the results "
                 "open only with the teacher's link the page gave when the homework was set.")
        st.stop()
    rows = store().rows(class_id)
    st.subheader(f"Results: class {shown(class_id)}")
    res = results(rows, [p.id for p in problems], _tries(problems, tries), [str(n) for n in numbers])
    st.caption(f"{len(res)} students, {len(rows)} submissions. Columns 1, 2, …: the problem's number in the set; "
               "right / wrong (tries used).")
    if res:
        table(st, [{**r, "seed": str(r["seed"]), "last submitted": r["last submitted"][:19].replace("T", " ") + " UTC"}
                   for r in res], hide_index=True, width="stretch")  # seeds are ids, not quantities
        st.download_button("Download the results (CSV)", key_csv(csv_safe(res)), key="hw_results_csv",
                           file_name=f"k3lite-{class_id}-results.csv", mime="text/csv")
        st.download_button("Download every submission (CSV)", key_csv(csv_safe(rows)), key="hw_rows_csv",
                           file_name=f"k3lite-{class_id}-submissions.csv", mime="text/csv")
    st.subheader("The key")
    seen = sorted({r["seed"] for r in rows} | {seed})
    seeds_text = st.text_input("seeds", ", ".join(map(str, seen)), key="hw_key_seeds",
                               help="numbers and ranges, e.g. 1-30, 45 (default: the class's seed and every seed "
                                    "a student submitted with)")
    with user_errors():
        seeds = parse_seeds(seeds_text)
    key_rows = answer_key(problems, seeds, numbers, draw_seed=lambda s: homework_seed(class_id, s))
    st.download_button("Download the key (CSV)", key_csv(key_rows), file_name=f"k3lite-{class_id}-key.csv",
                       mime="text/csv", key="hw_key_csv")
    for r in key_rows[:60]:
        answer = r["answer"] if isinstance(r["answer"], str) else f"{r['answer']:g} {r['unit']}".strip()
        st.markdown(escaped(f"**seed {r['seed']} · {r['question']}. {r['problem']}**: {r['question text']}  \n"
                            f"→ **{answer}**" + (f" (±{r['tolerance (%)']:g}%)" if r["tolerance (%)"] else "")))
    if len(key_rows) > 60:
        st.caption(f"The first 60 of {len(key_rows)} rows; the CSV holds them all.")
