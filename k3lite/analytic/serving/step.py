"""The serving physics of one deployment (formulas in the package docstring): where the weights go and how many
sequences fit, the bytes on the wire, one decode step (with speculation), a prefill pool, and curves over batch."""
from __future__ import annotations

import math
from typing import NamedTuple

from k3lite.analytic import decode, memory
from k3lite.base.units import fmt_capacity
from k3lite.model.config import K3Config
from k3lite.analytic.hardware import get_gpu
from k3lite.analytic.serving.deployment import CACHE_FORMATS, Serving, Speculation
from k3lite.interconnect import Topology
from k3lite.interconnect import wire_bytes_per_token as interconnect_wire_bytes
from k3lite.interconnect.deepep import nic_share_normal, nic_terms


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
    per_seq = cache_bytes_per_sequence(cfg, s.context, s.tp, s.dcp, s.cache)
    free = gpu.hbm_bytes - weights
    return Placement(weights, per_gpu, gpu.hbm_bytes, free, math.ceil(sum(w.values()) / gpu.hbm_bytes),
                     per_seq, max(0, int(free // per_seq)) if free > 0 else 0)


def mla_cache_share(cfg: K3Config, cache: str = "bf16") -> float:
    """The MLA latent cache's bytes in format `cache` over its bf16 bytes (deployment.CACHE_FORMATS)."""
    latent, rope = cfg.mla.kv_lora_rank, cfg.mla.qk_rope_head_dim
    return CACHE_FORMATS[cache](latent, rope) / CACHE_FORMATS["bf16"](latent, rope)


def cache_bytes_per_sequence(cfg: K3Config, context: int, tp: int = 1, dcp: int = 1, cache: str = "bf16") -> float:
    """One GPU's cache bytes per unit of batch per GPU B (B x tp sequences share a TP group): each GPU keeps the
    whole MLA latent of all B x tp sequences (one latent head cannot be split by heads), or 1/dcp of it under decode
    context parallelism, and 1/tp of each one's KDA state (split by heads), B x KDA state in all."""
    cache_mla = memory.sequence_cache_bytes(cfg, context)
    return tp * cache_mla.mla * mla_cache_share(cfg, cache) / dcp + cache_mla.kda


def _fits(s: Serving) -> bool:
    try:
        return placement(s).free_hbm_bytes_per_gpu > 0
    except ValueError:
        return False


def overflow_advice(s: Serving, p: Placement) -> str:
    """Which weight term overflows one GPU's HBM and which knobs would make it fit: the routed experts (1/EP of
    them per GPU: more EP helps) or the non-expert weights (attention, shared experts, embeddings: 1/TP of them,
    replicated on every GPU of a data-parallel group, so EP cannot help; more TP or a smaller format can)."""
    gb, hbm = 1e9, p.hbm_bytes
    experts = p.by_component.get("routed_experts", 0.0)
    rest = p.weight_bytes_per_gpu - experts
    head = (f"{s.name} does not fit: {p.weight_bytes_per_gpu / gb:,.1f} GB of weights per GPU exceed one {s.gpu}'s "
            f"{fmt_capacity(hbm)} ({hbm / gb:.0f} GB): the routed experts take {experts / gb:,.1f} GB (1/{s.ep} of "
            f"them, EP {s.ep}) and the non-expert weights {rest / gb:,.1f} GB (attention, shared experts and "
            f"embeddings: {'all' if s.tp == 1 else f'1/{s.tp}'} of them at TP {s.tp}, replicated on every GPU of each data-parallel group). ")
    fixes = []
    if rest >= hbm:
        head += "The non-expert weights alone overflow, so no EP can fix it. "
    else:
        ep = next((e for e in range(s.ep + 1, s.cfg.moe.n_routed_experts + 1)
                   if _fits(s.with_(ep=e, n_gpus=e * s.tp // math.gcd(e, s.tp)))), None)
        if ep is not None:
            fixes.append(f"EP >= {ep} (the experts over more GPUs)")
    domain = get_gpu(s.gpu).nvlink_domain  # a TP group stays in one NVLink domain (deployment.check_tp)
    tp = next((t for t in (2, 4, 8, 16, 32, 64) if s.tp < t <= domain and _fits(
        s.with_(tp=t, n_gpus=max(s.n_gpus, t) * t // math.gcd(max(s.n_gpus, t), t)))), None)
    if tp is not None:
        fixes.append(f"TP >= {tp} (the non-expert weights split over {tp} GPUs)")
    rest_formats = {c: f for c, f in s.weights.items() if c != "routed_experts"}
    for fmt in ("fp8", "nvfp4"):
        smaller = memory.PRECISIONS[fmt].bytes_per_param < min(memory.PRECISIONS[f].bytes_per_param
                                                                for f in rest_formats.values())
        if smaller and _fits(s.with_(weights={**s.weights, **{c: fmt for c in rest_formats}})):
            fixes.append(f"the non-expert weights stored as {fmt}")
            break
    if not fixes:  # no one knob: the least EP with each TP
        both = next(((t, e) for t in (2, 4, 8) if s.tp < t <= domain for e in range(s.ep + 1, s.cfg.moe.n_routed_experts + 1)
                     if _fits(s.with_(tp=t, ep=e, n_gpus=e * t // math.gcd(e, t)))), None)
        if both is not None:
            fixes.append(f"TP {both[0]} and EP >= {both[1]} together")
    experts_fmt = s.weights.get("routed_experts")
    if not fixes and experts_fmt and memory.PRECISIONS[experts_fmt].bytes_per_param > 0.6:
        fixes.append("a 4-bit format for the experts")
    return (head + ("It fits with " + ", or ".join(fixes) + ". " if fixes else "")
            + f"At these formats the weights alone need at least {p.min_gpus_for_weights} {s.gpu} GPUs.")


def check_fits(s: Serving, batch: int | None = None) -> Placement:
    """Placement, or ValueError saying which term does not fit and which knob would fix it (called before
    anything is computed)."""
    p = placement(s)
    gb = 1e9
    if p.free_hbm_bytes_per_gpu <= 0:
        raise ValueError(overflow_advice(s, p))
    if p.max_batch_per_gpu < 1:
        raise ValueError(f"not one sequence of {s.context:,} tokens fits: its cache needs "
                         f"{p.cache_bytes_per_sequence / gb:,.1f} GB per GPU, {p.free_hbm_bytes_per_gpu / gb:,.1f} GB "
                         "are free after the weights: a shorter context, more EP or TP (fewer weight bytes per GPU) "
                         "or a smaller weight format frees HBM")
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
            fit(cache_bytes_per_sequence(cfg, n, s.tp, s.dcp, s.cache)) for n in contexts]
    out["all layers MLA"] = [fit(cache_bytes_per_sequence(all_mla, n, s.tp, s.dcp, s.cache)) for n in contexts]
    # GQA splits by KV heads: 1/tp of each of the B x tp sequences, B whole caches per GPU
    out["all layers GQA (8 KV heads x 128)"] = [fit(memory.gqa_sequence_cache_bytes(cfg, n)) for n in contexts]
    return out


# ------------------------------------------------------------------------------------------ the wire
def _wire(cfg: K3Config, s: Serving):
    """The interconnect's WireBytes for `s` and whether its EP group spans more than one NVLink domain."""
    gpu = get_gpu(s.gpu)
    g = min(gpu.nvlink_domain, s.ep)
    if s.ep > g and s.ep % g:  # e.g. EP 12 on 8-GPU nodes: the model needs whole domains, so count 4-GPU ones
        g = math.gcd(s.ep, g)  # (fewer NVLink peers than the real layout: slightly more inter-node bytes)
    topo = Topology(s.gpu, s.ep, g, gpu.nvlink_bw, gpu.nic_bw, gpu.source)
    return interconnect_wire_bytes(cfg, topo, s.ep, s.scheme, dispatch=s.dispatch, combine=s.combine), s.ep > g


def wire_bytes_per_token(cfg: K3Config, s: Serving) -> tuple[float, float]:
    """(intra-domain, inter-domain) bytes one token sends and receives per MoE layer for dispatch + combine.

    The ONE adapter to k3lite.interconnect: everything in this module that needs wire bytes calls this."""
    wb, _ = _wire(cfg, s)
    return wb.intra, wb.inter


class WireTime(NamedTuple):
    per_token_s: float  # dispatch + combine over all MoE layers, per token
    per_forward_s: float  # the calls' fixed latency over all MoE layers, per forward pass (0 inside one domain)


def wire_time(cfg: K3Config, s: Serving) -> WireTime:
    """Dispatch + combine time of one forward pass, from DeepEP's published figures (interconnect.deepep.nic_terms):
    inside one NVLink domain, the bytes at the NVLink peak (unchanged: the one-node runs fit it). Across domains each
    call sends on NVLink and the NIC at once, max(intra / NVLink, inter / (share x NIC peak)), with the share DeepEP's
    kernels achieve (low-latency for decode, normal for prefill), plus a fixed latency per call: dispatch + combine
    per MoE layer per forward (H800 + CX7 InfiniBand; other NICs are assumed to behave alike)."""
    gpu = get_gpu(s.gpu)
    wb, crosses = _wire(cfg, s)
    n_moe = cfg.ffn_types().count("moe")
    if not crosses:
        return WireTime(n_moe * (wb.intra / gpu.nvlink_bw + wb.inter / gpu.nic_bw), 0.0)
    nic = nic_terms()
    if s.scheme == "normal":
        share = nic_share_normal(s.ep)
        shares = (share, share)
    else:
        shares = (nic.dispatch_nic_share, nic.combine_nic_share)
    per_layer = sum(max(intra / gpu.nvlink_bw, inter / (share * gpu.nic_bw)) for intra, inter, share in (
        (wb.dispatch_intra, wb.dispatch_inter, shares[0]), (wb.combine_intra, wb.combine_inter, shares[1])))
    return WireTime(n_moe * per_layer, n_moe * (nic.dispatch_latency_s + nic.combine_latency_s))


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
    wire_latency_s: float = 0.0  # dispatch + combine calls' fixed latency per forward pass (EP across domains)


class TokenFlops(NamedTuple):
    """FLOPs one token costs at a context: the ONE count every compute term here and in predict.py reads."""

    experts: float  # 2 x the routed-expert parameters a token uses
    other: float  # 2 x every other parameter a token uses (attention projections, shared experts, dense FFN, head)
    attention: float  # the attention core over the context (decode.attention_flops; prefill_attention_flops)

    @property
    def total(self) -> float:
        return self.experts + self.other + self.attention


def token_flops(cfg: K3Config, context: int, prefill: bool = False) -> TokenFlops:
    """One token's FLOPs at `context`: decode's absorbed MLA, or (prefill=True) prefill's un-absorbed MLA."""
    params = memory.component_params(cfg, active=True)
    attention = decode.prefill_attention_flops if prefill else decode.attention_flops
    return TokenFlops(2.0 * params["routed_experts"], 2.0 * (sum(params.values()) - params["routed_experts"]),
                      attention(cfg, context))


def step_terms(s: Serving) -> StepTerms:
    """The batch-independent terms of `decode_step` (placement checked: refuses what does not fit)."""
    cfg, gpu = s.cfg, get_gpu(s.gpu)
    p = check_fits(s)
    moe = cfg.moe
    total = memory.weight_bytes(cfg, s.weights)
    active = memory.weight_bytes(cfg, s.weights, active=True)
    rest = sum(v for c, v in active.items() if c != "routed_experts") / s.tp
    f = token_flops(cfg, s.context)
    # expert matmuls at the experts' format peak, other matmuls at attention's, attention core in bf16
    compute = (f.experts / gpu.peak_flops(s.weights.get("routed_experts", "bf16"))
               + f.other / gpu.peak_flops(s.weights.get("attention", "bf16")) + f.attention / gpu.bf16_flops)
    wire = wire_time(cfg, s)
    return StepTerms(p.max_batch_per_gpu, p.weight_bytes_per_gpu, p.cache_bytes_per_sequence, rest, total["routed_experts"] / s.ep,
                     moe.n_routed_experts, moe.top_k, s.ep, compute, wire.per_token_s, gpu.hbm_bw, gpu.bf16_flops,
                     s.overlap, s.price, cfg.n_layers, s.tp, s.spec, wire.per_forward_s)


def forward_bytes(t: StepTerms, batch: float, tokens_per_seq: int) -> float:
    """HBM bytes one GPU reads in a forward step over `tokens_per_seq` tokens of each of `batch` sequences per GPU:
    the non-routed weights, the hosted experts the step's tokens touch, every cached byte once."""
    n_tok = batch * tokens_per_seq
    # each hosted expert is hit with probability 1 - (1 - k/E)^(tokens reaching one copy of the experts)
    return (t.rest_bytes + t.routed_bytes * memory.touched_share(t.n_experts, t.top_k, n_tok * t.ep)
            + batch * t.cache_bytes_per_sequence)


def _verify(t: StepTerms, batch: float, tokens_per_seq: int) -> tuple[float, float, float, float, float, str]:
    """One forward step over `tokens_per_seq` tokens of each of `batch` sequences per GPU:
    (HBM bytes, HBM s, compute s, wire s, step s, bound)."""
    n_tok = batch * tokens_per_seq
    hbm = forward_bytes(t, batch, tokens_per_seq)
    t_hbm, compute = hbm / t.hbm_bw, n_tok * t.compute_s_per_token
    wire = n_tok * t.wire_s_per_token + t.wire_latency_s
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


PREFILL_CHUNK_TOKENS = 16384  # tokens per GPU per prefill forward: OUR reading of vLLM's default
#   max_num_batched_tokens for the high-memory GPU tier, from vLLM's K3 post (2026-09-13), which points to a vLLM pull
#   request we could not open to verify; SGLang's chunked_prefill_size for >= 160 GiB GPUs is the same 16,384
PREFILL_CHUNK_SOURCE = ("our reading: vLLM's max_num_batched_tokens for the high-memory tier as vLLM's K3 post "
                        "(2026-09-13) cites it from a pull request we could not verify; SGLang's chunked_prefill_size "
                        "for GPUs with >= 160 GiB is also 16,384")


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
    f = token_flops(cfg, max(1, s.context // 2), prefill=True)
    compute = (f.experts / gpu.peak_flops(s.weights.get("routed_experts", "bf16"))
               + f.other / gpu.peak_flops(s.weights.get("attention", "bf16")) + f.attention / gpu.bf16_flops)
    w = wire_time(cfg, s.with_(scheme="normal"))
    wire = w.per_token_s + w.per_forward_s / chunk_tokens  # the calls' latency shared by a chunk's tokens
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
