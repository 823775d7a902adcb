"""k3lite: the Kimi K3 design as a textbook that runs. Entry point: `streamlit run app.py`."""
import streamlit as st

from k3lite.guards import bounded_threads
from pages.common import leave_legacy_pages_mode

leave_legacy_pages_mode()
bounded_threads()  # process-wide torch thread cap, once for every page: one session cannot take every core
st.set_page_config(page_title="k3lite — the Kimi K3 design, live", page_icon=":material/memory:", layout="wide")

# url_path = the file's stem on purpose: Streamlit's legacy pages/ scan (see leave_legacy_pages_mode)
# then resolves the same links to the same pages, so a shared link never lands on "Page not found".
PAGES = {
    "Overview": [
        st.Page("pages/home.py", title="Home: the K3 design", icon=":material/home:", default=True, url_path="home"),
    ],
    "Mechanisms": [
        st.Page("pages/moe.py", title="Stable LatentMoE & routing", icon=":material/alt_route:", url_path="moe"),
        st.Page("pages/kda.py", title="Kimi Delta Attention", icon=":material/trending_down:", url_path="kda"),
        st.Page("pages/hybrid_attention.py", title="3:1 hybrid attention", icon=":material/extension:", url_path="hybrid_attention"),
        st.Page("pages/attention_residuals.py", title="Attention Residuals", icon=":material/stairs:", url_path="attention_residuals"),
    ],
    "The whole model": [
        st.Page("pages/forward_pass.py", title="Step through a forward pass", icon=":material/play_arrow:", url_path="forward_pass"),
        st.Page("pages/interconnect.py", title="Interconnect bytes per token", icon=":material/cable:", url_path="interconnect"),
        st.Page("pages/cost_per_task.py", title="Cost per task", icon=":material/payments:", url_path="cost_per_task"),
        st.Page("pages/lab.py", title="The lab: recall tasks", icon=":material/science:", url_path="lab"),
    ],
}

with st.sidebar:
    st.caption(
        "k3lite runs a small PyTorch model of every K3 idea live on this server's CPU. "
        "Every chart comes from code that just executed."
    )

st.navigation(PAGES).run()
