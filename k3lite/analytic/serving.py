"""From architecture to price: where the weights go, how many sequences fit, how long a decode step takes,
and what a million output tokens cost to produce. A roofline model: an upper bound on throughput.

Layout (what DeepSeek's and SGLang's deployments do, arXiv 2412.19437 §3.4 and lmsys.org/blog/2025-05-05):
    n_gpus GPUs serve one model replica. Routed experts are split over `ep` of them (replicated n_gpus / ep
    times); everything else (attention, shared experts, dense FFN, embeddings, head) is split over `tp` GPUs
    and replicated over dp = n_gpus / tp data-parallel attention groups. MLA's one latent head cannot be
    split by heads, so each TP rank keeps the whole latent cache of its group's sequences; a KDA state splits
    by heads.
Per GPU, with B = batch per GPU (sequences per DP group / tp) and N = context:
    weights     routed / ep + rest / tp, each component at its storage format (k3lite.analytic.memory.weight_bytes)
    cache       B x (tp x MLA latent(N) + KDA state)             (k3lite.analytic.memory.sequence_cache_bytes)
    max batch   the largest B with weights + cache <= HBM (activations and workspace are not modelled: a bound)
One decode step (every sequence emits one token):
    HBM reads   non-routed active weights / tp + the experts this GPU hosts that the step touches: each of
                its E/ep experts per MoE layer is hit with probability 1 - (1 - k/E)^(B x ep) (the B x ep tokens
                that reach one copy of the experts) + the cache above
    compute     B x (2 x active params + attention FLOPs(N)) at the dense peak of each part's format
    wire        B x MoE layers x (intra bytes / NVLink + inter bytes / NIC), bytes per token from
                k3lite.interconnect.wire_bytes_per_token through one adapter here; default scheme DeepEP
                low-latency (what DeepSeek and SGLang decode with: one message per (token, selected expert))
    step time   max(HBM, compute) + wire (no overlap) or max(HBM, compute, wire) (full overlap: DeepSeek and
                SGLang overlap two micro-batches)
    tokens/s per GPU = B / step; per user = 1 / step; $ per M output tokens = $/GPU-hour / 3600 / (tokens/s) x 1e6
Speculative decoding (`Speculation`): the step verifies d + 1 tokens of each sequence (compute, wire and the
expert hits see B (d + 1) tokens; the cache is read once), a drafter adds its time (an MTP layer: one layer of the
model per drafted token; a draft model: its bf16 weights once per step, its FLOPs per drafted token), and each
sequence keeps `acceptance` tokens: tokens/s per user = acceptance / step.
Prefill (`prefill_step`), a pool of its own as DeepSeek and SGLang deploy it: per input token, compute = 2 x active
+ attention over the N/2 average earlier tokens at peak, wire = DeepEP normal-kernel bytes, HBM = this GPU's weights
once per chunk; the max of them (overlap): $ per M input tokens from the same $/GPU-hour.
Not modelled (each makes real systems slower than this bound): kernel efficiency, expert load imbalance,
launch and collective latency, activation memory.

Default weights: as K3 ships them (memory.RELEASED_K3_FORMATS: MXFP4 routed experts, bf16 everything else).

CLI: python -m k3lite.analytic.serving --preset kimi-k3 --gpu B300 --gpus 64 --ep 64 --weights bf16 --experts mxfp4 --context 32768 --json
     python -m k3lite.analytic.serving frontier --preset kimi-k3 --context 32768 [--gpus B300 GB300] --json
"""
from __future__ import annotations

import argparse
import json
import math
import runpy
import sys
from pathlib import Path
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from k3lite.analytic import decode, memory
from k3lite.model.config import PRESETS, K3Config, get_preset
from k3lite.analytic.hardware import GPUS, get_gpu, gpu_name
from k3lite.interconnect import Topology, check_scheme
from k3lite.interconnect import wire_bytes_per_token as interconnect_wire_bytes

# $ per GPU-hour defaults (editable on the page)
USD_PER_GPU_HOUR: dict[str, tuple[float, str]] = {
    "H800": (2.0, "DeepSeek's inference-system overview (open-infra-index, day 6): 'leasing cost of one H800 GPU is $2 per hour'"),
    "H200": (2.3, "LMSYS/Mooncake Kimi K2 deployment blog (2025-07-17): 'H200 $2.3 / hour'"),
    "H100 SXM": (2.0, "assumed equal to DeepSeek's H800 figure (no cited H100 rate)"),
    "B200": (3.5, "assumed (no cited B200 rate)"),
    "B300": (4.5, "assumed (no cited B300 rate)"),
    "GB300 NVL72": (5.0, "assumed (no cited GB300 rate)"),
}
# 4-bit shorthands of the CLI; "fp4" = NVFP4 (Blackwell's native 4-bit, smallest scale overhead of the FP4 pair)
FORMAT_ALIASES = {"fp4": "nvfp4", "bf16": "bf16", "fp8": "fp8", "nvfp4": "nvfp4", "mxfp4": "mxfp4", "int4": "int4"}
MIN_TOKENS_PER_USER = 20.0  # DeepSeek's reported average output speed was 20-22 tokens/s (day-6 overview)
K3_PRESET = "kimi-k3"  # the one name of the K3 preset in this module (pages and CLIs default to it)


# ------------------------------------------------------------------------------------------ speculation
# Does the released checkpoint ship a multi-token-prediction (MTP) layer the server can draft with?
MTP_LAYERS: dict[str, tuple[int, str]] = {
    "deepseek-v3": (1, ("DeepSeek-V3 report (arXiv 2412.19437 §2.2): one MTP module (the 14B of the 685B checkpoint "
                        "not counted in 671B); §5.4.3: the second token is accepted 85-90% of the time, 1.8x TPS")),
    "kimi-k2": (0, ("no MTP weights released with Kimi K2 (its config.json's num_nextn_predict_layers is 0 as we "
                    "read it; not verified against a stored copy here); servers draft with a separate model")),
    K3_PRESET: (0, ("Kimi K3's released config.json (HF revision f831ab66): num_nextn_predict_layers 0, no MTP "
                    "layer; vLLM serves it with a separate DSpark draft model (vLLM blog, 2026-09-13)")),
    "kimi-linear-48b-a3b": (0, "none released with the Kimi Linear checkpoint (not verified)"),
    "lite": (0, "k3lite's toy model: no MTP layer"),
}
# vLLM's K3 post serves with a DSpark draft of 8 tokens (vLLM blog 2026-09-13, `num_speculative_tokens: 8`); it
# does not report the acceptance. The one K3 DSpark acceptance we found: Inferact/Kimi-K3-DSpark-Block5 model
# card, 8 x B300 TP8, temperature 1.0: 3.305 tokens per verification step aggregated over 1,604 requests.
DSPARK_DRAFT_TOKENS = 8
DSPARK_ACCEPTANCE = 3.3
DSPARK_DRAFT_PARAMS = 2.7e9  # Inferact/Kimi-K3.1-Pro-DSpark-preview card: 5 dense layers, 2.7B parameters, bf16
SPEC_SOURCE = ("draft length 8: vLLM's K3 post (2026-09-13, DSpark, num_speculative_tokens 8); acceptance 3.3 tokens "
               "per step: Inferact/Kimi-K3-DSpark-Block5 card (aggregate 3.305 over 1,604 requests, 8 x B300 TP8, "
               "temperature 1.0; a 5-token block, as the vLLM post reports no acceptance); drafter 2.7B bf16 params "
               "(Inferact/Kimi-K3.1-Pro-DSpark-preview card), one forward pass per block")


def has_mtp(preset: str | K3Config) -> bool:
    """Whether the preset's released checkpoint ships an MTP layer (a config not in the table: no)."""
    name = preset.name if isinstance(preset, K3Config) else preset
    return MTP_LAYERS.get(name, (0, ""))[0] > 0


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding: a drafter proposes `draft_tokens` tokens, the model verifies all of them (and one
    more) in one step, and on average `acceptance` tokens per sequence survive (1 = nothing accepted, the bonus
    token only; draft_tokens + 1 = everything accepted).

    drafter "mtp": the model's own MTP layer, run once per drafted token (DeepSeek-V3's scheme): each pass costs
        one more layer of the model, 1 / n_layers of a plain decode step at the same batch.
    drafter "draft-model": a separate small model (vLLM's DSpark drafts a whole block in one forward pass):
        its `draft_params` bf16 weights are read once per step and it computes 2 x params FLOPs per drafted token.
    """

    draft_tokens: int = DSPARK_DRAFT_TOKENS
    acceptance: float = DSPARK_ACCEPTANCE
    drafter: str = "draft-model"
    draft_params: float = DSPARK_DRAFT_PARAMS

    def __post_init__(self) -> None:
        if not isinstance(self.draft_tokens, int) or not 1 <= self.draft_tokens <= 32:
            raise ValueError(f"draft_tokens must be an integer in 1..32, got {self.draft_tokens!r}")
        if not 1.0 <= self.acceptance <= self.draft_tokens + 1:
            raise ValueError(f"acceptance (tokens per verification step) must be in [1, draft_tokens + 1 = "
                             f"{self.draft_tokens + 1}], got {self.acceptance}")
        if self.drafter not in ("mtp", "draft-model"):
            raise ValueError(f"drafter must be 'mtp' or 'draft-model', got {self.drafter!r}")
        if not 0 <= self.draft_params <= 1e12:
            raise ValueError(f"draft_params must be in [0, 1e12], got {self.draft_params}")


def precision_map(weights: str | dict[str, str]) -> dict[str, str]:
    """{component: storage format} from one name (all components) or a partial dict (rest bf16)."""
    if isinstance(weights, str):
        weights = {c: weights for c in memory.WEIGHT_COMPONENTS if c != "other"}
    out = {}
    for comp, fmt in weights.items():
        if fmt not in FORMAT_ALIASES:
            raise ValueError(f"weight format must be one of {list(FORMAT_ALIASES)}, got {fmt!r} for {comp}")
        out[comp] = FORMAT_ALIASES[fmt]
    return out


@dataclass(frozen=True)
class Serving:
    """One deployment to evaluate (validated; nothing large is built)."""

    preset: str | K3Config = K3_PRESET  # a preset name, or a config (the waterfall's variants)
    gpu: str = "B300"
    n_gpus: int = 64
    ep: int = 64
    tp: int = 1
    weights: dict = field(default_factory=lambda: dict(memory.RELEASED_K3_FORMATS))  # as K3 ships
    context: int = 32768
    overlap: bool = True
    usd_per_gpu_hour: float | None = None  # None = the GPU's default above
    dispatch: str = "fp8"
    combine: str = "bf16"
    scheme: str = "low-latency"  # DeepEP's decode kernels: one message per (token, selected expert)
    spec: Speculation | None = None  # speculative decoding (None: one token per sequence per step)

    def __post_init__(self) -> None:
        if not isinstance(self.preset, K3Config) and self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {self.preset!r}")
        object.__setattr__(self, "gpu", gpu_name(self.gpu))  # "H100" -> "H100 SXM" (frozen: set once, here)
        for name in ("n_gpus", "ep", "tp"):
            v = getattr(self, name)
            if not isinstance(v, int) or not 1 <= v <= 4096:
                raise ValueError(f"{name} must be an integer in 1..4096, got {v!r}")
        if self.n_gpus % self.ep or self.n_gpus % self.tp:
            raise ValueError(f"n_gpus ({self.n_gpus}) must be a multiple of ep ({self.ep}) and of tp ({self.tp})")
        if self.ep > self.cfg.moe.n_routed_experts:
            raise ValueError(f"ep ({self.ep}) must be <= the preset's {self.cfg.moe.n_routed_experts} routed experts")
        if not 1 <= self.context <= 10_000_000:
            raise ValueError(f"context must be 1..10,000,000 tokens, got {self.context}")
        if self.usd_per_gpu_hour is not None and not (0 < self.usd_per_gpu_hour < 1000):
            raise ValueError(f"$ per GPU-hour must be in (0, 1000), got {self.usd_per_gpu_hour}")
        object.__setattr__(self, "weights", precision_map(self.weights))
        check_scheme(self.scheme)
        if self.spec is not None and self.spec.drafter == "mtp" and not has_mtp(self.cfg):
            raise ValueError(f"{self.name} ships no MTP layer ({MTP_LAYERS.get(self.name, (0, 'not in the table'))[1]}): "
                             "speculate with drafter='draft-model'")

    @property
    def cfg(self) -> K3Config:
        return self.preset if isinstance(self.preset, K3Config) else get_preset(self.preset)

    @property
    def name(self) -> str:
        return self.cfg.name

    @property
    def price(self) -> float:
        return self.usd_per_gpu_hour if self.usd_per_gpu_hour is not None else USD_PER_GPU_HOUR[self.gpu][0]

    def with_(self, **changes) -> "Serving":
        return replace(self, **changes)

    def inputs(self) -> dict:
        """The inputs as plain JSON values (the CLI echoes them)."""
        return {"preset": self.name, "gpu": self.gpu, "n_gpus": self.n_gpus, "ep": self.ep, "tp": self.tp,
                "weights": dict(self.weights), "context": self.context, "overlap": self.overlap,
                "usd_per_gpu_hour": self.price, "dispatch": self.dispatch, "combine": self.combine,
                "scheme": self.scheme,
                "spec": None if self.spec is None else {"draft_tokens": self.spec.draft_tokens,
                                                        "acceptance": self.spec.acceptance,
                                                        "drafter": self.spec.drafter,
                                                        "draft_params": self.spec.draft_params}}


# ------------------------------------------------------------------------------------------ placement
class Placement(NamedTuple):
    weight_bytes_per_gpu: float
    by_component: dict  # bytes per GPU per component
    hbm_bytes: float
    free_hbm_bytes_per_gpu: float  # for cache and activations (negative: does not fit)
    min_gpus_for_weights: int  # GPUs of this kind whose HBM holds all weights at these formats (no cache)
    cache_bytes_per_sequence: float  # on one GPU (MLA latent replicated over tp, KDA state split)
    max_batch_per_gpu: int


def placement(s: Serving) -> Placement:
    cfg, gpu = s.cfg, get_gpu(s.gpu)
    w = memory.weight_bytes(cfg, s.weights)
    per_gpu = {c: v / (s.ep if c == "routed_experts" else s.tp) for c, v in w.items()}
    weights = sum(per_gpu.values())
    cache = memory.sequence_cache_bytes(cfg, s.context)
    per_seq = s.tp * cache.mla + cache.kda / s.tp
    free = gpu.hbm_bytes - weights
    return Placement(weights, per_gpu, gpu.hbm_bytes, free, math.ceil(sum(w.values()) / gpu.hbm_bytes),
                     per_seq, max(0, int(free // per_seq)) if free > 0 else 0)


def check_fits(s: Serving, batch: int | None = None) -> Placement:
    """Placement, or ValueError saying what does not fit and what would (called before anything is computed)."""
    p = placement(s)
    gb = 1e9
    if p.free_hbm_bytes_per_gpu <= 0:
        raise ValueError(
            f"{s.name} does not fit: {p.weight_bytes_per_gpu / gb:,.0f} GB of weights per GPU (ep {s.ep}, tp {s.tp}) "
            f"exceed one {s.gpu}'s {p.hbm_bytes / gb:.0f} GB of HBM. At these formats the weights alone need at least "
            f"{p.min_gpus_for_weights} {s.gpu} GPUs; raise ep / tp or use a smaller format.")
    if p.max_batch_per_gpu < 1:
        raise ValueError(f"not one sequence of {s.context:,} tokens fits: its cache needs "
                         f"{p.cache_bytes_per_sequence / gb:,.1f} GB per GPU, {p.free_hbm_bytes_per_gpu / gb:,.1f} GB are free")
    if batch is not None and batch > p.max_batch_per_gpu:
        raise ValueError(f"batch {batch} per GPU does not fit at {s.context:,} tokens: at most {p.max_batch_per_gpu} "
                         f"({p.free_hbm_bytes_per_gpu / gb:,.1f} GB free / {p.cache_bytes_per_sequence / gb:,.2f} GB per sequence)")
    return p


def capacity(s: Serving, contexts) -> dict[str, list[int]]:
    """Concurrent sequences per GPU against context: the config's own pattern (KDA:MLA), the same model with every
    layer MLA, and a plain-GQA cache of the same depth (8 KV heads x 128, bf16), with this deployment's weights
    per GPU. Byte counts from k3lite.analytic.memory (the hybrid page's functions)."""
    cfg = s.cfg
    free = placement(s).free_hbm_bytes_per_gpu
    all_mla = cfg.with_(kda_ratio=(0, 1))
    n_kda = cfg.layer_types().count("kda")

    def fit(per_seq: float) -> int:
        return max(0, int(free // per_seq)) if free > 0 else 0

    out = {}
    if n_kda:
        out[f"{cfg.kda_ratio[0]}:{cfg.kda_ratio[1]} KDA:MLA (this model)"] = [
            fit(s.tp * (c := memory.sequence_cache_bytes(cfg, n)).mla + c.kda / s.tp) for n in contexts]
    out["all layers MLA"] = [fit(s.tp * memory.sequence_cache_bytes(all_mla, n).mla) for n in contexts]
    out["all layers GQA (8 KV heads x 128)"] = [fit(memory.gqa_sequence_cache_bytes(cfg, n) / s.tp) for n in contexts]
    return out


# ------------------------------------------------------------------------------------------ the wire
def wire_bytes_per_token(cfg: K3Config, s: Serving) -> tuple[float, float]:
    """(intra-domain, inter-domain) bytes one token sends and receives per MoE layer for dispatch + combine.

    The ONE adapter to k3lite.interconnect: everything in this module that needs wire bytes calls this."""
    gpu = get_gpu(s.gpu)
    g = min(gpu.nvlink_domain, s.ep)
    if s.ep > g and s.ep % g:  # e.g. EP 12 on 8-GPU nodes: the model needs whole domains, so count 4-GPU ones
        g = math.gcd(s.ep, g)  # (fewer NVLink peers than the real layout: slightly more inter-node bytes)
    topo = Topology(s.gpu, s.ep, g, gpu.nvlink_bw, gpu.nic_bw, gpu.source)
    wb = interconnect_wire_bytes(cfg, topo, s.ep, s.scheme, dispatch=s.dispatch, combine=s.combine)
    return wb.intra, wb.inter


# ------------------------------------------------------------------------------------------ one decode step
class Step(NamedTuple):
    batch_per_gpu: float  # sequences per GPU (fractional when TP spreads fewer sequences than GPUs)
    hbm_bytes: float  # read per step per GPU
    hbm_s: float
    compute_s: float
    wire_s: float
    step_s: float  # the verification step + the drafter's time
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    usd_per_m_output_tokens: float
    bound: str  # which term sets the step time
    draft_s: float = 0.0  # the drafter's time per step (speculative decoding)
    tokens_per_step: float = 1.0  # tokens each sequence emits per step (the acceptance with speculation)


class StepTerms(NamedTuple):
    """What one decode step costs that does not depend on the batch: computed once per deployment, so a curve
    over batch sizes (the Pareto curve, the frontier) costs a few float operations per point."""

    max_batch_per_gpu: int
    weight_bytes_per_gpu: float
    cache_bytes_per_sequence: float
    rest_bytes: float  # the shard of every non-routed weight a token uses, per GPU
    routed_bytes: float  # the routed experts this GPU hosts
    n_experts: int  # routed experts per MoE layer (E)
    top_k: int  # experts per token (k)
    ep: int
    compute_s_per_token: float  # matmuls at their format's peak + attention over the context in bf16
    wire_s_per_token: float  # dispatch + combine over all MoE layers, NVLink and NIC
    hbm_bw: float
    bf16_flops: float
    overlap: bool
    usd_per_gpu_hour: float
    n_layers: int
    tp: int
    spec: Speculation | None


def step_terms(s: Serving) -> StepTerms:
    """The batch-independent terms of `decode_step` (placement checked: refuses what does not fit)."""
    cfg, gpu = s.cfg, get_gpu(s.gpu)
    p = check_fits(s)
    moe = cfg.moe
    n_moe = cfg.ffn_types().count("moe")
    total = memory.weight_bytes(cfg, s.weights)
    active = memory.weight_bytes(cfg, s.weights, active=True)
    rest = sum(v for c, v in active.items() if c != "routed_experts") / s.tp
    params = memory.component_params(cfg, active=True)
    # expert matmuls at the experts' format peak, other matmuls at attention's, attention core in bf16
    expert_f = 2 * params["routed_experts"] / gpu.peak_flops(s.weights.get("routed_experts", "bf16"))
    other_f = 2 * (sum(params.values()) - params["routed_experts"]) / gpu.peak_flops(s.weights.get("attention", "bf16"))
    compute = expert_f + other_f + decode.attention_flops(cfg, s.context) / gpu.bf16_flops
    intra, inter = wire_bytes_per_token(cfg, s)
    wire = n_moe * (intra / gpu.nvlink_bw + inter / gpu.nic_bw)
    return StepTerms(p.max_batch_per_gpu, p.weight_bytes_per_gpu, p.cache_bytes_per_sequence, rest, total["routed_experts"] / s.ep,
                     moe.n_routed_experts, moe.top_k, s.ep, compute, wire, gpu.hbm_bw, gpu.bf16_flops,
                     s.overlap, s.price, cfg.n_layers, s.tp, s.spec)


def _verify(t: StepTerms, batch: float, tokens_per_seq: int) -> tuple[float, float, float, float, float, str]:
    """One forward step over `tokens_per_seq` tokens of each of `batch` sequences per GPU:
    (HBM bytes, HBM s, compute s, wire s, step s, bound)."""
    n_tok = batch * tokens_per_seq
    # each hosted expert is hit with probability 1 - (1 - k/E)^(tokens reaching one copy of the experts)
    hbm = (t.rest_bytes + t.routed_bytes * memory.touched_share(t.n_experts, t.top_k, n_tok * t.ep)
           + batch * t.cache_bytes_per_sequence)
    t_hbm, compute, wire = hbm / t.hbm_bw, n_tok * t.compute_s_per_token, n_tok * t.wire_s_per_token
    step, bound = decode.roofline(t_hbm, compute, wire, t.overlap)
    return hbm, t_hbm, compute, wire, step, bound


def step_at(t: StepTerms, batch: float) -> Step:
    """`decode_step` from precomputed terms (the batch is not checked here: `decode_step` checks it)."""
    sp = t.spec
    hbm, t_hbm, compute, wire, verify, bound = _verify(t, batch, 1 if sp is None else sp.draft_tokens + 1)
    draft, emitted = 0.0, 1.0
    if sp is not None:
        emitted = sp.acceptance
        if sp.drafter == "mtp":  # one extra layer of the model per drafted token, run one after another
            draft = sp.draft_tokens * _verify(t, batch, 1)[4] / t.n_layers
        else:  # a separate drafter: its weights read once per step (split over tp), its FLOPs per drafted token
            draft = max(2.0 * sp.draft_params / t.tp / t.hbm_bw,
                        batch * sp.draft_tokens * 2.0 * sp.draft_params / t.bf16_flops)
    step = verify + draft
    tps = batch * emitted / step
    return Step(batch, hbm, t_hbm, compute, wire, step, tps, emitted / step, t.usd_per_gpu_hour / 3600 / tps * 1e6,
                bound, draft, emitted)


def decode_step(s: Serving, batch: float) -> Step:
    """One decode step at `batch` sequences per GPU (the formulas in the module docstring)."""
    check_fits(s, batch)
    return step_at(step_terms(s), batch)


PREFILL_CHUNK_TOKENS = 16384  # tokens per GPU per prefill forward: vLLM's default max_num_batched_tokens for the
#                               high-memory GPU tier (vLLM's K3 post, 2026-09-13, PR #51726)


class Prefill(NamedTuple):
    """A prefill pool (its own GPUs, EP size and chunk), per input token on one GPU."""

    chunk_tokens: int  # tokens per GPU per forward
    compute_s: float  # per token: 2 x active params + attention over the N/2 average earlier tokens, at peak
    wire_s: float  # per token: dispatch + combine with DeepEP's normal (prefill) kernels
    hbm_s: float  # per token: this GPU's weights read once per chunk
    s_per_token: float
    tokens_per_s_per_gpu: float
    usd_per_m_input_tokens: float
    bound: str


def prefill_step(s: Serving, chunk_tokens: int = PREFILL_CHUNK_TOKENS) -> Prefill:
    """Prefill as DeepSeek and SGLang run it, on its own pool: compute- and wire-bound, weights amortised over a
    chunk. The wire uses DeepEP's normal kernels (one copy per remote node, then NVLink), whatever `s.scheme` says:
    those are the kernels prefill runs. Overlap as `s.overlap` (max of the terms, or compute + wire)."""
    if not isinstance(chunk_tokens, int) or not 1 <= chunk_tokens <= 1_000_000:
        raise ValueError(f"chunk_tokens must be an integer in 1..1,000,000, got {chunk_tokens!r}")
    cfg, gpu = s.cfg, get_gpu(s.gpu)
    p = check_fits(s)
    params = memory.component_params(cfg, active=True)
    compute = (2 * params["routed_experts"] / gpu.peak_flops(s.weights.get("routed_experts", "bf16"))
               + 2 * (sum(params.values()) - params["routed_experts"]) / gpu.peak_flops(s.weights.get("attention", "bf16"))
               + decode.attention_flops(cfg, max(1, s.context // 2)) / gpu.bf16_flops)
    intra, inter = wire_bytes_per_token(cfg, s.with_(scheme="normal"))
    wire = cfg.ffn_types().count("moe") * (intra / gpu.nvlink_bw + inter / gpu.nic_bw)
    hbm = p.weight_bytes_per_gpu / chunk_tokens / gpu.hbm_bw
    per_token = max(compute, wire, hbm) if s.overlap else max(compute, hbm) + wire
    terms = {"compute": compute, "wire": wire, "HBM": hbm}
    return Prefill(chunk_tokens, compute, wire, hbm, per_token, 1.0 / per_token, s.price / 3600 * per_token * 1e6,
                   max(terms, key=terms.get))


def prefill_usd_per_m_input(s: Serving) -> float:
    """$ per M input tokens of a prefill pool laid out like `s` (`prefill_step`): a lower bound on the cost."""
    return prefill_step(s).usd_per_m_input_tokens


def best_batch(s: Serving, min_tokens_per_user: float = 0.0) -> int:
    """The largest batch per GPU that fits in HBM (and, if asked, keeps every user at >= min tokens/s)."""
    top = check_fits(s).max_batch_per_gpu
    if min_tokens_per_user <= 0 or decode_step(s, top).tokens_per_s_per_user >= min_tokens_per_user:
        return top
    lo, hi = 1, top  # per-user speed falls with batch: bisect for the last batch that keeps it
    if decode_step(s, 1).tokens_per_s_per_user < min_tokens_per_user:
        return 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if decode_step(s, mid).tokens_per_s_per_user >= min_tokens_per_user else (lo, mid - 1)
    return lo


def curve_batches(top: int, points: int = 24) -> list[int]:
    """Batch sizes 1 .. top, log-spaced, without repeats (every curve over batch size uses these)."""
    if top < 1 or points < 2:
        raise ValueError(f"need top >= 1 and points >= 2, got {top}, {points}")
    return sorted({max(1, round(top ** (i / (points - 1)))) for i in range(points)})


def pareto(s: Serving, points: int = 24) -> list[Step]:
    """Throughput (tokens/s per GPU) vs interactivity (tokens/s per user) over batch 1 .. max batch (log-spaced)."""
    t = step_terms(s)
    return [step_at(t, b) for b in curve_batches(t.max_batch_per_gpu, points)]


def report(s: Serving, batch: int | None = None) -> dict:
    """Everything the CLI prints and the page shows, with the inputs echoed."""
    p = check_fits(s, batch)
    b = batch if batch is not None else p.max_batch_per_gpu
    st = decode_step(s, b)
    return {
        "inputs": {**s.inputs(), "batch": batch},
        "weight_bytes_per_gpu": p.weight_bytes_per_gpu,
        "free_hbm_bytes_per_gpu": p.free_hbm_bytes_per_gpu,
        "min_gpus_for_weights": p.min_gpus_for_weights,
        "cache_bytes_per_sequence": p.cache_bytes_per_sequence,
        "max_batch_per_gpu": p.max_batch_per_gpu,
        "batch_per_gpu": b,
        "step_time_s": st.step_s,
        "hbm_s": st.hbm_s, "compute_s": st.compute_s, "wire_s": st.wire_s, "bound": st.bound,
        "tokens_per_s_per_gpu": st.tokens_per_s_per_gpu,
        "tokens_per_s_per_user": st.tokens_per_s_per_user,
        "usd_per_m_output_tokens": st.usd_per_m_output_tokens,
        "usd_per_m_input_tokens_prefill": prefill_usd_per_m_input(s),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["frontier"]:  # python -m k3lite.analytic.serving frontier ...: the envelope over GPUs
        # k3lite.analytic.serving_frontier builds on this module; running it by name (as `python -m` would) keeps the
        # import graph one-way. Its `main` reads sys.argv, so hand it the arguments after "frontier".
        saved = sys.argv
        sys.argv = ["python -m k3lite.analytic.serving frontier", *argv[1:]]
        try:
            runpy.run_path(str(Path(__file__).with_name("serving_frontier.py")), run_name="__main__")
        except SystemExit as e:
            return int(e.code or 0)
        finally:
            sys.argv = saved
        return 0
    ap = argparse.ArgumentParser(prog="python -m k3lite.analytic.serving", description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--preset", default=K3_PRESET, help=f"one of {sorted(PRESETS)}")
    ap.add_argument("--gpu", default="B300", help=f"one of {list(GPUS)}; short names (H100, GB300) accepted")
    ap.add_argument("--gpus", type=int, default=64, help="GPUs serving one replica")
    ap.add_argument("--ep", type=int, default=None, help="expert-parallel size (default: --gpus)")
    ap.add_argument("--tp", type=int, default=1, help="tensor-parallel size of attention/dense parts")
    ap.add_argument("--weights", default="bf16", help=f"storage format of all weights: {list(FORMAT_ALIASES)} "
                    "(default bf16, as K3 ships everything but its routed experts)")
    ap.add_argument("--experts", default="mxfp4", help="storage format of the routed experts (default mxfp4, as K3 "
                    "ships them; 'same' = as --weights)")
    ap.add_argument("--context", type=int, default=32768, help="tokens of context per sequence")
    ap.add_argument("--batch", type=int, default=None, help="sequences per GPU (default: the most that fit)")
    ap.add_argument("--no-overlap", action="store_true", help="communication does not overlap compute")
    ap.add_argument("--scheme", default="low-latency", help="dispatch scheme: direct, normal or low-latency")
    ap.add_argument("--usd-per-gpu-hour", type=float, default=None)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args(argv)
    try:
        weights = precision_map(a.weights)
        if a.experts and a.experts != "same":
            weights["routed_experts"] = precision_map({"routed_experts": a.experts})["routed_experts"]
        s = Serving(a.preset, a.gpu, a.gpus, a.ep or a.gpus, a.tp, weights, a.context, not a.no_overlap,
                    a.usd_per_gpu_hour, scheme=a.scheme)
        if a.batch is not None and a.batch < 1:
            raise ValueError(f"--batch must be >= 1, got {a.batch}")
        r = report(s, a.batch)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(r, indent=2))
        return 0
    print(f"{s.name} on {s.n_gpus} x {s.gpu} (ep {s.ep}, tp {s.tp}), context {s.context:,}:")
    print(f"  weights {r['weight_bytes_per_gpu'] / 1e9:.1f} GB/GPU, free {r['free_hbm_bytes_per_gpu'] / 1e9:.1f} GB, "
          f"max batch {r['max_batch_per_gpu']}/GPU; at batch {r['batch_per_gpu']}: step {1e3 * r['step_time_s']:.1f} ms "
          f"({r['bound']}-bound), {r['tokens_per_s_per_gpu']:,.0f} tok/s/GPU, {r['tokens_per_s_per_user']:.1f} tok/s/user, "
          f"${r['usd_per_m_output_tokens']:.3f} per M output tokens")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
