"""Home's panels (views/home.py): the architecture map, the texts around it, the parameter tables, and K3 beside the
compared model. The bytes ledger and the ablation view are in k3lite/panels/home_ledger.py.

    config_of(preset, experts, top_k, layers, latent)  the page's config: a preset with its four inputs
    map_anatomy / map_panel(preset, *knobs)            the map and its sentence (anatomy at MAP_CONTEXT)
    ideas_markdown(live, arithmetic)                   "Five ideas in K3", every number from the configs
    published_rows() / counts_caption()                our counts against the published totals, and why they differ
    compare_panel(pair)                                parameters by part and bytes per decoded token by where they
                                                       move, both models on shared axes, with the sentences
"""
from __future__ import annotations

from functools import lru_cache

from plotly.subplots import make_subplots

from k3lite.analytic import ledger as byte_ledger, memory
from k3lite.analytic.anatomy import PART_LABEL, PARTS, RELEASED_K3_PART_FORMATS, anatomy
from k3lite.analytic.params import active_with_embedding, count_params, fmt
from k3lite.base import sources
from k3lite.base.evidence import derived
from k3lite.base.units import fmt_bytes
from k3lite.base.wording import compare, times
from k3lite.model.config import K3Config
from k3lite.model.presets import KIMI_K3_STATED_TOTAL, get_preset, kimi_k3_vision_params
from k3lite.model.config import routed_fraction
from k3lite.model.cards import CARDS, display_name
from k3lite.panels.core import Pair, Panel, Said, sentence, where_else
from k3lite.viz.archmap import architecture_map
from k3lite.viz.compare import pair_colors
from k3lite.viz.memo import shared_figure
from k3lite.viz.style import COUNTERFACTUAL_PATTERN, fit_titles, log_axis

MAP_CONTEXT = 131072  # tokens of context the cache bytes on the map assume (128K)
KNOB_RANGE = {"experts": (1, 4096), "top_k": (1, 64), "layers": (1, 200), "latent": (0, 16384)}  # the inputs' bounds


def knobs(cfg: K3Config) -> tuple[int, int, int, int]:
    """The page's four inputs of a config: routed experts, top-k, layers, latent dim."""
    return cfg.moe.n_routed_experts, cfg.moe.top_k, cfg.n_layers, cfg.moe.latent_dim


def config_of(preset: str, experts: int, top_k: int, layers: int, latent: int) -> K3Config:
    return get_preset(preset).with_(n_layers=layers, moe={"n_routed_experts": experts, "top_k": top_k,
                                                          "latent_dim": latent})


def question() -> str:
    """The page's opening question, its numbers from K3's config."""
    k3 = get_preset("kimi-k3")
    share = routed_fraction(k3.moe.top_k, k3.moe.n_routed_experts)
    return (f"**Kimi K3 has {KIMI_K3_STATED_TOTAL / 1e12:.2f} trillion parameters, yet each token visits only "
            f"{k3.moe.top_k} of its {k3.moe.n_routed_experts} experts ({100 * share:.1f}%): where do the "
            "parameters live, and what does one token cost to move?**")


@lru_cache(maxsize=64)  # a meta-device build per config (5 s for K3): once per server
def count(preset: str, experts: int, top_k: int, layers: int, latent: int):
    return count_params(config_of(preset, experts, top_k, layers, latent))


@lru_cache(maxsize=16)
def map_anatomy(preset: str, experts: int, top_k: int, layers: int, latent: int):
    """The map's numbers: K3 as released stores its routed experts in MXFP4, the rest bf16."""
    an = anatomy(config_of(preset, experts, top_k, layers, latent), context=MAP_CONTEXT)
    return an.in_formats(RELEASED_K3_PART_FORMATS) if preset == "kimi-k3" else an


def _label(part: str) -> str:
    return PART_LABEL[part] if PART_LABEL[part][:2].isupper() else PART_LABEL[part].lower()  # KDA, MLA, LM head


@lru_cache(maxsize=16)  # read-only figures, shared by every session
def map_panel(preset: str, experts: int, top_k: int, layers: int, latent: int) -> Panel:
    """The architecture map of the page's config, and the sentence on its biggest part."""
    cfg = config_of(preset, experts, top_k, layers, latent)
    an = map_anatomy(preset, experts, top_k, layers, latent)
    ev = derived(anatomy, count_params)
    shares = an.shares()
    top_params = max(shares, key=lambda k: shares[k][0])
    top_bytes = max(shares, key=lambda k: shares[k][1])
    text = (f"In {display_name(preset)}, {_label(top_params)} hold **{100 * shares[top_params][0]:.1f}%** of the parameters and "
            f"take {100 * shares[top_params][1]:.1f}% of the bytes a decoded token moves ({an.format_words}, batch "
            f"1); the biggest byte share is {_label(top_bytes)} ({100 * shares[top_bytes][1]:.1f}%). Click an "
            "element to open its page.")
    return Panel(architecture_map(cfg, anatomy=an, evidence=(ev,)), (Said(text, (ev,)),), ev)


def share_rows(shares: dict, page_of) -> list[dict]:
    """Each part's share of the parameters and of the bytes, with its page's name (`page_of(part)`)."""
    return [{"part": PART_LABEL[k], "share of parameters": p, "share of bytes per decoded token": b,
             "page": page_of(k)} for k, (p, b) in shares.items()]


@lru_cache(maxsize=2)
def _idea_bytes(context: int) -> dict[str, str]:
    return byte_ledger.idea_bytes(context, fmt_bytes)


def ideas_markdown(live: str, arithmetic: str, format_words: str) -> tuple[str, str]:
    """(the "Five ideas in K3" text, the caption on reading the map): `live` and `arithmetic` name the pages that
    run PyTorch and those that are arithmetic (views.registry)."""
    k3 = get_preset("kimi-k3")
    ideas, classic = _idea_bytes(MAP_CONTEXT), byte_ledger.variant(k3, byte_ledger.ONE_OFF["no-latent"]).moe
    text = f"""{k3.moe.n_routed_experts} routed experts of which each token visits {k3.moe.top_k}, plus
{k3.moe.n_shared_experts} always-on shared experts ({sources.EXPERT_COUNTS}). The *bytes* in each line: {ideas["setting"]}.

1. **Stable LatentMoE** — experts work in a smaller *latent* ({k3.d_model} → {k3.moe.latent_dim}), which buys
   {k3.moe.n_routed_experts} experts, top-{k3.moe.top_k}, for the expert parameters and FLOPs of a classic
   MoE's {classic.n_routed_experts}, top-{classic.top_k}. *Bytes*: {ideas["no-latent"]}.
2. **Quantile balancing** — each token still picks its top experts, but after subtracting a per-expert cut
   read off the rank of earlier batches' scores ("grading on a curve"), so no expert is swamped and there is
   no step size to tune. *Bytes*: {ideas["balancing"]}.
3. **Kimi Delta Attention (KDA)** — a linear-attention layer with a fixed-size memory that forgets
   per channel and corrects itself (the delta rule), so long contexts cost no growing cache.
4. **A 3:1 hybrid** — three KDA layers for every global attention layer (MLA, Multi-head Latent Attention, DeepSeek's
   attention with a compressed KV cache) keeps full recall where it counts. *Bytes* (3 and 4 against all-MLA):
   {ideas["all-mla"]}.
5. **Attention Residuals** — each layer looks back over earlier layers' outputs with a softmax over depth,
   grouped into blocks to stay cheap. *Bytes*: {ideas["standard-residual"]}.

{live} run small PyTorch implementations on this server's CPU (the wire page when you measure); {arithmetic} are
arithmetic over the published configs. What is shipped rather than computed is listed under "What is live and what
is shipped" below. Parameter counts are **counted by building the real k3lite modules on PyTorch's `meta` device**
(shapes only, no memory), not from a formula."""
    caption = (f"Hover an element of the map for its parameters and the bytes one decoded token moves through it "
               f"(batch 1, {format_words}, {MAP_CONTEXT:,}-token context). The arcs: the block Attention Residual "
               "sums the LM head reads; each layer reads the ones completed before it.")
    return text, caption


def _published(name: str):
    return count(name, *knobs(get_preset(name)))


def published_rows() -> list[dict]:
    """Our count of each published config against its stated total and active parameters."""
    rows = []
    for name, (total, active, source, convention) in ((k, c.stated) for k, c in CARDS.items() if c.stated):
        ours = _published(name)
        stated_active, with_embedding, active_source = convention or (active, False, None)
        ours_active = active_with_embedding(ours) if with_embedding else ours.active
        rows.append({
            "config": name, "stated total": fmt(total), "our total": fmt(ours.total),
            "total diff": f"{100 * (ours.total / total - 1):+.1f} %",
            "stated active": fmt(stated_active) if stated_active else "—",
            "our active, same convention": fmt(ours_active),
            "active diff": f"{100 * (ours_active / stated_active - 1):+.1f} %" if stated_active else "—",
            "active convention": ("embedding counted (as the source states)" if with_embedding
                                  else "not stated; ours leaves the embedding out" if stated_active else "—"),
            "source": source + (f"; active: {active_source}" if active_source else ""),
        })
    return rows


def counts_caption() -> str:
    """Why K2's, DeepSeek-V3's and K3's counts differ from what is quoted."""
    k2, ds, k3 = (_published(n) for n in ("kimi-k2", "deepseek-v3", "kimi-k3"))
    k2_stated, vision = CARDS["kimi-k2"].stated.total, kimi_k3_vision_params()
    return (
        f"Kimi K2: its config.json counts to {fmt(k2.total)} ({k2.total / 1e12:.3f}T); the {fmt(k2_stated)} we quote is "
        f"{100 * (k2_stated / k2.total - 1):.1f}% more, and we do not know why: it is *not* a multi-token-prediction "
        "layer (K2's config.json sets `num_nextn_predict_layers: 0`), and its model card says 1 trillion total "
        "parameters. DeepSeek-V3's active count is compared with its weights README, which says what it counts "
        f"(the report's 37B does not): our count with the embedding in is {fmt(active_with_embedding(ds))}. "
        f"Kimi K3: the preset is the released config.json (`k3lite/model/presets.py`, `kimi_k3`); the stated "
        f"{fmt(CARDS['kimi-k3'].stated.total)} includes the vision tower ({fmt(vision)}, counted from its "
        f"vision_config), which k3lite does not build: text {fmt(k3.total)} + vision "
        f"{fmt(vision)} = {(k3.total + vision) / 1e12:.4f}T.")


# ------------------------------------------------------------------------------------- K3 beside another model
SHORT_PART = {**PART_LABEL, "latent_proj": "latent projections", "attn_res": "AttnRes"}  # a phone's axis
BYTE_PARTS = {"nvlink": "NVLink", "nic": "NIC", "hbm_weights": "HBM weights", "hbm_cache": "HBM cache",
              "attnres": "AttnRes reads"}  # ledger segments, short enough for a phone's axis


def parts_figure(parts: list[str], params: tuple[list[float], list[float]], segments: list[str],
                 moved: tuple[list[float], list[float]], names: tuple[str, str], ablation: bool, title: str):
    """Two stacked panels of horizontal paired bars: parameters by part (top) and bytes per decoded token by where
    they move (bottom), each on one log axis for both models. K3 solid; the other in its colour, hatched for a
    K3 variant (k3lite.viz.compare's look)."""
    c1, c2 = pair_colors(names[1], ablation)
    fig = make_subplots(rows=2, cols=1, row_heights=[len(parts), len(segments)], vertical_spacing=0.18,
                        subplot_titles=("parameters (log)", "bytes per decoded token (log)"))
    for row, cats, (a, b), unit in ((1, parts, params, ""), (2, segments, moved, "B")):
        for name, ys, colour, hatched in ((names[0], a, c1, False), (names[1], b, c2, ablation)):
            marker = dict(color=colour, pattern=COUNTERFACTUAL_PATTERN) if hatched else dict(color=colour)
            # a part one model lacks (0) has no bar on a log axis: its hover still says 0
            fig.add_bar(y=cats, x=[v if v > 0 else None for v in ys], orientation="h", name=name, marker=marker,
                        legendgroup=name, showlegend=row == 1, row=row, col=1,
                        hovertemplate=f"%{{y}}: %{{x:.3s}}{unit}<extra>{name}</extra>")
        # the subplot titles say what; every other decade on the parameters' wider range (legible at 390 px)
        fig.update_xaxes({**log_axis(""), "ticksuffix": unit, "dtick": 2 if row == 1 else 1}, row=row, col=1)
        fig.update_yaxes(autorange="reversed", row=row, col=1)
    fig.update_layout(barmode="group", height=130 + 24 * (len(parts) + len(segments)), bargap=0.15,
                      margin=dict(l=10, r=10, t=60, b=10))
    return fit_titles(fig, title)


def _than(a: float, b: float, more: str, less: str, noun: str, same: str) -> str:
    """'4.12x more parameters than' or `same` ('as many parameters as') from the two numbers."""
    word = times(a, b, more, less)
    if word != "about the same":
        return f"{word} {noun} than"
    return same if a == b else f"about {same}"  # within 0.5%: two printed numbers that differ are not "as many"


def _driver(segment: str, pair: Pair, names: tuple[str, str], batch: int) -> str:
    """What makes the segment that differs most differ, in numbers from the two configs."""
    cfgs = (pair.k3, pair.other)
    if segment == "hbm_cache":
        mla = [cfg.layer_types().count("mla") for cfg in cfgs]
        return (f" The cache grows with the MLA layers: {mla[0]} of {pair.k3.n_layers} in {names[0]}, {mla[1]} of "
                f"{pair.other.n_layers} in {names[1]}.")
    if segment == "hbm_weights":
        touched = [(memory.expected_experts_touched(c.moe.n_routed_experts, c.moe.top_k, batch), c.moe.n_routed_experts,
                    c.ffn_types().count("moe")) for c in cfgs]
        return (f" A step of {batch} sequences reads every expert they touch, shared by them: {touched[0][0]:.0f} of "
                f"{touched[0][1]} per MoE layer in {touched[0][2]} layers of {names[0]}, against {touched[1][0]:.0f} "
                f"of {touched[1][1]} in {touched[1][2]} of {names[1]}.")
    if segment in ("nvlink", "nic"):
        copies = [c.moe.top_k * c.ffn_types().count("moe") for c in cfgs]
        return (f" Each token sends a copy to each of its top-k experts in every MoE layer: {copies[0]:,} copies in "
                f"{names[0]}, {copies[1]:,} in {names[1]}.")
    return ""


@lru_cache(maxsize=32)
def compare_panel(pair: Pair, context: int = MAP_CONTEXT, deploy: byte_ledger.Deploy = byte_ledger.Deploy()) -> Panel:
    """K3 (the page's config) and the compared model: parameters by part (k3lite.analytic.anatomy) and bytes per
    decoded token by where they move (the ledger's count, k3lite.analytic.ledger.ledger_of: both in the ledger's
    weight format and deployment), with what differs most."""
    names = (pair.k3_label, pair.label)
    tots = [anatomy(cfg, context).totals() for cfg in (pair.k3, pair.other)]
    parts = [p for p in PARTS if tots[0][p].params or tots[1][p].params]
    params = tuple([float(t[p].params) for p in parts] for t in tots)
    rows = [byte_ledger.ledger_of(cfg, context, deploy) for cfg in (pair.k3, pair.other)]
    segs = [s for s in BYTE_PARTS if rows[0].parts()[s] or rows[1].parts()[s]]
    moved = tuple([r.parts()[s] for s in segs] for r in rows)
    ev = derived(anatomy, byte_ledger.ledger_of)
    fig = shared_figure(parts_figure, [SHORT_PART[p] for p in parts], params, [BYTE_PARTS[s] for s in segs], moved,
                        names, pair.ablation, f"{names[0]} and {names[1]}: where the parameters are and what a token "
                        "moves", evidence=ev)
    pa, pb = sum(params[0]), sum(params[1])
    ba, bb = rows[0].total, rows[1].total
    setting = (f"{byte_ledger.WEIGHT_PRECISION.upper()} weights, batch {deploy.batch}, {context:,}-token context, "
               f"experts over {deploy.ep_size} GPUs")
    exact = 1e-9  # "the same" only when the counts are equal: a 0.3% difference in wire bytes is still one
    same = (compare(pa, pb, "more", "fewer", "same", exact) == "same", compare(ba, bb, "more", "less", "same", exact)
            == "same")
    if all(same):
        where = sentence(where_else(pair, "home"))
        first = (f"{names[0]} and {names[1]} have the same {fmt(pa)} parameters and a decoded token moves the same "
                 f"{fmt_bytes(ba)} ({setting}): {pair.comparison.instead} changes neither count."
                 + (f" {where}" if where else ""))
        return Panel(fig, (Said(first, (ev,)),), ev, values={"k3_params": pa, "other_params": pb, "k3_bytes": ba,
                                                             "other_bytes": bb})
    first = (f"{names[0]} has {_than(pa, pb, 'more', 'fewer', 'parameters', 'as many parameters as')} {names[1]} "
             f"({fmt(pa)} against {fmt(pb)}), and a decoded token moves "
             f"{times(ba, bb, 'more', 'fewer', 'about as many')} bytes ({fmt_bytes(ba)} against "
             f"{fmt_bytes(bb)}; {setting}).")
    top_part = max(range(len(parts)), key=lambda i: abs(params[0][i] - params[1][i]))
    top_seg = max(range(len(segs)), key=lambda i: abs(moved[0][i] - moved[1][i]))
    x, y = moved[0][top_seg], moved[1][top_seg]
    second = (f"The bytes differ most in {BYTE_PARTS[segs[top_seg]]} ({fmt_bytes(x)} against {fmt_bytes(y)}, "
              f"{times(x, y, 'more', 'less')}); the parameters in the "
              f"{PART_LABEL[parts[top_part]]} ({fmt(params[0][top_part])} against {fmt(params[1][top_part])}).")
    second += _driver(segs[top_seg], pair, names, deploy.batch)
    return Panel(fig, (Said(first, (ev,)), Said(second, (ev,))), ev,
                 values={"k3_params": pa, "other_params": pb, "k3_bytes": ba, "other_bytes": bb,
                         "top_seg_k3": x, "top_seg_other": y})
