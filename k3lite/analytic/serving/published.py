"""The serving model checked against every published serving figure we could find: the multi-node decode
deployments and prefill pools of DeepSeek-V3 and Kimi K2 (predicted with the fitted efficiencies and DeepEP's
per-call latency, their error beside the bound; never fitted), and vLLM's one-node K3 runs against the bound.
Moved out of compare.py (the waterfall, side by side and the cost page's prices stay there)."""
from __future__ import annotations

from typing import NamedTuple

from k3lite.model.presets import get_preset
from k3lite.analytic.serving.deployment import (
    DSPARK_DRAFT_TOKENS, K3_PRESET, MTP_SPEC_SOURCE, Serving, Speculation, default_speculation,
)
from k3lite.analytic.serving.fit import FITTED
from k3lite.analytic.serving.predict import as_step, prefill_forward_s, terms
from k3lite.analytic.serving.step import Step, decode_step, prefill_step
from k3lite.analytic.serving.frontier import FRONTIER_FORMATS, RELEASED
from k3lite.analytic.serving.measured import VLLM_K3, VLLM_K3_INPUT, VLLM_K3_OUTPUT, VLLM_K3_SOURCE
from k3lite.analytic.serving.compare import FP8


class Published(NamedTuple):
    label: str
    short: str  # axis label
    serving: Serving
    batch_per_gpu: int
    measured_tokens_per_s_per_gpu: float
    source: str
    spec: Speculation | None = None  # the speculation the prediction runs with (the bound runs without)
    spec_source: str = "no speculation stated by the source: predicted without"
    measured_tokens_per_s_per_user: float | None = None  # where the source gives one


PUBLISHED: tuple[Published, ...] = (
    Published("DeepSeek-V3/R1 online service, H800 (EP144 decode, 18 nodes)", "DeepSeek service, 18x8 H800",
              Serving("deepseek-v3", "H800", 144, 144, 1, FP8, 4989), 128, 14_800 / 8,
              "DeepSeek, open-infra-index day 6 'DeepSeek-V3/R1 Inference System Overview' (2025-02-28): "
              "~14.8k output tokens/s per H800 node during decoding, average KV length 4,989, FP8 matmuls and "
              "dispatch, BF16 MLA and combine; batch 128 per GPU from the LMSYS comparison table (2025-05-05)",
              default_speculation("deepseek-v3"),
              "assumed: the overview does not say; LMSYS compares its simulated-MTP run with these figures "
              "(lm-sys/lm-sys.github.io blog/2025-05-05-large-scale-ep.md @ 2db4e404); " + MTP_SPEC_SOURCE,
              21.0),  # "average output speed was 20-22 tokens per second" (the overview), the middle
    Published("DeepSeek-V3 on SGLang, 9 x 8 H100 decode (EP72)", "SGLang DeepSeek-V3, 9x8 H100",
              Serving("deepseek-v3", "H100 SXM", 72, 72, 1, FP8, 2000), 256, 22_282 / 8,
              "LMSYS / SGLang team, 'Deploying DeepSeek with PD Disaggregation and Large-scale Expert Parallelism "
              "on 96 H100 GPUs' (2025-05-05): 22,282 output tokens/s per node, batch 256, 2,000-token inputs",
              None, "none: the blog lists MTP with DP attention among its limitations; predicted without"),
    Published("Kimi K2 on SGLang, 12 x 8 H200 decode (1P1D, 128 GPUs)", "SGLang Kimi K2, 12x8 H200",
              Serving("kimi-k2", "H200", 96, 96, 1, FP8, 2100), 480, 24_000 / 8,
              "LMSYS / Mooncake team, 'Deploying Kimi K2 with PD Disaggregation and Large-Scale Expert Parallelism "
              "on 128 H200 GPUs' (2025-07-17): the blog's own comparison table gives 24k decode tokens/s per node, "
              "3,000 per GPU, which we use (its 384k tokens/s for the cluster over the 96 decode GPUs would be 4,000 "
              "per GPU); 2,000-token inputs, 100-token outputs, decode batch 480 (read as per GPU: the blog does not "
              "say)"),
)


def predicted_decode(p: Published) -> Step:
    """A published decode deployment through the predictor (predict.as_step with the shipped fit.FITTED, not refitted),
    at its own preset, layout, context, batch and speculation: a prediction with an error, beside the bound."""
    return as_step(terms(p.serving.with_(spec=p.spec)), FITTED.efficiency, p.batch_per_gpu)


def validate(overlap: bool = True) -> list[dict]:
    """Model vs measurement at each publication's stated setting. A bound must land at or above each; the prediction
    (`predicted_decode`) says how far the fitted model is from each, in both directions."""
    rows = []
    for p in PUBLISHED:
        st = decode_step(p.serving.with_(overlap=overlap), p.batch_per_gpu)
        pr, k = predicted_decode(p), terms(p.serving.with_(spec=p.spec))
        plain = predicted_decode(p._replace(spec=None))
        rows.append({"deployment": p.label, "short": p.short,
                     "model / measured": st.tokens_per_s_per_gpu / p.measured_tokens_per_s_per_gpu,
                     "measured tokens/s / GPU": p.measured_tokens_per_s_per_gpu,
                     "model tokens/s / GPU": st.tokens_per_s_per_gpu, "batch / GPU": p.batch_per_gpu,
                     "context": p.serving.context, "model bound by": st.bound, "source": p.source,
                     "predicted tokens/s / GPU": pr.tokens_per_s_per_gpu,
                     "predicted error": pr.tokens_per_s_per_gpu / p.measured_tokens_per_s_per_gpu - 1,
                     "predicted tokens/s / GPU without speculation": plain.tokens_per_s_per_gpu,
                     "predicted tokens/s / user": pr.tokens_per_s_per_user,
                     "measured tokens/s / user": p.measured_tokens_per_s_per_user,
                     "predicted step (ms)": 1e3 * pr.step_s, "predicted bound by": pr.bound,
                     "predicted HBM (ms)": 1e3 * pr.hbm_s, "predicted compute (ms)": 1e3 * pr.compute_s,
                     "predicted wire (ms)": 1e3 * pr.wire_s, "predicted draft (ms)": 1e3 * pr.draft_s,
                     "expert-call latency per step (ms)": 1e3 * k.ep_latency_s,
                     "EP across the NIC": k.step.wire_latency_s > 0,
                     "speculation": p.spec_source if p.spec is None else
                     f"{p.spec.drafter}, {p.spec.draft_tokens} drafted, {p.spec.acceptance:g} kept: {p.spec_source}",
                     "efficiencies": f"fit.FITTED (15 one-node B300 K3 runs), not refitted: {FITTED.efficiency}"})
    return rows


def multinode_sentence(rows: list[dict], prefill: list[dict]) -> str:
    """What the predictor says of the multi-node deployments, from `validate` and `validate_prefill`'s rows."""
    errs = [r["predicted error"] for r in rows]
    pre = [r["predicted error"] for r in prefill]
    lat = max(r["expert-call latency per step (ms)"] for r in rows)
    comp = sum(r["predicted compute (ms)"] / r["predicted step (ms)"] for r in rows) / len(rows)
    word = "under" if max(errs) < 0 else "over" if min(errs) > 0 else "on both sides of"
    above = min(r["model / measured"] for r in rows) >= 1 and min(r["bound / measured"] for r in prefill) >= 1
    return (f"Predicted, not fitted: with the efficiencies fitted to one-node K3 runs, the predictor lands "
            f"{word} every multi-node decode figure ({100 * min(errs):+.0f}% to {100 * max(errs):+.0f}% in tokens/s "
            f"per GPU) and every prefill figure ({100 * min(pre):+.0f}% to {100 * max(pre):+.0f}%), while the bound "
            + ("stays above them" if above else "falls BELOW one of them") + f". Its steps are {100 * comp:.0f}% compute on average: the fit charges FLOPs at the bf16 "
            "peak times the share the K3 engines reach, where these FP8 engines multiply at the FP8 peak, and it adds "
            "the expert dispatch to the step where these systems overlap two micro-batches. DeepEP's per-call "
            f"latency adds {lat:.1f} ms per step.")


class PublishedPrefill(NamedTuple):
    label: str
    serving: Serving  # the prefill pool; context = the prompt length
    measured_input_tokens_per_s_per_gpu: float  # every input token the source counts
    computed_share: float  # of those, the share the pool computed (1 - prompt-cache hits)
    source: str


PUBLISHED_PREFILL: tuple[PublishedPrefill, ...] = (
    PublishedPrefill("DeepSeek-V3/R1 online service, H800 prefill (EP32, 4 nodes)",
                     Serving("deepseek-v3", "H800", 32, 32, 1, FP8, 4096), 73_700 / 8, 1 - 0.563,
                     "DeepSeek, open-infra-index day 6 (deepseek-ai/open-infra-index @ 56d86855): '~73.7k tokens/s "
                     "input (including cache hits) during prefilling' per H800 node, '342B tokens (56.3%) hit the "
                     "on-disk KV cache'; prefill EP32 over 4 nodes. Prompt length not given: 4,096 assumed (DeepSeek's "
                     "profile, as LMSYS's table gives it, whose 'DeepSeek Blog (excl. cache hit)' column is 32,206)"),
    PublishedPrefill("DeepSeek-V3 on SGLang, 4 x 8 H100 prefill (EP32), 2K prompts",
                     Serving("deepseek-v3", "H100 SXM", 32, 32, 1, FP8, 2048), 54_543 / 8, 1.0,
                     "LMSYS / SGLang team (lm-sys/lm-sys.github.io blog/2025-05-05-large-scale-ep.md @ 2db4e404): "
                     "'On 4 nodes (4x8xH100, EP32), the system achieved per-node throughputs of 57,674, 54,543, and "
                     "50,302 tokens per second for prompt lengths of 1K, 2K, and 4K'; 16,384 tokens per device"),
)


def validate_prefill() -> list[dict]:
    """Each published prefill pool: the bound (step.prefill_step) and the prediction (one forward of a chunk through
    predict.prefill_forward_s with fit.FITTED), against the tokens it computed (cache hits cost no forward)."""
    rows = []
    for p in PUBLISHED_PREFILL:
        s, e = p.serving, FITTED.efficiency
        bound, k = prefill_step(s), terms(s)
        chunk = bound.chunk_tokens * s.tp  # one TP group's forward over a chunk per GPU
        predicted = chunk / prefill_forward_s(k, e, chunk) / s.tp
        computed = p.measured_input_tokens_per_s_per_gpu * p.computed_share
        rows.append({"deployment": p.label, "measured input tokens/s / GPU": p.measured_input_tokens_per_s_per_gpu,
                     "computed share": p.computed_share, "measured computed tokens/s / GPU": computed,
                     "bound tokens/s / GPU": bound.tokens_per_s_per_gpu, "bound by": bound.bound,
                     "bound / measured": bound.tokens_per_s_per_gpu / computed,
                     "predicted tokens/s / GPU": predicted, "predicted error": predicted / computed - 1,
                     "prompt tokens": s.context, "EP across the NIC": k.step.wire_latency_s > 0, "source": p.source})
    return rows


# vLLM's K3 post: one B300 node, TP8, 8K in / 1K out, DSpark speculation of 8 tokens, MXFP4 experts (the release);
# its table lives with the other published K3 runs (measured.py)
K3_RELEASE_FORMAT = RELEASED  # the frontier's name for the released formats


DSPARK = Speculation()  # the post's drafter: 8 tokens, the cited acceptance (k3lite.analytic.serving's defaults)


def vllm_k3_serving(spec: Speculation | None = DSPARK) -> Serving:
    """The post's deployment in this model: 8 B300, TP8 (experts split 8 ways, as EP 8 holds the same bytes per
    GPU), the release's formats, the average context over the 1,000 output tokens."""
    return Serving(K3_PRESET, "B300", 8, 8, 8, FRONTIER_FORMATS[K3_RELEASE_FORMAT],
                   VLLM_K3_INPUT + VLLM_K3_OUTPUT // 2, spec=spec)


def validate_vllm_k3(spec: Speculation | None = DSPARK) -> list[dict]:
    """The bound against each published concurrency: the node's output tokens/s (batch per GPU = concurrency / 8:
    TP8 spreads each sequence over the 8 GPUs) and each user's decode speed, derived from the post's latency and
    TTFT as output tokens / (latency - TTFT)."""
    s = vllm_k3_serving(spec)
    rows = []
    for m in VLLM_K3:
        st = decode_step(s, m.concurrency / s.n_gpus)
        per_user = VLLM_K3_OUTPUT / (m.latency_s - m.ttft_s)
        rows.append({"concurrency": m.concurrency, "measured tokens/s (node)": m.output_tokens_per_s,
                     "model tokens/s (node)": st.tokens_per_s_per_gpu * s.n_gpus,
                     "model / measured": st.tokens_per_s_per_gpu * s.n_gpus / m.output_tokens_per_s,
                     "measured tokens/s / user (derived)": per_user, "model tokens/s / user": st.tokens_per_s_per_user,
                     "prefill share of the measured time": m.ttft_s / m.latency_s,
                     "model step (ms)": 1e3 * st.step_s, "model bound by": st.bound})
    return rows


def vllm_k3_sentence(rows: list[dict], acceptance: float) -> str:
    """How far above vLLM's K3 figures the bound lands and why, from `validate_vllm_k3`'s rows."""
    lo, hi = min(r["model / measured"] for r in rows), max(r["model / measured"] for r in rows)
    one = rows[0]
    measured_step = 1e3 * acceptance / one["measured tokens/s / user (derived)"]  # ms per verification step
    share = [100 * r["prefill share of the measured time"] for r in rows]
    return (f"K3 itself, against vLLM's K3 post: with DSpark drafting {DSPARK_DRAFT_TOKENS} tokens and {acceptance:.1f} "
            f"kept per step, the bound lands {lo:.2f}x to {hi:.2f}x the measured node throughput, "
            + ("never below" if lo >= 1 else "BELOW a measurement: vLLM's drafter must keep over "
               f"{acceptance:.1f} tokens per step")
            + f" (the bound holds at one user for any acceptance above "
            f"{one['measured tokens/s / user (derived)'] * one['model step (ms)'] / 1e3:.2f} tokens per step)."
            + f" Why above: the measured time includes prefill (the first token is {min(share):.0f}-{max(share):.0f}% of "
            f"each request's latency); at {one['concurrency']} user the measured "
            f"{one['measured tokens/s / user (derived)']:.0f} tokens/s at {acceptance:.1f} tokens per step means "
            f"{measured_step:.1f} ms per verification step, {measured_step / one['model step (ms)']:.1f}x the bound's "
            f"{one['model step (ms)']:.1f} ms: the bound reads HBM at peak with no kernel overhead, and counts no TP8 "
            f"all-reduce latency ({get_preset(K3_PRESET).n_layers} layers per step) and no launch gaps. The acceptance "
            f"is an input (the post reports none). Source: {VLLM_K3_SOURCE}.")


