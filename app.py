"""k3lite: the Kimi K3 design as a textbook that runs. Entry point: `streamlit run app.py`."""
import streamlit as st

st.set_page_config(page_title="k3lite — the Kimi K3 design, live", page_icon="🧮", layout="wide")

PAGES = {
    "Overview": [
        st.Page("pages/home.py", title="Home: the K3 design", icon="🏠", default=True, url_path="home"),
    ],
    "Mechanisms": [
        st.Page("pages/moe.py", title="Stable LatentMoE & routing", icon="🔀", url_path="moe"),
        st.Page("pages/kda.py", title="Kimi Delta Attention", icon="📉", url_path="kda"),
        st.Page("pages/hybrid_attention.py", title="3:1 hybrid attention", icon="🧩", url_path="hybrid"),
        st.Page("pages/attention_residuals.py", title="Attention Residuals", icon="🪜", url_path="attnres"),
    ],
    "The whole model": [
        st.Page("pages/forward_pass.py", title="Step through a forward pass", icon="▶️", url_path="forward"),
        st.Page("pages/interconnect.py", title="Interconnect bytes per token", icon="🔌", url_path="interconnect"),
        st.Page("pages/cost_per_task.py", title="Cost per task", icon="💰", url_path="cost"),
        st.Page("pages/lab.py", title="The lab: recall tasks", icon="🧪", url_path="lab"),
    ],
}

with st.sidebar:
    st.caption(
        "k3lite runs a small PyTorch model of every K3 idea live on this server's CPU. "
        "Every chart comes from code that just executed."
    )

st.navigation(PAGES).run()
