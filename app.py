"""k3lite: the Kimi K3 design as a textbook that runs. Entry point: `streamlit run app.py`."""
import streamlit as st

from k3lite.guards import bounded_threads
from views.registry import PAGES

bounded_threads()  # process-wide torch thread cap, once for every page: one session cannot take every core
st.set_page_config(page_title="k3lite — the Kimi K3 design, live", page_icon=":material/memory:", layout="wide")

sections: dict[str, list] = {}
for spec in PAGES:
    pages = sections.setdefault(spec.section, [])
    if spec.default:
        # Streamlit serves the default page at "/" only: its url_path is not routable, so "/home" (what a visitor
        # types, or an old link) showed a "Page not found" toast. A hidden page running the same file answers
        # there; the default keeps "/" under an internal url_path no link uses.
        pages.append(st.Page(spec.file, title=spec.title, icon=spec.icon, url_path=f"{spec.url_path}-root",
                             default=True))
        pages.append(st.Page(spec.file, title=spec.title, icon=spec.icon, url_path=spec.url_path,
                             visibility="hidden"))
    else:
        pages.append(st.Page(spec.file, title=spec.title, icon=spec.icon, url_path=spec.url_path))

with st.sidebar:
    st.caption(
        "k3lite runs a small PyTorch model of every K3 idea live on this server's CPU. Most charts come from "
        "code that just executed; the lab's tables and the residual experiment are shipped results "
        "(each page says which)."
    )

st.navigation(sections).run()
