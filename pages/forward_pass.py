"""Placeholder page: built by issue 5."""
import streamlit as st

st.title("Step through a forward pass")
st.info("This page is under construction (issue 5). It will show a real forward pass of the trained lite model, stage by stage, with top-5 next-token probabilities.")
