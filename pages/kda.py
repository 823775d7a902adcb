"""Placeholder page: built by issue 3."""
import streamlit as st

st.title("Kimi Delta Attention")
st.info("This page is under construction (issue 3). It will show the per-channel decay heatmap, the state matrix as you scrub through time, memory vs context, and a recall probe across linear attention / DeltaNet / GDN / KDA.")
