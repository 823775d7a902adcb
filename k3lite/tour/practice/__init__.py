"""Practice problems: each draws its own numbers from a seed and is checked by the library's own computation.

`PROBLEMS` lists them all; `SETS` names the sets a class link opens (`?set=<name>&seed=<n>`): one per mechanism page
(its url_path), "all", "starter" (difficulty 1) and "two-pages" (problems that need two pages).
"""
from __future__ import annotations

from k3lite.tour.practice import attnres, cost, forward, hybrid, interconnect, kda, lab, moe, params, serving
from k3lite.tour.practice.core import (KIND_WORDS, KINDS, Instance, Problem, Verdict, answer_key, check,
                                       class_link, key_csv, parse_seeds)

# url_path of the page -> the topic's name on the Practice page (the mechanism pages' order in the navigation)
TOPICS: dict[str, str] = {
    "home": "Parameters (home)", "moe": "Routing & MoE", "kda": "Kimi Delta Attention",
    "hybrid_attention": "3:1 hybrid", "attention_residuals": "Attention Residuals", "forward_pass": "Forward pass",
    "interconnect": "Bytes on the wire", "serving": "Serving", "cost_per_task": "Cost per task", "lab": "The lab",
}

PROBLEMS: tuple[Problem, ...] = (params.PROBLEMS + moe.PROBLEMS + kda.PROBLEMS + hybrid.PROBLEMS + attnres.PROBLEMS
                                 + forward.PROBLEMS + interconnect.PROBLEMS + serving.PROBLEMS + cost.PROBLEMS
                                 + lab.PROBLEMS)
BY_ID: dict[str, Problem] = {p.id: p for p in PROBLEMS}
# the problems whose instances name two pages (tests/tour/test_practice.py checks the list against the draws)
TWO_PAGE = ("moe-latent-wire", "fp-token-gb", "fp-cache-share", "fp-bigger-part", "ic-link-time",
            "cost-roofline-task")

SETS: dict[str, tuple[str, ...]] = {
    "all": tuple(p.id for p in PROBLEMS),
    "starter": tuple(p.id for p in PROBLEMS if p.difficulty == 1),
    "two-pages": TWO_PAGE,
    **{topic: tuple(p.id for p in PROBLEMS if p.topic == topic) for topic in TOPICS},
}
SET_LABELS: dict[str, str] = {"all": "All problems", "starter": "Starters (difficulty 1)",
                              "two-pages": "Two pages at once", **TOPICS}


def problems_in(set_name: str, difficulty: int | None = None) -> list[Problem]:
    """The set's problems in order, only those of `difficulty` if given; ValueError names the known sets."""
    if set_name not in SETS:
        raise ValueError(f"no problem set {set_name!r}; known: {list(SETS)}")
    return [BY_ID[i] for i in SETS[set_name] if difficulty is None or BY_ID[i].difficulty == difficulty]


__all__ = ["BY_ID", "KINDS", "KIND_WORDS", "PROBLEMS", "SETS", "SET_LABELS", "TOPICS", "TWO_PAGE", "Instance",
           "Problem", "Verdict", "answer_key", "check", "class_link", "key_csv", "parse_seeds", "problems_in"]
