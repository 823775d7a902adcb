"""The floors of `python -m k3lite.bench browser`: the smallest pages a Streamlit + Plotly app can be.

    /                one title and one chart of 200 points: no page of the app can open faster than this in the
                     same browser on the same machine
    /?controls=1     the same chart beside a column of the controls the app's pages put on their first screen
                     (a radio, a text box, a selectbox, two sliders): what Streamlit itself costs for a picture with
                     its controls, before any of the app's own work
"""
import math

import plotly.graph_objects as go
import streamlit as st

st.title("Floor: one chart")
xs = list(range(200))
chart = st  # the one-chart floor draws straight into the page, as it always has
if st.query_params.get("controls") == "1":
    controls, chart = st.columns([1, 3])
    controls.radio("input", ["prompt", "random"], key="floor_radio", horizontal=True)
    controls.text_input("prompt", "Alice gave Bob the key", key="floor_text")
    controls.selectbox("layer", [0, 1, 2, 3], key="floor_select")
    controls.slider("head", 0, 3, 1, key="floor_head")
    controls.slider("period", 5, 20, 10, key="floor_period")
period, phase = st.session_state.get("floor_period", 10), st.session_state.get("floor_head", 0)
chart.plotly_chart(go.Figure(go.Scatter(x=xs, y=[math.sin(x / period + phase) for x in xs])), key="floor")
