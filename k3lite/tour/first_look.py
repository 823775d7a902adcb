"""The guided tour's words at each level (views/tour.py; the sidebar's *Explain for*).

    first      a first-look path through four of the steps, the four ideas a newcomer can guess at (how little of
               the model a token uses, the shrunk message, memory that fades per channel, the summary layers), each
               claim and question in plain words; the same inputs, the same computed answers
    engineer   the tour as written (k3lite.tour.steps)
    paper      the tour as written, and under each question where its answer is computed (the step's evidence)
"""
from __future__ import annotations

from k3lite.panels.words import pick
from k3lite.tour.steps import DECAY_WRITES, STEPS, Step

FIRST_PATH = ("sparsity", "latent", "decay", "hybrid")  # step keys, in the tour's order
KEYS = [s.key for s in STEPS]

INTRO = {"first": "**Guess first, then see the computed answer.** A short path through four of K3's ideas; "
                  "Next ▶ follows it.",
         "engineer": "**Can you predict what K3's design buys before the computation tells you?** For each claim (most "
                     "as quoted in the seed article, a third-party blog post; each step says where its number comes "
                     "from): **predict** first, then **reveal** what the page that goes deeper computes at its "
                     "defaults."}
INTRO["paper"] = INTRO["engineer"]

FIRST_CLAIM = {
    "sparsity": "K3 is huge, but each token (a piece of a word) uses only a small part of it.",
    "latent": "Before a token travels to its experts on other GPUs, K3 shrinks it to half its size.",
    "decay": "KDA can forget some things quickly while holding on to others.",
    "hybrid": "Three of every four attention layers keep a fixed-size summary instead of a note per past token.",
}
FIRST_QUESTION = {
    "sparsity": "What share of K3's parameters does one token use, in %?",
    "latent": "Shrink it to a quarter instead of a half: what happens to the bytes sent per token?",
    "decay": f"After a fact, {DECAY_WRITES - 1} more pairs are written. Which still remembers the fact: KDA (each part "
             "of its memory fades at its own pace) or Gated DeltaNet (all of it fades together)?",
    "hybrid": "For a conversation of a million tokens (Kimi Linear 48B), how much smaller is the memory than with a "
              "note per token in every layer, in %?",
}


def path(level: str) -> list[int]:
    """The steps (1-based) the tour's Next and Previous walk: the first-look path, or every step."""
    return [KEYS.index(k) + 1 for k in FIRST_PATH] if level == "first" else list(range(1, len(STEPS) + 1))


def claim(level: str, step: Step) -> str:
    return pick(level, FIRST_CLAIM.get(step.key, step.claim), step.claim)


def question(level: str, step: Step) -> str:
    return pick(level, FIRST_QUESTION.get(step.key, step.question), step.question)


def source(level: str, step: Step) -> str | None:
    """At paper level, where the answer is computed (the step's evidence, as the pages' tooltips name it)."""
    return f"Where the answer comes from: {step.evidence.note}." if level == "paper" and step.evidence else None
