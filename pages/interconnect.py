"""Placeholder page: built by issue 6."""
import streamlit as st

st.title("Interconnect bytes per token")
st.info("This page is under construction (issue 6). It will show bytes per token moved by expert-parallel dispatch/combine on a node, a super-node or an NVL72 rack, and a live measured gloo run.")
