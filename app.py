"""k3lite: the Kimi K3 design as a textbook that runs. Entry point: `streamlit run app.py`."""
from pathlib import Path

import streamlit as st

from k3lite.base.guards import bounded_threads, quiet_gc
from k3lite.viz.style import APP_CSS
from views.registry import LEDGER_SECTION, PAGES

bounded_threads()  # process-wide torch thread cap, once for every page: one session cannot take every core
quiet_gc()  # process-wide: full garbage collections (every session paused) rare, k3lite.base.guards rule 4
# the favicon is a file this server serves: a ":material/..." page icon makes the browser fetch an SVG from
# fonts.gstatic.com (Streamlit's frontend builds that URL), which fails offline and leaks every visit
FAVICON = Path(__file__).resolve().parent / "assets" / "favicon.png"
st.set_page_config(page_title="k3lite — the Kimi K3 design, live", page_icon=str(FAVICON), layout="wide")
st.html(APP_CSS)  # every page: no Plotly toolbar on phones, a cue on tables wider than their box (k3lite.viz.style)

sections: dict[str, list] = {}
for spec in PAGES:
    pages = sections.setdefault(spec.section, [])
    if spec.default:
        # Streamlit serves the default page at "/" only: its url_path is not routable, so "/home" (what a visitor
        # types, or an old link) showed a "Page not found" toast. A hidden page running the same file answers
        # there; the default keeps "/" under an internal url_path no link uses.
        home = st.Page(spec.file, title=spec.title, icon=spec.icon, url_path=f"{spec.url_path}-root", default=True)
        pages.append(home)
        pages.append(st.Page(spec.file, title=spec.title, icon=spec.icon, url_path=spec.url_path,
                             visibility="hidden"))
    else:
        pages.append(st.Page(spec.file, title=spec.title, icon=spec.icon, url_path=spec.url_path))
    if spec.url_path == "glossary":
        glossary = pages[-1]

current = st.navigation(sections)
with st.sidebar:
    st.caption(
        "k3lite runs a small PyTorch model of every K3 idea live on this server's CPU. Most charts come from "
        "code that just executed; a few show shipped results (the trained checkpoint, the lab's sweep, the MoE "
        "page's defaults): the home page lists which, and each page says so."
    )
    # the byte story in one picture, reachable from every page (it lives on the home page)
    st.page_link(home, label="Bytes per decoded token: the ledger (on Home)", icon=":material/stacked_bar_chart:",
                 query_params={"home_section": LEDGER_SECTION})
    # every abbreviation spelled out, reachable from every page and readable on touch (no hover needed)
    st.page_link(glossary, label="Glossary: MLA, EP, HBM, TPOT, ... spelled out", icon=":material/menu_book:")

current.run()
