"""The forward-pass page's panels (views/forward_pass.py lays them out; no Streamlit here).

    flipbook_figure, map_caption, prompt_sentence   the architecture map of the lite run, every stage a frame
    stage_panel, bytes_so_far                       one stage in detail and the wire bytes moved up to it
    wire_assumptions                                what the page's headline (interconnect bytes per token) assumes
    bytes_by_part_panel                             with a comparison: K3 and the compared model at full scale, the
                                                    bytes one decoded token reads per part (k3lite.panels.forward_compare)
"""
from __future__ import annotations

from k3lite.analytic.anatomy import anatomy
from k3lite.analytic.sensitivity import Assumption
from k3lite.base.evidence import derived, measured_here
from k3lite.base.tokenizer import encode, token_label
from k3lite.interconnect import REFERENCE, WIRE_FORMATS, wire_bytes_per_token
from k3lite.model.config import K3Config
from k3lite.panels.core import Panel
from k3lite.panels.forward_compare import bytes_by_part_panel  # noqa: F401  (the page's comparison, re-exported)
from k3lite.viz.archmap import architecture_map
from k3lite.viz.memo import shared_figure
from k3lite.viz.model import CUMULATIVE_BYTES, stage_figure, stages
from k3lite.viz.stepper import stepper_map

# the evidence of this page's numbers: the shipped checkpoint run on the visitor's prompt, here
RAN = measured_here("the shipped checkpoint assets/lite.safetensors (k3lite.model.checkpoint.load_lite_model) run "
                    "forward on your prompt on this server, trace=True")
TOKENIZED = derived(encode)


def flipbook_figure(cfg: K3Config, trace):
    """The map with every stage as a frame: its slider steps through them in the browser (k3lite.viz.stepper)."""
    base = architecture_map(cfg, trace=trace, anatomy=anatomy(cfg, context=len(trace.tokens)),
                            evidence=(RAN, derived(anatomy)))
    return stepper_map(base, cfg, stages(trace))


def prompt_sentence(trace, top, n_stages: int) -> str:
    """Under the map: the prompt's length and the model's best guess for the next byte."""
    return (f"Your prompt is **{len(trace.tokens)} bytes**; the model's best guess for the next one is "
            f"**“{token_label(top[0][0])}”** ({100 * top[1][0]:.1f}%). Step through its {n_stages} stages with the "
            "stage slider or ◀ Prev / Next ▶ (the map marks the stage, the detail below draws it), or click an element.")


def map_caption(cfg: K3Config) -> str:
    """'What the map shows': the run model's layers and experts, read from its config."""
    types, moe = cfg.layer_types(), cfg.moe
    return (f"The whole trained lite model ({cfg.n_layers} layers: KDA = Kimi Delta Attention, linear attention "
            "with a fixed-size state; MLA = Multi-head Latent Attention, global attention with a compressed cache; "
            f"{types.count('kda') // max(1, types.count('mla'))} KDA per MLA; "
            f"{moe.n_routed_experts} {'latent ' if moe.latent_dim else ''}experts top-{moe.top_k} + "
            f"{moe.n_shared_experts} shared; {cfg.attn_res} Attention Residuals), drawn from its config. Hover for "
            "this prompt's numbers (state norm, max-violation, bytes so far), read from the same Trace as the stage "
            "view below, and for each element's parameters and bytes per decoded token at this prompt's length "
            "(`k3lite.analytic.anatomy`). Every picture is read from the `Trace` the forward pass just recorded.")


def stage_panel(trace, stage, top, head: int, wire_per_layer: float) -> Panel:
    """One stage's picture, read from the Trace; the running wire-byte total tagged with its own evidence."""
    ev = TOKENIZED if stage.kind == "tokenize" else RAN
    by_name = {CUMULATIVE_BYTES: derived(wire_bytes_per_token)}
    fig = shared_figure(stage_figure, trace, stage, top, head, wire_per_layer=wire_per_layer, evidence=ev,
                        evidence_by_name=by_name)
    return Panel(fig, (), ev, by_name, values={"so_far": bytes_so_far(trace, stage, wire_per_layer)})


def bytes_so_far(trace, stage, wire_per_layer: float) -> float:
    """Interconnect bytes per token moved up to `stage`: nothing before the first layer, everything after the last;
    a layer's MoE bytes count from its dispatch on."""
    if stage.layer is None:
        return trace.bytes_per_token(wire_per_layer) if stage.kind in ("logits", "next") else 0.0
    cum = trace.bytes_cumulative(wire_per_layer)
    done = stage.layer if stage.kind in ("depth", "kda", "mla", "router") else stage.layer + 1
    return cum[done - 1] if done > 0 else 0.0


def wire_assumptions() -> tuple[list[Assumption], list[tuple[str, str]]]:
    """The headline's assumed inputs (each moved ±20% by the page's assumptions block) and the non-numeric ones."""
    fmts = {side: WIRE_FORMATS[getattr(REFERENCE, side)] for side in ("dispatch", "combine")}
    numbers = [
        Assumption("dispatch_elem_bytes", "dispatch: bytes per element on the wire", fmts["dispatch"].elem_bytes,
                   fmts["dispatch"].description, "the Interconnect page's 'dispatch precision'", "B"),
        Assumption("combine_elem_bytes", "combine: bytes per element on the wire", fmts["combine"].elem_bytes,
                   fmts["combine"].description, "the Interconnect page's 'combine precision'", "B"),
        Assumption("copies_scale", "copies per token, against uniform routing's expectation", 1.0,
                   "the bytes assume uniform routing, not this prompt's routing (its max-violation is on the map)"),
        Assumption("metadata_scale", "routing metadata and padding per record, against DeepEP's layout", 1.0,
                   "the record layouts read from DeepEP's buffers (k3lite/interconnect/deployment.py)")]
    also = [("deployment", REFERENCE.describe()),
            ("model", "the trained lite checkpoint's config; every MoE layer moves the same bytes per token")]
    return numbers, also
