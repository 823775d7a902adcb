"""Practice: problems that draw their own numbers from a seed, checked by the library's own computation. A class
link `?set=<name>&seed=<n>` (with the teacher's `pr_difficulty` and `pr_only` problem list) gives every student
their own numbers; `&homework=1&class=<id>` is homework (no solutions, answers stored, a score), and the teacher's
link (`&teacher=<token>`) opens the key and the class's results (views/homework_ui.py)."""
import streamlit as st

from k3lite.tour.practice import BY_ID, KIND_WORDS, PROBLEMS, SET_LABELS, SETS, TOPICS, problems_in
from k3lite.tour.practice.homework import TRIES, check_class_id
from views import homework_ui
from views.common import lazy_expander, push_url, reset_button, table, url_state, user_errors
from views.levels import level
from views.practice_ui import practice_problem, share_block

DIFFICULTY = {"any": "any", "1": "●", "2": "●●", "3": "●●●"}
# the sidebar's *Explain for* picks the difficulty a reader starts on: one lookup at first look, every problem for an
# engineer, the several-step ones at paper level. A link's own pr_difficulty wins; homework and the key ignore it.
BY_LEVEL = {"first": "1", "engineer": "any", "paper": "3"}

url_state("set", "all", choices=list(SETS))
url_state("seed", 1, lo=0, hi=10**6)
LEVEL = level()
by_level = "any" if {"homework", "teacher", "key"} & set(st.query_params) else BY_LEVEL[LEVEL]
url_state("pr_difficulty", by_level, choices=list(DIFFICULTY))
if st.session_state.setdefault("pr_seen_level", LEVEL) != LEVEL:  # the level moved in the sidebar: the filter follows
    st.session_state.pr_seen_level, st.session_state.pr_difficulty = LEVEL, by_level
url_state("pr_n", 1, lo=1, hi=len(PROBLEMS))
url_state("pr_only", [], choices=list(BY_ID))
url_state("key", False)
url_state("homework", False)
url_state("class", "")
url_state("teacher", "")
url_state("tries", TRIES, lo=1, hi=5)
url_state("pr_hw_tries", int(st.session_state.tries), lo=1, hi=5)
homework, class_id, token = st.session_state.homework, st.session_state["class"], st.session_state.teacher

st.title("Homework" if homework else "Teacher's view" if token else "Practice: work the numbers out")
level = None if st.session_state.pr_difficulty == "any" else int(st.session_state.pr_difficulty)
in_set = problems_in(st.session_state.set)
at_level = problems_in(st.session_state.set, level)
st.session_state.pr_only = [i for i in st.session_state.pr_only if i in {p.id for p in at_level}]
problems = [p for p in at_level if not st.session_state.pr_only or p.id in st.session_state.pr_only]
numbers = [in_set.index(p) + 1 for p in problems]  # the problem's number in the whole set, kept when filtered
if homework or token or st.session_state.key:
    if st.session_state.key and not token:
        st.error("⚠️ The teacher's key opens only with the teacher's link (it carries a token the page gives when a "
                 "teacher sets homework): a `key=1` link alone opens nothing.")
        st.stop()
    with user_errors():
        check_class_id(class_id)
        if not problems:
            raise ValueError("the link's problem list names no problem of this set at this difficulty")
    push_url("seed", "pr_n")
    if token:
        homework_ui.teacher(problems, numbers, class_id, token, int(st.session_state.tries),
                            int(st.session_state.seed), st.session_state.set)
    else:
        homework_ui.student(problems, numbers, class_id, int(st.session_state.tries), int(st.session_state.seed))
    st.stop()

st.caption(f"{len(PROBLEMS)} problems in all, {len(in_set)} in this set; each draws its own numbers from a seed and "
           "is checked by the computation the pages run.")
c1, c2, c3 = st.columns([2, 2, 1])
c1.selectbox("problem set", list(SETS), key="set", format_func=SET_LABELS.get)
c2.radio("difficulty", list(DIFFICULTY), key="pr_difficulty", format_func=DIFFICULTY.get, horizontal=True,
         help="● one lookup · ●● two steps · ●●● several steps or two pages")
c3.number_input("seed", 0, 10**6, key="seed", help="Your own numbers: a teacher gives each student a seed "
                "(a student number works); the same seed gives the same numbers anywhere.")
if not problems:
    st.info("No problem of this difficulty in this set: pick 'any'.")
    st.stop()
st.session_state.pr_n = min(max(int(st.session_state.pr_n), 1), len(problems))
numbered = {i: f"{n}. {p.title}" for i, (n, p) in enumerate(zip(numbers, problems), start=1)}
st.selectbox("problem", list(numbered), key="pr_n", format_func=numbered.get)
push_url("set", "seed", "pr_difficulty", "pr_n", "pr_only")
seed, n = int(st.session_state.seed), int(st.session_state.pr_n)
problem = problems[n - 1]
with st.container(border=True), user_errors():
    practice_problem(problem, seed, f"pr_{problem.id}_{seed}", f"{numbers[n - 1]}/{len(in_set)} · ")

with lazy_expander("Share with a class, or set homework", "pr_x_share") as is_open:
    if is_open:
        share_block(st.session_state.set, seed, level, at_level, int(st.session_state.pr_hw_tries))

with lazy_expander("Every problem, by topic", "pr_x_list") as is_open:
    if is_open:
        rows = [{"topic": TOPICS[p.topic], "problem": p.title, "kind": KIND_WORDS[p.kind], "level": "●" * p.difficulty,
                 "pages": ", ".join(BY_ID[p.id].draw(0).pages)} for p in PROBLEMS]
        table(st, rows, hide_index=True, width="stretch")
reset_button("pr_")
