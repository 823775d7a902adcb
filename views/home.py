"""Home: what K3 is, where its parameters live (counted from the real modules on the meta device), and where one
token's bytes go (the ledger). Widgets and layout only: k3lite/panels/home.py and home_ledger.py compute."""
from functools import partial

import streamlit as st
from streamlit.errors import StreamlitAPIException

from k3lite.analytic import ledger as byte_ledger
from k3lite.analytic.ablation import __doc__ as ablation_doc, ablation as ablation_rows
from k3lite.analytic.anatomy import PART_LABEL, PART_PAGE, anatomy
from k3lite.analytic.ledger import ledger_of
from k3lite.analytic.params import ACTIVE_RULE, active_with_embedding, count_params, fmt
from k3lite.analytic.serving.target import solve
from k3lite.base.evidence import derived, released
from k3lite.model.config import routed_fraction
from k3lite.model.presets import PRESETS, get_preset
from k3lite.model.variants import comparison_config
from k3lite.panels import home as panels, home_ledger as ledgers
from k3lite.viz.archmap import architecture_map, node_page
from k3lite.viz.ledger import ledger_figure
from k3lite.viz.memo import shared_figure
from k3lite.viz.params import breakdown_figure
from k3lite.viz.style import fmt_bytes
from views.common import (assumptions_block, compared, lazy_expander, lazy_sections, metric, pick_from_map, push_url,
                          reset_button, sentence, show_code, show_panel, table, url_state, user_errors)
from views.common import try_it  # the page's practice problems, at its foot
from views.registry import ARITHMETIC_PAGES, LEDGER_SECTION, PAGES, SHIPPED_INPUTS, by_url_path

st.title("k3lite: the Kimi K3 design, running live")
st.markdown(panels.question())
names = list(PRESETS)
url_state("home_preset", "kimi-k3", choices=names)
KNOB_RANGE = panels.KNOB_RANGE

picture, controls = st.columns([3, 1])  # the map first: on a phone columns stack, controls below it
with controls:
    preset = st.selectbox("Configuration", names, key="home_preset",
                          help="Published configs (K3's is its released config.json), and the tiny `lite` model this "
                               "app runs.")
    # one set of keys per configuration (as before: switching configuration starts from its defaults). The inputs are
    # drawn only while their expander is open (each widget type on a first screen delays its first chart, 0.07-0.2 s
    # per type on the bench's floor page), and url_state keeps their values while it is closed
    keys = {name: f"home_{name}_{preset}" for name in ("experts", "top_k", "layers", "latent")}
    defaults = panels.knobs(get_preset(preset))
    for (name, key), default in zip(keys.items(), defaults):
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
        report = panels.count(preset, *knobs)
    counted = derived(count_params)  # the released config's modules, built on the meta device
    metric(st, "total parameters", fmt(report.total), counted)
    metric(st, "active per token", fmt(report.active), counted)
    metric(st, "activation ratio (active / total params)", f"{100 * report.activation_ratio:.2f} %", counted)
    with user_errors():
        metric(st, "experts used per token (top-k / E)", f"{100 * routed_fraction(knobs[1], knobs[0]):.2f} %",
               derived(routed_fraction))
    reset_button("home_", "ledger_")
with picture, user_errors():
    # compared with the page's config (its preset and inputs; an edited one is named so)
    base = panels.config_of(preset, *knobs)
    if (pair := compared(base=base if knobs == defaults else base.with_(name=f"{preset} (edited)"))) is not None:
        show_panel(panels.compare_panel(pair), "home_compare")
    the_map = panels.map_panel(preset, *knobs)
    st.plotly_chart(the_map.figure, width="stretch", key="home_map", selection_mode="points",  # a click opens its page
                    on_select=partial(pick_from_map, "home_map", "home_go", node_page))
if (go_to := st.session_state.pop("home_go", None)) is not None:
    st.switch_page(by_url_path(go_to).file)
st.markdown(the_map.sentences[0].text)
show_code(anatomy, architecture_map)

with st.expander("Five ideas in K3: what each buys and what it costs in bytes, and how to read the map"):
    arithmetic = ", ".join(f"**{spec.short}**" for spec in PAGES if spec.stem in ARITHMETIC_PAGES)
    live = ", ".join(f"**{spec.short}**" for spec in PAGES if not spec.default and spec.stem not in ARITHMETIC_PAGES)
    text, caption = panels.ideas_markdown(live, arithmetic, panels.map_anatomy(preset, *knobs).format_words)
    st.markdown(text)
    st.caption(caption)
with lazy_expander("Each part's share of the parameters and of the bytes, with its page", key="home_x_part_s_share_parameters") as is_open:
    if is_open:
        ev, shares = derived(anatomy), panels.map_anatomy(preset, *knobs).shares()
        table(st, panels.share_rows(shares, lambda k: by_url_path(PART_PAGE[k]).short), default=ev, hide_index=True,
              width="stretch", column_config={f"{c} {ev.marker}": st.column_config.ProgressColumn(
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

SECTIONS = [LEDGER_SECTION, "Where the parameters are", "K3 without each idea"]
tab_bytes, tab_params, tab_ablation = lazy_sections(SECTIONS, key="home_section")  # none drawn until picked
with tab_params as is_open:
    if is_open:
        st.subheader("Where the parameters are")
        st.plotly_chart(shared_figure(breakdown_figure, report, evidence=derived(count_params)))
        show_code(count_params, breakdown_figure)
        with lazy_expander("How active parameters are counted, and our count against the published totals", key="home_x_active_parameters_are_counted") as is_open:
            if is_open:
                st.caption(ACTIVE_RULE)
                stated = released("the model's report or card (the 'source' column)")
                table(st, panels.published_rows(), {"stated total": stated, "stated active": stated},
                      default=derived(count_params, active_with_embedding), hide_index=True)
                st.caption(panels.counts_caption())
                if notes := get_preset(preset).notes:
                    st.caption(" · ".join(f"**{k}**: {v}" for k, v in notes.items()))


@st.fragment
def ledger_panel() -> None:
    """The ledger and its controls: moving them reruns only this panel."""
    url_state("ledger_models", list(byte_ledger.MODELS), choices=list(byte_ledger.MODELS))
    url_state("ledger_context", 131_072, choices=ledgers.CONTEXTS)
    url_state("ledger_batch", 64, choices=ledgers.BATCHES)
    url_state("ledger_per", list(ledgers.PER)[0], choices=list(ledgers.PER))
    for _label, key, default in ledgers.TOGGLES.values():
        url_state(key, default)
    url_state("ledger_overload", 1.0, lo=0.0, hi=20.0)
    controls, picture = st.columns([1, 3])
    with controls:
        picked = st.multiselect("models", list(byte_ledger.MODELS), key="ledger_models",
                                format_func=byte_ledger.MODELS.get)
        st.select_slider("context (tokens)", ledgers.CONTEXTS, key="ledger_context")
        st.select_slider("batch (sequences per step)", ledgers.BATCHES, key="ledger_batch")
        per = st.radio("bytes", list(ledgers.PER), key="ledger_per",
                       help="Per GFLOP: each bar divided by the FLOPs its token costs at this context (2 per active "
                            "parameter plus attention over the context, the serving model's count): bytes per unit "
                            "of work.")
        st.caption("The hatched bar: K3 with only the ideas ticked here (untick one to see what it saves):")
        on = {idea: st.checkbox(label, key=key) for idea, (label, key, _d) in ledgers.TOGGLES.items()}
        overload = st.number_input("busiest GPU's overload without balancing (max-violation)", 0.0, 20.0, step=0.25,
                                   key="ledger_overload", disabled=on[byte_ledger.BALANCING],
                                   help="our assumption, counted only with balancing unticked; the MoE page measures "
                                        "max-violation per method")
    push_url("ledger_models", "ledger_context", "ledger_batch", "ledger_per",
             *(key for _l, key, _d in ledgers.TOGGLES.values()), "ledger_overload")
    with user_errors():
        deploy = byte_ledger.Deploy(batch=st.session_state.ledger_batch, gpu_overload=float(overload))
        context, chosen = st.session_state.ledger_context, ledgers.toggles_of(on)
        panel = ledgers.ledger_panel(tuple(picked), context, deploy, per, chosen)
    picture.plotly_chart(panel.figure, width="stretch")
    for said in panel.sentences:
        sentence(said.text, *said.evidence)
    show_code(byte_ledger.ledger, byte_ledger.per_work, ledger_figure)
    for col, (label, amount, why) in zip(st.columns(4), ledgers.saving_metrics(context, deploy)):
        metric(col, label, amount, derived(byte_ledger.saving_parts), help=why)
    if note := byte_ledger.cost_words(context, deploy, fmt_bytes):
        sentence(note, derived(byte_ledger.cost_words))
    with st.expander("What the bars are and the deployment they assume"):
        st.markdown(ledgers.WHAT_THE_BARS_ARE)
        rows = ledgers.ledger_rows(tuple(picked), context, deploy, chosen)[0]
        st.caption(ledgers.deployment_caption(deploy, rows, by_url_path('interconnect').url_path))
    numbers, words = ledgers.ledger_assumptions(context, deploy)
    assumptions_block("home_x_assumptions", "Bytes per decoded token of Kimi K3 (the ledger's K3 bar)",
                      partial(byte_ledger.k3_bytes_at, deploy=deploy), numbers, fmt_bytes, also=words)


with tab_bytes as is_open:
    if is_open:
        st.subheader("Bytes per decoded token: where one token's bytes go")
        ledger_panel()

with tab_ablation as is_open:
    if is_open:
        st.subheader("K3 without each idea: what each one buys and costs")
        context = st.select_slider("context (tokens)", ledgers.CONTEXTS, value=131_072, key="home_ablation_context",
                                   format_func="{:,}".format)
        show_panel(ledgers.ablation_panel(int(context)), "home_ablation")
        with lazy_expander("What each variant is, and how each axis is counted", key="home_x_ablation_how") as is_open:
            if is_open:
                st.markdown(ablation_doc)
                table(st, ledgers.ablation_table(int(context)),
                      {"bytes per decoded token": derived(ledger_of), "cache per sequence": derived(ablation_rows),
                       "$ per M tokens (in + out)": derived(solve)}, hide_index=True, width="stretch")
                show_code(ablation_rows, comparison_config)

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
