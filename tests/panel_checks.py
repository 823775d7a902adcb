"""Checks every comparison panel (k3lite.panels) must pass, shared by the panel tests."""
from __future__ import annotations


def assert_draws_both(panel, pair) -> None:
    """K3's trace and the compared model's (named with its label) and no other, every sentence with its evidence,
    every trace's hover tagged as derived."""
    assert [t.name for t in panel.figure.data] == ["Kimi K3", pair.label]
    assert panel.sentences and all(s.evidence for s in panel.sentences)
    assert all("ᵈ" in (t.hovertemplate or "") for t in panel.figure.data)
