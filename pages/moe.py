"""Placeholder page: built by issue 4."""
import streamlit as st

st.title("Stable LatentMoE & routing")
st.info("This page is under construction (issue 4). It will show a tokens x experts routing heatmap, per-expert load under aux-loss / bias / quantile balancing, and bytes on the wire vs latent ratio.")
