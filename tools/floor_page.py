"""The floor of `python -m k3lite.bench browser`: the smallest page a Streamlit + Plotly app can be, one title and
one chart of 200 points. No page of the app can open faster than this in the same browser on the same machine."""
import math

import plotly.graph_objects as go
import streamlit as st

st.title("Floor: one chart")
xs = list(range(200))
st.plotly_chart(go.Figure(go.Scatter(x=xs, y=[math.sin(x / 10) for x in xs])), key="floor")
