"""The serving sentence generators choose every comparison word from their numbers (k3lite.base.wording): each runs
over presets x GPUs x a few slider values, and no sentence may say cheaper / more / less / ... unless a recorded
comparison of its numbers printed the word."""
import functools

import pytest

from k3lite.analytic.cost import ModelPrice, TaskProfile
from k3lite.analytic.serving import Serving, Speculation, decode_step, prefill_step
from k3lite.analytic.serving.compare import FP8, FP4_EXPERTS, price_split_sentence, speculation_sentence, task_vs_token_ranking
from k3lite.analytic.serving.published import validate_vllm_k3, vllm_k3_sentence
from k3lite.analytic.serving.deployment import default_speculation
from k3lite.analytic.serving.fit import checked, checked_sentence
from k3lite.analytic.serving.frontier import frontier, verdict
from wording_check import wording_problems

PRESETS = ("kimi-k3", "kimi-k2", "deepseek-v3", "kimi-linear-48b-a3b")
GPUS = ("H200", "B300", "GB300 NVL72")
ALLOWED = ("more than one",)


def _serving(preset: str, gpu: str, context: int, spec: Speculation | None = None) -> Serving:
    n = 8 if preset == "kimi-linear-48b-a3b" else 64 if gpu != "H200" else 96
    return Serving(preset, gpu, n, n, 1, FP4_EXPERTS if gpu != "H200" else FP8, context, spec=spec)


def _speculation(preset: str, gpu: str, context: int, batch: int, acceptance_scale: float) -> str:
    d = default_speculation(preset)
    sp = Speculation(d.draft_tokens, max(1.0, min(d.draft_tokens + 1.0, d.acceptance * acceptance_scale)), d.drafter)
    return speculation_sentence(_serving(preset, gpu, context, sp), batch)


def _price_split(preset: str, gpu: str, context: int, batch: int, chunk: int) -> str:
    s = _serving(preset, gpu, context)
    pre = prefill_step(s.with_(n_gpus=32 if preset != "kimi-linear-48b-a3b" else 8,
                               ep=32 if preset != "kimi-linear-48b-a3b" else 8), chunk)
    return price_split_sentence(decode_step(s, batch), pre, f"pool of {gpu}", preset)[2]


@functools.lru_cache(maxsize=None)
def _frontier(preset: str, model: str):
    return frontier(preset, gpus=GPUS, model=model, points=2)  # at the page's request shape


def _verdict(preset: str, model: str, speed: float) -> str:
    return verdict(_frontier(preset, model), speed).sentence


def _ranking(slow_out: float, fast_out: float, fast_in: float, share: float) -> str:
    slow, fast = ModelPrice("slow", 0.09, slow_out), ModelPrice("fast", fast_in, fast_out)
    return task_vs_token_ranking(slow, fast, ModelPrice("w", 0.1, 0.4), TaskProfile(), share, 0.98, 0.8)[2]


def test_speculation_sentence():
    grid = [dict(preset=p, gpu=g, context=c, batch=b, acceptance_scale=a) for p in PRESETS for g in GPUS
            for c in (4096, 32768) for b in (1, 16) for a in (0.6, 1.0)]
    assert wording_problems(_speculation, grid, ALLOWED) == []


def test_price_split_sentence():
    grid = [dict(preset=p, gpu=g, context=c, batch=b, chunk=k) for p in PRESETS for g in GPUS
            for c in (4096, 32768) for b in (1, 32) for k in (2048, 16384)]
    assert wording_problems(_price_split, grid, ALLOWED) == []


@pytest.mark.parametrize("preset", ["kimi-k3", "deepseek-v3"])
def test_verdict_sentence(preset):
    grid = [dict(preset=preset, model=m, speed=v) for m in ("bound", "predicted") for v in (10.0, 20.0, 50.0, 100.0)]
    assert wording_problems(_verdict, grid, ALLOWED) == []


def test_checked_sentence():
    c = checked()
    assert wording_problems(lambda c: checked_sentence(c), [dict(c=c)], ALLOWED) == []


def test_task_vs_token_ranking_sentence():
    grid = [dict(slow_out=s, fast_out=f, fast_in=i, share=sh) for s in (0.5, 1.0) for f in (0.4, 1.0, 3.86)
            for i in (0.05, 0.2) for sh in (0.075, 0.5)]
    assert wording_problems(_ranking, grid, ALLOWED) == []


def test_vllm_k3_sentence():
    grid = [dict(rows=validate_vllm_k3(Speculation(8, a)), acceptance=a) for a in (1.0, 3.3, 6.0)]
    assert wording_problems(vllm_k3_sentence, grid, ALLOWED) == []
