"""Step through a real forward pass of the trained lite model, stage by stage, and generate from it; with a
comparison on, K3 and the compared model at full scale, the bytes one decoded token reads per stage. The panels
compute (k3lite.panels.forward); this page holds the widgets and lays them out."""
from functools import partial

import streamlit as st
from streamlit.errors import StreamlitAPIException
import torch

from k3lite.base.evidence import derived
from k3lite.interconnect.headline import forward_bytes_at
from k3lite.model.checkpoint import checkpoint_meta, load_lite_model
from k3lite.interconnect import REFERENCE, deployment_bytes, wire_bytes_per_token
from k3lite.base.tokenizer import decode, encode, token_label
from k3lite.panels import forward as panels
from k3lite.panels.forward import RAN, TOKENIZED, bytes_by_part_panel
from k3lite.panels.words import forward as words
from k3lite.viz.archmap import architecture_map, node_stage
from k3lite.viz.model import stage_figure, stages
from k3lite.viz.style import fmt_bytes
from k3lite.viz.stepper import at_stage, stepper_map
from views.common import (assumptions_block, compared, evidence_columns, explain, interconnect_query, metric, one_of,
                          pick_from_map, push_url, reset_button, set_state, show_code, show_panel, url_state,
                          user_errors)
from views.common import try_it  # the page's practice problems, at its foot
from views.levels import draw_formulas, level
from views.registry import by_url_path

MAX_CHARS, MAX_BYTES = 200, 400  # bounded so every stage's picture stays readable and fast

st.title("Step through a forward pass")
LEVEL = level()  # the sidebar's *Explain for*: the words change (k3lite/panels/words/forward.py), the pictures do not
st.markdown(words.QUESTION[LEVEL])
PAIR = compared()
if PAIR is not None:  # the comparison first: the two real configs at full scale (the live run below is lite)
    show_panel(words.compare(LEVEL, bytes_by_part_panel(PAIR), PAIR), "fp_vs_bytes")
    show_code(bytes_by_part_panel)

@st.cache_resource(show_spinner="Loading the trained lite model…")
def lite_model():
    return load_lite_model()


@st.cache_data(show_spinner="Running the forward pass…", max_entries=32)
def run(prompt: str):
    ids = encode(prompt, max_chars=MAX_CHARS, max_bytes=MAX_BYTES)
    model, _ = lite_model()
    with torch.inference_mode():
        out = model(torch.tensor([ids]), trace=True)
    probs = out.logits[0, -1].float().softmax(-1)
    top = probs.topk(5)
    return out.trace, (top.indices.tolist(), top.values.tolist())


@st.cache_data(show_spinner="Generating…", max_entries=32)
def continuation(prompt: str, n: int, temperature: float, seed: int) -> str:
    model, _ = lite_model()
    ids = encode(prompt, max_chars=MAX_CHARS, max_bytes=MAX_BYTES)
    return decode(model.generate(ids, max_new_tokens=n, temperature=temperature, top_k=20, seed=seed))


model, warning = lite_model()
url_state("fp_prompt", "def greet(name):\n    return 'Hello, ' + name")
picture, controls = st.columns([3, 1])  # the map first: on a phone columns stack, the prompt below it
with controls:
    st.text_area(f"prompt (≤ {MAX_CHARS} characters, ≤ {MAX_BYTES} UTF-8 bytes; any unicode)", key="fp_prompt",
                 max_chars=MAX_CHARS, height=110)
    reset_button("fp_")
    if warning:
        st.warning(warning)
    elif (meta := checkpoint_meta()).get("val_loss"):
        st.caption(words.checkpoint(LEVEL, meta))
push_url("fp_prompt")
with user_errors():
    trace, top = run(st.session_state.fp_prompt)

STAGES = stages(trace)
last = len(STAGES) - 1
url_state("fp_stage", 0, lo=0, hi=last)
st.session_state.fp_stage = min(max(int(st.session_state.fp_stage), 0), last)


@st.cache_resource(max_entries=16, show_spinner=False)  # ~0.3 s to build; plotly_chart only reads it
def flipbook(prompt: str):
    """The map with every stage as a frame: its slider steps through them in the browser (k3lite.viz.stepper)."""
    return panels.flipbook_figure(lite_model()[0].cfg, run(prompt)[0])


def map_figure(prompt: str, start: int):
    """The prompt's map showing stage `start` (a copy, a few ms: every stage move redraws it). One stage picker on
    the page, the one below: the map's own in-browser slider is left off (the two drifted apart, map 19/42, detail 6)."""
    return at_stage(flipbook(prompt), start, slider=False)


with picture:  # a click on an element opens its stage (a callback from a module, never this script: views.common)
    st.plotly_chart(map_figure(st.session_state.fp_prompt, st.session_state.fp_stage),
                    key="fp_map", selection_mode="points", width="stretch",
                    on_select=partial(pick_from_map, "fp_map", "fp_stage", partial(node_stage, STAGES)))
    b1, b2, b3 = st.columns([2, 2, 7])  # the one stage picker, between the map and the detail: both follow it
    at = st.session_state.fp_stage
    b1.button("◀ Prev", on_click=set_state, args=("fp_stage", max(at - 1, 0)), disabled=at == 0, key="fp_prev")
    b2.button("Next ▶", on_click=set_state, args=("fp_stage", min(at + 1, last)), disabled=at == last, key="fp_next")
    # shows "n/N" like the heading below (a 0-based number read 41 beside "42/42"), with a visible label
    b3.select_slider("stage (the map and the detail below)", options=list(range(len(STAGES))), key="fp_stage",
                     format_func=partial(one_of, len(STAGES)))
    push_url("fp_stage")
st.markdown(words.prompt_said(LEVEL, trace, top, len(STAGES)))
show_code(stepper_map, at_stage, architecture_map)
with st.expander("What the map shows"):
    st.caption(panels.map_caption(lite_model()[0].cfg))


@st.fragment
def stage_panel() -> None:
    """One stage in detail, the stage the picker above the map chose (a stage move reruns the page, so the map's
    band and this panel always show one stage). The KDA head slider and Generate rerun only this panel."""
    stage = STAGES[st.session_state.fp_stage]

    st.subheader(f"{st.session_state.fp_stage + 1}/{len(STAGES)} · {stage.title}")
    st.info(f"**What happens here.** {words.what(LEVEL, stage.kind)}")
    head = 0
    if stage.kind == "kda":
        head = st.slider("KDA head", 0, trace.layers[stage.layer].kda_beta.shape[-1] - 1, 0, key="fp_head")
    with user_errors():
        wire = deployment_bytes(model.cfg, REFERENCE)  # bytes per token per MoE layer (k3lite.interconnect)
    shown = panels.stage_panel(trace, stage, top, head, wire.total)
    st.plotly_chart(shown.figure, width="stretch")
    show_code(stage_figure)
    so_far = shown.values["so_far"]
    m1, m2, m3 = st.columns(3)
    metric(m1, "tokens", f"{len(trace.tokens)} bytes", TOKENIZED)
    metric(m2, "interconnect bytes per token so far", fmt_bytes(so_far), derived(wire_bytes_per_token),
           help=f"dispatch + combine of every MoE layer up to here, {wire.total:,.0f} B per MoE layer: expected "
                   f"copies x record bytes on {REFERENCE.describe()} (k3lite.interconnect.wire_bytes_per_token; "
                   "the link below opens the Interconnect page on the same setting, where it shows the same number)")
    metric(m3, "next byte (greedy)", f"{token_label(top[0][0])}  ({100 * top[1][0]:.1f}%)", RAN)
    ic_spec, ic_query = by_url_path("interconnect"), interconnect_query(REFERENCE, "lite")
    ic_label = words.interconnect_label(LEVEL, wire.total)
    try:
        st.page_link(ic_spec.file, label=ic_label, icon=ic_spec.icon, query_params=ic_query)
    except StreamlitAPIException:  # this file run on its own (AppTest of one page): no navigation to link into
        st.caption(f"{ic_label} (`{ic_spec.file}`, settings {ic_query})")

    if stage.kind == "next":
        top5, _ = evidence_columns({"next byte": [token_label(i) for i in top[0]], "id": top[0],
                                    "probability": [f"{100 * p:.1f}%" for p in top[1]]},
                                   {"next byte": RAN, "id": TOKENIZED, "probability": RAN})
        st.table(top5)  # each numeric column's name carries its evidence marker
        g1, g2, g3 = st.columns(3)
        n = g1.slider("bytes to generate", 1, 120, 40, key="fp_gen_n")
        temperature = g2.slider("temperature (0 = greedy)", 0.0, 1.5, 0.7, 0.1, key="fp_temp")
        seed = g3.number_input("seed", 0, 10_000, 0, key="fp_seed")
        if st.button("Generate", type="primary", key="fp_generate"):
            with user_errors():
                st.session_state.fp_generated = (st.session_state.fp_prompt,
                                                 continuation(st.session_state.fp_prompt, n, temperature, int(seed)))
        if st.session_state.get("fp_generated", ("", ""))[0] == st.session_state.fp_prompt:
            st.code(st.session_state.fp_prompt + st.session_state.fp_generated[1], language=None, wrap_lines=True)
            st.caption("Generated with the decode caches: each new byte runs one token through every layer "
                       "(KDA state + conv tail, MLA latent cache), not the whole prompt again.")

    explain(words.NOTICE[LEVEL])
    if LEVEL == "paper":
        draw_formulas("The equations, each symbol in the code", words.formulas(model.cfg, trace, stage), words.PAPER_NOTES)


stage_panel()

# below the stages: what the headline (interconnect bytes per token) assumes
numbers, also = panels.wire_assumptions()
assumptions_block("fp_x_assumptions", f"Interconnect bytes per token of the lite model ({REFERENCE.topology.label}, "
                                      f"EP {REFERENCE.ep_size})",
                  partial(forward_bytes_at, model.cfg, REFERENCE), numbers, fmt_bytes, also=also)

try_it("forward_pass")
