"""Bytes per decoded token, split by where they move: the app's byte story in one ledger.

One decode step serves a batch of B sequences at context T; the ledger is what ONE decoded token costs:

    NVLink, NIC    expert-parallel dispatch + combine over all MoE layers, expected under uniform routing:
                   `k3lite.interconnect.wire_bytes_per_token` (THE wire-bytes function every page uses) times
                   the MoE layers; default an NVL72 rack, EP over 64 GPUs, DeepEP's normal kernels, FP8
                   dispatch, BF16 combine. Copies inside the token's NVLink domain count as NVLink, beyond it NIC.
    HBM weights    a step reads every weight it multiplies with once, shared by the batch:
                   (non-routed active weights + the distinct experts the B tokens touch) / B, in FP8
                   (`k3lite.analytic.memory.decode_weight_bytes`, the serving page's function; experts touched per
                   layer E (1 - (1 - k/E)^B) under uniform routing; params from the real modules on the meta
                   device).
    HBM cache      the token's own sequence: MLA latent cache (T tokens) plus fixed KDA states, read once per
                   step (`k3lite.analytic.memory.sequence_cache_bytes`, the hybrid and serving pages' function; bf16
                   latents, fp32 states).
    AttnRes reads  the source vectors the depth mixes read for one token (`k3lite.model.attnres.attnres_cost`, the
                   Attention Residuals page's function; standard residual: one running sum per sublayer).

Toggles turn K3 ideas off (a counterfactual K3, not a published model), in the comparison control's words: an
idea off is its `k3lite.model.variants.K3_MINUS` variant, the config every other page compares K3 with:
    no-latent      the same-sized classic MoE the serving waterfall starts from (`k3lite.model.variants.classic_variant`):
                   experts work on d_model and d_model travels, with E/c experts and top-k/c at the same expert
                   FFN (c = d_model / latent), so the same expert parameters and FLOPs per token. (Only dropping
                   the latent, same E and k, would double every expert: a 5.5T-parameter, 142B-active model whose
                   "saving" is mostly reading bigger weights, not wire.)
    all-mla        every layer global (no KDA), so every layer keeps a KV cache that grows with T
    standard-residual  one running sum per sublayer instead of block Attention Residuals (what the released models
                   before K3 use; `idea_bytes` also sets the blocks against full AttnRes, which reads every output)
    balancing off  not a variant (K3_MINUS swaps quantile balancing for another method, whose bytes on average are
                   the same): the step waits for the busiest GPU, whose links carry (1 + overload) x the mean: the NVLink
                   and NIC bars become the busiest GPU's share. `gpu_overload` is the caller's stated
                   assumption (the MoE page measures max-violation per balancing method); bytes on average
                   are unchanged, which is why this is the only toggle that needs one.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import NamedTuple

from k3lite.analytic import decode
from k3lite.analytic.memory import (ACTIVATION_BYTES_PER_ELEM, KDA_STATE_BYTES_PER_ELEM, precision,
                                    sequence_cache_bytes)
from k3lite.base.wording import compare, times
from k3lite.model.attnres import attnres_cost
from k3lite.model.config import K3Config
from k3lite.model.presets import get_preset
from k3lite.interconnect import Deployment, get_topology, wire_bytes_per_token
from k3lite.model.cards import display_name
from k3lite.model.variants import COMPARISONS, K3_MINUS
from k3lite.analytic.serving.deployment import Serving
from k3lite.analytic.serving.step import TokenFlops, check_fits, decode_step, token_flops

MODELS: dict[str, str] = {k: display_name(k) for k in ("deepseek-v3", "kimi-k2", "kimi-k3")}  # names: their cards
SEGMENTS: tuple[tuple[str, str], ...] = (  # (field = style.LINK key, label)
    ("nvlink", "NVLink: expert dispatch + combine"),
    ("nic", "NIC: expert dispatch + combine"),
    ("hbm_weights", "HBM: weights (shared by the batch)"),
    ("hbm_cache", "HBM: KV cache / KDA state"),
    ("attnres", "HBM: Attention Residual reads"),
)
WEIGHT_PRECISION = "fp8"  # as DeepSeek-V3 ships and serves its weights (arXiv 2412.19437); memory.PRECISIONS


@dataclass(frozen=True)
class Deploy:
    """Where and how one decode step runs (defaults: an NVL72 rack, EP64; not the interconnect page's opening
    settings, so the home ledger's caption links to that page with these)."""

    topology: str = "nvl72"
    ep_size: int = 64
    dispatch: str = "fp8"
    combine: str = "bf16"
    scheme: str = "normal"  # DeepEP's high-throughput kernels (k3lite.interconnect.SCHEMES)
    batch: int = 64  # sequences decoded together (they share each weight read)
    gpu_overload: float = 1.0  # busiest GPU's max-violation without balancing (assumption; used only then)

    def __post_init__(self) -> None:
        if not 1 <= self.batch <= 4096:
            raise ValueError(f"batch must be 1..4096 sequences, got {self.batch}")
        if not 0 <= self.gpu_overload <= 100:
            raise ValueError(f"gpu_overload must be in [0, 100] (max-violation, 0 = even), got {self.gpu_overload}")


TOGGLED = ("no-latent", "all-mla", "standard-residual")  # the K3_MINUS variants the ledger's toggles switch to
BALANCING = "balancing"  # the one toggle that is not a variant: the busiest GPU's links (module docstring)


@dataclass(frozen=True)
class Toggles:
    """Which K3 ideas are off (none = K3 as designed): `off`, K3_MINUS keys (each idea off is that variant's
    config), and `balanced` False for the busiest GPU without balancing; `label` names the counterfactual."""

    off: frozenset[str] = frozenset()
    balanced: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "off", frozenset(self.off))
        if not self.off <= set(K3_MINUS):
            raise ValueError(f"toggles switch K3_MINUS variants {list(K3_MINUS)}, got {sorted(self.off)}")

    def label(self) -> str:
        off = [COMPARISONS[k].label.removeprefix("K3 ") for k in K3_MINUS if k in self.off]
        off += [] if self.balanced else ["without balancing"]
        return ", ".join(off) or "as designed"


ALL_ON = Toggles()
ONE_OFF: dict[str, Toggles] = {**{k: Toggles(frozenset({k})) for k in TOGGLED}, BALANCING: Toggles(balanced=False)}


class Ledger(NamedTuple):
    name: str  # e.g. "Kimi K3" or "Kimi K3 without latent"
    context: int
    nvlink: float  # bytes per decoded token
    nic: float
    hbm_weights: float
    hbm_cache: float
    attnres: float

    @property
    def total(self) -> float:
        return self.nvlink + self.nic + self.hbm_weights + self.hbm_cache + self.attnres

    def parts(self) -> dict[str, float]:
        return {key: getattr(self, key) for key, _ in SEGMENTS}


def variant(cfg: K3Config, toggles: Toggles) -> K3Config:
    """`cfg` with the switched-off ideas swapped for their variants (k3lite.model.variants.COMPARISONS, in
    K3_MINUS order; a variant of an idea `cfg` lacks changes nothing), under `cfg`'s own name."""
    for key in K3_MINUS:
        if key in toggles.off:
            cfg = COMPARISONS[key].build(cfg).with_(name=cfg.name)
    return cfg


def ledger(preset: str, context: int, toggles: Toggles = ALL_ON, deploy: Deploy = Deploy(),
           name: str | None = None) -> Ledger:
    """Bytes one decoded token moves, by where (formulas in the module docstring)."""
    if preset not in MODELS:
        raise ValueError(f"model must be one of {list(MODELS)}, got {preset!r}")
    if not 1 <= context <= 10_000_000:
        raise ValueError(f"context must be 1..10,000,000 tokens, got {context}")
    cfg = variant(get_preset(preset), toggles)
    label = name or (MODELS[preset] if toggles == ALL_ON else f"{MODELS[preset].split(' (')[0]} {toggles.label()}")
    return ledger_of(cfg, context, deploy, 1.0 if toggles.balanced else 1.0 + deploy.gpu_overload, label)


def ledger_of(cfg: K3Config, context: int, deploy: Deploy = Deploy(), busiest: float = 1.0,
              label: str | None = None) -> Ledger:
    """The ledger of any config (a comparison's variant, k3lite.model.variants): `busiest` scales the wire bytes of
    the busiest GPU (1 = perfectly balanced)."""
    if not 1 <= context <= 10_000_000:
        raise ValueError(f"context must be 1..10,000,000 tokens, got {context}")
    Deployment(get_topology(deploy.topology), deploy.ep_size, deploy.dispatch, deploy.combine, 0, deploy.scheme)  # validates
    wire = wire_bytes_per_token(cfg, deploy.topology, deploy.ep_size, deploy.scheme, dispatch=deploy.dispatch,
                                combine=deploy.combine)
    n_moe = cfg.ffn_types().count("moe")
    nvlink = wire.intra * n_moe * busiest
    nic = wire.inter * n_moe * busiest
    step = decode.step_bytes(cfg, deploy.batch, context, WEIGHT_PRECISION)  # the decode step every page uses
    weights = step.weights / deploy.batch
    attnres = attnres_cost(cfg.n_layers, cfg.d_model, cfg.attn_res, cfg.attn_res_block_size).read_bytes
    return Ledger(label or cfg.name, context, nvlink, nic, weights, float(step.cache), float(attnres))


def comparison(context: int, deploy: Deploy = Deploy(), counterfactuals: bool = True) -> list[Ledger]:
    """DeepSeek-V3, K2 and K3 side by side, then K3 with each idea switched off (the counterfactual bars)."""
    rows = [ledger(p, context, deploy=deploy) for p in MODELS]
    if counterfactuals:
        rows += [ledger("kimi-k3", context, t, deploy) for t in ONE_OFF.values()]
    return rows


def savings(context: int, deploy: Deploy = Deploy()) -> dict[str, float]:
    """What each K3 idea saves per decoded token: bytes(K3 with the idea off) - bytes(K3), by toggle."""
    return {key: sum(parts.values()) for key, parts in saving_parts(context, deploy).items()}


def saving_parts(context: int, deploy: Deploy = Deploy()) -> dict[str, dict[str, float]]:
    """The same, by segment: {toggle: {segment: bytes(K3 with the idea off) - bytes(K3)}} (negative = K3 moves more)."""
    k3 = ledger("kimi-k3", context, deploy=deploy).parts()
    return {key: {seg: v - k3[seg] for seg, v in ledger("kimi-k3", context, t, deploy).parts().items()}
            for key, t in ONE_OFF.items()}


def saving_words(idea: str, parts: dict[str, float], fmt) -> tuple[str, str, str]:
    """(verb, amount, why) for a card: "saves"/"costs", the net bytes formatted by `fmt`, and the segments that
    moved, largest first ("HBM: weights (shared by the batch) +82.4 MB, NVLink ... -0.7 MB", K3's side)."""
    net = sum(parts.values())
    label = dict(SEGMENTS)
    moved = sorted(((seg, -v) for seg, v in parts.items() if abs(v) > 0), key=lambda sv: -abs(sv[1]))
    why = ", ".join(f"{label[seg]} {'+' if d > 0 else '−'}{fmt(abs(d))}" for seg, d in moved) or "nothing moves"
    return ("saves" if net >= 0 else "costs"), fmt(abs(net)), f"K3 with {idea} vs without, per token: {why}"


# ------------------------------------------------------------------------------------------ what each idea costs
SHORT = {"nvlink": "NVLink", "nic": "NIC", "hbm_weights": "weights read", "hbm_cache": "cache read",
         "attnres": "AttnRes reads"}


def idea_bytes(context: int, fmt, batches: tuple[int, ...] = (1, 64), deploy: Deploy = Deploy()) -> dict[str, str]:
    """What each K3 idea does to the bytes one decoded token moves, in words built from `savings`: K3 with the idea
    against K3 without it, at each batch ("costs 5.32 GB at batch 1 (weights read +5.32 GB, ...)"); "setting" says
    the context, weights, routing and deployment the numbers assume. Balancing states its overload assumption;
    block AttnRes is set against full AttnRes and against a standard residual (blocks read more than one sum)."""
    def by_batch(key: str) -> str:
        out = []
        for b in batches:
            parts = saving_parts(context, replace(deploy, batch=b))[key]
            net = sum(parts.values())
            moved = ", ".join(f"{SHORT[seg]} {'+' if v < 0 else '−'}{fmt(abs(v))}"
                              for seg, v in sorted(parts.items(), key=lambda sv: -abs(sv[1])) if v)
            out.append(f"{'saves' if net >= 0 else 'costs'} {fmt(abs(net))} at batch {b} ({moved})")
        return " and ".join(out)

    k3 = get_preset("kimi-k3")
    read = lambda mode: attnres_cost(k3.n_layers, k3.d_model, mode, k3.attn_res_block_size).read_bytes  # noqa: E731
    balanced = savings(context, deploy)[BALANCING]
    return {
        "setting": (f"bytes per decoded token of K3 with the idea against K3 without it, from the ledger below: "
                    f"{context:,}-token context, {WEIGHT_PRECISION.upper()} weights, uniform routing, "
                    f"{deploy.topology} with experts over {deploy.ep_size} GPUs"),
        "no-latent": by_batch("no-latent"),
        "all-mla": by_batch("all-mla"),
        BALANCING: (f"saves {fmt(balanced)} on the busiest GPU's links at any batch, assuming that without it that GPU "
                      f"carries {1 + deploy.gpu_overload:.1f}x the mean (bytes on average do not change)"),
        "standard-residual": (f"blocks read {fmt(read('block'))}: {fmt(abs(read('full') - read('block')))} "
                          f"{compare(read('block'), read('full'), 'more', 'less', 'as much as')}"
                          f"{'' if read('block') == read('full') else ' than'} full AttnRes, "
                          f"{fmt(abs(read('block') - read('standard')))} "
                          f"{compare(read('block'), read('standard'), 'more', 'less', 'as much as')}"
                          f"{'' if read('block') == read('standard') else ' than'} a standard residual "
                          "(one running sum per sublayer), at any batch"),
    }


# ------------------------------------------------------------------------------------------ the headline
WEIGHT_BYTES = precision(WEIGHT_PRECISION).bytes_per_param  # FP8 with its block scales: 1.00024 B


def k3_bytes_at(context: float = 131_072, batch: float = 64, weight_bytes: float = WEIGHT_BYTES,
                latent_bytes: float = ACTIVATION_BYTES_PER_ELEM, state_bytes: float = KDA_STATE_BYTES_PER_ELEM,
                deploy: Deploy = Deploy()) -> float:
    """Home's headline: bytes one decoded token of K3 (every idea on) moves, as the ledger counts them, from the
    inputs it assumes: tokens of context, sequences per step sharing each weight read, bytes per weight parameter
    (FP8 with its scales = 1.00024), bytes per stored MLA latent number (bf16 = 2) and per KDA state number (fp32 = 4). At those values it
    is `ledger("kimi-k3", context, deploy=Deploy(batch=batch)).total`; a batch below one counts as one."""
    if min(weight_bytes, latent_bytes, state_bytes) <= 0:
        raise ValueError(f"bytes per number must be > 0, got {weight_bytes}, {latent_bytes}, {state_bytes}")
    row = ledger("kimi-k3", context, deploy=replace(deploy, batch=max(1.0, batch)))  # no step has under one sequence
    cache = sequence_cache_bytes(get_preset("kimi-k3"), context, latent_bytes, state_bytes).total
    weights = row.hbm_weights * weight_bytes / WEIGHT_BYTES
    return row.nvlink + row.nic + weights + cache + row.attnres


# ------------------------------------------------------------------------------------------ per unit of work
PER_WORK = 1e9  # normalise to bytes per decoded token per GFLOP of that token's work


def token_work(preset: str, context: int, toggles: Toggles = ALL_ON) -> TokenFlops:
    """The FLOPs one decoded token of the ledger's config (toggled ideas off) costs at `context`: 2 per active
    parameter plus the attention core over the context (`serving.step.token_flops`, the serving model's one
    count). At long context the attention core outgrows the parameters: DeepSeek-V3's 61 MLA layers at
    131,072 tokens cost more than K3's whole token."""
    if preset not in MODELS:
        raise ValueError(f"model must be one of {list(MODELS)}, got {preset!r}")
    return token_flops(variant(get_preset(preset), toggles), context)


def per_work(row: Ledger, flops: float) -> Ledger:
    """`row` per GFLOP of the token's work (`token_work(...).total`): bytes per unit of work."""
    if flops <= 0:
        raise ValueError(f"FLOPs per token must be positive, got {flops}")
    scale = PER_WORK / flops
    return row._replace(**{key: getattr(row, key) * scale for key, _ in SEGMENTS})


def why_more_bytes(k3: Ledger, other: Ledger, k3_work: TokenFlops, other_work: TokenFlops, fmt) -> str:
    """Why K3's bar is longer (or shorter) than `other`'s, in words built from the two rows: the bytes against each
    other, the work per token at the rows' context (with what the count assumes), and the bytes per GFLOP of that
    work. Every "more" / "less" comes from `k3lite.base.wording.times`, so the word follows the numbers."""
    hbm = lambda r: r.hbm_weights + r.hbm_cache + r.attnres  # noqa: E731
    wire = lambda r: r.nvlink + r.nic  # noqa: E731
    gflop = lambda w: f"{w / 1e9:,.0f} GFLOP"  # noqa: E731
    k3n, on = per_work(k3, k3_work.total), per_work(other, other_work.total)
    name, other_name = k3.name.split(" (")[0], other.name.split(" (")[0]
    k3_active, other_active = (k3_work.experts + k3_work.other) / 2, (other_work.experts + other_work.other) / 2
    return (f"{name} reads {fmt(hbm(k3))} of HBM and moves {fmt(wire(k3))} over the interconnect per decoded token, "
            f"against {other_name}'s {fmt(hbm(other))} and {fmt(wire(other))} ({times(hbm(k3), hbm(other), 'more', 'less')} "
            f"HBM, {times(wire(k3), wire(other), 'more', 'less')} wire). At {k3.context:,} tokens of context one of its "
            f"tokens costs {gflop(k3_work.total)} against {gflop(other_work.total)} "
            f"({times(k3_work.total, other_work.total, 'more', 'less')} work), counted as 2 FLOPs per active parameter "
            f"({k3_active / 1e9:.0f}B against {other_active / 1e9:.0f}B, "
            f"{times(k3_active, other_active, 'more', 'fewer')}) plus the attention core over the context "
            f"({gflop(k3_work.attention)} against {gflop(other_work.attention)}). Per GFLOP of that work {name} reads "
            f"{fmt(hbm(k3n))} against {fmt(hbm(on))} ({times(hbm(k3n), hbm(on), 'more', 'less')}) and moves "
            f"{fmt(wire(k3n))} against {fmt(wire(on))} ({times(wire(k3n), wire(on), 'more', 'less')}).")


# ------------------------------------------------------------------------------------------ where an idea costs
IDEAS = (("no-latent", "latent experts"), ("all-mla", "KDA hybrid"), ("standard-residual", "block AttnRes"),
         (BALANCING, "balancing"))  # (ONE_OFF key, the idea it switches off)


def cost_words(context: int, deploy: Deploy, fmt) -> str:
    """Home's note under the idea cards: which ideas cost K3 bytes at this context and batch, by segment, and why,
    each "more" / "larger" chosen from the numbers it compares; "" when every idea saves."""
    parts = saving_parts(context, deploy)
    costs = [words[2] for key, idea in IDEAS if (words := saving_words(idea, parts[key], fmt))[0] == "costs"]
    if not costs:
        return ""
    reasons = []
    lat = parts["no-latent"]
    if sum(lat.values()) < 0 and lat["hbm_weights"] < 0:
        extra, saved = -lat["hbm_weights"], lat["nvlink"] + lat["nic"]
        reasons.append(f"the latent's projections (d_model → latent → d_model in every MoE layer) are weights every "
                       f"step reads, {fmt(extra)}, {compare(extra, saved, 'more than', 'less than', 'about as much as')}"
                       f" the {fmt(abs(saved))} of wire it {'saves' if saved >= 0 else 'adds'}; the serving page's "
                       "waterfall prices the same step in $/M")
    if sum(parts["all-mla"].values()) < 0:
        k3, mla = ledger("kimi-k3", context, deploy=deploy), ledger("kimi-k3", context, ONE_OFF["all-mla"], deploy)
        if k3.hbm_weights > mla.hbm_weights:
            reasons.append(f"KDA layers carry {compare(k3.hbm_weights, mla.hbm_weights, 'more', 'fewer', 'as many')} "
                           "weights than the MLA layers they replace")
        if k3.hbm_cache > mla.hbm_cache:
            reasons.append(f"at {context:,} tokens their fixed state is "
                           f"{compare(k3.hbm_cache, mla.hbm_cache, 'larger', 'smaller', 'as large as')} than the MLA "
                           "cache it replaces")
    return ("Where an idea *costs* bytes at this context and batch: " + "; ".join(costs) + "."
            + (" Why: " + "; ".join(reasons) + "." if reasons else ""))


# ------------------------------------------------------------------------------------------ does the wire bind?
SERVING_DEFAULT = ("GB300 NVL72", 64, 32_768)  # the serving page's opening GPU, EP (= GPUs) and context


def wire_or_hbm(preset: str = "kimi-k3", gpu: str = SERVING_DEFAULT[0], ep: int = SERVING_DEFAULT[1],
                context: int = SERVING_DEFAULT[2]) -> str:
    """Whether dispatch + combine set the speed of a decode step, by the serving page's own model: its step at
    (gpu, EP, context, the largest batch that fits), HBM time against wire time, and how many points of its
    speed-price frontier (every GPU, EP and format it tries) each term bounds. Numbers, not a blanket claim."""
    s = Serving(preset, gpu, ep, ep, context=context)
    batch = check_fits(s).max_batch_per_gpu
    step = decode_step(s, batch)
    searched, envelope = _frontier_points(preset, context)
    ms = lambda x: f"{x * 1e3:.3g} ms"  # noqa: E731
    return (f"Does that traffic set the speed? By the serving page's model, {display_name(s.name)} on {s.gpu} with EP "
            f"{ep} at {context:,} tokens of context and the largest batch that fits ({batch} sequences per GPU) spends "
            f"{ms(step.hbm_s)} of each decode step reading HBM, {ms(step.compute_s)} computing and {ms(step.wire_s)} "
            f"on the wire ({100 * step.wire_s / step.hbm_s:.0f}% of the HBM time): the step is {step.bound}-bound. "
            f"Of the {len(searched):,} setups and batches its speed–price search tries at this context, "
            + _bound_by(searched) + f"; of the {len(envelope):,} on its frontier (the cheapest at each speed), "
            + _bound_by(envelope) + ".")


def _bound_by(points) -> str:
    """'the wire bounds 2 (B200 at EP 72, B200 at EP 128), HBM 18 and compute 0' for (bound, GPU, EP) points."""
    bounds = Counter(bound for bound, _gpu, _ep in points)
    wire_setups = sorted({(g, e) for bound, g, e in points if bound == "wire"})
    where = ("none of them" if not wire_setups else
             f"{bounds['wire']:,} (" + ", ".join(f"{g} at EP {e}" for g, e in wire_setups) + ")")
    return f"the wire bounds {where}, HBM {bounds['HBM']:,} and compute {bounds['compute']:,}"


@lru_cache(maxsize=8)
def _frontier_points(preset: str, context: int) -> tuple[tuple, tuple]:
    """(bound, GPU, EP) of every point the serving page's frontier search tries (its roofline model), and of the
    points on the frontier itself (its lower envelope), cached per setting."""
    from k3lite.analytic.serving.frontier import frontier  # here: pulls the serving fit (see wire_or_hbm)
    from k3lite.analytic.serving.price import DEFAULT_SHAPE, Shape  # (the reason above)

    out = DEFAULT_SHAPE.output_len  # a request whose decode reads `context` tokens on average (price.Shape)
    fr = frontier(preset, Shape(max(1, context - out // 2), out))
    return tuple((p.bound, p.gpu, p.ep) for p in fr.points), tuple((p.bound, p.gpu, p.ep) for p in fr.envelope)
