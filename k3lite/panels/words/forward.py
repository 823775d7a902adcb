"""The forward-pass page's words at each level (views/forward_pass.py): the question, the checkpoint's caption, the
sentence under the map, each stage's 'what happens here', the note under the stage, and at paper level the wire
bytes of one MoE layer and of the pass so far, with their symbols in the code.

Engineer is the page as written (k3lite.panels.forward, k3lite.viz.model.WHAT); first look and paper reword it from
the same trace, the same top-5 and the same wire bytes."""
from __future__ import annotations

from k3lite.analytic.latent import record_overhead
from k3lite.base.evidence import derived
from k3lite.base.tokenizer import token_label
from k3lite.interconnect import REFERENCE, deployment_bytes, wire_bytes_per_token
from k3lite.model.presets import get_preset
from k3lite.panels.forward import bytes_so_far, prompt_sentence
from k3lite.panels.words import Formula, first_look_compare, pick
from k3lite.viz.model import WHAT
from k3lite.viz.style import fmt_bytes

QUESTION = {"first": "**Follow your prompt through the model: it becomes bytes, each layer reworks them, and the last "
                     "step guesses the next byte.**",
            "engineer": "**What happens to your prompt inside the model, stage by stage, and which stages move bytes "
                        "between GPUs?**"}
QUESTION["paper"] = QUESTION["engineer"]

VOCAB = get_preset("lite").vocab_size  # the byte-level vocabulary the run model reads and predicts
FIRST_WHAT = {
    "tokenize": f"The prompt is cut into bytes, the model's letters: {VOCAB} possible ones, so any language works.",
    "embed": "Each byte becomes a list of numbers the model can compute with, looked up in a table.",
    "depth": "Before it works, this layer chooses which earlier layers' results to read, and how much of each.",
    "kda": "A fast attention layer: it keeps a fixed-size memory of the prompt, fading old parts and writing what "
           "is new.",
    "mla": "A full attention layer: it looks back at every earlier byte, so its memory grows with the prompt.",
    "router": "A small scorer picks, for each byte, the few experts suited to it.",
    "experts": "The chosen experts, small networks that may sit on other GPUs, each work on the byte; sending it to "
               "them is what costs network bytes.",
    "combine": "The experts' answers come back and are added up, each weighted by the scorer's trust in it.",
    "dense": "This early layer runs one ordinary network for every byte, no experts: nothing crosses the network.",
    "logits": f"The model turns its final numbers into a score for each of the {VOCAB} possible next bytes.",
    "next": "The scores become chances; the top one is the best guess, and Generate keeps going byte by byte.",
}
# where each stage's code lives and who states it: the paper level's addition to the engineer's words
PAPER_SOURCE = {
    "tokenize": "Code: `k3lite.base.tokenizer.encode`.",
    "embed": "Code: `K3Model.embed`; v₀ is the first source of every depth mix (Attention Residuals, arXiv 2603.15031).",
    "depth": "Code: `k3lite.model.attnres.DepthAttention`; Attention Residuals, Kimi Team, arXiv 2603.15031 (the "
             "Attention Residuals page shows the equation).",
    "kda": "Code: `k3lite.model.kda.ops.gated_delta_step`; Kimi Linear tech report, arXiv 2510.26692 (the KDA page "
           "shows the rule).",
    "mla": "Code: `k3lite.model.mla`; MLA as in DeepSeek-V3 (arXiv 2412.19437), with an output gate.",
    "router": "Code: `k3lite.model.moe.router`; quantile balancing, Kimi K3 Technical Report, arXiv 2607.24653 §2.3.3 "
              "Eq. 14 (the MoE page shows it).",
    "experts": "Code: `k3lite.model.moe.latent.LatentMoE`; LatentMoE, NVIDIA arXiv 2601.18089; the dispatch as DeepEP "
               "(deepseek-ai/DeepEP) sends it.",
    "combine": "Code: `LatentMoE.forward`; K3's report Eq. 11 puts the norm on the aggregated output.",
    "dense": "Code: `k3lite.model.nn`; first_k_dense as each model's config.json states it.",
    "logits": "Code: `K3Model.forward` (tied embedding); the final depth mix as Attention Residuals, arXiv 2603.15031.",
    "next": "Code: `K3Model.generate`, with the decode caches of `k3lite.model.kda.layer` and `k3lite.model.mla`.",
}


def what(level: str, kind: str) -> str:
    """The stage's 'what happens here'."""
    return pick(level, FIRST_WHAT[kind], WHAT[kind], f"{WHAT[kind]} {PAPER_SOURCE[kind]}")


def checkpoint(level: str, meta: dict) -> str:
    return pick(level, f"The small **lite** model here was trained for this app ({meta.get('steps')} steps).",
                f"The trained **lite** model: {meta.get('steps')} training steps, validation loss "
                f"{meta['val_loss']:.2f} nats/byte (uniform guessing: 5.55).")


def prompt_said(level: str, trace, top, n_stages: int) -> str:
    """Under the map: the same length, best guess and its probability as prompt_sentence."""
    if level != "first":
        return prompt_sentence(trace, top, n_stages)
    return (f"Your prompt is **{len(trace.tokens)} bytes**; the model's best guess for the next one is "
            f"**“{token_label(top[0][0])}”** ({100 * top[1][0]:.1f}%). Press Next ▶ to follow it through the "
            f"{n_stages} stages.")


NOTICE = {"first": "What to notice: only the expert layers send bytes between GPUs.",
          "engineer": "What to notice: KDA layers are cheap per token and carry a fixed-size memory; the MLA layers "
                      "are the only ones whose cost grows with the prompt; only the MoE layers move bytes between "
                      "GPUs, and the latent projection is what keeps that number small."}
NOTICE["paper"] = NOTICE["engineer"]


def compare(level: str, panel, pair):
    return first_look_compare(level, panel, pair, "hbm", "bytes one new token reads from GPU memory")


def interconnect_label(level: str, wire_total: float) -> str:
    return pick(level, f"{wire_total:,.0f} B per expert layer: see them on the Interconnect page",
                f"{wire_total:,.0f} B per MoE layer on the Interconnect page: lite preset, {REFERENCE.describe()}")


# ------------------------------------------------------------------------------------------ paper level
def _wire(c, lat, b_d, b_c, o):
    return c * (lat * (b_d + b_c) + o)  # the MoE page's W, for the run model


def _so_far(n, W):
    return n * W


def formulas(cfg, trace, stage) -> list[Formula]:
    """The wire bytes of one MoE layer of the run model on the reference deployment, and of the pass up to `stage`."""
    wire = deployment_bytes(cfg, REFERENCE)
    lat = cfg.moe.latent_dim or cfg.d_model
    W = wire.total
    so_far = bytes_so_far(trace, stage, W)
    ffn = [layer.ffn_type for layer in trace.layers]
    n = round(so_far / W) if W else 0
    return [
        Formula(r"W = c\,\big(l\,(b_d + b_c) + o\big)",
                (("W", "deployment_bytes(cfg, REFERENCE).total"), ("c", "copies.total"), ("l", "latent_dim"),
                 ("b_d", "dispatch_elem_bytes (FP8: 1)"), ("b_c", "combine_elem_bytes (BF16: 2)"),
                 ("o", "record_overhead(moe, d_model)")),
                _wire, lambda **_: deployment_bytes(cfg, REFERENCE).total,
                dict(c=wire.copies.total, lat=lat, b_d=1.0, b_c=2.0, o=record_overhead(cfg.moe, cfg.d_model)),
                lambda w: f"One MoE layer of the lite model ({cfg.moe.n_routed_experts} experts, top-"
                          f"{cfg.moe.top_k}, l = {lat}) moves W = {fmt_bytes(w)} per token on "
                          f"{REFERENCE.topology.label}, EP {REFERENCE.ep_size}",
                "LatentMoE, NVIDIA arXiv 2601.18089; records as DeepEP (deepseek-ai/DeepEP) sends them",
                derived(wire_bytes_per_token)),
        Formula(r"B_{\le s} = n_{\mathrm{MoE}}(s)\; W",
                (("B_{\\le s}", "bytes_so_far(trace, stage, W)"), ("n_{\\mathrm{MoE}}(s)", "MoE layers done by s"),
                 ("W", "wire_per_layer")),
                _so_far, lambda **_: bytes_so_far(trace, stage, W), dict(n=n, W=W),
                lambda b: f"Up to this stage: {n} of {ffn.count('moe')} MoE layers done, {fmt_bytes(b)} per token "
                          "(the 'so far' metric; dense layers add nothing)",
                "Trace.bytes_cumulative", derived(bytes_so_far)),
    ]


PAPER_NOTES = ("Each stage's own equation is on its page: the gated delta rule (KDA), the softmax over depth "
               "(Attention Residuals), Eq. 14 and the LatentMoE wire bytes (MoE), the cache and the roofline "
               "(3:1 hybrid). Sources: Kimi K3 Technical Report, arXiv 2607.24653; Kimi Linear, arXiv 2510.26692; "
               "DeepSeek-V3, arXiv 2412.19437; DeepEP (deepseek-ai/DeepEP).",)
