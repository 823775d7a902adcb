"""One serving deployment to evaluate: the model, GPUs, parallel layout, storage formats, context, price, and
speculative decoding (`Serving`, `Speculation`), validated when built; nothing large is allocated. The physics that
evaluates it is in step.py (formulas in the package docstring)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from k3lite.analytic import memory
from k3lite.base.evidence import Evidence, assumed, listed
from k3lite.model.cards import CARDS
from k3lite.model.config import K3Config
from k3lite.model.presets import PRESETS, get_preset
from k3lite.analytic.hardware import custom_price, get_gpu, gpu_label, gpu_name, is_custom
from k3lite.interconnect import check_scheme

# $ per GPU-hour defaults (editable on the page)
USD_PER_GPU_HOUR: dict[str, tuple[float, str]] = {
    "H800": (2.0, "DeepSeek's inference-system overview (open-infra-index, day 6): 'leasing cost of one H800 GPU is $2 per hour'"),
    "H200": (2.3, "LMSYS/Mooncake Kimi K2 deployment blog (2025-07-17): 'H200 $2.3 / hour'"),
    "H100 SXM": (2.0, "assumed equal to DeepSeek's H800 figure (no cited H100 rate)"),
    "B200": (3.5, "assumed (no cited B200 rate)"),
    "B300": (4.5, "assumed (no cited B300 rate)"),
    "GB300 NVL72": (5.0, "assumed (no cited GB300 rate)"),
    "MI300X": (1.85, "gpu.blog MI300X marketplace listing: Vultr on-demand $1.85 / hour (TensorWave $1.71)"),
    "MI325X": (2.0, "awesomeagents.ai MI325X page: 'cloud rental at $2.00-$2.25/hr' (the low end)"),
    "MI350X": (3.0, "assumed (no cited MI350X rate; below the MI355X, as AMD's air-cooled part)"),
    "MI355X": (3.5, "assumed (no cited MI355X rate; taken equal to the B200's assumed rate)"),
}
# the one price table of the serving page, its frontier, its deployment and the cost page's serving-physics row:
# each GPU's URL key (no spaces: they are URL parameters), shared by every page that prices a GPU-hour
PRICE_URL_KEYS = {g: "sv_usd_" + g.replace(" ", "_") for g in USD_PER_GPU_HOUR}
YOURS = "yours: typed on the page"


class PriceTable(dict):
    """{GPU: ($ per GPU-hour, source)}; a custom GPU (hardware.custom_gpu_name) not in it answers with the price its
    name carries, the reader's own."""

    def __missing__(self, gpu: str) -> tuple[float, str]:
        if is_custom(gpu):
            return custom_price(gpu), YOURS
        raise KeyError(gpu)


def default_price(gpu: str) -> float:
    """A GPU's $ per GPU-hour when nothing is typed: the table's default, or a custom GPU's own field."""
    return custom_price(gpu) if is_custom(gpu) else USD_PER_GPU_HOUR[gpu_name(gpu)][0]


def price_table(overrides: dict | None = None) -> PriceTable:
    """{GPU: ($ per GPU-hour, where it comes from)} for every GPU: the defaults above, a value in `overrides` that
    differs from its default is the reader's own (source YOURS); a custom GPU's price is its own. Refuses a price
    outside (0, 1000)."""
    out = PriceTable(USD_PER_GPU_HOUR)
    for g, v in (overrides or {}).items():
        g = gpu_name(g)
        if not 0 < v < 1000:
            raise ValueError(f"$ per GPU-hour must be in (0, 1000), got {v} for {g}")
        if is_custom(g) or v != USD_PER_GPU_HOUR[g][0]:
            out[g] = (float(v), YOURS)
    return out


def price_kind(source: str) -> str:
    """'yours', 'assumed' or 'cited': how a price in price_table is known."""
    return "yours" if source == YOURS else "assumed" if source.startswith("assumed") else "cited"


def price_evidence(source: str) -> Evidence:
    """The evidence class of a price with this source: a quoted rental rate is listed (a price list: cited), ours
    and the reader's are assumed (the reader's says so)."""
    return listed(source) if price_kind(source) == "cited" else assumed(source)


# 4-bit shorthands of the CLI; "fp4" = NVFP4 (Blackwell's native 4-bit, smallest scale overhead of the FP4 pair)
FORMAT_ALIASES = {"fp4": "nvfp4", "bf16": "bf16", "fp8": "fp8", "nvfp4": "nvfp4", "mxfp4": "mxfp4", "int4": "int4"}
# the MLA latent cache's storage formats: bytes per cached token of one MLA layer, from its latent and rope widths.
# fp8 is FlashMLA's FP8 layout (deepseek-ai/FlashMLA, used for DeepSeek-V3.2): the latent as E4M3 with one fp32 scale
# per 128 values, the rope part kept bf16: 512 + 16 + 128 = 656 bytes a token for DeepSeek's 512 + 64 widths
CACHE_FORMATS = {
    "bf16": lambda latent, rope: 2 * (latent + rope),
    "fp8": lambda latent, rope: latent + 4 * math.ceil(latent / 128) + 2 * rope,
}
CACHE_SOURCE = ("fp8 latent cache: FlashMLA's FP8 KV layout (deepseek-ai/FlashMLA; 656 bytes a token for DeepSeek's "
                "512 + 64: E4M3 latent, four fp32 scales, bf16 rope); bf16: 2 bytes a number")
DEEPSEEK_TOKENS_PER_USER = (20.0, 22.0)  # DeepSeek's reported average output speed, tokens/s (day-6 overview)
MIN_TOKENS_PER_USER = DEEPSEEK_TOKENS_PER_USER[0]  # the slowest speed the pages price at: DeepSeek's reported floor


def check_tp(gpu: str, tp: int) -> None:
    """The one TP rule (every Serving, so the deployment panel, the solver, the frontier and the CLI): a TP group
    all-reduces after every layer over NVLink and is priced at NVLink's bandwidth, so it stays inside one NVLink
    domain; a wider one is refused by name (pricing it across the NIC is not modelled)."""
    domain = get_gpu(gpu).nvlink_domain
    if tp > domain:
        raise ValueError(f"TP {tp} is wider than the {domain}-GPU NVLink domain of {gpu_label(gpu)}: a TP group "
                         f"all-reduces every layer over NVLink, so it must stay inside one domain (TP <= {domain}; "
                         "across the NIC is not modelled)")


def against_deepseek(speed: float) -> str:
    """`speed` (tokens/s per user) against DeepSeek's reported 20-22, computed: '2.3-2.5x DeepSeek's 20-22'."""
    lo, hi = DEEPSEEK_TOKENS_PER_USER
    if speed <= 0:
        raise ValueError(f"speed must be > 0 tokens/s per user, got {speed}")
    if lo <= speed <= hi:
        return f"within DeepSeek's reported {lo:.0f}-{hi:.0f}"
    a, b = f"{speed / hi:.1f}", f"{speed / lo:.1f}"
    return f"{a if a == b else a + '-' + b}x DeepSeek's reported {lo:.0f}-{hi:.0f}"
K3_PRESET = "kimi-k3"  # the one name of the K3 preset in this module (pages and CLIs default to it)


# ------------------------------------------------------------------------------------------ speculation
# Does the released checkpoint ship a multi-token-prediction (MTP) layer the server can draft with?
MTP_LAYERS: dict[str, tuple[int, str]] = {k: card.mtp for k, card in CARDS.items()}  # (layers, source), from each card
# vLLM's K3 post serves with a DSpark draft of 8 tokens (vLLM blog 2026-09-13, `num_speculative_tokens: 8`); it
# does not report the acceptance. The one K3 DSpark acceptance we found: Inferact/Kimi-K3-DSpark-Block5 model
# card, 8 x B300 TP8, temperature 1.0: 3.305 tokens per verification step aggregated over 1,604 requests.
DSPARK_DRAFT_TOKENS = 8
DSPARK_ACCEPTANCE = 3.3
DSPARK_DRAFT_PARAMS = 2.7e9  # Inferact/Kimi-K3.1-Pro-DSpark-preview card: 5 dense layers, 2.7B parameters, bf16
DSPARK_DRAFT_LAYERS = 5  # the same card: one forward pass per block runs its 5 layers (each pays a layer's fixed time)
SPEC_SOURCE = ("draft length 8: vLLM's K3 post (2026-09-13, DSpark, num_speculative_tokens 8); acceptance 3.3 tokens "
               "per step: Inferact/Kimi-K3-DSpark-Block5 card (aggregate 3.305 over 1,604 requests, 8 x B300 TP8, "
               "temperature 1.0; a 5-token block, as the vLLM post reports no acceptance); drafter 2.7B bf16 params "
               "(Inferact/Kimi-K3.1-Pro-DSpark-preview card), one forward pass per block")

# DeepSeek-V3's own MTP figures (arXiv 2412.19437 §2.2 and §5.4.3): one module drafts one token, and the second token is
# accepted 85-90% of the time: 1 + 0.85 (the low end) = 1.85 tokens kept per step
MTP_DRAFT_TOKENS = 1
MTP_ACCEPTANCE = 1.85
MTP_SPEC_SOURCE = ("DeepSeek-V3 report (arXiv 2412.19437): one MTP module (§2.2), so 1 drafted token per step; the "
                   "second token is accepted 85-90% of the time (§5.4.3), so 1.85 tokens kept per step (1 + the low "
                   "end); the report's 1.8x TPS")


def has_mtp(preset: str | K3Config) -> bool:
    """Whether the preset's released checkpoint ships an MTP layer (a config not in the table: no)."""
    name = preset.name if isinstance(preset, K3Config) else preset
    return MTP_LAYERS.get(name, (0, ""))[0] > 0


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding: a drafter proposes `draft_tokens` tokens, the model verifies all of them (and one
    more) in one step, and on average `acceptance` tokens per sequence survive (1 = nothing accepted, the bonus
    token only; draft_tokens + 1 = everything accepted).

    drafter "mtp": the model's own MTP layer, run once per drafted token (DeepSeek-V3's scheme): each pass costs
        one more layer of the model, 1 / n_layers of a plain decode step at the same batch.
    drafter "draft-model": a separate small model (vLLM's DSpark drafts a whole block in one forward pass):
        its `draft_params` bf16 weights are read once per step and it computes 2 x params FLOPs per drafted token;
        its forward pass runs `draft_layers` layers (the predictor charges each a layer's fixed latency).
    """

    draft_tokens: int = DSPARK_DRAFT_TOKENS
    acceptance: float = DSPARK_ACCEPTANCE
    drafter: str = "draft-model"
    draft_params: float = DSPARK_DRAFT_PARAMS
    draft_layers: int = DSPARK_DRAFT_LAYERS

    def __post_init__(self) -> None:
        if not isinstance(self.draft_tokens, int) or not 1 <= self.draft_tokens <= 32:
            raise ValueError(f"draft_tokens must be an integer in 1..32, got {self.draft_tokens!r}")
        if not 1.0 <= self.acceptance <= self.draft_tokens + 1:
            raise ValueError(f"acceptance (tokens per verification step) must be in [1, draft_tokens + 1 = "
                             f"{self.draft_tokens + 1}], got {self.acceptance}")
        if self.drafter not in ("mtp", "draft-model"):
            raise ValueError(f"drafter must be 'mtp' or 'draft-model', got {self.drafter!r}")
        if not 0 <= self.draft_params <= 1e12:
            raise ValueError(f"draft_params must be in [0, 1e12], got {self.draft_params}")
        if not isinstance(self.draft_layers, int) or not 0 <= self.draft_layers <= 256:
            raise ValueError(f"draft_layers must be an integer in 0..256, got {self.draft_layers!r}")


def default_speculation(preset: str | K3Config) -> Speculation:
    """The speculation a model is served with by default, from its own sources: a model that ships an MTP layer
    drafts with it at its report's figures (DeepSeek-V3: 1 drafted, 1.85 kept); any other model with a separate
    DSpark draft model at K3's figures (8 drafted, 3.3 kept)."""
    if has_mtp(preset):
        return Speculation(MTP_DRAFT_TOKENS, MTP_ACCEPTANCE, "mtp")
    return Speculation()


def speculation_source(preset: str | K3Config) -> str:
    """Where `default_speculation(preset)`'s numbers come from."""
    return MTP_SPEC_SOURCE if has_mtp(preset) else SPEC_SOURCE


def precision_map(weights: str | dict[str, str]) -> dict[str, str]:
    """{component: storage format} from one name (all components) or a partial dict (rest bf16)."""
    if isinstance(weights, str):
        weights = {c: weights for c in memory.WEIGHT_COMPONENTS if c != "other"}
    out = {}
    for comp, fmt in weights.items():
        if fmt not in FORMAT_ALIASES:
            raise ValueError(f"weight format must be one of {list(FORMAT_ALIASES)}, got {fmt!r} for {comp}")
        out[comp] = FORMAT_ALIASES[fmt]
    return out


@dataclass(frozen=True)
class Serving:
    """One deployment to evaluate (validated; nothing large is built)."""

    preset: str | K3Config = K3_PRESET  # a preset name, or a config (the waterfall's variants)
    gpu: str = "B300"
    n_gpus: int = 64
    ep: int = 64
    tp: int = 1
    weights: dict = field(default_factory=lambda: dict(memory.RELEASED_K3_FORMATS))  # as K3 ships
    context: int = 32768
    overlap: bool = True
    usd_per_gpu_hour: float | None = None  # None = the GPU's default above
    dispatch: str = "fp8"
    combine: str = "bf16"
    scheme: str = "low-latency"  # DeepEP's decode kernels: one message per (token, selected expert)
    spec: Speculation | None = None  # speculative decoding (None: one token per sequence per step)
    cache: str = "bf16"  # the MLA latent cache's format: "bf16" or "fp8" (FlashMLA's layout, CACHE_FORMATS); the
    #                      KDA state stays fp32
    dcp: int = 1  # decode context parallelism: the MLA latent cache of a TP group split over dcp of its GPUs by
    #               token (SGLang's --dcp-size) instead of held whole on each; 1 = replicated, as TP alone keeps it

    def __post_init__(self) -> None:
        if not isinstance(self.preset, K3Config) and self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {self.preset!r}")
        object.__setattr__(self, "gpu", gpu_name(self.gpu))  # "H100" -> "H100 SXM" (frozen: set once, here)
        for name in ("n_gpus", "ep", "tp"):
            v = getattr(self, name)
            if not isinstance(v, int) or not 1 <= v <= 4096:
                raise ValueError(f"{name} must be an integer in 1..4096, got {v!r}")
        if self.tp > self.n_gpus:
            raise ValueError(f"tp ({self.tp}) must be <= the {self.n_gpus} GPUs of the replica")
        check_tp(self.gpu, self.tp)
        if self.n_gpus % self.ep or self.n_gpus % self.tp:
            raise ValueError(f"n_gpus ({self.n_gpus}) must be a multiple of ep ({self.ep}) and of tp ({self.tp})")
        if not isinstance(self.dcp, int) or self.dcp < 1 or self.tp % self.dcp:
            raise ValueError(f"dcp ({self.dcp!r}) must be a positive divisor of tp ({self.tp}): decode context "
                             "parallelism splits the latent cache over GPUs of one TP group")
        if self.ep > self.cfg.moe.n_routed_experts:
            raise ValueError(f"ep ({self.ep}) must be <= the preset's {self.cfg.moe.n_routed_experts} routed experts")
        if not 1 <= self.context <= 10_000_000:
            raise ValueError(f"context must be 1..10,000,000 tokens, got {self.context}")
        if self.usd_per_gpu_hour is not None and not (0 < self.usd_per_gpu_hour < 1000):
            raise ValueError(f"$ per GPU-hour must be in (0, 1000), got {self.usd_per_gpu_hour}")
        if self.cache not in CACHE_FORMATS:
            raise ValueError(f"cache must be one of {list(CACHE_FORMATS)}, got {self.cache!r}")
        object.__setattr__(self, "weights", precision_map(self.weights))
        check_scheme(self.scheme)
        if self.spec is not None and self.spec.drafter == "mtp" and not has_mtp(self.cfg):
            raise ValueError(f"{self.name} ships no MTP layer ({MTP_LAYERS.get(self.name, (0, 'not in the table'))[1]}): "
                             "speculate with drafter='draft-model'")

    @property
    def cfg(self) -> K3Config:
        return self.preset if isinstance(self.preset, K3Config) else get_preset(self.preset)

    @property
    def name(self) -> str:
        return self.cfg.name

    @property
    def price(self) -> float:
        return self.usd_per_gpu_hour if self.usd_per_gpu_hour is not None else default_price(self.gpu)

    def with_(self, **changes) -> "Serving":
        return replace(self, **changes)

    def inputs(self) -> dict:
        """The inputs as plain JSON values (the CLI echoes them)."""
        return {"preset": self.name, "gpu": self.gpu, "n_gpus": self.n_gpus, "ep": self.ep, "tp": self.tp,
                "weights": dict(self.weights), "context": self.context, "overlap": self.overlap,
                "usd_per_gpu_hour": self.price, "dispatch": self.dispatch, "combine": self.combine,
                "scheme": self.scheme, "dcp": self.dcp, "cache": self.cache,
                "spec": None if self.spec is None else {"draft_tokens": self.spec.draft_tokens,
                                                        "acceptance": self.spec.acceptance,
                                                        "drafter": self.spec.drafter,
                                                        "draft_params": self.spec.draft_params,
                                                        "draft_layers": self.spec.draft_layers}}
