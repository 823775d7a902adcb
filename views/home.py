"""Home: what K3 is, where its parameters live (counted from the real modules on the meta device), and where one
token's bytes go (the ledger)."""
from functools import partial

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitAPIException

from k3lite.analytic import ledger as byte_ledger
from k3lite.base import sources
from k3lite.analytic.anatomy import PART_LABEL, PART_PAGE, RELEASED_K3_PART_FORMATS, anatomy
from k3lite.model.config import routed_fraction
from k3lite.model.presets import KIMI_K3_STATED_TOTAL, PRESETS, get_preset, kimi_k3_vision_params
from k3lite.analytic.params import ACTIVE_RULE, active_with_embedding, count_params, fmt
from k3lite.viz.archmap import architecture_map, node_page
from k3lite.viz.ledger import ledger_figure
from k3lite.viz.memo import shared_figure
from k3lite.viz.params import ACTIVE_CONVENTION, PUBLISHED, breakdown_figure
from k3lite.viz.style import fmt_bytes
from k3lite.analytic.sensitivity import Assumption
from k3lite.base.evidence import derived, released
from views.common import (assumptions_block, lazy_expander, lazy_sections, metric, pick_from_map, push_url,
                          reset_button, sentence, show_code, table, url_state, user_errors)
from views.common import try_it  # the page's practice problems, at its foot
from k3lite.analytic.ablation import __doc__ as ablation_doc
from k3lite.analytic.ablation import ablation as ablation_rows
from k3lite.analytic.ablation import sentences as ablation_sentences
from k3lite.analytic.ledger import ledger_of
from k3lite.analytic.serving.target import solve
from k3lite.model.variants import COMPARISONS, comparison_config
from k3lite.viz.ablation import ablation_figure
from views.registry import ARITHMETIC_PAGES, LEDGER_SECTION, PAGES, SHIPPED_INPUTS, by_url_path

st.title("k3lite: the Kimi K3 design, running live")
K3_CFG = get_preset("kimi-k3")
K3_SHARE = routed_fraction(K3_CFG.moe.top_k, K3_CFG.moe.n_routed_experts)
st.markdown(f"**Kimi K3 has {KIMI_K3_STATED_TOTAL / 1e12:.2f} trillion parameters, yet each token visits only "
            f"{K3_CFG.moe.top_k} of its {K3_CFG.moe.n_routed_experts} experts ({100 * K3_SHARE:.1f}%): where do the "
            "parameters live, and what does one token cost to move?**")

MAP_CONTEXT = 131072  # tokens of context the cache bytes on the map assume (128K)
names = list(PRESETS)
url_state("home_preset", "kimi-k3", choices=names)


KNOB_RANGE = {"experts": (1, 4096), "top_k": (1, 64), "layers": (1, 200), "latent": (0, 16384)}  # the inputs' bounds


def _knobs(cfg):
    return cfg.moe.n_routed_experts, cfg.moe.top_k, cfg.n_layers, cfg.moe.latent_dim


def _config(preset: str, experts: int, top_k: int, layers: int, latent: int):
    return get_preset(preset).with_(n_layers=layers, moe={"n_routed_experts": experts, "top_k": top_k,
                                                          "latent_dim": latent})


@st.cache_data(show_spinner="Counting parameters on the meta device…", max_entries=64)
def cached_count(preset: str, experts: int, top_k: int, layers: int, latent: int):
    return count_params(_config(preset, experts, top_k, layers, latent))


@st.cache_resource(show_spinner="Drawing the model from its config (parameters counted on the meta device)…",
                   max_entries=16)  # read-only figures
def model_map(preset: str, experts: int, top_k: int, layers: int, latent: int):
    cfg = _config(preset, experts, top_k, layers, latent)
    an = anatomy(cfg, context=MAP_CONTEXT)
    if preset == "kimi-k3":  # K3 as released: MXFP4 routed experts, bf16 rest
        an = an.in_formats(RELEASED_K3_PART_FORMATS)
    return architecture_map(cfg, anatomy=an, evidence=(derived(anatomy, count_params),)), an.shares(), an.format_words


controls, picture = st.columns([1, 3])
with controls:
    preset = st.selectbox("Configuration", names, key="home_preset",
                          help="Published configs (K3's is its released config.json), and the tiny `lite` model this "
                               "app runs.")
    # one set of keys per configuration (as before: switching configuration starts from its defaults). The inputs are
    # drawn only while their expander is open (each widget type on a first screen delays its first chart, 0.07-0.2 s
    # per type on the bench's floor page), and url_state keeps their values while it is closed
    keys = {name: f"home_{name}_{preset}" for name in ("experts", "top_k", "layers", "latent")}
    for (name, key), default in zip(keys.items(), _knobs(get_preset(preset))):
        url_state(key, default, lo=KNOB_RANGE[name][0], hi=KNOB_RANGE[name][1])
    with lazy_expander("Change it (the count updates live)", key="home_x_change") as is_open:
        if is_open:
            st.number_input("routed experts", *KNOB_RANGE["experts"], key=keys["experts"])
            st.number_input("top-k (experts per token)", *KNOB_RANGE["top_k"], key=keys["top_k"])
            st.number_input("layers", *KNOB_RANGE["layers"], key=keys["layers"])
            st.number_input("latent dim (0 = classic MoE)", *KNOB_RANGE["latent"], key=keys["latent"],
                            help="LatentMoE: experts work in this smaller dimension.")
    push_url("home_preset")
    knobs = tuple(int(st.session_state[key]) for key in keys.values())  # experts, top-k, layers, latent
    with user_errors():
        report = cached_count(preset, *knobs)
    counted = derived(count_params)  # the released config's modules, built on the meta device
    metric(st, "total parameters", fmt(report.total), counted)
    metric(st, "active per token", fmt(report.active), counted)
    metric(st, "activation ratio (active / total params)", f"{100 * report.activation_ratio:.2f} %", counted)
    with user_errors():
        metric(st, "experts used per token (top-k / E)", f"{100 * routed_fraction(knobs[1], knobs[0]):.2f} %",
               derived(routed_fraction))
    reset_button("home_", "ledger_")
with picture, user_errors():
    fig, shares, weight_formats = model_map(preset, *knobs)
    st.plotly_chart(fig, width="stretch", key="home_map", selection_mode="points",  # a click opens the part's page
                    on_select=partial(pick_from_map, "home_map", "home_go", node_page))
if (go_to := st.session_state.pop("home_go", None)) is not None:
    st.switch_page(by_url_path(go_to).file)
top_params = max(shares, key=lambda k: shares[k][0])
top_bytes = max(shares, key=lambda k: shares[k][1])
label = lambda part: PART_LABEL[part] if PART_LABEL[part][:2].isupper() else PART_LABEL[part].lower()  # noqa: E731 (KDA, MLA, LM head keep their capitals)
st.markdown(f"In {preset}, {label(top_params)} hold **{100 * shares[top_params][0]:.1f}%** of the "
            f"parameters and take {100 * shares[top_params][1]:.1f}% of the bytes a decoded token moves "
            f"({weight_formats}, batch 1); the biggest byte share is {label(top_bytes)} "
            f"({100 * shares[top_bytes][1]:.1f}%). Click an element to open its page.")
show_code(anatomy, architecture_map)
@st.cache_data(show_spinner="Computing what each idea costs in bytes…", max_entries=2)
def idea_bytes(context: int) -> dict[str, str]:
    return byte_ledger.idea_bytes(context, fmt_bytes)


with st.expander("Five ideas in K3: what each buys and what it costs in bytes, and how to read the map"):
    ideas, classic = idea_bytes(MAP_CONTEXT), byte_ledger.variant(K3_CFG, byte_ledger.ONE_OFF["latent"]).moe
    arithmetic = ", ".join(f"**{spec.short}**" for spec in PAGES if spec.stem in ARITHMETIC_PAGES)
    live = ", ".join(f"**{spec.short}**" for spec in PAGES if not spec.default and spec.stem not in ARITHMETIC_PAGES)
    st.markdown(f"""{K3_CFG.moe.n_routed_experts} routed experts of which each token visits {K3_CFG.moe.top_k}, plus
{K3_CFG.moe.n_shared_experts} always-on shared experts ({sources.EXPERT_COUNTS}). The *bytes* in each line: {ideas["setting"]}.

1. **Stable LatentMoE** — experts work in a smaller *latent* ({K3_CFG.d_model} → {K3_CFG.moe.latent_dim}), which buys
   {K3_CFG.moe.n_routed_experts} experts, top-{K3_CFG.moe.top_k}, for the expert parameters and FLOPs of a classic
   MoE's {classic.n_routed_experts}, top-{classic.top_k}. *Bytes*: {ideas["latent"]}.
2. **Quantile balancing** — each token still picks its top experts, but after subtracting a per-expert cut
   read off the rank of earlier batches' scores ("grading on a curve"), so no expert is swamped and there is
   no step size to tune. *Bytes*: {ideas["balancing"]}.
3. **Kimi Delta Attention (KDA)** — a linear-attention layer with a fixed-size memory that forgets
   per channel and corrects itself (the delta rule), so long contexts cost no growing cache.
4. **A 3:1 hybrid** — three KDA layers for every global attention layer (MLA, Multi-head Latent Attention, DeepSeek's
   attention with a compressed KV cache) keeps full recall where it counts. *Bytes* (3 and 4 against all-MLA):
   {ideas["hybrid"]}.
5. **Attention Residuals** — each layer looks back over earlier layers' outputs with a softmax over depth,
   grouped into blocks to stay cheap. *Bytes*: {ideas["block_attnres"]}.

{live} run small PyTorch implementations on this server's CPU (the wire page when you measure); {arithmetic} are
arithmetic over the published configs. What is shipped rather than computed is listed under "What is live and what
is shipped" below. Parameter counts are **counted by building the real k3lite modules on PyTorch's `meta` device**
(shapes only, no memory), not from a formula.""")
    st.caption(f"Hover an element of the map for its parameters and the bytes one decoded token moves through it "
               f"(batch 1, {weight_formats}, {MAP_CONTEXT:,}-token context). The arcs: the block Attention Residual sums "
               "the LM head reads; each layer reads the ones completed before it.")
with lazy_expander("Each part's share of the parameters and of the bytes, with its page", key="home_x_part_s_share_parameters") as is_open:
    if is_open:
        ev = derived(anatomy)
        table(st, pd.DataFrame([{"part": PART_LABEL[k], "share of parameters": p, "share of bytes per decoded token": b,
                                 "page": by_url_path(PART_PAGE[k]).short} for k, (p, b) in shares.items()]),
              default=ev, hide_index=True, width="stretch",
              column_config={f"{c} {ev.marker}": st.column_config.ProgressColumn(
                  f"{c} {ev.marker}", help=ev.note, format="percent", min_value=0.0, max_value=1.0)
                  for c in ("share of parameters", "share of bytes per decoded token")})
        link_cols = st.columns(2)
        for i, url in enumerate(dict.fromkeys(PART_PAGE[k] for k in shares)):
            spec = by_url_path(url)
            parts = ", ".join(PART_LABEL[k] for k in shares if PART_PAGE[k] == url)
            try:
                link_cols[i % 2].page_link(spec.file, label=f"{parts} → {spec.short}", icon=spec.icon)
            except StreamlitAPIException:  # this file run on its own (AppTest of one page): no navigation to link into
                link_cols[i % 2].markdown(f"{parts} → {spec.short} (`{spec.file}`)")

ABLATION_SECTION = "K3 without each idea"
SECTIONS = [LEDGER_SECTION, "Where the parameters are", ABLATION_SECTION]
tab_bytes, tab_params, tab_ablation = lazy_sections(SECTIONS, key="home_section")  # none drawn until picked
with tab_params as is_open:
    if is_open:
        st.subheader("Where the parameters are")
        st.plotly_chart(shared_figure(breakdown_figure, report, evidence=derived(count_params)))
        show_code(count_params, breakdown_figure)
        with lazy_expander("How active parameters are counted, and our count against the published totals", key="home_x_active_parameters_are_counted") as is_open:
            if is_open:
                st.caption(ACTIVE_RULE)
                rows = []
                for name, (total, active, source) in PUBLISHED.items():
                    ours = cached_count(name, *_knobs(get_preset(name)))
                    stated_active, with_embedding, active_source = ACTIVE_CONVENTION.get(name, (active, False, None))
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
                stated = released("the model's report or card (the 'source' column)")
                table(st, pd.DataFrame(rows), {"stated total": stated, "stated active": stated},
                      default=derived(count_params, active_with_embedding), hide_index=True)
                k2 = cached_count("kimi-k2", *_knobs(get_preset("kimi-k2")))
                k2_stated = PUBLISHED["kimi-k2"][0]
                ds = cached_count("deepseek-v3", *_knobs(get_preset("deepseek-v3")))
                k3_count = cached_count("kimi-k3", *_knobs(get_preset("kimi-k3")))
                st.caption(
                    f"Kimi K2: its config.json counts to {fmt(k2.total)} ({k2.total / 1e12:.3f}T); the {fmt(k2_stated)} we quote is "
                    f"{100 * (k2_stated / k2.total - 1):.1f}% more, and we do not know why: it is *not* a multi-token-prediction "
                    "layer (K2's config.json sets `num_nextn_predict_layers: 0`), and its model card says 1 trillion total "
                    "parameters. DeepSeek-V3's active count is compared with its weights README, which says what it counts "
                    f"(the report's 37B does not): our count with the embedding in is {fmt(active_with_embedding(ds))}. "
                    f"Kimi K3: the preset is the released config.json (`k3lite/model/presets.py`, `kimi_k3`); the stated "
                    f"{fmt(PUBLISHED['kimi-k3'][0])} includes the vision tower ({fmt(kimi_k3_vision_params())}, counted from its "
                    f"vision_config), which k3lite does not build: text {fmt(k3_count.total)} + vision "
                    f"{fmt(kimi_k3_vision_params())} = {(k3_count.total + kimi_k3_vision_params()) / 1e12:.4f}T."
                )
                if notes := get_preset(preset).notes:
                    st.caption(" · ".join(f"**{k}**: {v}" for k, v in notes.items()))


CONTEXTS = [4_096, 32_768, 131_072, 1_048_576]
PER = {"per decoded token": "decoded token", "per GFLOP of the token's work": "GFLOP of a token's work"}
# The hatched bar is K3 with only the ticked ideas on. Latent starts unticked, so at the defaults the comparison has
# "K3 without latent" beside it; K3 with every idea on is the K3 bar itself, so then no hatched bar is drawn.
# (Before: K3 without latent was always drawn and unticking latent changed nothing.)
TOGGLES = {"latent": ("latent experts", "ledger_latent", False), "hybrid": ("3:1 KDA hybrid", "ledger_hybrid", True),
           "block_attnres": ("block AttnRes", "ledger_block", True), "balancing": ("balancing", "ledger_balancing", True)}


@st.cache_data(show_spinner="Counting the counterfactual's parameters on the meta device…", max_entries=4)
def classic_counts():
    k3 = get_preset("kimi-k3")
    classic = byte_ledger.variant(k3, byte_ledger.ONE_OFF["latent"])
    return k3, classic, count_params(k3), count_params(classic)


@st.cache_data(show_spinner=False, max_entries=32)
def work_of(preset: str, context: int, toggles: byte_ledger.Toggles):
    return byte_ledger.token_work(preset, context, toggles)


def interconnect_link(deploy: byte_ledger.Deploy) -> str:
    """The interconnect page opened on the ledger's deployment (its url_state keys), K3 at its defaults."""
    query = {"ic_preset": "kimi-k3", "ic_topology": deploy.topology, "ic_ep": deploy.ep_size,
             "ic_dispatch": deploy.dispatch, "ic_combine": deploy.combine, "ic_scheme": deploy.scheme}
    return f"/{by_url_path('interconnect').url_path}?" + "&".join(f"{k}={v}" for k, v in query.items())


@st.fragment
def ledger_panel() -> None:
    """The ledger and its controls: moving them reruns only this panel."""
    url_state("ledger_models", list(byte_ledger.MODELS), choices=list(byte_ledger.MODELS))
    url_state("ledger_context", 131_072, choices=CONTEXTS)
    url_state("ledger_batch", 64, choices=[1, 8, 64, 256, 1024])
    url_state("ledger_per", list(PER)[0], choices=list(PER))
    for _label, key, default in TOGGLES.values():
        url_state(key, default)
    url_state("ledger_overload", 1.0, lo=0.0, hi=20.0)
    controls, picture = st.columns([1, 3])
    with controls:
        picked = st.multiselect("models", list(byte_ledger.MODELS), key="ledger_models",
                                format_func=byte_ledger.MODELS.get)
        st.select_slider("context (tokens)", CONTEXTS, key="ledger_context")
        st.select_slider("batch (sequences per step)", [1, 8, 64, 256, 1024], key="ledger_batch")
        per = st.radio("bytes", list(PER), key="ledger_per",
                       help="Per GFLOP: each bar divided by the FLOPs its token costs at this context (2 per active "
                            "parameter plus attention over the context, the serving model's count): bytes per unit "
                            "of work.")
        st.caption("The hatched bar: K3 with only the ideas ticked here (untick one to see what it saves):")
        on = {idea: st.checkbox(label, key=key) for idea, (label, key, _d) in TOGGLES.items()}
        overload = st.number_input("busiest GPU's overload without balancing (max-violation)", 0.0, 20.0, step=0.25,
                                   key="ledger_overload", disabled=on["balancing"],
                                   help="our assumption, counted only with balancing unticked; the MoE page measures "
                                        "max-violation per method")
    push_url("ledger_models", "ledger_context", "ledger_batch", "ledger_per", *(key for _l, key, _d in TOGGLES.values()),
             "ledger_overload")
    with user_errors():
        deploy = byte_ledger.Deploy(batch=st.session_state.ledger_batch, gpu_overload=float(overload))
        context = st.session_state.ledger_context
        chosen = byte_ledger.Toggles(**on)
        rows = [byte_ledger.ledger(p, context, deploy=deploy) for p in picked]
        keyed = [(p, byte_ledger.ALL_ON) for p in picked]
        if chosen != byte_ledger.ALL_ON:
            rows.append(byte_ledger.ledger("kimi-k3", context, chosen, deploy))
            keyed.append(("kimi-k3", chosen))
    normalised = per != list(PER)[0]
    shown = ([byte_ledger.per_work(r, work_of(p, context, t).total) for r, (p, t) in zip(rows, keyed)] if normalised
             else rows)
    with picture:
        st.plotly_chart(shared_figure(ledger_figure, shown, None, PER[per], evidence=derived(
            byte_ledger.ledger, *((byte_ledger.per_work, byte_ledger.token_work) if normalised else ()))),
            width="stretch")
    if {"kimi-k3", "deepseek-v3"} <= set(picked):
        k3_row, ds_row = rows[picked.index("kimi-k3")], rows[picked.index("deepseek-v3")]
        sentence(byte_ledger.why_more_bytes(k3_row, ds_row, work_of("kimi-k3", context, byte_ledger.ALL_ON),
                                            work_of("deepseek-v3", context, byte_ledger.ALL_ON), fmt_bytes),
                 derived(byte_ledger.ledger, byte_ledger.token_work, byte_ledger.why_more_bytes))
    show_code(byte_ledger.ledger, byte_ledger.per_work, ledger_figure)
    parts_by_idea = byte_ledger.saving_parts(context, deploy)
    for col, (key, idea), suffix in zip(st.columns(4), byte_ledger.IDEAS, ("per token",) * 3 + ("busiest GPU",)):
        verb, amount, why = byte_ledger.saving_words(idea, parts_by_idea[key], fmt_bytes)
        metric(col, f"{idea} {verb}, {suffix}", amount, derived(byte_ledger.saving_parts),
               help=f"bytes per decoded token of K3 with this idea off, minus K3 as designed, all segments together. "
                    f"{why}")
    if note := byte_ledger.cost_words(context, deploy, fmt_bytes):
        sentence(note, derived(byte_ledger.cost_words))
    with st.expander("What the bars are and the deployment they assume"):
        st.markdown(
            "One decoded token, split by where its bytes move: **NVLink** and **NIC** (experts on other GPUs: "
            "dispatch and combine), **HBM weights** (read once per step, shared by the batch), **HBM KV cache / KDA "
            "state** (this token's own sequence) and **Attention Residual reads**. Every segment comes from the "
            "function the mechanism page uses (interconnect, hybrid, Attention Residuals, parameter count); hatched "
            "bars are K3 with an idea switched off. Formulas: `k3lite/analytic/ledger.py`.")
        k3_cfg, classic_cfg, k3_count, classic_count = classic_counts()
        wire_vs_hbm = [(r.hbm_weights + r.hbm_cache + r.attnres) / (r.nvlink + r.nic) for r in rows if r.nvlink + r.nic > 0]
        st.caption(
            f"Deployment: {deploy.topology} rack, experts over {deploy.ep_size} GPUs, {deploy.dispatch.upper()} dispatch / "
            f"{deploy.combine.upper()} combine, DeepEP {deploy.scheme} kernels ([the same settings on the interconnect "
            f"page]({interconnect_link(deploy)})); {byte_ledger.WEIGHT_PRECISION.upper()} "
            "weights; uniform routing. The bars: DeepSeek-V3 and Kimi K2 from their published configs; K3 is its released config.json "
            "(home's table); **K3 without latent** is the same-sized classic MoE the serving page's waterfall starts from: "
            f"{classic_cfg.moe.n_routed_experts} experts, top-{classic_cfg.moe.top_k}, working in d_model "
            f"{classic_cfg.d_model} ({fmt(classic_count.total)} parameters, {fmt(classic_count.active)} active, against "
            f"K3's {k3_cfg.moe.n_routed_experts} experts, top-{k3_cfg.moe.top_k}, in a {k3_cfg.moe.latent_dim} latent: "
            f"{fmt(k3_count.total)} / {fmt(k3_count.active)}). Other hatched bars switch one idea off. "
            + (f"HBM and interconnect bytes are drawn on separate axes: here HBM bytes are "
               f"{min(wire_vs_hbm):,.0f}–{max(wire_vs_hbm):,.0f}x the wire bytes." if wire_vs_hbm else "")
        )

    assumptions_block(
        "home_x_assumptions", "Bytes per decoded token of Kimi K3 (the ledger's K3 bar)",
        partial(byte_ledger.k3_bytes_at, deploy=deploy),
        [Assumption("context", "context", float(context),
                    "the ledger's setting (default 131,072 = 128K: a long chat or a code base); the MLA cache grows "
                    "with it", "the ledger's 'context' slider",
                    "tokens"),
         Assumption("batch", "sequences per decode step", float(deploy.batch),
                    "they share each weight read, so weight bytes per token fall with the batch",
                    "the ledger's 'batch' slider"),
         Assumption("weight_bytes", "bytes per weight parameter", byte_ledger.WEIGHT_BYTES,
                    "FP8 with a 4-byte scale per 128x128 block, as DeepSeek-V3 serves its weights (K3 ships MXFP4 "
                    "experts; the map uses those)", unit="B"),
         Assumption("latent_bytes", "bytes per MLA latent number", 2.0, "bf16 cache", unit="B"),
         Assumption("state_bytes", "bytes per KDA state number", 4.0, "fp32 state, as the released code keeps it",
                    unit="B")],
        fmt_bytes,
        also=[("wire formats", "FP8 dispatch (1 byte per element + an fp32 scale per 128), BF16 combine"),
              ("deployment", f"{deploy.topology} rack, experts over {deploy.ep_size} GPUs, DeepEP {deploy.scheme} kernels"),
              ("routing", "uniform over the experts (expected copies and experts touched)"),
              ("balancing", "K3's bar is perfectly balanced; the busiest GPU's overload (the ledger's input, "
                            f"{deploy.gpu_overload:g} now) counts only with balancing unticked")])


with tab_bytes as is_open:
    if is_open:
        st.subheader("Bytes per decoded token: where one token's bytes go")
        ledger_panel()


@st.cache_data(max_entries=8, show_spinner="Counting K3 and each variant…")
def ablation_cached(context: int) -> list:
    return ablation_rows(context)


def ablation_panel() -> None:
    """K3 against K3 without each idea on bytes per decoded token, cache per sequence and $ per M output tokens."""
    context = st.select_slider("context (tokens)", CONTEXTS, value=131_072, key="home_ablation_context",
                               format_func="{:,}".format)
    rows = ablation_cached(int(context))
    st.plotly_chart(shared_figure(ablation_figure, rows, evidence=derived(ablation_rows, ledger_of, solve)),
                    width="stretch")
    for text in ablation_sentences(rows):
        sentence(text, derived(ablation_sentences))
    with lazy_expander("What each variant is, and how each axis is counted", key="home_x_ablation_how") as is_open:
        if is_open:
            st.markdown(ablation_doc)
            table(st, [{"variant": COMPARISONS[r.key].label if r.key in COMPARISONS else r.label,
                        "replaces": COMPARISONS[r.key].idea if r.key in COMPARISONS else "—",
                        "with": COMPARISONS[r.key].instead if r.key in COMPARISONS else "—",
                        "bytes per decoded token": fmt_bytes(r.bytes_per_token),
                        "cache per sequence": fmt_bytes(r.cache_per_sequence),
                        "$ per M output": f"${r.usd_per_m_output:.2f}" if r.usd_per_m_output == r.usd_per_m_output
                        else "out of reach"} for r in rows],
                  {"bytes per decoded token": derived(ledger_of), "cache per sequence": derived(ablation_rows),
                   "$ per M output": derived(solve)}, hide_index=True, width="stretch")
            show_code(ablation_rows, comparison_config)


with tab_ablation as is_open:
    if is_open:
        st.subheader("K3 without each idea: what each one buys and costs")
        ablation_panel()

with st.expander("What is live and what is shipped"):
    st.markdown("Everything not listed here is computed on this server when you open or change a page.\n"
                + "\n".join(f"- **{spec.short}**: {SHIPPED_INPUTS[spec.stem]}" for spec in PAGES
                             if spec.stem in SHIPPED_INPUTS))

st.subheader("Where to go next")
cols = st.columns(4)
for i, spec in enumerate(p for p in PAGES if not p.default):
    try:
        cols[i % 4].page_link(spec.file, label=spec.short, icon=spec.icon)
    except StreamlitAPIException:  # this file run on its own (AppTest of one page): no navigation to link into
        cols[i % 4].markdown(f"{spec.short} (`{spec.file}`)")

try_it("home")
