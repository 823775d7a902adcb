"""Each page's id (its url_path, what a shared link carries) and its navigation title, as plain data.

The one home of a page's title: views/registry.py builds its PageSpecs from TITLES, and a panel names a page
(k3lite.panels.core.where_else) through `title(page_id)` without importing views/ (k3lite never does).
"""
from __future__ import annotations

TITLES: dict[str, str] = {
    "home": "Home: the K3 design",
    "tour": "The K3 argument, step by step",
    "practice": "Practice problems",
    "article": "The article beside the app",
    "moe": "Stable LatentMoE & routing",
    "kda": "Kimi Delta Attention",
    "hybrid_attention": "3:1 hybrid attention",
    "attention_residuals": "Attention Residuals",
    "forward_pass": "Step through a forward pass",
    "interconnect": "Interconnect bytes per token",
    "serving": "Serving: $ per million tokens",
    "cost_per_task": "Cost per task",
    "lab": "The lab: recall tasks",
    "glossary": "Glossary",
}


def title(page_id: str) -> str:
    """The navigation title of page `page_id` ('moe' -> 'Stable LatentMoE & routing'); KeyError names the ids."""
    if page_id not in TITLES:
        raise KeyError(f"no page {page_id!r}; known: {list(TITLES)}")
    return TITLES[page_id]
