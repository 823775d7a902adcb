"""Glossary: every abbreviation and term of art the app uses, spelled out (k3lite/tour/glossary.py holds the table)."""
import streamlit as st

from k3lite.tour.glossary import GLOSSARY, search
from views.common import push_url, reset_button, url_state
from views.registry import by_url_path

st.title("Glossary")
st.caption(f"{len(GLOSSARY)} terms the pages use, in plain words, each with the page that shows it live. Everything "
           "here is written out: nothing hides behind a hover, so it reads the same on a phone.")

url_state("gl_query", "")
query = st.text_input("Find a term (abbreviation, word, or part of a definition)", key="gl_query",
                      placeholder="e.g. MLA, HBM, flips")
push_url("gl_query")
if query:
    reset_button("gl_", label="Show every term")
found = search(query)
if not found:
    st.info(f"No term matches {query!r}. Clear the box to see all {len(GLOSSARY)}.")
lines = []
for t in found:
    name = f"**{t.term}**" + (f" — {t.expansion}" if t.expansion else "")
    where = f" → [{by_url_path(t.page).short}]({t.page})" if t.page else ""
    lines.append(f"- {name}. {t.meaning}{where}")
st.markdown("\n".join(lines))
