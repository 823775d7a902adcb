"""Placeholder page: built by issue 5."""
import streamlit as st

st.title("3:1 hybrid attention")
st.info("This page is under construction (issue 5). It will show KV-cache bytes and decode time vs context up to 1M tokens as the KDA:MLA ratio changes.")
