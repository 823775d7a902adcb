"""What each design choice buys in dollars, three models side by side, the seed's "six B300" claim, and the
serving model checked against every published serving figure we could find (k3lite/serving.py is the model).

Waterfall, one step per choice on the same hardware, from a K3-sized classic design to K3:
    classic     K3's config with the routed experts in d_model: half the experts (448) and half the top-k (8)
                at the same expert width, so the same expert parameters and FLOPs per token (LatentMoE,
                arXiv 2601.18089, reinvests the d/l saved bytes in d/l x more experts and top-k); all layers MLA;
                every weight bf16
    + LatentMoE 896 experts, top-16, in a 3584-wide latent (K3's MoE)
    + 3:1 KDA:MLA (K3's attention)
    + 4-bit experts (MXFP4 routed experts, the rest bf16: memory.RELEASED_K3_FORMATS)  = K3 as released
Each step is evaluated at the largest batch per GPU that fits in HBM and keeps every user at >= 20 tokens/s
(DeepSeek's reported average output speed), so a design that frees HBM can serve more sequences at once.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

from k3lite import memory
from k3lite.config import K3Config, get_preset
from k3lite.cost import PRICES, ModelPrice
from k3lite.hardware import get_gpu
from k3lite.serving import MIN_TOKENS_PER_USER, Serving, best_batch, decode_step, prefill_usd_per_m_input

FP8 = {"routed_experts": "fp8", "attention": "fp8", "shared": "fp8", "embeddings": "fp8"}
FP4_EXPERTS = {**FP8, "routed_experts": "mxfp4"}  # K3's expert format (config.json quantization_config), fp8 rest
BF16 = {**memory.RELEASED_K3_FORMATS, "routed_experts": "bf16"}  # every weight bf16: the waterfall's start
SUPER_NODE = dict(gpu="GB300 NVL72", n_gpus=64, ep=64)  # the seed's "64-GPU super-node", in one NVLink domain


# ------------------------------------------------------------------------------------------ six B300
class WeightsOnGPUs(NamedTuple):
    fmt: str
    bytes_total: float
    gpus: float  # fractional: bytes / HBM per GPU
    whole_gpus: int


def gpus_for_weights(preset: str = "kimi-k3", gpu: str = "B300") -> list[WeightsOnGPUs]:
    """The weights alone at each storage format (all components), in GPUs' worth of HBM."""
    cfg, hbm = get_preset(preset), get_gpu(gpu).hbm_bytes
    rows = []
    for fmt in memory.PRECISIONS:
        b = sum(memory.weight_bytes(cfg, fmt).values())
        rows.append(WeightsOnGPUs(fmt, b, b / hbm, math.ceil(b / hbm)))
    return rows


# ------------------------------------------------------------------------------------------ waterfall
def classic_variant(cfg: K3Config) -> K3Config:
    """The same-sized classic design: experts in d_model, E/c experts and top-k/c (c = d_model / latent)."""
    moe = cfg.moe
    if not moe.latent_dim:
        return cfg
    c = cfg.d_model // moe.latent_dim
    return cfg.with_(name=f"{cfg.name} (classic MoE)",
                     moe=replace(moe, n_routed_experts=moe.n_routed_experts // c, top_k=max(1, moe.top_k // c),
                                 latent_dim=0, latent_norm=False))


class WaterfallStep(NamedTuple):
    label: str
    serving: Serving
    batch: int
    usd_per_m: float
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float


def waterfall(preset: str = "kimi-k3", context: int = 32768, **hardware) -> list[WaterfallStep]:
    hw = {**SUPER_NODE, **hardware}
    k3 = get_preset(preset)
    classic = classic_variant(k3).with_(kda_ratio=(0, 1))
    latent = k3.with_(name=f"{k3.name} (all MLA)", kda_ratio=(0, 1))
    steps = [("classic: full-width MoE, all MLA, bf16", classic, BF16), ("+ LatentMoE", latent, BF16),
             ("+ 3:1 KDA:MLA", k3, BF16), ("+ MXFP4 experts (= K3 as released)", k3, memory.RELEASED_K3_FORMATS)]
    out = []
    for label, cfg, fmt in steps:
        s = Serving(cfg, weights=fmt, context=context, **hw)
        b = best_batch(s, MIN_TOKENS_PER_USER)
        st = decode_step(s, b)
        out.append(WaterfallStep(label, s, b, st.usd_per_m_output_tokens, st.tokens_per_s_per_gpu,
                                 st.tokens_per_s_per_user))
    return out


# ------------------------------------------------------------------------------------------ side by side
def side_by_side(presets=("kimi-k3", "kimi-k2", "deepseek-v3"), context: int = 32768, **hardware) -> list[dict]:
    """Each model at fp8 and with 4-bit experts on the same hardware, at its best batch (>= 20 tokens/s/user)."""
    hw = {**SUPER_NODE, **hardware}
    rows = []
    for preset in presets:
        name = preset
        for label, fmt in (("fp8", FP8), ("4-bit experts", FP4_EXPERTS)):
            s = Serving(name, weights=fmt, context=context, **hw)
            b = best_batch(s, MIN_TOKENS_PER_USER)
            st = decode_step(s, b)
            rows.append({"model": name, "weights": label, "batch / GPU": b,
                         "tokens/s / GPU": round(st.tokens_per_s_per_gpu), "tokens/s / user": st.tokens_per_s_per_user,
                         "$ / M output": st.usd_per_m_output_tokens, "$ / M input (prefill)": prefill_usd_per_m_input(s),
                         "bound by": st.bound})
    return rows


# ------------------------------------------------------------------------------------------ validation
class Published(NamedTuple):
    label: str
    short: str  # axis label
    serving: Serving
    batch_per_gpu: int
    measured_tokens_per_s_per_gpu: float
    source: str


PUBLISHED: tuple[Published, ...] = (
    Published("DeepSeek-V3/R1 online service, H800 (EP144 decode, 18 nodes)", "DeepSeek service, 18x8 H800",
              Serving("deepseek-v3", "H800", 144, 144, 1, FP8, 4989), 128, 14_800 / 8,
              "DeepSeek, open-infra-index day 6 'DeepSeek-V3/R1 Inference System Overview' (2025-02-28): "
              "~14.8k output tokens/s per H800 node during decoding, average KV length 4,989, FP8 matmuls and "
              "dispatch, BF16 MLA and combine; batch 128 per GPU from the LMSYS comparison table (2025-05-05)"),
    Published("DeepSeek-V3 on SGLang, 9 x 8 H100 decode (EP72)", "SGLang DeepSeek-V3, 9x8 H100",
              Serving("deepseek-v3", "H100 SXM", 72, 72, 1, FP8, 2000), 256, 22_282 / 8,
              "LMSYS / SGLang team, 'Deploying DeepSeek with PD Disaggregation and Large-scale Expert Parallelism "
              "on 96 H100 GPUs' (2025-05-05): 22,282 output tokens/s per node, batch 256, 2,000-token inputs"),
    Published("Kimi K2 on SGLang, 12 x 8 H200 decode (1P1D, 128 GPUs)", "SGLang Kimi K2, 12x8 H200",
              Serving("kimi-k2", "H200", 96, 96, 1, FP8, 2100), 480, 384_000 / 96,
              "LMSYS / Mooncake team, 'Deploying Kimi K2 with PD Disaggregation and Large-Scale Expert Parallelism "
              "on 128 H200 GPUs' (2025-07-17): decode throughput 384k tokens/s on the cluster (12 decode nodes), "
              "2,000-token inputs, 100-token outputs, decode batch 480 (read as per GPU: the blog does not say); we "
              "divide by the 96 decode GPUs"),
)


def validate(overlap: bool = True) -> list[dict]:
    """Model vs measurement at each publication's stated setting. A bound must land at or above each."""
    rows = []
    for p in PUBLISHED:
        st = decode_step(p.serving.with_(overlap=overlap), p.batch_per_gpu)
        rows.append({"deployment": p.label, "short": p.short,
                     "model / measured": st.tokens_per_s_per_gpu / p.measured_tokens_per_s_per_gpu,
                     "measured tokens/s / GPU": p.measured_tokens_per_s_per_gpu,
                     "model tokens/s / GPU": st.tokens_per_s_per_gpu, "batch / GPU": p.batch_per_gpu,
                     "context": p.serving.context, "model bound by": st.bound, "source": p.source})
    return rows


# ------------------------------------------------------------------------------------------ cost page
def physics_price(s: Serving | None = None) -> ModelPrice:
    """$ per M tokens derived from serving physics (decode at the best batch, compute-bound prefill), as a
    ModelPrice the cost page can use next to list prices. No prompt-cache discount is derived: K3's listed one."""
    s = s or Serving(**SUPER_NODE)  # the weights as K3 ships them
    st = decode_step(s, best_batch(s, MIN_TOKENS_PER_USER))
    return ModelPrice(f"{s.name} (serving physics)", prefill_usd_per_m_input(s), st.usd_per_m_output_tokens,
                      PRICES["kimi-k3"].cache_discount,
                      f"k3lite.serving on {s.n_gpus} x {s.gpu} at ${s.price:.2f}/GPU-hour, context {s.context:,}: "
                      "a roofline bound (cost floor), not a list price")
