"""Home's lower sections (views/home.py): the bytes ledger (DeepSeek-V3, K2, K3 side by side, K3 with ideas switched
off) and "K3 without each idea" (the ablation view). The page holds the widgets; these compute.

    ledger_panel(picked, context, batch, per, toggles, overload)  the ledger figure and why K3's bar differs
    saving_metrics(context, deploy)                               what each idea saves, one metric per idea
    deployment_caption(deploy, rows, url_path)                    the deployment the bars assume
    ledger_assumptions(context, deploy)                           the assumptions block's rows
    ablation_panel(context) / ablation_table(rows)                K3 against K3 without each idea
"""
from __future__ import annotations

from functools import lru_cache

from k3lite.analytic import ledger as byte_ledger
from k3lite.analytic.ablation import ablation as ablation_rows
from k3lite.analytic.ablation import sentences as ablation_sentences
from k3lite.analytic.ablation import deployment_sentence
from k3lite.analytic.ledger import ledger_of
from k3lite.analytic.params import count_params, fmt
from k3lite.analytic.sensitivity import Assumption
from k3lite.analytic.serving.target import solve
from k3lite.base.evidence import derived
from k3lite.base.units import fmt_bytes
from k3lite.model.presets import get_preset
from k3lite.model.variants import COMPARISONS
from k3lite.panels.core import Panel, Said, where_else
from k3lite.viz.ablation import ablation_figure
from k3lite.viz.ledger import ledger_figure
from k3lite.viz.memo import shared_figure

CONTEXTS = [4_096, 32_768, 131_072, 1_048_576]
BATCHES = [1, 8, 64, 256, 1024]
PER = {"per decoded token": "decoded token", "per GFLOP of the token's work": "GFLOP of a token's work"}
# The hatched bar is K3 with only the ticked ideas on. Latent starts unticked, so at the defaults the comparison has
# "K3 without latent" beside it; K3 with every idea on is the K3 bar itself, so then no hatched bar is drawn.
# (Before: K3 without latent was always drawn and unticking latent changed nothing.)
# By byte_ledger.ONE_OFF key (a K3_MINUS variant, or balancing): (checkbox label, URL key, ticked at first).
TOGGLES = {"no-latent": ("latent experts", "ledger_latent", False), "all-mla": ("3:1 KDA hybrid", "ledger_hybrid", True),
           "standard-residual": ("block AttnRes", "ledger_block", True),
           byte_ledger.BALANCING: ("balancing", "ledger_balancing", True)}
WHAT_THE_BARS_ARE = (
    "One decoded token, split by where its bytes move: **NVLink** and **NIC** (experts on other GPUs: "
    "dispatch and combine), **HBM weights** (read once per step, shared by the batch), **HBM KV cache / KDA "
    "state** (this token's own sequence) and **Attention Residual reads**. Every segment comes from the "
    "function the mechanism page uses (interconnect, hybrid, Attention Residuals, parameter count); hatched "
    "bars are K3 with an idea switched off. Formulas: `k3lite/analytic/ledger.py`.")


def toggles_of(on: dict[str, bool]) -> byte_ledger.Toggles:
    """The ledger's Toggles from the checkboxes (`on`: TOGGLES key -> ticked): each unticked idea's variant off."""
    return byte_ledger.Toggles(frozenset(k for k, ticked in on.items() if not ticked and k != byte_ledger.BALANCING),
                               on.get(byte_ledger.BALANCING, True))


@lru_cache(maxsize=32)
def work_of(preset: str, context: int, toggles: byte_ledger.Toggles):
    return byte_ledger.token_work(preset, context, toggles)


@lru_cache(maxsize=4)  # meta-device counts of K3 and its classic counterpart
def classic_counts():
    k3 = get_preset("kimi-k3")
    classic = byte_ledger.variant(k3, byte_ledger.ONE_OFF["no-latent"])
    return k3, classic, count_params(k3), count_params(classic)


def ledger_rows(picked: tuple[str, ...], context: int, deploy: byte_ledger.Deploy, chosen: byte_ledger.Toggles):
    """(the ledger rows: the picked models, then K3 with only the chosen ideas unless that is K3 itself;
    (preset, toggles) of each)."""
    rows = [byte_ledger.ledger(p, context, deploy=deploy) for p in picked]
    keyed = [(p, byte_ledger.ALL_ON) for p in picked]
    if chosen != byte_ledger.ALL_ON:
        rows.append(byte_ledger.ledger("kimi-k3", context, chosen, deploy))
        keyed.append(("kimi-k3", chosen))
    return rows, keyed


def ledger_panel(picked: tuple[str, ...], context: int, deploy: byte_ledger.Deploy, per: str,
                 chosen: byte_ledger.Toggles) -> Panel:
    """The ledger figure (per decoded token, or per GFLOP of its work) and, with K3 and DeepSeek-V3 both picked,
    why K3's bar is longer or shorter."""
    rows, keyed = ledger_rows(picked, context, deploy, chosen)
    normalised = per != list(PER)[0]
    shown = ([byte_ledger.per_work(r, work_of(p, context, t).total) for r, (p, t) in zip(rows, keyed)] if normalised
             else rows)
    ev = derived(byte_ledger.ledger, *((byte_ledger.per_work, byte_ledger.token_work) if normalised else ()))
    hatched = frozenset(r.name for r, (_p, t) in zip(rows, keyed) if t != byte_ledger.ALL_ON)  # K3 with ideas off
    fig = shared_figure(ledger_figure, shown, hatched, PER[per], evidence=ev)
    said = ()
    if {"kimi-k3", "deepseek-v3"} <= set(picked):
        k3_row, ds_row = rows[picked.index("kimi-k3")], rows[picked.index("deepseek-v3")]
        text = byte_ledger.why_more_bytes(k3_row, ds_row, work_of("kimi-k3", context, byte_ledger.ALL_ON),
                                          work_of("deepseek-v3", context, byte_ledger.ALL_ON), fmt_bytes)
        said = (Said(text, (derived(byte_ledger.ledger, byte_ledger.token_work, byte_ledger.why_more_bytes),)),)
    return Panel(fig, said, ev)


def saving_metrics(context: int, deploy: byte_ledger.Deploy) -> list[tuple[str, str, str]]:
    """(label, amount, help) of one metric per idea: what it saves per decoded token (the busiest GPU's for
    balancing)."""
    parts_by_idea = byte_ledger.saving_parts(context, deploy)
    out = []
    for (key, idea), suffix in zip(byte_ledger.IDEAS, ("per token",) * 3 + ("busiest GPU",)):
        verb, amount, why = byte_ledger.saving_words(idea, parts_by_idea[key], fmt_bytes)
        out.append((f"{idea} {verb}, {suffix}", amount,
                    f"bytes per decoded token of K3 with this idea off, minus K3 as designed, all segments together. "
                    f"{why}"))
    return out


def interconnect_link(url_path: str, deploy: byte_ledger.Deploy) -> str:
    """The interconnect page (`url_path`) opened on the ledger's deployment (its url_state keys), K3 at its defaults."""
    query = {"ic_preset": "kimi-k3", "ic_topology": deploy.topology, "ic_ep": deploy.ep_size,
             "ic_dispatch": deploy.dispatch, "ic_combine": deploy.combine, "ic_scheme": deploy.scheme}
    return f"/{url_path}?" + "&".join(f"{k}={v}" for k, v in query.items())


def deployment_caption(deploy: byte_ledger.Deploy, rows, url_path: str) -> str:
    """The deployment and the bars the ledger draws, linking the interconnect page (`url_path`) on the same
    settings."""
    link = interconnect_link(url_path, deploy)
    k3_cfg, classic_cfg, k3_count, classic_count = classic_counts()
    wire_vs_hbm = [(r.hbm_weights + r.hbm_cache + r.attnres) / (r.nvlink + r.nic) for r in rows if r.nvlink + r.nic > 0]
    return (
        f"Deployment: {deploy.topology} rack, experts over {deploy.ep_size} GPUs, {deploy.dispatch.upper()} dispatch / "
        f"{deploy.combine.upper()} combine, DeepEP {deploy.scheme} kernels ([the same settings on the interconnect "
        f"page]({link})); {byte_ledger.WEIGHT_PRECISION.upper()} "
        "weights; uniform routing. The bars: DeepSeek-V3 and Kimi K2 from their published configs; K3 is its released config.json "
        "(home's table); **K3 without latent** is the same-sized classic MoE the serving page's waterfall starts from: "
        f"{classic_cfg.moe.n_routed_experts} experts, top-{classic_cfg.moe.top_k}, working in d_model "
        f"{classic_cfg.d_model} ({fmt(classic_count.total)} parameters, {fmt(classic_count.active)} active, against "
        f"K3's {k3_cfg.moe.n_routed_experts} experts, top-{k3_cfg.moe.top_k}, in a {k3_cfg.moe.latent_dim} latent: "
        f"{fmt(k3_count.total)} / {fmt(k3_count.active)}). Other hatched bars switch one idea off. "
        + (f"HBM and interconnect bytes are drawn on separate axes: here HBM bytes are "
           f"{min(wire_vs_hbm):,.0f}–{max(wire_vs_hbm):,.0f}x the wire bytes." if wire_vs_hbm else ""))


def ledger_assumptions(context: int, deploy: byte_ledger.Deploy) -> tuple[list[Assumption], list[tuple[str, str]]]:
    """(the numbers the ledger's K3 bar assumes, k3lite.analytic.ledger.k3_bytes_at's arguments; the rest in words)."""
    numbers = [
        Assumption("context", "context", float(context),
                   "the ledger's setting (default 131,072 = 128K: a long chat or a code base); the MLA cache grows "
                   "with it", "the ledger's 'context' slider", "tokens"),
        Assumption("batch", "sequences per decode step", float(deploy.batch),
                   "they share each weight read, so weight bytes per token fall with the batch",
                   "the ledger's 'batch' slider"),
        Assumption("weight_bytes", "bytes per weight parameter", byte_ledger.WEIGHT_BYTES,
                   "FP8 with a 4-byte scale per 128x128 block, as DeepSeek-V3 serves its weights (K3 ships MXFP4 "
                   "experts; the map uses those)", unit="B"),
        Assumption("latent_bytes", "bytes per MLA latent number", 2.0, "bf16 cache", unit="B"),
        Assumption("state_bytes", "bytes per KDA state number", 4.0, "fp32 state, as the released code keeps it",
                   unit="B")]
    words = [("wire formats", "FP8 dispatch (1 byte per element + an fp32 scale per 128), BF16 combine"),
             ("deployment", f"{deploy.topology} rack, experts over {deploy.ep_size} GPUs, DeepEP {deploy.scheme} kernels"),
             ("routing", "uniform over the experts (expected copies and experts touched)"),
             ("balancing", "K3's bar is perfectly balanced; the busiest GPU's overload (the ledger's input, "
                           f"{deploy.gpu_overload:g} now) counts only with balancing unticked")]
    return numbers, words


# ------------------------------------------------------------------------------------- K3 without each idea
@lru_cache(maxsize=8)  # K3 and each variant counted and priced: once per context per server
def ablation_cached(context: int) -> list:
    return ablation_rows(context)


def _elsewhere(key: str) -> str:
    return where_else(key, "home")


def ablation_panel(context: int) -> Panel:
    """K3 against K3 without each idea on bytes per decoded token, cache per sequence and $ per M tokens (input + output)."""
    rows = ablation_cached(int(context))
    fig = shared_figure(ablation_figure, rows, evidence=derived(ablation_rows, ledger_of, solve))
    ev = derived(ablation_sentences)
    where = Said(deployment_sentence(), (derived(deployment_sentence, solve),))
    return Panel(fig, (where, *(Said(t, (ev,)) for t in ablation_sentences(rows, _elsewhere))),
                 derived(ablation_rows, ledger_of, solve))


def ablation_table(context: int) -> list[dict]:
    """What each variant is and its three numbers."""
    return [{"variant": COMPARISONS[r.key].label if r.key in COMPARISONS else r.label,
             "replaces": COMPARISONS[r.key].idea if r.key in COMPARISONS else "—",
             "with": COMPARISONS[r.key].instead if r.key in COMPARISONS else "—",
             "bytes per decoded token": fmt_bytes(r.bytes_per_token),
             "cache per sequence": fmt_bytes(r.cache_per_sequence),
             "$ per M tokens (in + out)": f"${r.usd_per_m:.2f}" if r.usd_per_m == r.usd_per_m
             else "out of reach"} for r in ablation_cached(int(context))]
