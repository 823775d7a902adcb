"""Estimate before you allocate: refuse a live model build that would not fit the server's memory budget.

`check_budget(cfg, batch, seq_len)` counts the parameters by building the real `K3Model`'s modules on
PyTorch's meta device (`k3lite.analytic.params.count_params`: shapes only, no memory) and estimates activation
memory from the config with the formula in `activation_bytes()`. Above the budget it raises `ValueError`
that names the numbers and the nearest setting that *does* fit (largest seq_len / batch, or fewest layers /
experts to drop), so a page shows it with `user_errors()` as a readable st.error.
Budget: `K3LITE_MEMORY_BUDGET_MB` (default 1024 MB, a small server's share for one live model).

The other resource rules (thread caps, the heavy-work slot, time bounds) are in k3lite/base/guards.py.
No Streamlit import here (k3lite/ never imports it).
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

from k3lite.model.config import K3Config
from k3lite.base.guards import env_number
from k3lite.analytic.params import build_meta_model, count_params

MB = 1024 * 1024
DEFAULT_BUDGET_MB = 1024
KDA_CHUNK = 64  # chunk length of the chunk-wise KDA kernel (intra-chunk matrices are C x C)


def budget_bytes_from_env() -> int:
    """The memory budget for one live model: env K3LITE_MEMORY_BUDGET_MB (megabytes), default 1024."""
    return int(env_number("K3LITE_MEMORY_BUDGET_MB", DEFAULT_BUDGET_MB, "megabytes") * MB)


class Estimate(NamedTuple):
    """What a live build would take, in bytes (fp32 unless `dtype_bytes` says otherwise)."""

    params: int  # parameter count, from the real modules on the meta device
    param_bytes: int  # weights (+ grads + Adam moments when training)
    activation_bytes: int  # peak live activations of one forward (+ saved for backward when training)
    total_bytes: int
    budget_bytes: int

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.budget_bytes

    def describe(self) -> str:
        return (f"{self.params:,} parameters = {self.param_bytes / MB:,.1f} MB, activations "
                f"{self.activation_bytes / MB:,.1f} MB, total {self.total_bytes / MB:,.1f} MB "
                f"(budget {self.budget_bytes / MB:,.0f} MB)")


@functools.lru_cache(maxsize=256)
def _report(cfg: K3Config):
    return count_params(cfg)


def _param_count(cfg: K3Config) -> int:
    return _report(cfg).total


def activation_bytes(cfg: K3Config, batch: int, seq_len: int, *, dtype_bytes: int = 4,
                     training: bool = False, trace: bool = True) -> int:
    """Peak activation memory of one forward pass, estimated from the config (an upper-bound style sum).

    With N = batch x seq_len tokens, d = d_model, b = dtype_bytes:
      kept residual sources   N d b x S, S = 2 (standard), 2L + 1 (full AttnRes), ceil(2L / block) + 2 (block)
      + the largest one-layer transient (one layer is live at a time in inference):
          MLA: q, k, v (N H (2 qk + v)), latent N r_kv, scores and softmax 2 B H T^2, output N H v
          KDA: q, k, v, g (4 N H K), beta, intra-chunk 2 N H C (C = 64), chunk states B H ceil(T/C) K V
          MoE: scores 2 N E, dispatch in/out 2 N k l, expert hidden 3 N k f, shared 3 N s f_s
          dense FFN: 3 N f_dense
      + logits and log-probs 2 N V
      + the Trace (if recorded): router scores N E per MoE layer, decay gates N H K per KDA layer
    Training keeps every layer's transient for backward: the per-layer term is multiplied by L.
    """
    if batch < 1 or seq_len < 1:
        raise ValueError(f"batch and seq_len must be >= 1, got batch={batch}, seq_len={seq_len}")
    n = batch * seq_len
    d, L = cfg.d_model, cfg.n_layers
    if cfg.attn_res == "standard":
        sources = 2
    elif cfg.attn_res == "full":
        sources = 2 * L + 1
    else:
        sources = math.ceil(2 * L / cfg.attn_res_block_size) + 2
    kept = n * d * sources

    m = cfg.mla
    mla = (n * m.n_heads * (2 * m.qk_head_dim + m.v_head_dim) + n * m.kv_lora_rank
           + 2 * batch * m.n_heads * seq_len * seq_len + n * m.n_heads * m.v_head_dim)
    kda = 0
    if cfg.kda is not None:
        h, k = cfg.kda.n_heads, cfg.kda.head_dim
        chunks = math.ceil(seq_len / KDA_CHUNK)
        kda = 4 * n * h * k + n * h + 2 * n * h * KDA_CHUNK + batch * h * chunks * k * k
    e = cfg.moe
    latent = e.latent_dim or d
    moe = (2 * n * e.n_routed_experts + 2 * n * e.top_k * latent + 3 * n * e.top_k * e.expert_ffn_dim
           + 3 * n * e.n_shared_experts * e.one_shared_ffn_dim)
    dense = 3 * n * cfg.dense_ffn_dim
    types = cfg.layer_types()
    mixer = max(mla if "mla" in types else 0, kda if "kda" in types else 0)
    ffn = max(moe if "moe" in cfg.ffn_types() else 0, dense if cfg.first_k_dense else 0)
    per_layer = mixer + ffn
    transient = per_layer * L if training else per_layer
    logits = 2 * n * cfg.vocab_size
    recorded = 0
    if trace:
        recorded = (n * e.n_routed_experts * cfg.ffn_types().count("moe")
                    + (n * cfg.kda.n_heads * cfg.kda.head_dim * types.count("kda") if cfg.kda else 0))
    return int((kept + transient + logits + recorded) * dtype_bytes)


def estimate(cfg: K3Config, batch: int, seq_len: int, budget_bytes: int | None = None, *,
             dtype_bytes: int = 4, training: bool = False, trace: bool = True) -> Estimate:
    """Parameters (counted on the meta device) and activation memory of a live build; never allocates."""
    budget = budget_bytes_from_env() if budget_bytes is None else int(budget_bytes)
    if budget <= 0:
        raise ValueError(f"budget_bytes must be > 0, got {budget}")
    params = _param_count(cfg)
    per_param = dtype_bytes * (4 if training else 1)  # weights (+ grad + 2 Adam moments)
    param_bytes = params * per_param
    act = activation_bytes(cfg, batch, seq_len, dtype_bytes=dtype_bytes, training=training, trace=trace)
    return Estimate(params, param_bytes, act, param_bytes + act, budget)


def _largest_fitting(lo: int, hi: int, fits) -> int | None:
    """Largest x in [lo, hi] with fits(x) (fits monotone: true then false), or None."""
    if not fits(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _suggest_layers(cfg: K3Config, room_bytes: int, per_param: int) -> int | None:
    """Most layers (a valid config) whose parameters fit in room_bytes, counting each layer kind once."""
    model = build_meta_model(cfg)
    per_kind: dict[tuple[str, str], int] = {}
    for layer in model.layers:
        per_kind.setdefault((layer.mixer_type, layer.ffn_type), sum(p.numel() for p in layer.parameters()))
    outside = sum(p.numel() for p in model.parameters()) - sum(p.numel() for p in model.layers.parameters())
    for n_layers in range(cfg.n_layers - 1, 0, -1):
        try:
            smaller = cfg.with_(n_layers=n_layers, first_k_dense=min(cfg.first_k_dense, n_layers),
                                attn_res_block_size=min(cfg.attn_res_block_size, 2 * n_layers))
        except ValueError:
            continue
        kinds = list(zip(smaller.layer_types(), smaller.ffn_types()))
        if any(kind not in per_kind for kind in kinds):
            total = _param_count(smaller)  # a layer kind the big model lacks: count it for real
        else:
            total = outside + sum(per_kind[kind] for kind in kinds)
        if total * per_param <= room_bytes:
            return n_layers
    return None


def check_budget(cfg: K3Config, batch: int, seq_len: int, budget_bytes: int | None = None, *,
                 dtype_bytes: int = 4, training: bool = False, trace: bool = True) -> Estimate:
    """Return the Estimate if the build fits the budget; otherwise raise ValueError saying what to change.

    The message names the estimate, the budget, and the nearest allowed setting: the largest seq_len and
    batch that fit (when activations are the problem) or the most layers / routed experts that fit (when
    the weights alone are too big).
    """
    est = estimate(cfg, batch, seq_len, budget_bytes, dtype_bytes=dtype_bytes, training=training, trace=trace)
    if est.fits:
        return est
    kw = dict(dtype_bytes=dtype_bytes, training=training, trace=trace)
    room = est.budget_bytes - est.param_bytes
    if room > 0:  # the weights fit: shrink the run
        def fits_t(t):
            return activation_bytes(cfg, batch, t, **kw) <= room

        def fits_b(b):
            return activation_bytes(cfg, b, seq_len, **kw) <= room

        hints = []
        best_t = _largest_fitting(1, seq_len, fits_t)
        if best_t is not None:
            hints.append(f"seq_len <= {best_t} at batch {batch}")
        best_b = _largest_fitting(1, batch, fits_b) if batch > 1 else None
        if best_b is not None:
            hints.append(f"batch <= {best_b} at seq_len {seq_len}")
        hint = " or ".join(hints) if hints else "batch 1 with a shorter sequence"
        raise ValueError(
            f"this run would need about {est.total_bytes / MB:,.0f} MB ({est.describe()}), above the "
            f"server's memory budget of {est.budget_bytes / MB:,.0f} MB; nearest setting that fits: {hint}"
        )
    per_param = est.param_bytes // max(est.params, 1)
    act_min = activation_bytes(cfg, 1, 1, **kw)
    hints = []
    report = _report(cfg)
    vocab_params = report.by_component["embedding"] + report.by_component["lm_head"]
    if vocab_params * per_param < est.budget_bytes - act_min:  # otherwise no layer count can fit
        layers = _suggest_layers(cfg, est.budget_bytes - act_min, per_param)
        if layers is not None:
            hints.append(f"n_layers <= {layers}")
    e = cfg.moe
    per_expert = (report.by_component["routed_experts"] + report.by_component["router"]) / e.n_routed_experts
    if per_expert > 0:
        room_experts = (est.budget_bytes - act_min) / per_param - (est.params - per_expert * e.n_routed_experts)
        max_e = int(room_experts // per_expert)
        max_e -= max_e % e.n_groups
        if max_e >= max(e.top_k, e.n_groups):
            hints.append(f"n_routed_experts <= {max_e}")
    hint = " or ".join(hints) if hints else "a smaller preset (e.g. 'lite')"
    raise ValueError(
        f"a live build of {cfg.name!r} would need {est.param_bytes / MB:,.0f} MB for its "
        f"{est.params:,} parameters alone ({est.describe()}), above the server's memory budget of "
        f"{est.budget_bytes / MB:,.0f} MB; nearest setting that fits: {hint}. "
        f"(Parameter counts of big configs need no memory: they are counted on the meta device.)"
    )
