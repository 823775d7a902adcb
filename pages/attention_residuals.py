"""Placeholder page: built by issue 5."""
import streamlit as st

st.title("Attention Residuals")
st.info("This page is under construction (issue 5). It will show depth-attention weights (layer x source) for standard / full / block residuals, and what block grouping saves.")
