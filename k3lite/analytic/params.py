"""Parameter counts from the real modules, instantiated on the meta device (no memory used).

Convention for "active" (what one token's forward pass multiplies with): every non-routed weight
counts fully, including the LM head; routed experts count top_k / E; the input embedding does NOT
count, because a token only looks up one row of it (no matmul). With tied embeddings the table is
the LM head too, so then it counts. Applied identically to every preset. (DeepSeek-V3's weights
README counts the embedding in: "36.7B activated including 0.9B embedding and 0.9B head"; labs differ.)

CLI:  python -m k3lite.analytic.params --preset NAME [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch.overrides import TorchFunctionMode

from k3lite.model.config import K3Config
from k3lite.model.presets import PRESETS, get_preset
from k3lite.model.stack import DenseTransformer, K3Model, Layer

COMPONENTS = (
    "embedding", "lm_head", "attention_kda", "attention_mla", "dense_ffn", "routed_experts",
    "shared_experts", "latent_proj", "router", "attn_res", "norms",
)


def _component(name: str) -> str:
    """Which bucket a parameter (by its dotted name in K3Model) belongs to."""
    parts = name.split(".")
    if parts[0] == "embed":
        return "embedding"
    if parts[0] == "lm_head":
        return "lm_head"
    if parts[0] in ("norm",):
        return "norms"
    if parts[0] == "res_final":
        return "attn_res"
    # layers.<i>.<sub>...
    sub = parts[2]
    if sub in ("attn_norm", "ffn_norm"):
        return "norms"
    if sub in ("res_mixer", "res_ffn"):
        return "attn_res"
    if sub == "mixer":
        return "mixer"  # resolved by the caller (kda or mla)
    if sub == "ffn":
        what = parts[3]
        if what == "experts":
            return "routed_experts"
        if what == "shared":
            return "shared_experts"
        if what == "router":
            return "router"
        if what in ("down_proj", "up_proj", "latent_norm"):
            return "latent_proj"
        return "dense_ffn"  # w_gate / w_up / w_down of a dense SwiGLU
    raise ValueError(f"unclassified parameter {name}")


@dataclass
class ParamReport:
    name: str
    total: int
    active: int
    by_component: dict[str, int]
    active_by_component: dict[str, int]

    @property
    def activation_ratio(self) -> float:
        return self.active / self.total

    def to_dict(self) -> dict:
        return {
            "preset": self.name,
            "total": self.total,
            "active": self.active,
            "activation_ratio": self.activation_ratio,
            "by_component": self.by_component,
            "active_by_component": self.active_by_component,
        }


class _NoInitOnMeta(TorchFunctionMode):
    """Skip `torch.nn.init.*` and in-place random fills on meta tensors: they have no data to fill, yet each
    call runs torch's Python reference path (about 1 s of K3's 1.5 s build). Shapes are unchanged."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__name__", "") in _INIT_FUNCS:
            tensor = args[0] if args else kwargs.get("tensor")
            if isinstance(tensor, torch.Tensor) and tensor.is_meta:
                return tensor
        return func(*args, **kwargs)


_INIT_FUNCS = frozenset({"normal_", "uniform_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_",
                         "xavier_uniform_", "xavier_normal_", "orthogonal_", "zeros_", "ones_", "constant_",
                         "zero_", "fill_"})


def active_with_embedding(report: ParamReport) -> int:
    """Active parameters counting the input-embedding table in (the convention of DeepSeek-V3's weights README:
    "36.7B activated, including 0.9B embedding and 0.9B output head"); our own convention leaves it out."""
    return report.active + report.by_component["embedding"] - report.active_by_component["embedding"]


def build_meta_model(cfg: K3Config) -> K3Model:
    """The whole `K3Model(cfg)` on the meta device (shapes only, no memory, no init)."""
    with torch.device("meta"), _NoInitOnMeta():
        return K3Model(cfg)


def _smallest_like(cfg: K3Config) -> K3Config | None:
    """A valid config with cfg's outside-the-layers settings (vocab, d_model, ties, AttnRes) and few layers."""
    for n_layers in range(1, min(cfg.n_layers, 16) + 1):
        try:
            return cfg.with_(n_layers=n_layers, first_k_dense=min(cfg.first_k_dense, n_layers),
                             attn_res_block_size=min(cfg.attn_res_block_size, 2 * n_layers))
        except ValueError:
            continue
    return None


def _meta_parameters(cfg: K3Config) -> list[tuple[str, int, int]]:
    """(dotted name in K3Model, numel, how many times it occurs) for every parameter of K3Model(cfg).

    A Layer is built from the config and its (mixer, ffn) kind only, so layers of one kind are the same
    modules: one of each kind is built and counted once per layer of that kind (K3: 93 layers, 4 kinds),
    and the parameters outside the layers come from a small K3Model with the same outside settings.
    `count_params(cfg, whole_model=True)` builds everything; a test checks that both agree."""
    small = _smallest_like(cfg)
    if small is None:
        return [(name, p.numel(), 1) for name, p in build_meta_model(cfg).named_parameters()]
    first: dict[tuple[str, str], int] = {}
    count: dict[tuple[str, str], int] = {}
    for i, kind in enumerate(zip(cfg.layer_types(), cfg.ffn_types())):
        first.setdefault(kind, i)
        count[kind] = count.get(kind, 0) + 1
    with torch.device("meta"), _NoInitOnMeta():
        outside = [(name, p.numel(), 1) for name, p in K3Model(small).named_parameters()
                   if not name.startswith("layers.")]
        layers = [(f"layers.{i}.{name}", p.numel(), count[kind]) for kind, i in first.items()
                  for name, p in Layer(cfg, i).named_parameters()]
    return outside + layers


def count_params(cfg: K3Config, *, whole_model: bool = False) -> ParamReport:
    """Instantiate K3Model(cfg)'s modules on the meta device and bucket every parameter.

    whole_model=False (default) builds one layer of each kind (see `_meta_parameters`: 20x faster for K3,
    which the home page pays on every change); True builds the whole model (the reference)."""
    if whole_model:
        params = [(name, p.numel(), 1) for name, p in build_meta_model(cfg).named_parameters()]
    else:
        params = _meta_parameters(cfg)
    mixer_of = cfg.layer_types()
    total = dict.fromkeys(COMPONENTS, 0)
    for name, numel, times in params:  # tied weights are yielded once
        comp = _component(name)
        if comp == "mixer":
            comp = "attention_" + mixer_of[int(name.split(".")[1])]
        total[comp] += numel * times
    active = {comp: round(n * active_share(comp, cfg)) for comp, n in total.items()}
    return ParamReport(cfg.name, sum(total.values()), sum(active.values()), total, active)


# The "active" convention in words, for pages and CLIs that explain it (the rule itself is `active_share`).
ACTIVE_RULE = (
    "**Active** = what one token multiplies with: all attention, router, shared-expert, dense-FFN and LM-head "
    "weights, plus top-k / E of the routed experts. The input embedding is *not* counted as active: a token "
    "only looks up one row of it (DeepSeek's own README counts it in; labs differ). With tied embeddings "
    "the table doubles as the LM head, and then it counts."
)


def active_share(component: str, cfg: K3Config) -> float:
    """The fraction of a component's parameters one token uses: the one home of the "active" rule."""
    if component == "routed_experts":
        return cfg.moe.activation_ratio  # top_k / E (config.routed_fraction)
    if component == "embedding" and not cfg.tie_embeddings:
        return 0.0  # a lookup, not a matmul (see module docstring)
    return 1.0


def params_by_layer(cfg: K3Config) -> tuple[list[dict[str, tuple[int, int]]], dict[str, tuple[int, int]]]:
    """Per layer {component: (total, active)}, and the same for what sits outside the layers (embedding,
    head, final norm and depth mix). Same modules as `count_params` (one layer of each kind, `_meta_parameters`);
    totals sum to its totals, active ones up to rounding (one per bucket). The architecture map shows them."""
    kinds = list(zip(cfg.layer_types(), cfg.ffn_types()))
    built: dict[int, dict[str, int]] = {}
    outside: dict[str, int] = {}
    for name, numel, _ in _meta_parameters(cfg):
        comp = _component(name)
        if name.startswith("layers."):
            i = int(name.split(".")[1])
            comp = "attention_" + kinds[i][0] if comp == "mixer" else comp
            bucket = built.setdefault(i, {})
        else:
            bucket = outside
        bucket[comp] = bucket.get(comp, 0) + numel
    first_of: dict[tuple[str, str], int] = {}
    for i, kind in enumerate(kinds):
        first_of.setdefault(kind, i)

    def with_active(bucket: dict[str, int]) -> dict[str, tuple[int, int]]:
        return {comp: (n, round(n * active_share(comp, cfg))) for comp, n in bucket.items()}

    return [with_active(built[first_of[kind]]) for kind in kinds], with_active(outside)


@lru_cache(maxsize=64)
def latent_sides(cfg: K3Config) -> dict[str, int]:
    """One MoE layer's latent projections split by side, from the same modules as `params_by_layer`:
    {"down": d_model -> latent weights (+ the latent norm when it sits at dispatch), "up": latent -> d_model (+ the
    norm when it sits on the aggregated output, as K3)}. Empty without a latent. The map shows each side on its own
    node (their sum is `params_by_layer`'s "latent_proj")."""
    if not cfg.moe.latent_dim or "moe" not in cfg.ffn_types():
        return {}
    layer = cfg.ffn_types().index("moe")
    norm_side = "down" if cfg.moe.latent_norm_at == "dispatch" else "up"
    sides = {"down": 0, "up": 0}
    for name, numel, _ in _meta_parameters(cfg):
        parts = name.split(".")
        if name.startswith(f"layers.{layer}.ffn.") and _component(name) == "latent_proj":
            side = {"down_proj": "down", "up_proj": "up"}.get(parts[3], norm_side)
            sides[side] += numel
    return sides


@lru_cache(maxsize=256)
def active_params(cfg: K3Config) -> int:
    """`count_params(cfg).active`, cached per config (the hybrid decode model asks for it on every rerun)."""
    return count_params(cfg).active


def dense_baseline_for(cfg: K3Config, match: str = "active") -> DenseTransformer:
    """A DenseTransformer with the same d_model, layers and heads as `cfg`, and the SwiGLU width chosen so
    its parameter count matches cfg's *active* (default) or *total* parameters (k3lite.analytic.params convention)."""
    if match not in ("active", "total"):
        raise ValueError(f"match must be 'active' or 'total', got {match!r}")
    rep = count_params(cfg)
    target = rep.active if match == "active" else rep.total
    d, L = cfg.d_model, cfg.n_layers
    n_heads = max(1, cfg.mla.n_heads)
    fixed = cfg.vocab_size * d + L * (4 * d * d + 2 * d) + d  # embedding (tied) + attention + norms
    ffn = max(8, int(round((target - fixed) / (3 * d * L) / 8)) * 8)
    return DenseTransformer(cfg.vocab_size, d, L, n_heads, ffn, cfg.max_seq_len, cfg.norm_eps)


def fmt(n: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g}{unit}"
    return str(int(n))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lite.analytic.params", description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="lite", help=f"one of {sorted(PRESETS)}")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    try:
        rep = count_params(get_preset(args.preset))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rep.to_dict(), indent=2))
        return 0
    print(f"{rep.name}: total {fmt(rep.total)} ({rep.total:,}), active {fmt(rep.active)} "
          f"({rep.active:,}), activation {100 * rep.activation_ratio:.2f}%")
    print(f"{'component':<16}{'total':>14}{'active':>14}")
    for c in COMPONENTS:
        if rep.by_component[c]:
            print(f"{c:<16}{fmt(rep.by_component[c]):>14}{fmt(rep.active_by_component[c]):>14}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
