"""The interconnect page's panels (inference): what one token moves per MoE layer, the page's config beside the
compared one on the same deployment, and the page's computed notes (no Streamlit).

    page_config(base, experts, top_k, latent_ratio)   the page's config: a preset with the sliders' E, top-k, latent
    wire_pair(cfg, pair, dep)          bytes per token per MoE layer by link and direction, both configs paired on
                                       one axis, with what drives the difference (copies, record width, layers)
    three_models(...)                  DeepSeek-V3, K2 and K3 (and K3 without latent) on 8 x 8 and NVL72
    bytes_note / deepep_note / measured_note / measured_command    the computed captions under the figures
    inference_assumptions(cfg, dep, preset)   the assumptions block's arguments
Every byte number comes from `k3lite.interconnect.analytic.wire_bytes_per_token` (through deployment_bytes /
analytic_traffic); every comparison word from `k3lite.base.wording`.
"""
from __future__ import annotations

import functools
from dataclasses import replace
from functools import partial

from k3lite.analytic.ledger import ONE_OFF, variant, wire_or_hbm
from k3lite.analytic.sensitivity import Assumption
from k3lite.base.evidence import derived, measured_here, released
from k3lite.base.units import fmt_bytes, fmt_seconds
from k3lite.base.wording import times
from k3lite.interconnect import (
    SCHEME_LABELS, TOPOLOGIES, WIRE_FORMATS, Deployment, analytic_traffic, compare_presets, deployment_bytes,
    even_expert_counts, node_limit_sweep, snap_experts, traffic_table, wire_bytes_per_token,
)
from k3lite.interconnect.headline import layer_bytes_at
from k3lite.interconnect.measured import MeasureSpec
from k3lite.interconnect.run import expected_for_spec, predicted_for_routing
from k3lite.interconnect.routing import reach_caps
from k3lite.interconnect.sentences import comparison_sentence, node_limit_sentence, routing_clause, routing_rule_words
from k3lite.model.config import K3Config
from k3lite.model.presets import get_preset
from k3lite.model.variants import K3
from k3lite.model.cards import display_name as model_name  # "kimi-k3" -> "Kimi K3" (display_name here adds "your settings")
from k3lite.panels.core import Pair, Panel, Said, changes_nothing, other_name, rebase, sentence, where_else
from k3lite.viz.compare import paired_bars
from k3lite.viz.interconnect import (MEASURED_TRACE, compare_figure, measured_figure, node_limit_figure,
                                    traffic_figure)
from k3lite.viz.memo import shared_figure
from k3lite.viz.style import bytes_axis
from k3lite.viz.topology import draw_topology

BIG = ("deepseek-v3", "kimi-k2", "kimi-k3")
LINKS = (("dispatch_intra", "dispatch<br>NVLink"), ("dispatch_inter", "dispatch<br>NIC"),
         ("combine_intra", "combine<br>NVLink"), ("combine_inter", "combine<br>NIC"))
INTRO = (
    "With expert parallelism (EP) every MoE layer sends each token to the GPUs that hold its top-k experts "
    "(**dispatch**) and gets the weighted expert outputs back (**combine**). How many copies travel depends on the "
    "kernels: a flat all_to_all sends one copy per remote GPU (**direct**); DeepEP's **normal** kernels send one copy "
    "per remote *node* over RDMA through the NIC (network interface card) and fan it out over NVLink there; its "
    "**low-latency** kernels send one message per chosen expert. Change what travels, how far and how, then "
    "**measure** a real expert-parallel layer on this server with `torch.distributed`.")
CONFIGS = released("each model's config.json (DeepSeek-V3, Kimi-K2-Instruct, moonshotai/Kimi-K3)")


@functools.lru_cache(maxsize=1)
def binds() -> str:
    """Does the wire bind a decode step? The serving model's answer (k3lite.analytic.ledger.wire_or_hbm), kept."""
    return wire_or_hbm()


def page_config(base: K3Config, experts: int, top_k: int, latent_ratio: float) -> K3Config:
    """The page's config: `base` with the sliders' E, top-k and latent ratio (1 = no latent), routed by the base's own
    group rule (DeepSeek-V3's 8 groups, best 4) where the sliders' E and top-k still fit it, else by none."""
    latent = round(base.d_model * latent_ratio) if latent_ratio < 1 else 0
    m = base.moe
    fits = experts % m.n_groups == 0 and top_k <= m.topk_groups * (experts // m.n_groups)
    groups = (m.n_groups, m.topk_groups) if fits else (1, 1)
    return base.with_(name=f"{base.name} (your settings)", moe={
        "n_routed_experts": experts, "top_k": top_k, "latent_dim": latent, "n_groups": groups[0],
        "topk_groups": groups[1]})


def _preset_name(cfg: K3Config) -> str:
    return cfg.name.removesuffix(" (your settings)")


def display_name(cfg: K3Config) -> str:
    """'Kimi K3' for the preset as released; 'Kimi K3 (your settings)' once a slider moved E, top-k or the latent."""
    name = _preset_name(cfg)
    try:
        moe = get_preset(name).moe
    except (KeyError, ValueError):
        return cfg.name
    same = (moe.n_routed_experts, moe.top_k, moe.latent_dim) == (cfg.moe.n_routed_experts, cfg.moe.top_k,
                                                                 cfg.moe.latent_dim)
    return model_name(name) + ("" if same else " (your settings)")


def shows_where(pair: Pair) -> str:
    """Where a comparison that moves the same bytes here shows its difference (k3lite.panels.core.where_else), and,
    when it is this page in training, how to get there."""
    training = "interconnect" in pair.comparison.shows_on
    here = " Here it shows in training: switch 'what moves' to training." if training else ""
    return (sentence(where_else(pair, "interconnect")) + here).strip()


def _width(cfg: K3Config) -> str:
    return f"its {cfg.moe.latent_dim}-wide latent" if cfg.moe.latent_dim else f"d_model {cfg.d_model}"


def _layers(n_a: int, n_b: int) -> str:
    return f"{n_a} MoE layers on both" if n_a == n_b else f"{n_a} against {n_b} MoE layers"


def _title(dep: Deployment) -> str:
    return (f"bytes per token per MoE layer: {dep.topology.label}, EP {dep.ep_size}, "
            f"{SCHEME_LABELS[dep.scheme].split(' (')[0]}")


def wire_pair(cfg: K3Config, pair: Pair, dep: Deployment) -> Panel:
    """Both configs on one deployment: bytes per token per MoE layer by direction and link, paired on one axis;
    the sentences say how much differs and what drives it (copies = top-k over E, the record = width + metadata)."""
    pair = rebase(pair, cfg)
    names = (display_name(cfg), pair.label)
    other = other_name(pair, _preset_name(cfg))
    a = analytic_traffic(cfg, dep)
    try:
        b = analytic_traffic(pair.other, dep)
    except ValueError as e:  # e.g. its experts do not split over this EP size under a node limit
        title, div = bytes_axis("bytes / token / MoE layer", a.per_layer.total)
        fig = shared_figure(paired_bars, [c for _, c in LINKS], [getattr(a.per_layer, k) / div for k, _ in LINKS],
                            None, names, pair.ablation, dict(title=title, rangemode="tozero"), title=_title(dep),
                            evidence=derived(wire_bytes_per_token))
        return Panel(fig, (Said(f"{other} cannot be routed on this deployment ({e}); pick another EP size or "
                                "node limit to compare.", (derived(wire_bytes_per_token),)),))
    pa, pb = a.per_layer, b.per_layer
    title, div = bytes_axis("bytes / token / MoE layer", max(pa.total, pb.total))
    ya, yb = ([getattr(p, k) / div for k, _ in LINKS] for p in (pa, pb))
    fig = shared_figure(paired_bars, [c for _, c in LINKS], ya, yb, names, pair.ablation,
                        dict(title=title, rangemode="tozero"), title=_title(dep),
                        text=tuple([f"{v:.3g}" for v in y] for y in (ya, yb)),  # in the axis' unit: short
                        hover=f"%{{y:,.3g}} {title.rsplit('(', 1)[1][:-1]}", evidence=derived(wire_bytes_per_token))
    ev = (derived(wire_bytes_per_token), CONFIGS) if not pair.ablation else (derived(wire_bytes_per_token),)
    values = {"axis_unit": div, "k3_layer": pa.total, "other_layer": pb.total, "k3_copies": pa.copies.total,
              "other_copies": pb.copies.total, "k3_record": pa.dispatch_record, "other_record": pb.dispatch_record,
              "k3_forward": a.per_forward, "other_forward": b.per_forward, "ratio": pa.total / pb.total}
    fmts = f"both {dep.dispatch} out and {dep.combine} back" + (
        f", at most {dep.node_limit} domains per token" if dep.node_limit else "")
    if pa == pb:
        first = Said(f"{other} moves exactly the bytes {names[0]} does: {fmt_bytes(pa.total)} per token per MoE "
                     f"layer, {pa.copies.total:.2f} copies of a {pa.dispatch_record} B record on both (the same "
                     f"{cfg.moe.n_routed_experts} experts, top-{cfg.moe.top_k} and {_width(cfg)} on the wire; {fmts}; "
                     f"{routing_clause([(names[0], cfg.moe)], dep).replace('each config says', 'its config says')}).",
                     ev)
        where = "" if changes_nothing(pair) else shows_where(pair)
        rest = (f"Over a forward pass, {a.n_moe_layers} MoE layers on both: {fmt_bytes(a.per_forward)}. "
                if a.n_moe_layers == b.n_moe_layers else
                f"Over a forward pass ({a.n_moe_layers} against {b.n_moe_layers} MoE layers): "
                f"{fmt_bytes(a.per_forward)} against {fmt_bytes(b.per_forward)}. ")
        return Panel(fig, (first, Said((rest + where).strip(), ev)), derived(wire_bytes_per_token),
                     values=values)
    ca, cb, ra, rb = pa.copies.total, pb.copies.total, pa.dispatch_record, pb.dispatch_record
    first = Said(
        f"On {dep.topology.label}, EP {dep.ep_size}, {names[0]} moves {fmt_bytes(pa.total)} per token per MoE layer "
        f"against {other}'s {fmt_bytes(pb.total)}: it sends {ca:.2f} link copies (NVLink and NIC hops for top-"
        f"{cfg.moe.top_k} of {cfg.moe.n_routed_experts} experts) against {cb:.2f} (top-{pair.other.moe.top_k} of "
        f"{pair.other.moe.n_routed_experts}), "
        f"{times(ca, cb, 'more', 'fewer')}, each dispatch record {ra} B against {rb} B ({_width(cfg)} against "
        f"{_width(pair.other)}), {times(ra, rb, 'larger', 'smaller')}: {pa.total / pb.total:.2f}x the wire bytes "
        f"({fmts}; {routing_clause([(names[0], cfg.moe), (other, pair.other.moe)], dep)}).", ev)
    nic_a, nic_b = (100 * p.inter / p.total if p.total else 0.0 for p in (pa, pb))
    second = Said(
        f"The NIC carries {nic_a:.0f}% of {names[0]}'s bytes and {nic_b:.0f}% of {other}'s. Over a forward "
        f"pass ({_layers(a.n_moe_layers, b.n_moe_layers)}) that is {fmt_bytes(a.per_forward)} against "
        f"{fmt_bytes(b.per_forward)}, {times(a.per_forward, b.per_forward, 'more', 'less')}, and "
        f"{fmt_seconds(a.wire_s_forward)} against {fmt_seconds(b.wire_s_forward)} on the wire.", ev)
    return Panel(fig, (first, second), derived(wire_bytes_per_token), values=values)


def bytes_note(t, dep: Deployment) -> str:
    """The caption under the per-layer bars: copies x record bytes, the metadata's part, the links' bandwidths."""
    b, topo = t.per_layer, dep.topology
    return (f"Computed, not measured: expected copies under uniform routing ({SCHEME_LABELS[dep.scheme]}; formulas "
            f"in k3lite/interconnect/analytic.py) x the bytes of one record: {b.dispatch_record} B out "
            f"({t.dim_on_wire} elements in {dep.dispatch} + routing metadata), {b.combine_record} B back "
            f"({dep.combine}); {fmt_bytes(b.metadata)} of the {fmt_bytes(b.total)} are metadata and padding. "
            f"Time = intra bytes / {topo.intra_bw / 1e9:.0f} GB/s + inter bytes / {topo.inter_bw / 1e9:.0f} "
            f"GB/s per GPU per direction (not overlapped). Bandwidths: {topo.source}.")


def three_models(dispatch: str, combine: str, limit: int, scheme: str) -> tuple[dict[str, Panel], list[dict], Said]:
    """DeepSeek-V3, K2, K3 and K3 without latent on 8 x 8 and NVL72, EP 64: ({topology: its stacked bars}, the
    table's rows, the K3-vs-K2 sentence)."""
    tables = {name: compare_presets(BIG, name, 64, dispatch, combine, limit if name == "multi-node-8x8" else 0,
                                    scheme) for name in ("multi-node-8x8", "nvl72")}
    # the counterfactual beside the comparison: K3 moves the most bytes, but without its latent it would move
    # more (same deployment; the ledger's definition of "K3 without latent", k3lite/analytic/ledger.py)
    k3_plain = variant(get_preset(K3), ONE_OFF["no-latent"]).with_(name="K3 without latent")
    for name, rows in tables.items():
        rows.append(analytic_traffic(k3_plain, Deployment(TOPOLOGIES[name], 64, dispatch, combine,
                                                          limit if name == "multi-node-8x8" else 0, scheme)))
    one_node = {r.name: r for r in compare_presets(BIG, "dgx-b300", 8, dispatch, combine, 0, scheme)}
    words = comparison_sentence({r.name: r for r in tables["multi-node-8x8"]}, one_node, get_preset(K3),
                                get_preset("kimi-k2"), get_preset("deepseek-v3"))
    ev = derived(compare_presets)
    panels = {name: Panel(shared_figure(compare_figure, rows, evidence=ev), title=TOPOLOGIES[name].name)
              for name, rows in tables.items()}
    table = [{"topology": TOPOLOGIES[n].label, **r} for n, rows in tables.items() for r in traffic_table(rows)]
    return panels, table, Said(words, (ev, CONFIGS))


def deepep_note(rows: list[dict], source: str, rdma_peak: float) -> str:
    """The caption under DeepEP's published numbers: how their accounting and ours line up, from the table."""
    ll8 = next(r for r in rows if r["kernels"] == "low-latency" and r["EP"] == 8 and r["direction"] == "dispatch")
    n16 = next(r for r in rows if r["kernels"] == "normal" and r["EP"] == 16 and r["direction"] == "dispatch")
    over_nic = sorted({r["EP"] for r in rows if r["bottleneck link"] == "RDMA" and r["kernels"] == "low-latency"
                       and r["implied wire bandwidth (GB/s)"] * 1e9 > 1.1 * rdma_peak})
    return (
        f"{source}. Their bandwidth is logical: bytes they count / time. For the low-latency rows their bytes "
        f"at their bandwidth reproduce the reported latency (EP 8 dispatch: {ll8['their time (µs)']} µs vs "
        f"{ll8['reported latency (µs)']} µs reported), so the accounting is the same as ours except for what is "
        f"counted: they count messages to the token's own GPU and, for the normal kernels, the copy to the token's "
        f"own node; we count only what leaves it, plus metadata. Our bytes take {ll8['ours / theirs']:.3f}x their "
        f"time on EP 8 low-latency ((G-1)/G of the messages leave the GPU) and {n16['ours / theirs']:.3f}x on EP 16 "
        f"normal (two nodes: about half the node copies are the own node). Low-latency rows whose implied wire "
        f"bandwidth (our bytes / their time) exceeds the NIC's ~50 GB/s by over 10% (EP {over_nic}) cannot have been "
        "pure RDMA: part of that traffic took NVLink (internode_ll.cu uses a peer-to-peer pointer when one exists).")


MEASURE_HOW = (
    "Starts separate Python processes joined by `torch.distributed` (gloo, 127.0.0.1 only), shards the experts of "
    "one small real `LatentMoE` across them, routes with its real router and moves records laid out as the chosen "
    "scheme's (two levels of process groups for DeepEP normal: an all_to_all among same-local-rank peers of the "
    "pretend nodes, then one inside each node). Bytes are counted from the buffers handed to the collectives; the "
    "output is checked against the single-process `LatentMoE.forward`. Tiny sizes, bounded to 60 s, workers always "
    "reaped. `python -m k3lite.interconnect worker` runs the same worker under torchrun on a real cluster.")


def measured_command(sp) -> str:
    """The command line that reproduces a measured run's spec (its evidence)."""
    return (f"python -m k3lite.interconnect measure --ranks {sp.ranks} --ranks-per-node {sp.ranks_per_node} --tokens "
            f"{sp.tokens_per_rank} --dispatch {sp.dispatch} --combine {sp.combine} --node-limit {sp.node_limit} "
            f"--scheme {sp.scheme} (gloo, this server)")


def measured_note(res) -> str:
    """The caption under the measured run: byte-exact or not, and how far this batch is from uniform routing."""
    return (f"Measured vs the analytic count for the same routing decisions, rank by rank: "
            f"{'equal to the byte' if res.agree else 'DIFFERENT'} (exact integer comparison). Against the "
            f"uniform-routing expectation the headline uses, this batch is {100 * res.uniform_gap():+.1f}% off: a "
            f"real router on {res.n_tokens} tokens is not uniform. 'Intra' pairs ranks in pretend nodes of "
            f"{res.spec.ranks_per_node}; on loopback all bytes travel the same way.")


def inference_assumptions(cfg: K3Config, dep: Deployment, preset: str) -> tuple:
    """The assumptions block's arguments (key, headline name, headline, assumptions, format) and its `also`:
    bytes per token per MoE layer at the page's deployment, each input moved ±20%."""
    fmts = {side: WIRE_FORMATS[getattr(dep, side)] for side in ("dispatch", "combine")}
    args = (
        "ic_x_assumptions", f"Bytes per token per MoE layer ({preset} at your settings, {dep.topology.label}, "
                            f"EP {dep.ep_size})",
        partial(layer_bytes_at, cfg, dep),
        [Assumption("dispatch_elem_bytes", "dispatch: bytes per element on the wire", fmts["dispatch"].elem_bytes,
                    fmts["dispatch"].description, "the 'dispatch precision' control", "B"),
         Assumption("combine_elem_bytes", "combine: bytes per element on the wire", fmts["combine"].elem_bytes,
                    fmts["combine"].description, "the 'combine precision' control", "B"),
         Assumption("copies_scale", "copies per token, against uniform routing's expectation", 1.0,
                    f"uniform routing: {dep.scheme} sends {deployment_bytes(cfg, dep).copies.total:.2f} copies per "
                    "token on average; a real router's batch differs (the measured run below says by how much)"),
         Assumption("metadata_scale", "routing metadata and padding per record, against DeepEP's layout", 1.0,
                    "the record layouts read from DeepEP's buffers (k3lite/interconnect/deployment.py)")],
        fmt_bytes)
    also = [("routing", "uniform over the experts, every token independent; the busiest GPU's extra load is not in "
                        "this average (the home ledger's balancing toggle counts it)"),
            ("link bandwidths", f"{dep.topology.source} (the wire times, not the bytes)"),
            ("what counts", "only copies that leave the token's GPU; DeepEP's own tables also count local ones")]
    return args, also


LATENT = {"1 (no latent)": 1.0, "1/2": 0.5, "1/4": 0.25, "1/8": 0.125}  # the latent ratio control's choices


def preset_knobs(name: str) -> dict:
    """A preset's E, top-k and nearest latent ratio, as the page's widget values (what choosing a preset sets)."""
    cfg = get_preset(name)
    ratio = (cfg.moe.latent_dim or cfg.d_model) / cfg.d_model
    return {"ic_experts": cfg.moe.n_routed_experts, "ic_top_k": cfg.moe.top_k,
            "ic_latent": min(LATENT, key=lambda k: abs(LATENT[k] - ratio))}


def layer_metrics(t, dep: Deployment) -> list[tuple[str, str]]:
    """(label, value) of the per-layer metrics: bytes, per forward pass, copies, wire time, each link's share."""
    b, topo = t.per_layer, dep.topology
    return [("bytes / token / MoE layer", fmt_bytes(b.total)),
            (f"per forward pass ({t.n_moe_layers} MoE layers)", fmt_bytes(t.per_forward)),
            ("copies per token: NVLink + NIC", f"{t.copies.intra:.2f} + {t.copies.inter:.2f}"),
            ("time on the wire / token / forward", fmt_seconds(t.wire_s_forward)),
            ("NVLink bytes / layer, time", f"{fmt_bytes(b.intra)}, {fmt_seconds(b.intra / topo.intra_bw)}"),
            ("NIC bytes / layer, time", f"{fmt_bytes(b.inter)}, {fmt_seconds(b.inter / topo.inter_bw)}")]


def sweep_blocker(dep: Deployment | None, topo) -> str:
    """Why the node-limit sweep cannot be drawn ("" when it can): no routable setting, or a single domain."""
    if not dep:
        return "Pick a setting the model can route (above) to see the node-limit sweep."
    if dep.n_domains < 2:
        return (f"EP {dep.ep_size} on {topo.name} is one NVLink domain: nothing crosses a NIC, so the node limit has "
                "nothing to cut. Pick the 8 x 8 topology to see it.")
    return ""


@functools.lru_cache(maxsize=32)
def _sweep(cfg: K3Config, topology: str, ep: int, dispatch: str, combine: str) -> dict:
    return node_limit_sweep(cfg, topology, ep, dispatch, combine)  # samples routing (~1 s): kept per setting


def node_limit_panel(cfg: K3Config, dep: Deployment, topology: str) -> Panel:
    """NIC bytes vs node limit M per scheme, and what a limit cuts (k3lite.interconnect.sentences)."""
    sweep = _sweep(cfg, topology, dep.ep_size, dep.dispatch, dep.combine)
    fig = shared_figure(node_limit_figure, sweep, dep.node_limit, evidence=derived(node_limit_sweep))
    m = cfg.moe
    cap = reach_caps(m.n_routed_experts, dep.ep_size, dep.gpus_per_domain, m.n_groups, m.topk_groups)[1] if (
        m.topk_groups < m.n_groups) else 0
    words = node_limit_sentence(sweep, dep.n_domains, routing_rule_words(m, replace(dep, node_limit=0)), cap)
    return Panel(fig, (Said(words, (derived(node_limit_sweep, node_limit_sentence),)),) if words else ())


def settings(preset: str, experts: int, top_k: int, latent: str, topology: str, ep: int, dispatch: str,
             combine: str, limit: int, scheme: str) -> tuple:
    """(config, deployment, its traffic, GPUs the drawn token reaches, "") for the page's controls; for a setting
    the model cannot route (e.g. top-k above the experts a node limit leaves): (None, None, None, 0, why)."""
    try:
        cfg = page_config(get_preset(preset), experts, top_k, LATENT[latent])
        dep = Deployment(TOPOLOGIES[topology], ep, dispatch, combine, limit, scheme)
        t = analytic_traffic(cfg, dep)
        hops = draw_topology(cfg, dep).hops
    except ValueError as e:
        return None, None, None, 0, str(e)
    return cfg, dep, t, int((hops["dispatch_intra"].sum(0) + hops["dispatch_inter"].sum(0) > 0).sum()), ""


def bytes_panel(t, dep: Deployment) -> Panel:
    """The per-layer and per-forward bars of one config, with the caption on what they are made of."""
    return Panel(shared_figure(traffic_figure, t, evidence=derived(analytic_traffic)),
                 (Said(bytes_note(t, dep), (derived(analytic_traffic),)),))


def measured_panel(res) -> Panel:
    """The measured run beside the analytic counts for its routing and uniform routing's expectation."""
    ran = measured_here(measured_command(res.spec))
    return Panel(shared_figure(measured_figure, res, evidence=derived(predicted_for_routing, expected_for_spec),
                               evidence_by_name={MEASURED_TRACE: ran}),
                 (Said(measured_note(res), (ran, derived(predicted_for_routing))),))


def measure_spec(ranks: int, tokens: int, fmt: str, scheme: str, limit: bool) -> MeasureSpec:
    """The measured run's spec from the page's controls: pretend nodes of ranks / 2, bf16 combine under fp8."""
    return MeasureSpec(ranks=ranks, ranks_per_node=max(1, ranks // 2), tokens_per_rank=tokens, dispatch=fmt,
                       combine="bf16" if fmt == "fp8" else fmt, node_limit=int(limit), scheme=scheme, timeout_s=60.0)


def expected_note(spec: MeasureSpec, expected) -> str:
    """What uniform routing expects, shown before any worker starts."""
    return (f"Expected under uniform routing: {fmt_bytes(expected.total)} per token per layer "
            f"({fmt_bytes(expected.dispatch)} out, {fmt_bytes(expected.combine)} back); now measuring "
            f"{spec.ranks} real ranks…")


EP_CHOICES = (1, 2, 4, 8, 16, 32, 48, 64, 72)
PRESETS = ("kimi-k3", "kimi-k2", "deepseek-v3", "lite")
MODE_HELP = ("inference: one decoded token's dispatch and combine; training: one training step's traffic per token "
             "(EP forward and backward, pipeline stages, DP gradients)")
DEEPEP_THEIRS = ("EP", "node limit M (0 = none)", "their bandwidth (GB/s)", "reported latency (µs)")  # their columns


def expert_options(topology: str, ep: int, experts: int) -> tuple[list[int], int, list[int], int, int | None]:
    """(EP sizes the topology allows, the EP size kept, the E values that shard evenly over it, the E kept, the E
    snapped away from or None). E must shard evenly over the EP size (node-limited routing needs it, and so do real
    deployments): a value that no longer fits (EP or preset changed, an old link) snaps to the nearest that does."""
    ep_options = [e for e in EP_CHOICES if e <= TOPOLOGIES[topology].n_gpus]
    ep = ep if ep in ep_options else ep_options[-1]
    e_options = even_expert_counts(ep)
    if experts in e_options:
        return ep_options, ep, e_options, experts, None
    return ep_options, ep, e_options, snap_experts(experts, ep), experts
FORMAT_HELP = "fp32 makes the output check exact (1e-5); bf16/fp8 are checked to their rounding error"
LIMIT_HELP = "the real router's group-limited top-k, one group per pretend node of ranks/2 ranks"
TOPOLOGY_NAMES = {k: t.label for k, t in TOPOLOGIES.items()}  # short labels: the full name was clipped
TOPOLOGY_HELP = "; ".join(f"**{t.label}**: {t.name}" for t in TOPOLOGIES.values())
SWEEP_TOGGLE = "compute the sweep (it samples node-limited routing: the slowest part of this page)"


def snap_note(snapped: int, ep: int, experts: int, step: int) -> str:
    return (f"E = {snapped} does not split evenly over EP {ep} GPUs: using E = {experts}, the nearest multiple of "
            f"{step}.")
SECTIONS = {  # the page's expanders, by key
    "interconnect_x_bytes_per_layer_per": "Bytes per layer and per forward pass, by link and direction",
    "interconnect_x_node_limited_routing_nic": "Node-limited routing: NIC bytes vs node limit M, three schemes",
    "interconnect_x_model_comparison": "DeepSeek-V3 vs Kimi K2 vs Kimi K3: 8 nodes x 8 GPUs and one NVL72 rack, EP 64",
    "ic_x_training_time": "Time per token, the bubble, and what a stage boundary carries",
}
