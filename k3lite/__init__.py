"""k3lite: a compact, readable PyTorch implementation of the Kimi K3 design ideas.

Pure PyTorch + numpy; never imports Streamlit (the app lives in app.py and views/).
"""
from k3lite.model.config import K3Config, KDAConfig, MLAConfig, MoEConfig
from k3lite.model.presets import PRESETS, get_preset

__all__ = ["K3Config", "KDAConfig", "MLAConfig", "MoEConfig", "PRESETS", "get_preset"]
