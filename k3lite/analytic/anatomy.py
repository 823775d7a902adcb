"""Where a model's parameters and its bytes per decoded token live, part by part.

The numbers behind the architecture map (k3lite/viz/archmap.py) when no Trace exists, and behind the home
page's "share of parameters / share of bytes moved". Nothing here is a new formula: every number comes from
the function the mechanism pages call.

    parameters        k3lite.analytic.params.params_by_layer (the real modules on the meta device; active = the
                      one rule of k3lite/analytic/params.py)
    HBM weight bytes  active parameters x bytes per parameter of the storage format (k3lite.analytic.memory.precision,
                      as memory.weight_bytes), read once per decoded token (batch 1)
    cache bytes       k3lite.analytic.memory.sequence_cache_bytes: MLA latent cache at `context` tokens, KDA state + conv tail
    wire bytes        k3lite.interconnect.wire_bytes_per_token: dispatch + combine of the routed copies on the
                      reference deployment the MoE and forward-pass pages state (interconnect.REFERENCE)
    AttnRes reads     k3lite.model.attnres.attnres_cost: every depth source each mix reads (0 for a plain residual)
"""
from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from k3lite.model.attnres import attnres_cost
from k3lite.model.config import K3Config
from k3lite.analytic.memory import PRECISIONS, RELEASED_K3_FORMATS, precision, sequence_cache_bytes
from k3lite.interconnect import wire_bytes_per_token
from k3lite.analytic.params import latent_sides, params_by_layer

# the parts a learner can point at, in drawing order, and the page that goes deeper into each
PARTS: tuple[str, ...] = ("embedding", "attention_kda", "attention_mla", "attn_res", "dense_ffn", "router",
                          "latent_proj", "routed_experts", "shared_experts", "lm_head")
PART_LABEL = {
    "embedding": "embedding", "attention_kda": "KDA mixers", "attention_mla": "MLA mixers",
    "attn_res": "Attention Residuals", "dense_ffn": "dense FFN", "router": "router",
    "latent_proj": "latent down/up projections", "routed_experts": "routed experts",
    "shared_experts": "shared experts", "lm_head": "LM head",
}
PART_PAGE = {  # url_path of views/registry.py
    "embedding": "forward_pass", "attention_kda": "kda", "attention_mla": "hybrid_attention",
    "attn_res": "attention_residuals", "dense_ffn": "forward_pass", "router": "moe", "latent_proj": "moe",
    "routed_experts": "interconnect", "shared_experts": "moe", "lm_head": "forward_pass",
}
BYTE_KINDS = ("weights", "cache", "wire", "attnres")
# K3 as released: routed experts in their own format, every other weight bf16 (memory.RELEASED_K3_FORMATS)
RELEASED_K3_PART_FORMATS = {"routed_experts": RELEASED_K3_FORMATS["routed_experts"]}


class PartNumbers(NamedTuple):
    params: int  # total parameters
    active: int  # parameters one token multiplies with
    bytes: dict[str, float]  # per decoded token, by kind (BYTE_KINDS)

    @property
    def bytes_total(self) -> float:
        return float(sum(self.bytes.values()))


class Anatomy(NamedTuple):
    name: str
    context: int  # tokens in the context the cache bytes assume
    weights: str  # storage format of the weights (a memory.PRECISIONS name; after in_formats, every format named)
    layers: list[dict[str, PartNumbers]]  # per layer, per part present in it
    outside: dict[str, PartNumbers]  # embedding, LM head, the final depth mix (norms folded away)
    latent_sides: tuple[int, int] = (0, 0)  # one MoE layer's latent projections: (down side, up side) parameters

    def latent_side(self, layer: int, side: str) -> PartNumbers | None:
        """The down ("down": d_model -> latent) or up ("up") side of one layer's latent projections: its own
        parameters and weight bytes (the layer's "latent_proj" split in proportion to its parameters)."""
        part = self.layers[layer].get("latent_proj")
        if part is None or not part.params:
            return None
        n = dict(zip(("down", "up"), self.latent_sides))[side]
        share = n / part.params
        return PartNumbers(n, round(part.active * share), {k: v * share for k, v in part.bytes.items()})

    def part(self, name: str) -> PartNumbers:
        """One part summed over the whole model."""
        items = [lay[name] for lay in self.layers if name in lay]
        if name in self.outside:
            items.append(self.outside[name])
        return PartNumbers(sum(p.params for p in items), sum(p.active for p in items),
                           {k: float(sum(p.bytes.get(k, 0.0) for p in items)) for k in BYTE_KINDS})

    def totals(self) -> dict[str, PartNumbers]:
        return {name: self.part(name) for name in PARTS}

    @property
    def format_words(self) -> str:
        """The storage formats in words: "bf16 weights", or "bf16 weights, routed experts in mxfp4"."""
        return f"{self.weights} weights" if self.weights in PRECISIONS else self.weights

    def in_formats(self, formats: dict[str, str]) -> Anatomy:
        """The same anatomy with the named parts' weights stored in other formats ({part: PRECISIONS name}): their
        weight bytes scale by the formats' bytes per parameter (no rebuild). `weights` then names every format."""
        if unknown := set(formats) - set(PARTS):
            raise ValueError(f"unknown parts {sorted(unknown)}; known: {list(PARTS)}")
        if self.weights not in PRECISIONS:
            raise ValueError(f"in_formats starts from one format for every weight, got {self.weights!r}")
        base = precision(self.weights).bytes_per_param

        def redo(name: str, p: PartNumbers) -> PartNumbers:
            if name not in formats:
                return p
            scale = precision(formats[name]).bytes_per_param / base
            return p._replace(bytes={**p.bytes, "weights": p.bytes["weights"] * scale})

        label = ", ".join([f"{self.weights} weights"] + [f"{PART_LABEL[k]} in {v}" for k, v in formats.items()])
        return self._replace(weights=label, layers=[{k: redo(k, p) for k, p in lay.items()} for lay in self.layers],
                             outside={k: redo(k, p) for k, p in self.outside.items()})

    def shares(self) -> dict[str, tuple[float, float]]:
        """{part: (share of all parameters, share of all bytes one decoded token moves)}."""
        tot = self.totals()
        params = sum(p.params for p in tot.values())
        moved = sum(p.bytes_total for p in tot.values())
        return {k: (p.params / params if params else 0.0, p.bytes_total / moved if moved else 0.0)
                for k, p in tot.items()}


@lru_cache(maxsize=32)  # a meta-device model build per call (0.2 s for lite, 5 s for K3); read the result only
def anatomy(cfg: K3Config, context: int = 131072, weights: str = "bf16") -> Anatomy:
    """Parameters and bytes per decoded token (batch 1) of every part of `cfg`, per layer.

    Norm weights are counted with the sublayer they normalise (they are < 0.01% of any preset). With tied
    embeddings the table is the LM head: it appears once, as "embedding", read whole by the head.
    """
    if context < 1:
        raise ValueError(f"context must be at least 1 token, got {context}")
    bytes_per_param = precision(weights).bytes_per_param  # ValueError names the known formats
    per_layer, outside_params = params_by_layer(cfg)
    types = cfg.layer_types()
    n_mla, n_kda = types.count("mla"), types.count("kda")
    mla_cache, kda_cache = sequence_cache_bytes(cfg, context)
    wire = wire_bytes_per_token(cfg).total  # per token per MoE layer
    layers: list[dict[str, PartNumbers]] = []
    for i, comps in enumerate(per_layer):
        comps = dict(comps)
        norms = comps.pop("norms", (0, 0))
        mixer = f"attention_{types[i]}"
        t, a = comps[mixer]
        comps[mixer] = (t + norms[0], a + norms[1])
        out: dict[str, PartNumbers] = {}
        for name, (t, a) in comps.items():
            b = {"weights": float(a * bytes_per_param)}
            if name == "attention_mla":
                b["cache"] = mla_cache / n_mla
            elif name == "attention_kda":
                b["cache"] = kda_cache / n_kda
            elif name == "routed_experts":
                b["wire"] = wire
            out[name] = PartNumbers(t, a, b)
        layers.append(out)
    outside: dict[str, PartNumbers] = {}
    head_norm = outside_params.get("norms", (0, 0))  # the final RMSNorm, folded into the head
    head = "embedding" if cfg.tie_embeddings else "lm_head"
    for name, (t, a) in outside_params.items():
        if name == "norms":
            continue
        if name == head:
            t, a = t + head_norm[0], a + head_norm[1]
        if name == "embedding" and not cfg.tie_embeddings:  # a lookup: one row per token
            b = {"weights": float(cfg.d_model * bytes_per_param)}
        else:
            b = {"weights": float(a * bytes_per_param)}
        outside[name] = PartNumbers(t, a, b)
    reads = attnres_cost(cfg.n_layers, cfg.d_model, cfg.attn_res, cfg.attn_res_block_size).read_bytes
    if cfg.attn_res != "standard":
        prev = outside.get("attn_res", PartNumbers(0, 0, {"weights": 0.0}))
        outside["attn_res"] = PartNumbers(prev.params, prev.active, {**prev.bytes, "attnres": float(reads)})
    sides = latent_sides(cfg)
    return Anatomy(cfg.name, context, weights, layers, outside, (sides.get("down", 0), sides.get("up", 0)))
