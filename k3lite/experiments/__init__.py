"""Experiments that train or run the model and write results to assets/: the lab's tasks, models and sweeps, the
language-model training (checkpoint, AttnRes), the balancing demo and experiment, the precomputed page results.

Imports the layers below (base, model, interconnect, analytic); never viz, the tour or Streamlit.
"""
