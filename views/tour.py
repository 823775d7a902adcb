"""The K3 argument in N steps: predict, then compute, then see the gap. Progress and answers live in the URL."""
import streamlit as st
from streamlit.errors import StreamlitAPIException

from k3lite.base.evidence import assumed, derived
from k3lite.tour import first_look
from k3lite.tour.steps import STEPS, gap_text, summary, with_unit
from views.common import metric, push_url, reset_button, set_state, show_code, table, url_state, user_errors
from views.levels import level
from views.registry import by_url_path

N = len(STEPS)
GUESS = assumed("your own guess, typed above")


def md(text: str) -> str:
    """Escape $ for Markdown: two dollar signs in one text would otherwise render as LaTeX."""
    return text.replace("$", "\\$")


st.title(f"The K3 argument in {N} steps")
LEVEL = level()  # the sidebar's *Explain for*: first look walks a shorter path in plain words (k3lite/tour/first_look.py)
PATH = first_look.path(LEVEL)
st.markdown(first_look.INTRO[LEVEL])
with st.expander("How the tour works"):
    st.caption("Your step and your answers stay in the link, so a teacher can share step 4. The last step ends with a "
               "summary of every guess against its computed answer.")

url_state("tour_step", 1, lo=1, hi=N)
url_state("tour_revealed", [])
for i, s in enumerate(STEPS, start=1):
    if s.kind == "number":
        url_state(f"tour_g{i}", float(s.default), lo=s.lo, hi=s.hi)
    else:
        url_state(f"tour_g{i}", s.choices[0], choices=s.choices)
revealed = {int(x) for x in st.session_state.tour_revealed if str(x).isdigit()}
st.session_state.tour_step = i = min(max(int(st.session_state.tour_step), 1), N)
step = STEPS[i - 1]


@st.cache_data(show_spinner="Computing…", max_entries=len(STEPS))
def computed(index: int):
    return STEPS[index].compute()


st.slider("step", 1, N, key="tour_step")
st.caption(" → ".join(f"{'✓ ' if k in revealed else ''}{f'**{s.title}**' if k == i else s.title}"
                      for k, s in enumerate(STEPS, start=1) if k in PATH or k == i)
           + f" · {len(revealed & set(range(1, N + 1)))} of {N} revealed")
st.subheader(f"{i}. {step.title}")
st.markdown(md(f"*The claim:* {first_look.claim(LEVEL, step)}"))
st.markdown(md(f"**Predict:** {first_look.question(LEVEL, step)}"))
if first_look.source(LEVEL, step):
    st.caption(md(first_look.source(LEVEL, step)))
key = f"tour_g{i}"
if step.kind == "number":
    st.number_input(f"your guess ({step.unit})", min_value=float(step.lo), max_value=float(step.hi), key=key,
                    format="%g")
else:
    st.radio("your guess", step.choices, key=key)
push_url("tour_step", key)

st.button("Reveal the computed answer", type="primary", key="tour_reveal", disabled=i in revealed,
          on_click=set_state, args=("tour_revealed", sorted({*revealed, i})))
if i in revealed:
    with user_errors():
        answer = computed(i - 1)
    c1, c2 = st.columns(2)
    guess = st.session_state[key]
    metric(c1, "your guess", with_unit(guess, step.unit) if step.kind == "number" else guess, GUESS)
    metric(c2, "computed", answer.answer_text, step.evidence)
    st.info(md(gap_text(step, st.session_state[key], answer)))
    st.markdown(md(f"**Why.** {answer.explanation}"))
    if answer.details:
        table(st, {"computed": list(answer.details), "value": list(answer.details.values())}, {"value": step.evidence},
              hide_index=True)
    spec = by_url_path(step.page)
    try:
        st.page_link(spec.file, label=f"Go deeper: {spec.title}", icon=spec.icon)
    except StreamlitAPIException:  # this file run on its own (AppTest of one page): no navigation to link into
        st.markdown(f"Go deeper: {spec.title} (`{spec.file}`)")
push_url("tour_revealed")

b1, b2 = st.columns(2)
before, after = [k for k in PATH if k < i], [k for k in PATH if k > i]  # every step, or the first-look path's
b1.button("◀ Previous step", on_click=set_state, args=("tour_step", before[-1] if before else i), disabled=not before,
          key="tour_prev", width="stretch")
b2.button("Next step ▶", on_click=set_state, args=("tour_step", after[0] if after else i), disabled=not after,
          key="tour_next", width="stretch")
if len(revealed) == N:
    st.success("All steps revealed. Share this page's link: it carries every answer you gave.")

if i == N or len(revealed) == N:  # the closing summary: every guess beside its computed answer
    st.subheader("Summary: the K3 argument, your guesses and the computation")
    revealed_now = {int(x) for x in st.session_state.tour_revealed if str(x).isdigit()}
    guesses = {k: st.session_state.get(f"tour_g{k}") for k in range(1, N + 1)}
    with user_errors():
        rows, sentence = summary(guesses, revealed_now, computed)
    st.markdown(sentence)
    for row, s in zip(rows, STEPS):  # each computed answer's own class (they differ: derived, measured here)
        row["evidence"] = f"{s.evidence.marker} {s.evidence.kind}"
    table(st, rows, {"your guess": GUESS,
                     "computed": derived("k3lite.tour.steps.summary: each step's own computation; its class in the "
                                         "row's 'evidence' column")},
          hide_index=True, width="stretch", column_config={"page": st.column_config.TextColumn("go deeper (page)")})
    show_code(summary)
reset_button("tour_")
