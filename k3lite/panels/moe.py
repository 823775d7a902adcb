"""The MoE page's panels (views/moe.py): what each draws and says, computed here, no Streamlit.

    k3_width_moe(E, k, shared, ratio)   the first screen's layer: the sliders' routing shape at K3 width
    path_panel(moe, ratio_label)        one token's path through that layer and its wire bytes (the first picture)
    layer_costs(cfg)                    a config's MoE layer per token: copies, bytes per copy, wire bytes, FLOPs
    compare_panel(pair, balance)        K3 and the compared model's layer on one axis, and what drives the gap
    tradeoff_panel(E, k, shared, ratio) (d): wire bytes and FLOPs per token against the latent ratio
    touched_panel(E, k, B)              (e): distinct experts one decode step of B tokens reads, against B
    situ_panel(cfg)                     (f): SiTU-GLU against SwiGLU, and the sentence under it
    assumptions(moe)                    the page's assumptions block: its inputs and the non-numeric ones
The live routing panels (a)-(c) are in k3lite.panels.moe_routing.
"""
from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from k3lite.analytic.latent import latent_cost_per_token, record_overhead
from k3lite.analytic.memory import expected_experts_touched
from k3lite.analytic.placement import chance_violation
from k3lite.analytic.sensitivity import Assumption
from k3lite.base import sources
from k3lite.base.evidence import derived, released
from k3lite.base.wording import direction, times
from k3lite.interconnect import REFERENCE, Deployment, deployment_bytes, wire_bytes_per_token
from k3lite.interconnect.sentences import routing_clause
from k3lite.model.config import K3Config, MoEConfig
from k3lite.model.nn import glu_curves
from k3lite.model.presets import get_preset
from k3lite.model.variants import comparison_config
from k3lite.panels.core import Pair, Panel, Said, sentence, where_else
from k3lite.viz.compare import paired_bars
from k3lite.viz.diagrams import latent_path, latent_path_figure
from k3lite.viz.memo import shared_figure
from k3lite.viz.moe import METHOD_LABELS, experts_touched_figure, latent_tradeoff, situ_vs_swiglu_figure
from k3lite.viz.style import fmt_bytes

K3 = get_preset("kimi-k3")  # the released config.json
K3_D, K3_FFN = K3.d_model, K3.moe.expert_ffn_dim  # the drawn path and (d) are at K3 width
LITE = get_preset("lite")
RATIOS = {"1": 1.0, "1/2": 0.5, "1/4": 0.25, "1/8": 0.125}
K3_RATIO = next(key for key, r in RATIOS.items() if r * K3_D == K3.moe.latent_dim)  # "1/2": 3584 / 7168
K3_CONFIG = released("K3's config.json: d_model, n_routed_experts, num_experts_per_tok, n_shared_experts, latent dim")
PAIR_CONFIGS = released("the two models' config.json (k3lite.model.presets; a K3 variant: k3lite.model.variants)")


# ------------------------------------------------------------------------------------------ the first picture
def k3_width_moe(n_experts: int, top_k: int, n_shared: int, ratio: float) -> MoEConfig:
    """The sliders' routing shape at K3's width and expert size (the first picture and the assumptions block)."""
    return MoEConfig(n_routed_experts=n_experts, top_k=top_k, expert_ffn_dim=K3_FFN, n_shared_experts=n_shared,
                     shared_ffn_dim=K3_FFN, latent_dim=0 if ratio == 1 else round(K3_D * ratio),
                     latent_norm=ratio < 1, latent_norm_at=K3.moe.latent_norm_at)


def path_panel(moe: MoEConfig, ratio_label: str, deployment: Deployment = REFERENCE) -> Panel:
    """One token's path through `moe` at K3 width, and the sentence comparing its wire bytes with a classic MoE's."""
    path = latent_path(moe, K3_D, deployment)
    classic = latent_path(replace(moe, latent_dim=0, latent_norm=False), K3_D, deployment)
    ev = derived(latent_path, deployment_bytes)
    on_wire, classic_wire = path.wire.total, classic.wire.total
    fig = shared_figure(latent_path_figure, path, f"One token at K3 width (d = {K3_D}): {fmt_bytes(on_wire)} on the "
                        "wire per MoE layer", evidence=ev)
    k, e, shared = moe.top_k, moe.n_routed_experts, moe.n_shared_experts
    text = (f"At latent ratio {ratio_label} each copy carries l = {path.latent} dims instead of d = {K3_D}: "
            f"**{fmt_bytes(on_wire)}** on the wire per token per MoE layer against {fmt_bytes(classic_wire)} for a "
            f"classic MoE ({times(on_wire, classic_wire, 'more', 'less', digits=1)}), {path.wire.copies.total:.2f} "
            f"copies each way on {deployment.describe()}. A token visits {k} of {e} routed experts "
            f"({100 * k / e:.1f}%); its {shared} shared expert(s) run on its own GPU and never cross the wire.")
    return Panel(fig, (Said(text, (ev, K3_CONFIG)),), ev,
                 values={"wire": on_wire, "classic_wire": classic_wire, "copies": path.wire.copies.total})


# ------------------------------------------------------------------------------------------ K3 beside another
class LayerCosts(NamedTuple):
    """One MoE layer of a config, per token, on a deployment (uniform routing, expected values)."""

    top_k: int  # experts a token is sent to
    copies: float  # copies each way: the GPUs other than its own that hold one of them
    dim: int  # numbers each copy carries: the latent, or d_model for a classic MoE
    latent: bool
    per_copy: int  # bytes of one copy there and back: the dispatch record + the combine record
    wire: float  # copies x per_copy: wire_bytes_per_token(...).total
    routed_flops: float  # the top-k routed experts
    flops: float  # routed + shared experts + the latent's down and up projections


def layer_costs(cfg: K3Config, deployment: Deployment = REFERENCE) -> LayerCosts:
    """A config's MoE layer per token: the wire bytes from THE wire-bytes function (through deployment_bytes), the
    FLOPs from latent_cost_per_token (the same function as (d))."""
    m, d = cfg.moe, cfg.d_model
    wire = deployment_bytes(cfg, deployment)  # k3lite.interconnect.wire_bytes_per_token on `deployment`
    dim = m.latent_dim or d
    cost = latent_cost_per_token(d, m.expert_ffn_dim, m.top_k, m.n_shared_experts, m.one_shared_ffn_dim, dim / d,
                                 n_experts=m.n_routed_experts, deployment=deployment)
    return LayerCosts(m.top_k, wire.copies.total, dim, bool(m.latent_dim), wire.dispatch_record + wire.combine_record,
                      wire.total, cost.routed_flops, cost.routed_flops + cost.proj_flops + cost.shared_flops)


CATEGORIES = ("copies<br>per token", "bytes<br>per copy", "wire bytes<br>per token", "expert FLOPs<br>per token")


def _where(pair: Pair) -> str:
    """Where a comparison that leaves this page's bytes and FLOPs alone does differ: this page's own section for
    what its configs differ in (the balancing method, the activation), else the pages its card names."""
    if pair.other.moe.balancing != pair.k3.moe.balancing:
        return ("How evenly the experts are loaded is where it differs: (a)–(c) below run the balancing methods side "
                "by side on the same tokens.")
    if pair.other.hidden_act != pair.k3.hidden_act:
        return "The experts' activation is where it differs: (f) SiTU-GLU below draws both."
    return sentence(where_else(pair, "moe"))


def _bars(*args, **kwargs):
    """paired_bars with its labels inside the bars' tops: above them, side by side, they ran into each other at
    390 px (inside, one too wide for its bar is hidden; the hover still has it)."""
    return paired_bars(*args, **kwargs).update_traces(textposition="inside", insidetextanchor="end", textangle=0)


def _values(c: LayerCosts) -> tuple[float, float, float, float]:
    return c.copies, float(c.per_copy), c.wire, c.flops


def _labels(c: LayerCosts) -> list[str]:
    return [f"{c.copies:.2f} of {c.top_k}", fmt_bytes(c.per_copy), fmt_bytes(c.wire), f"{c.flops / 1e9:.2f} GFLOP"]


def _width(c: LayerCosts) -> str:
    return f"{'l' if c.latent else 'd'} = {c.dim:,}"


def compare_panel(pair: Pair, balance: dict | None = None, deployment: Deployment = REFERENCE) -> Panel:
    """K3's MoE layer beside the compared model's, per token, at full scale from the two configs: copies, bytes per
    copy, wire bytes and expert FLOPs, each relative to the compared model's (one axis for all four, the bars' labels
    the numbers; K3's bar is the sentence's "Nx").
    `balance`: this page's shipped balancing run ({"violation": {method: max-violation}, "updates", "tokens",
    "evidence"}), quoted when the variant only swaps the balancing method."""
    a, b = layer_costs(pair.k3, deployment), layer_costs(pair.other, deployment)
    va, vb = _values(a), _values(b)
    k3, other = pair.k3_label, pair.label
    ev = derived(layer_costs, wire_bytes_per_token, latent_cost_per_token, comparison_config)
    fig = shared_figure(_bars, CATEGORIES, [multiple(x, y) for x, y in zip(va, vb)], [1.0] * 4, (k3, other),
                        pair.ablation, dict(title=f"relative to {other} (= 1)", rangemode="tozero"),
                        title=f"One MoE layer, per token: {k3} and {other}", text=(_labels(a), _labels(b)),
                        hover="%{text}", evidence=ev)
    same = all(direction(x, y) == 0 for x, y in zip(va, vb))
    if same:
        said = [Said(f"{other} swaps {pair.comparison.idea} for {pair.comparison.instead}, which changes neither how "
                     f"many copies a token sends nor how wide they are: the same {a.copies:.2f} copies of "
                     f"{fmt_bytes(a.per_copy)}, {fmt_bytes(a.wire)} on the wire and {a.flops / 1e9:.2f} GFLOP of "
                     f"expert work per token per MoE layer as {k3} (the bars match). "
                     + _where(pair), (ev, PAIR_CONFIGS))]
        method = pair.other.moe.balancing
        if balance and method != pair.k3.moe.balancing:
            v = balance["violation"]
            chance = chance_violation(balance["tokens"], pair.k3.moe.top_k, pair.k3.moe.n_routed_experts)
            said.append(Said(
                f"On this page's shipped balancing run ({pair.k3.moe.n_routed_experts} experts, top-"
                f"{pair.k3.moe.top_k}, {balance['updates']} updates each, {balance['tokens']:,} held-out bytes) the "
                f"busiest expert gets {1 + v[pair.k3.moe.balancing]:.2f}x the even share with "
                f"{METHOD_LABELS[pair.k3.moe.balancing]} and {1 + v[method]:.2f}x with {METHOD_LABELS[method]}; a "
                f"fair random router reads {1 + chance:.2f}x on as many tokens.",
                (balance["evidence"],)))
    else:
        joint = "but" if direction(a.copies, b.copies) * direction(a.per_copy, b.per_copy) < 0 else "and"
        said = [Said(f"Each copy carries {_width(a)} numbers for {k3} and {_width(b)} for {other}: "
                     f"{multiple(a.per_copy, b.per_copy):.2f}x the bytes per copy ({fmt_bytes(a.per_copy)} vs "
                     f"{fmt_bytes(b.per_copy)} there and back), {joint} {k3} sends {multiple(a.copies, b.copies):.2f}x "
                     f"the copies ({a.copies:.2f} vs {b.copies:.2f} per token, top-{a.top_k} vs top-{b.top_k}): "
                     f"{multiple(a.wire, b.wire):.2f}x the wire bytes per token per MoE layer ({fmt_bytes(a.wire)} vs "
                     f"{fmt_bytes(b.wire)}) on one {', '.join(deployment.describe().split(', ')[:2])}, "
                     f"{routing_clause([(k3, pair.k3.moe), (other, pair.other.moe)], deployment)} (a copy per GPU "
                     "reached: the Interconnect page has wider deployments).", (ev, PAIR_CONFIGS)),
                Said(f"Its experts do {times(a.flops, b.flops, 'more', 'fewer')} FLOPs per token ("
                     f"{a.flops / 1e9:.2f} vs {b.flops / 1e9:.2f} GFLOP with the shared experts and the latent's "
                     f"projections; the routed experts alone: {a.routed_flops / 1e9:.2f} vs "
                     f"{b.routed_flops / 1e9:.2f}).", (ev, PAIR_CONFIGS))]
    return Panel(fig, tuple(said), ev, title="", values={
        "copies_ratio": multiple(a.copies, b.copies), "per_copy_ratio": multiple(a.per_copy, b.per_copy),
        "wire_ratio": multiple(a.wire, b.wire), "k3_wire": a.wire, "other_wire": b.wire, "k3_copies": a.copies,
        "other_copies": b.copies})


def multiple(k3: float, other: float) -> float:
    """K3's amount as a multiple of the other model's (the sentences' 'Nx the bytes')."""
    return k3 / other


# ------------------------------------------------------------------------------------------ (d), (f)
def tradeoff_panel(n_experts: int, top_k: int, n_shared: int, ratio: float) -> tuple[Panel, str]:
    """(d): wire bytes and routed FLOPs per token at each latent ratio, your ratio outlined; and how it is computed."""
    costs = [latent_cost_per_token(K3_D, K3_FFN, top_k, n_shared, K3_FFN, r, n_experts=n_experts)
             for r in RATIOS.values()]
    ev = derived(latent_cost_per_token)
    how = (f"Computed from d = {K3_D} and expert FFN {K3_FFN} (K3's config.json), top-{top_k}, {n_shared} shared, "
           f"{n_experts} experts: wire = expected copies x (FP8 dispatch + BF16 combine record) on "
           f"{REFERENCE.describe()} (k3lite.interconnect.wire_bytes_per_token); routed FLOPs = 2 x 3 x l x FFN x k. "
           "Outlined = your latent ratio. Shared experts never cross the wire.")
    return Panel(shared_figure(latent_tradeoff, costs, ratio, evidence=ev), evidence=ev), how


def situ_panel(cfg: K3Config = K3) -> tuple[Panel, str]:
    """(f): SiTU-GLU against SwiGLU along gate = up = z, and where K3 uses it (a sentence built from the curves)."""
    glu = glu_curves(beta=cfg.situ_beta, linear_beta=cfg.situ_linear_beta)
    ev = derived(glu_curves)
    fig = shared_figure(situ_vs_swiglu_figure, glu.z.tolist(), glu.swiglu.tolist(), glu.situ.tolist(), glu.bound,
                        evidence=ev)
    at = int(len(glu.z) * 0.75)  # z = 30 on the default range
    text = (f"K3's experts, shared experts and dense layer use SiTU-GLU (report Eq. 12; `hidden_act` situ, b1 = "
            f"{cfg.situ_beta:g}, b2 = {cfg.situ_linear_beta:g} in config.json; `k3lite.model.nn.situ_glu`, in fp32 as "
            f"the released code). Near zero it is SwiGLU; further out both branches saturate, so a hidden unit never "
            f"exceeds b1 b2 = {glu.bound:g} (largest on this range: {float(glu.situ.abs().max()):.1f}), where SwiGLU "
            f"grows like z²: at z = {float(glu.z[at]):g} it gives {float(glu.swiglu[at]):,.0f} against SiTU's "
            f"{float(glu.situ[at]):.1f}. The lite model here uses {LITE.hidden_act}; `kimi-linear-48b-a3b`, "
            "`kimi-k2` and `deepseek-v3` keep SwiGLU.")
    return Panel(fig, evidence=ev), text


# ------------------------------------------------------------------------------------------ assumptions
def assumptions(moe: MoEConfig, expert_ffn: int, stream_bytes: int) -> tuple[list[Assumption], list[tuple[str, str]]]:
    """The page's assumed inputs of its headline (wire_bytes_headline), and those that are not a number."""
    numbers = [
        Assumption("dispatch_elem_bytes", "bytes per dispatched latent element", 1.0,
                   "FP8 dispatch, as DeepEP sends it (plus one fp32 scale per 128 elements)",
                   "not adjustable here (the Interconnect page sets it)", "B"),
        Assumption("combine_elem_bytes", "bytes per combined latent element", 2.0,
                   "BF16 combine, as DeepEP sends it back", "not adjustable here (the Interconnect page sets it)", "B"),
        Assumption("record_overhead_bytes", "bytes a dispatch + combine record pair adds", record_overhead(moe, K3_D),
                   "FP8 scales, routing metadata and padding (k3lite.interconnect)", unit="B")]
    also = [("routing", "uniform: every expert equally likely, so the copies per token are expected values"),
            ("deployment", REFERENCE.describe()),
            ("the live layer in (a)-(b)", f"K3's routing shape from your sliders, but experts of FFN {expert_ffn} and "
             "a fresh seeded router on the trained lite model's hidden states: routing is live, the experts' size "
             "is not"),
            ("calibration text", f"{stream_bytes:,} bytes of text and code: 3/4 to fit the balancers, 1/4 held out"),
            ("balancing updates", "the same budget for every method (32 in (a)-(b)); bias γ 0.01, aux loss Adam lr "
             "1e-3")]
    return numbers, also



def how_it_works() -> str:
    """The page's explanation of LatentMoE and quantile balancing (its counts from K3's config, its sources named)."""
    m = K3.moe
    return f"""
    K3 has **{m.n_routed_experts} routed experts** and sends each token to **{m.top_k}** of them, plus **{m.n_shared_experts} shared experts** every token
    uses ({sources.EXPERT_COUNTS}). Three problems come with that many experts:
    the router must not pile tokens onto a few favourites (**balancing**), its choices should not flip at the
    slightest nudge (**stability**: every flip reroutes a token to another GPU), and each routed copy is a message
    on the interconnect (**bytes on the wire**). *LatentMoE* shrinks the message: the token is projected from
    `d` down to a latent `l` before it is sent, the experts work in that latent space, and the result is projected
    back up (NVIDIA, arXiv 2601.18089).
    
    **Quantile balancing is grading on a curve set by earlier classes.** Routing stays *token choice*: every
    token takes its top-k experts, but of `s − β` rather than of its raw scores `s`, where `β_j` is expert j's cut.
    After each batch the cuts are read off that batch's scores (Kimi K3 Technical Report, arXiv 2607.24653, §2.3.3
    Eq. 14; first written up by J. Su, kexue.fm/archives/11619): each token routes its top-(k+1) on the biased
    score, and the (k+1)-th is its own cut `α_i`; `β_j` becomes the `(1 − k/E)` quantile of expert j's scores,
    each lowered by its token's cut, `s_:,j − α`: the value that would have given expert j its share `k/E` of the
    batch, with no step size to tune. The cuts are centred (a shift common to all experts changes no choice),
    take effect from the next step, and are frozen at inference. At K3's scale the quantile comes from
    histograms that each GPU fills and one all-reduce adds (`k3lite.model.moe.quantile_bias_histogram`).
    New tokens are routed with cuts fitted on earlier ones, so their load is close to even, not exactly even.
    *Expert choice* (each expert takes the `N·k/E` tokens that rank highest for it in the batch; Zhou et al.,
    arXiv 2202.09368) would be exactly even, but it needs the whole batch before any token can be routed (no use
    when decoding one token at a time), and a token gets however many experts happen to pick it: some get none or
    fewer than k, others more; (b) counts it on this page's tokens. The bias method (DeepSeek-V3) instead nudges
    a per-expert offset by ±γ each step; the aux loss (Switch Transformer) adds a penalty to the training loss.
    """


STEP_BATCHES = tuple(2 ** i for i in range(11))  # (e)'s batch choices: 1 to 1,024 tokens in one decode step


def touched_panel(n_experts: int, top_k: int, batch: int) -> Panel:
    """(e): how many distinct experts a decode step of `batch` tokens touches under uniform routing, E (1 - (1 -
    k/E)^B) (`expected_experts_touched`, the count the hybrid and serving pages' weight reads use), over every
    batch in STEP_BATCHES with `batch` marked, and the sentence at `batch`."""
    if batch not in STEP_BATCHES:
        raise ValueError(f"batch must be one of {list(STEP_BATCHES)}, got {batch}")
    touched = [expected_experts_touched(n_experts, top_k, b) for b in STEP_BATCHES]
    n = touched[STEP_BATCHES.index(batch)]
    ev = derived(expected_experts_touched)
    fig = shared_figure(experts_touched_figure, STEP_BATCHES, touched, n_experts, top_k, batch, evidence=ev)
    text = (f"A decode step of {batch:,} tokens, each picking {top_k} of {n_experts} experts at random, touches "
            f"E (1 − (1 − k/E)^B) = {n:.1f} distinct experts on average ({100 * n / n_experts:.0f}% of them), so it "
            f"reads {n:.1f} experts' weights from HBM where one token reads {top_k}: batching shares each read "
            f"among {batch * top_k / n:.1f} tokens.")
    return Panel(fig, (Said(text, (ev,)),), ev, values={"touched": n})
