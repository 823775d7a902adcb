"""k3lite: the Kimi K3 design as a textbook that runs. Entry point: `streamlit run app.py`."""
from pathlib import Path

import streamlit as st

from k3lite.base.guards import bounded_threads, quiet_gc
from k3lite.viz.style import APP_CSS
from views.common import compare_control, evidence_legend, set_state
from views.levels import level_control
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
    compare_control()
    level_control()
    st.caption(
        "The mechanism pages run a small PyTorch model of each K3 idea live on this server's CPU; serving, cost "
        "and the byte ledger are analytic models; a few charts show shipped results (the trained checkpoint, the "
        "lab's sweep). Every number says which it is:"
    )
    evidence_legend()
    # the byte story in one picture, reachable from every page (it lives on the home page). On home itself a link
    # to home changes nothing (Streamlit does not rerun the page it is on): a button opens the section there
    ledger_label = "Bytes per decoded token: the ledger (on Home)"
    if current.url_path in (home.url_path, f"{home.url_path.removesuffix('-root')}"):
        st.button(ledger_label, icon=":material/stacked_bar_chart:", key="sidebar_ledger", type="tertiary",
                  on_click=set_state, args=("home_section", LEDGER_SECTION))
    else:
        st.page_link(home, label=ledger_label, icon=":material/stacked_bar_chart:",
                     query_params={"home_section": LEDGER_SECTION})
    # every abbreviation spelled out, reachable from every page and readable on touch (no hover needed)
    st.page_link(glossary, label="Glossary: MLA, EP, HBM, TPOT, ... spelled out", icon=":material/menu_book:")

current.run()
