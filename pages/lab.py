"""Placeholder page: built by issue  recall tasks."""
import streamlit as st

st.title("The lab")
st.info("This page is under construction (issue  recall tasks). It will show 7:tiny models trained live on MQAR / Palindrome / Stack, comparing KDA, GDN, Mamba-2-style and linear attention.")
