"""From architecture to price: where the weights go, how many sequences fit, how long a decode step takes,
and what a million output tokens cost to produce. A roofline model: an upper bound on throughput.

Layout (what DeepSeek's and SGLang's deployments do, arXiv 2412.19437 §3.4 and lmsys.org/blog/2025-05-05):
    n_gpus GPUs serve one model replica. Routed experts are split over `ep` of them (replicated n_gpus / ep
    times); everything else (attention, shared experts, dense FFN, embeddings, head) is split over `tp` GPUs
    and replicated over dp = n_gpus / tp data-parallel attention groups. MLA's one latent head cannot be
    split by heads, so each TP rank keeps the whole latent cache of its group's sequences; a KDA state splits
    by heads.
Per GPU, with B = batch per GPU (sequences per DP group / tp) and N = context:
    weights     routed / ep + rest / tp, each component at its storage format (k3lite.memory.weight_bytes)
    cache       B x (tp x MLA latent(N) + KDA state)             (k3lite.memory.sequence_cache_bytes)
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
Prefill (compute-bound estimate): FLOPs per input token = 2 x active + attention over the N/2 average
earlier tokens, at peak: $ per M input tokens from the same $/GPU-hour.
Not modelled (each makes real systems slower than this bound): kernel efficiency, expert load imbalance,
launch latency, activation memory, speculative decoding (MTP would make real systems *faster* per step).

Default weights: as K3 ships them (memory.RELEASED_K3_FORMATS: MXFP4 routed experts, bf16 everything else).

CLI: python -m k3lite.serving --preset kimi-k3 --gpu B300 --gpus 64 --ep 64 --weights bf16 --experts mxfp4 --context 32768 --json
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from k3lite import memory
from k3lite.config import PRESETS, K3Config, get_preset
from k3lite.hardware import GPUS, get_gpu
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

    preset: str | K3Config = "kimi-k3"  # a preset name, or a config (the waterfall's variants)
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

    def __post_init__(self) -> None:
        if not isinstance(self.preset, K3Config) and self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {self.preset!r}")
        get_gpu(self.gpu)
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
                "scheme": self.scheme}


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
    per GPU. Byte counts from k3lite.memory (the hybrid page's functions)."""
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
    batch_per_gpu: int
    hbm_bytes: float  # read per step per GPU
    hbm_s: float
    compute_s: float
    wire_s: float
    step_s: float
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    usd_per_m_output_tokens: float
    bound: str  # which term sets the step time


def _attention_flops(cfg: K3Config, context: int) -> float:
    """Per token per decode step: MLA absorbed decode (scores 2H N (R+Dr) + latent mix 2H N R) + KDA ~6 H K V."""
    types = cfg.layer_types()
    m = cfg.mla
    f = types.count("mla") * 2 * m.n_heads * context * (2 * m.kv_lora_rank + m.qk_rope_head_dim)
    if cfg.kda is not None:
        f += types.count("kda") * 6 * cfg.kda.n_heads * cfg.kda.head_dim ** 2
    return float(f)


def decode_step(s: Serving, batch: int) -> Step:
    cfg, gpu = s.cfg, get_gpu(s.gpu)
    p = check_fits(s, batch)
    moe = cfg.moe
    n_moe = cfg.ffn_types().count("moe")
    total = memory.weight_bytes(cfg, s.weights)
    active = memory.weight_bytes(cfg, s.weights, active=True)
    # HBM: the shard of every non-routed weight a token uses, the hosted experts the step touches, the cache
    hit = 1.0 - (1.0 - moe.top_k / moe.n_routed_experts) ** (batch * s.ep)
    experts = total["routed_experts"] / s.ep * hit
    rest = sum(v for c, v in active.items() if c != "routed_experts") / s.tp
    cache = batch * p.cache_bytes_per_sequence
    hbm = rest + experts + cache
    # compute: expert matmuls at the experts' format peak, other matmuls at attention's, attention core in bf16
    params = memory.component_params(cfg, active=True)
    expert_f = 2 * params["routed_experts"] / gpu.peak_flops(s.weights.get("routed_experts", "bf16"))
    other_f = 2 * (sum(params.values()) - params["routed_experts"]) / gpu.peak_flops(s.weights.get("attention", "bf16"))
    compute = batch * (expert_f + other_f + _attention_flops(cfg, s.context) / gpu.bf16_flops)
    intra, inter = wire_bytes_per_token(cfg, s)
    wire = batch * n_moe * (intra / gpu.nvlink_bw + inter / gpu.nic_bw)
    t_hbm = hbm / gpu.hbm_bw
    step = max(t_hbm, compute, wire) if s.overlap else max(t_hbm, compute) + wire
    terms = {"HBM": t_hbm, "compute": compute, "wire": wire}
    bound = max(terms, key=terms.get) if s.overlap else ("wire" if wire > max(t_hbm, compute) else max(
        ("HBM", t_hbm), ("compute", compute), key=lambda kv: kv[1])[0])
    tps = batch / step
    return Step(batch, hbm, t_hbm, compute, wire, step, tps, 1.0 / step, s.price / 3600 / tps * 1e6, bound)


def prefill_usd_per_m_input(s: Serving) -> float:
    """Compute-bound prefill estimate: $ per M input tokens at peak FLOPs (a lower bound on the cost)."""
    cfg, gpu = s.cfg, get_gpu(s.gpu)
    params = memory.component_params(cfg, active=True)
    t = (2 * params["routed_experts"] / gpu.peak_flops(s.weights.get("routed_experts", "bf16"))
         + 2 * (sum(params.values()) - params["routed_experts"]) / gpu.peak_flops(s.weights.get("attention", "bf16"))
         + _attention_flops(cfg, max(1, s.context // 2)) / gpu.bf16_flops)
    return s.price / 3600 * t * 1e6


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


def pareto(s: Serving, points: int = 24) -> list[Step]:
    """Throughput (tokens/s per GPU) vs interactivity (tokens/s per user) over batch 1 .. max batch (log-spaced)."""
    top = check_fits(s).max_batch_per_gpu
    batches = sorted({max(1, round(top ** (i / (points - 1)))) for i in range(points)})
    return [decode_step(s, b) for b in batches]


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
    ap = argparse.ArgumentParser(prog="python -m k3lite.serving", description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="kimi-k3", help=f"one of {sorted(PRESETS)}")
    ap.add_argument("--gpu", default="B300", help=f"one of {list(GPUS)}")
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
