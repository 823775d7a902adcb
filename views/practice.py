"""Practice: problems that draw their own numbers from a seed, checked by the library's own computation. A class
link `?set=<name>&seed=<n>` gives every student their own numbers; `&key=1` shows the teacher every answer."""
import streamlit as st

from k3lite.base.evidence import derived
from k3lite.tour.practice import BY_ID, KIND_WORDS, PROBLEMS, SET_LABELS, SETS, TOPICS, answer_key, class_link, \
    key_csv, parse_seeds, problems_in
from views.common import lazy_expander, practice_problem, push_url, reset_button, table, url_state, user_errors

DIFFICULTY = {"any": "any", "1": "●", "2": "●●", "3": "●●●"}

st.title("Practice: work the numbers out")
st.caption(f"{len(PROBLEMS)} problems; each draws its own numbers from a seed and is checked by the computation the "
           "pages run.")

url_state("set", "all", choices=list(SETS))
url_state("seed", 1, lo=0, hi=10**6)
url_state("pr_difficulty", "any", choices=list(DIFFICULTY))
url_state("pr_n", 1, lo=1, hi=len(PROBLEMS))
url_state("key", False)

c1, c2, c3 = st.columns([2, 2, 1])
c1.selectbox("problem set", list(SETS), key="set", format_func=SET_LABELS.get)
c2.radio("difficulty", list(DIFFICULTY), key="pr_difficulty", format_func=DIFFICULTY.get, horizontal=True,
         help="● one lookup · ●● two steps · ●●● several steps or two pages")
c3.number_input("seed", 0, 10**6, key="seed", help="Your own numbers: a teacher gives each student a seed "
                "(a student number works); the same seed gives the same numbers anywhere.")
level = None if st.session_state.pr_difficulty == "any" else int(st.session_state.pr_difficulty)
problems = problems_in(st.session_state.set, level)
if not problems:
    st.info("No problem of this difficulty in this set: pick 'any'.")
    st.stop()
st.session_state.pr_n = min(max(int(st.session_state.pr_n), 1), len(problems))
numbered = {i: f"{i}. {p.title}" for i, p in enumerate(problems, start=1)}
st.selectbox("problem", list(numbered), key="pr_n", format_func=numbered.get)
push_url("set", "seed", "pr_difficulty", "pr_n")
seed, n = int(st.session_state.seed), int(st.session_state.pr_n)
problem = problems[n - 1]
with st.container(border=True), user_errors():
    practice_problem(problem, seed, f"pr_{problem.id}_{seed}", f"{n}/{len(problems)} · ")

with lazy_expander("Share with a class, and the teacher's key", "pr_x_share") as is_open:
    if is_open:
        link = class_link(st.session_state.set, seed)
        st.markdown(f"Share [`{link}`]({link}); each student changes the seed to their own. No answers are stored: "
                    f"the check runs in each student's page. The key: [`{class_link(st.session_state.set, seed, True)}`]"
                    f"({class_link(st.session_state.set, seed, True)}).")
if st.session_state.key:
    st.subheader(f"Teacher's key: {SET_LABELS[st.session_state.set]}")
    seeds_text = st.text_input("seeds", "1-30", key="pr_key_seeds", help="numbers and ranges, e.g. 1-30, 45")
    with user_errors():
        seeds = parse_seeds(seeds_text)
    rows = answer_key(problems, seeds)
    st.download_button("Download the key (CSV)", key_csv(rows), file_name=f"k3lite-{st.session_state.set}-key.csv",
                       mime="text/csv", key="pr_key_csv")
    shown = [{**r, "answer": r["answer"] if isinstance(r["answer"], str) else f"{r['answer']:g}"} for r in rows]
    table(st, shown, default=derived(answer_key), hide_index=True, width="stretch")  # choices and numbers as text

with lazy_expander("Every problem, by topic", "pr_x_list") as is_open:
    if is_open:
        rows = [{"topic": TOPICS[p.topic], "problem": p.title, "kind": KIND_WORDS[p.kind], "level": "●" * p.difficulty,
                 "pages": ", ".join(BY_ID[p.id].draw(0).pages), "set": p.topic} for p in PROBLEMS]
        table(st, rows, hide_index=True, width="stretch")
reset_button("pr_")
