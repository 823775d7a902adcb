"""Placeholder page: built by issue 6."""
import streamlit as st

st.title("Cost per task")
st.info("This page is under construction (issue 6). It will show cost per completed task (turns, retries, planner/worker splits), not per token.")
