"""Parameter counts from the real modules, instantiated on the meta device (no memory used).

Convention for "active" (what one token's forward pass multiplies with): every non-routed weight
counts fully, including the LM head; routed experts count top_k / E; the input embedding does NOT
count, because a token only looks up one row of it (no matmul). With tied embeddings the table is
the LM head too, so then it counts. Applied identically to every preset. (DeepSeek-V3's weights
README counts the embedding in: "36.7B activated including 0.9B embedding and 0.9B head"; labs differ.)

CLI:  python -m k3lite.params --preset NAME [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from functools import lru_cache

import torch

from k3lite.config import PRESETS, K3Config, get_preset
from k3lite.model import DenseTransformer, K3Model

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


def active_with_embedding(report: ParamReport) -> int:
    """Active parameters counting the input-embedding table in (the convention of DeepSeek-V3's weights README:
    "36.7B activated, including 0.9B embedding and 0.9B output head"); our own convention leaves it out."""
    return report.active + report.by_component["embedding"] - report.active_by_component["embedding"]


def build_meta_model(cfg: K3Config) -> K3Model:
    with torch.device("meta"):
        return K3Model(cfg)


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


def count_params(cfg: K3Config) -> ParamReport:
    """Instantiate `K3Model(cfg)` on the meta device and bucket every parameter."""
    model = build_meta_model(cfg)
    total = dict.fromkeys(COMPONENTS, 0)
    for name, p in model.named_parameters():  # tied weights are yielded once
        comp = _component(name)
        if comp == "mixer":
            comp = "attention_" + model.layers[int(name.split(".")[1])].mixer_type
        total[comp] += p.numel()
    active = {comp: round(n * active_share(comp, cfg)) for comp, n in total.items()}
    return ParamReport(cfg.name, sum(total.values()), sum(active.values()), total, active)


def params_by_layer(cfg: K3Config) -> tuple[list[dict[str, tuple[int, int]]], dict[str, tuple[int, int]]]:
    """Per layer {component: (total, active)}, and the same for what sits outside the layers (embedding,
    head, final norm and depth mix). Totals sum to `count_params(cfg)`; active ones to it up to rounding
    (one per bucket). The architecture map shows them per element."""
    model = build_meta_model(cfg)
    layers: list[dict[str, int]] = [{} for _ in range(cfg.n_layers)]
    outside: dict[str, int] = {}
    for name, p in model.named_parameters():  # tied weights are yielded once
        comp = _component(name)
        layer = int(name.split(".")[1]) if name.startswith("layers.") else None
        if comp == "mixer":
            comp = "attention_" + model.layers[layer].mixer_type
        bucket = outside if layer is None else layers[layer]
        bucket[comp] = bucket.get(comp, 0) + p.numel()

    def with_active(bucket: dict[str, int]) -> dict[str, tuple[int, int]]:
        return {comp: (n, round(n * active_share(comp, cfg))) for comp, n in bucket.items()}

    return [with_active(b) for b in layers], with_active(outside)


@lru_cache(maxsize=256)
def active_params(cfg: K3Config) -> int:
    """`count_params(cfg).active`, cached per config (the hybrid decode model asks for it on every rerun)."""
    return count_params(cfg).active


def dense_baseline_for(cfg: K3Config, match: str = "active") -> DenseTransformer:
    """A DenseTransformer with the same d_model, layers and heads as `cfg`, and the SwiGLU width chosen so
    its parameter count matches cfg's *active* (default) or *total* parameters (k3lite.params convention)."""
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
    ap = argparse.ArgumentParser(prog="python -m k3lite.params", description=__doc__.split("\n")[0])
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
