"""Typed, validated configuration for every k3lite model, plus published presets.

Everything the model builds comes from a `K3Config`. Construction validates the whole
config and raises `ValueError` naming the violated constraint, so a bad slider
combination in the app becomes a readable message, never a traceback.

Presets (sources in each function's docstring):
    deepseek-v3, kimi-k2, kimi-linear-48b-a3b, k3-estimated, lite
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Literal

MixerType = Literal["kda", "mla"]
FFNType = Literal["dense", "moe"]
Balancing = Literal["none", "aux_loss", "bias", "quantile"]
AttnResMode = Literal["standard", "full", "block"]

BALANCING_METHODS: tuple[str, ...] = ("none", "aux_loss", "bias", "quantile")
ATTN_RES_MODES: tuple[str, ...] = ("standard", "full", "block")


def _positive(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _non_negative(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


@dataclass(frozen=True)
class MLAConfig:
    """Multi-head latent attention (DeepSeek-V2/V3 family), optionally gated.

    K and V are compressed jointly into a `kv_lora_rank` latent (the only thing the
    decode cache stores, plus the shared RoPE key part).
    """

    n_heads: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int  # decoupled RoPE part of q/k; kept (as plain dims) when use_rope=False
    v_head_dim: int
    q_lora_rank: int = 0  # 0 = full-rank q projection (Kimi Linear); >0 = low-rank q (DeepSeek-V3)
    use_rope: bool = True  # False = NoPE (Kimi Linear's MLA layers): position comes from the KDA layers
    output_gate: bool = False  # sigmoid gate on the attention output (gated attention)

    def __post_init__(self) -> None:
        _positive("mla.n_heads", self.n_heads)
        _positive("mla.kv_lora_rank", self.kv_lora_rank)
        _positive("mla.qk_nope_head_dim", self.qk_nope_head_dim)
        _non_negative("mla.qk_rope_head_dim", self.qk_rope_head_dim)
        _positive("mla.v_head_dim", self.v_head_dim)
        _non_negative("mla.q_lora_rank", self.q_lora_rank)
        if self.use_rope and self.qk_rope_head_dim % 2:
            raise ValueError(f"mla.qk_rope_head_dim must be even for RoPE, got {self.qk_rope_head_dim}")

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


@dataclass(frozen=True)
class KDAConfig:
    """Kimi Delta Attention: gated delta rule with a per-channel (diagonal) decay."""

    n_heads: int
    head_dim: int  # K = V = head_dim
    conv_size: int = 4  # short causal depthwise conv on q, k, v
    gate_rank: int = 0  # rank of the low-rank decay/output gates; 0 = head_dim (Kimi Linear)
    # log-decay form. None: g = -exp(A_log) * softplus(f + dt_bias), unbounded below (Kimi Linear, fla's default).
    # A number L < 0: g = L * sigmoid(exp(A_log) * (f + dt_bias)), so a per-token decay in [e^L, 1)
    # (K3's `gate_lower_bound` -5.0; fla's `fused_kda_gate(..., lower_bound=)`, its "safe gate").
    decay_lower_bound: float | None = None
    output_gate_full_rank: bool = False  # sigmoid output gate d -> H*V in one matrix (K3) instead of low rank
    output_gate_bias: bool = True  # bias on the output gate's last projection (fla's layer has one)
    beta_bias: bool = False  # a learned bias on the write strength beta = sigmoid(W_b x + b) (the lab's layers)

    def __post_init__(self) -> None:
        _positive("kda.n_heads", self.n_heads)
        _positive("kda.head_dim", self.head_dim)
        _positive("kda.conv_size", self.conv_size)
        _non_negative("kda.gate_rank", self.gate_rank)
        if self.decay_lower_bound is not None and not (isinstance(self.decay_lower_bound, (int, float))
                                                       and self.decay_lower_bound < 0):
            raise ValueError(f"kda.decay_lower_bound must be None or a negative number, got {self.decay_lower_bound!r}")

    @property
    def rank(self) -> int:
        return self.gate_rank or self.head_dim


# K3's KDA decay bound: config.json `gate_lower_bound` -5.0 (moonshotai/Kimi-K3; fla `fused_kda_gate(lower_bound=)`):
# g = -5 sigmoid(...), so every channel keeps at least e^-5 = 0.0067 of its state per token.
K3_DECAY_LOWER_BOUND = -5.0


def routed_fraction(top_k: int, n_routed_experts: int) -> float:
    """Share of the routed experts one token visits (top-k / E): the "activation ratio" of the expert pool.
    `MoEConfig.activation_ratio`, the parameter count, the home page and the routing page's table all use it."""
    if not 1 <= top_k <= n_routed_experts:
        raise ValueError(f"need 1 <= top_k <= routed experts, got top_k {top_k}, experts {n_routed_experts}")
    return top_k / n_routed_experts


@dataclass(frozen=True)
class MoEConfig:
    """Routed experts (+ always-on shared experts), optionally in a latent space (LatentMoE)."""

    n_routed_experts: int
    top_k: int
    expert_ffn_dim: int  # SwiGLU hidden size of one routed expert
    n_shared_experts: int = 0
    shared_ffn_dim: int = 0  # hidden size of ONE shared expert; 0 = expert_ffn_dim
    latent_dim: int = 0  # 0 = classic MoE (experts in d_model); >0 = LatentMoE dim
    latent_norm: bool = False  # RMSNorm on the latent before dispatch
    balancing: Balancing = "quantile"
    score_func: Literal["sigmoid", "softmax"] = "sigmoid"
    route_scale: float = 1.0  # multiplies gate weights after top-k renormalisation (DeepSeek-V3: 2.5)
    n_groups: int = 1  # group-limited routing: experts split into groups ...
    topk_groups: int = 1  # ... and each token may only use the best `topk_groups` of them
    capacity_factor: float = 0.0  # 0 = no capacity limit (no dropped tokens)
    aux_loss_alpha: float = 0.01  # Switch aux-loss coefficient
    bias_gamma: float = 0.001  # DeepSeek-V3 bias update speed

    def __post_init__(self) -> None:
        _positive("moe.n_routed_experts", self.n_routed_experts)
        _positive("moe.top_k", self.top_k)
        _positive("moe.expert_ffn_dim", self.expert_ffn_dim)
        _non_negative("moe.n_shared_experts", self.n_shared_experts)
        _non_negative("moe.shared_ffn_dim", self.shared_ffn_dim)
        _non_negative("moe.latent_dim", self.latent_dim)
        if self.top_k > self.n_routed_experts:
            raise ValueError(
                f"moe.top_k ({self.top_k}) must be <= moe.n_routed_experts ({self.n_routed_experts})"
            )
        if self.balancing not in BALANCING_METHODS:
            raise ValueError(f"moe.balancing must be one of {BALANCING_METHODS}, got {self.balancing!r}")
        if self.score_func not in ("sigmoid", "softmax"):
            raise ValueError(f"moe.score_func must be 'sigmoid' or 'softmax', got {self.score_func!r}")
        _positive("moe.n_groups", self.n_groups)
        _positive("moe.topk_groups", self.topk_groups)
        if self.n_routed_experts % self.n_groups:
            raise ValueError(
                f"moe.n_routed_experts ({self.n_routed_experts}) must be divisible by moe.n_groups ({self.n_groups})"
            )
        if self.topk_groups > self.n_groups:
            raise ValueError(f"moe.topk_groups ({self.topk_groups}) must be <= moe.n_groups ({self.n_groups})")
        if self.top_k > self.topk_groups * (self.n_routed_experts // self.n_groups):
            raise ValueError(
                f"moe.top_k ({self.top_k}) must be <= experts reachable in the allowed groups "
                f"({self.topk_groups} x {self.n_routed_experts // self.n_groups})"
            )
        if self.capacity_factor < 0:
            raise ValueError(f"moe.capacity_factor must be >= 0 (0 = unlimited), got {self.capacity_factor}")
        if self.route_scale <= 0:
            raise ValueError(f"moe.route_scale must be > 0, got {self.route_scale}")

    @property
    def one_shared_ffn_dim(self) -> int:
        return self.shared_ffn_dim or self.expert_ffn_dim

    @property
    def activation_ratio(self) -> float:
        """Fraction of routed experts one token uses (K3: 16/896 = 1.8%)."""
        return routed_fraction(self.top_k, self.n_routed_experts)


@dataclass(frozen=True)
class K3Config:
    """The whole hybrid stack.

    Layer pattern: `kda_ratio = (a, b)` repeats `a` KDA layers then `b` global MLA layers;
    `last_layer_global` forces the final layer to MLA (Kimi Linear: MLA every 4th layer and the last).
    `(0, 1)` is an all-MLA model (DeepSeek-V3, Kimi K2).
    """

    name: str
    vocab_size: int
    d_model: int
    n_layers: int
    mla: MLAConfig
    moe: MoEConfig
    kda: KDAConfig | None = None
    kda_ratio: tuple[int, int] = (3, 1)
    last_layer_global: bool = True
    first_k_dense: int = 1  # the first k layers use a dense FFN instead of MoE
    dense_ffn_dim: int = 0  # SwiGLU hidden size of the dense FFN layers
    attn_res: AttnResMode = "block"
    attn_res_block_size: int = 4  # sublayers per block in block Attention Residuals
    tie_embeddings: bool = False
    max_seq_len: int = 4096
    norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    notes: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        _positive("vocab_size", self.vocab_size)
        _positive("d_model", self.d_model)
        _positive("n_layers", self.n_layers)
        _positive("max_seq_len", self.max_seq_len)
        a, b = self.kda_ratio
        _non_negative("kda_ratio[0] (KDA layers per period)", a)
        _non_negative("kda_ratio[1] (MLA layers per period)", b)
        if a + b == 0:
            raise ValueError("kda_ratio must have at least one layer per period, got (0, 0)")
        if a > 0 and self.kda is None:
            raise ValueError(f"kda_ratio {self.kda_ratio} asks for KDA layers but no kda config was given")
        if b == 0 and not self.last_layer_global:
            pass  # an all-KDA stack is allowed (pure linear attention ablation)
        period = a + b
        if self.n_layers < period:
            raise ValueError(
                f"kda_ratio {a}:{b} needs at least {period} layers (one full period), got n_layers={self.n_layers}"
            )
        if self.n_layers % period and not self.last_layer_global and b > 0:
            raise ValueError(
                f"n_layers ({self.n_layers}) must be a multiple of the kda_ratio period ({period}) "
                f"unless last_layer_global=True"
            )
        _non_negative("first_k_dense", self.first_k_dense)
        if self.first_k_dense > self.n_layers:
            raise ValueError(f"first_k_dense ({self.first_k_dense}) must be <= n_layers ({self.n_layers})")
        if self.first_k_dense > 0:
            _positive("dense_ffn_dim (needed because first_k_dense > 0)", self.dense_ffn_dim)
        if self.moe.latent_dim > self.d_model:
            raise ValueError(f"moe.latent_dim ({self.moe.latent_dim}) must be <= d_model ({self.d_model})")
        if self.attn_res not in ATTN_RES_MODES:
            raise ValueError(f"attn_res must be one of {ATTN_RES_MODES}, got {self.attn_res!r}")
        _positive("attn_res_block_size", self.attn_res_block_size)
        if self.attn_res == "block" and self.attn_res_block_size > 2 * self.n_layers:
            raise ValueError(
                f"attn_res_block_size ({self.attn_res_block_size}) must be <= the number of sublayers "
                f"(2 x n_layers = {2 * self.n_layers})"
            )

    # ----------------------------------------------------------------------------------------- pattern
    def layer_types(self) -> list[MixerType]:
        """Mixer of each layer, e.g. 3:1 -> kda kda kda mla kda kda kda mla ... (last forced global)."""
        a, b = self.kda_ratio
        period = a + b
        types: list[MixerType] = ["kda" if (i % period) < a else "mla" for i in range(self.n_layers)]
        if self.last_layer_global:
            types[-1] = "mla"
        return types

    def ffn_types(self) -> list[FFNType]:
        return ["dense" if i < self.first_k_dense else "moe" for i in range(self.n_layers)]

    @property
    def n_sublayers(self) -> int:
        return 2 * self.n_layers

    def with_(self, **changes) -> "K3Config":
        """A validated copy with top-level fields changed; nested: with_(moe={'top_k': 4})."""
        for key in ("mla", "moe", "kda"):
            if isinstance(changes.get(key), dict):
                base = getattr(self, key)
                if base is None:
                    raise ValueError(f"cannot update {key}: this config has none")
                changes[key] = replace(base, **changes[key])
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(data: dict) -> "K3Config":
        data = dict(data)
        data["mla"] = MLAConfig(**data["mla"])
        data["moe"] = MoEConfig(**data["moe"])
        data["kda"] = KDAConfig(**data["kda"]) if data.get("kda") else None
        data["kda_ratio"] = tuple(data.get("kda_ratio", (3, 1)))
        return K3Config(**data)


# ------------------------------------------------------------------------------------------- presets
def deepseek_v3() -> K3Config:
    """DeepSeek-V3 (arXiv 2412.19437; config.json of deepseek-ai/DeepSeek-V3).

    61 layers, first 3 dense (FFN 18432), hidden 7168, vocab 129280, MLA 128 heads, q_lora 1536,
    kv_lora 512, qk_nope 128, qk_rope 64, v_head 128; 256 routed + 1 shared experts, top-8,
    expert FFN 2048, sigmoid router with route_scale 2.5, 8 groups / best 4.
    Stated: 671B total, 37B active (the 14B multi-token-prediction module is not counted; nor here).
    """
    return K3Config(
        name="deepseek-v3",
        vocab_size=129280,
        d_model=7168,
        n_layers=61,
        mla=MLAConfig(n_heads=128, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                      qk_rope_head_dim=64, v_head_dim=128),
        moe=MoEConfig(n_routed_experts=256, top_k=8, expert_ffn_dim=2048, n_shared_experts=1,
                      balancing="bias", route_scale=2.5, n_groups=8, topk_groups=4),
        kda=None,
        kda_ratio=(0, 1),
        last_layer_global=True,
        first_k_dense=3,
        dense_ffn_dim=18432,
        attn_res="standard",
        max_seq_len=131072,
        notes={"source": "DeepSeek-V3 technical report (arXiv 2412.19437) and its config.json"},
    )


def kimi_k2() -> K3Config:
    """Kimi K2 (moonshotai/Kimi-K2-Instruct config.json; Kimi K2 report arXiv 2507.20534).

    Same MLA family as DeepSeek-V3: 61 layers (first 1 dense, FFN 18432), hidden 7168, 64 heads,
    384 routed + 1 shared experts, top-8, expert FFN 2048, vocab 163840, 1 expert group.
    Stated: 1.04T total, 32B active. Counting the config.json gives about 1.026T: the headline
    is rounded up (the MTP layer and rounding account for the difference).
    """
    return K3Config(
        name="kimi-k2",
        vocab_size=163840,
        d_model=7168,
        n_layers=61,
        mla=MLAConfig(n_heads=64, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                      qk_rope_head_dim=64, v_head_dim=128),
        moe=MoEConfig(n_routed_experts=384, top_k=8, expert_ffn_dim=2048, n_shared_experts=1,
                      balancing="bias", route_scale=2.827),
        kda=None,
        kda_ratio=(0, 1),
        first_k_dense=1,
        dense_ffn_dim=18432,
        attn_res="standard",
        max_seq_len=131072,
        notes={"source": "moonshotai/Kimi-K2-Instruct config.json; Kimi K2 report (arXiv 2507.20534)"},
    )


def kimi_linear_48b_a3b() -> K3Config:
    """Kimi Linear 48B-A3B (Kimi Linear tech report, arXiv 2510.26692; moonshotai/Kimi-Linear-48B-A3B config).

    27 layers, hidden 2304, 32 KDA heads x 128, MLA (NoPE, 32 heads, kv_lora 512, full-rank q) every 4th
    layer and the last; 256 experts top-8 + 1 shared, expert FFN 1024, first layer dense FFN 9216,
    vocab 163840. Stated: 48B total, 3B active.
    """
    return K3Config(
        name="kimi-linear-48b-a3b",
        vocab_size=163840,
        d_model=2304,
        n_layers=27,
        mla=MLAConfig(n_heads=32, q_lora_rank=0, kv_lora_rank=512, qk_nope_head_dim=128,
                      qk_rope_head_dim=64, v_head_dim=128, use_rope=False),
        # no bias on the output gate: the released modeling_kimi.py builds g_b_proj with bias=False
        kda=KDAConfig(n_heads=32, head_dim=128, conv_size=4, output_gate_bias=False),
        moe=MoEConfig(n_routed_experts=256, top_k=8, expert_ffn_dim=1024, n_shared_experts=1,
                      balancing="bias", route_scale=2.446),
        kda_ratio=(3, 1),
        last_layer_global=True,
        first_k_dense=1,
        dense_ffn_dim=9216,
        attn_res="standard",
        max_seq_len=1048576,
        notes={"source": "Kimi Linear tech report (arXiv 2510.26692) and its config.json"},
    )


def k3_estimated() -> K3Config:
    """Kimi K3, *estimated*.

    Stated by the K3 announcement (the seed article): 2.8T total, 896 routed experts, top-16,
    2 shared experts, 3:1 KDA:MLA hybrid, Stable LatentMoE, block Attention Residuals.
    Secondary/estimated (unofficial copies of a K3 text config; NOT published by Moonshot):
    hidden 7168, 93 layers, 96 heads, expert FFN 3072 in latent 3584 (2x compression), latent norm,
    dense FFN 33792, vocab 163840. Our guesses on top of those: MLA dims of the K2 family
    (kv_lora 512, qk 128+64, v 128, q_lora 1536, NoPE as in Kimi Linear, sigmoid output gate);
    KDA with 96 heads x 128 (= d_model / 56, chosen so q/k/v projections match the MLA width of
    the same family); 1 dense first layer; attention-residual blocks of 24 sublayers (186 sublayers -> 8 blocks,
    the last one partial).
    `python -m k3lite.params --preset k3-estimated` shows how close this lands to 2.8T.
    """
    return K3Config(
        name="k3-estimated",
        vocab_size=163840,
        d_model=7168,
        n_layers=93,
        mla=MLAConfig(n_heads=96, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                      qk_rope_head_dim=64, v_head_dim=128, use_rope=False, output_gate=True),
        kda=KDAConfig(n_heads=96, head_dim=128, conv_size=4),
        moe=MoEConfig(n_routed_experts=896, top_k=16, expert_ffn_dim=3072, n_shared_experts=2,
                      latent_dim=3584, latent_norm=True, balancing="quantile", route_scale=2.5),
        kda_ratio=(3, 1),
        last_layer_global=True,
        first_k_dense=1,
        dense_ffn_dim=33792,
        attn_res="block",
        attn_res_block_size=24,
        max_seq_len=1048576,
        notes={
            "stated": "2.8T total, 896 experts, top-16, 2 shared, 3:1 KDA:MLA, LatentMoE, block AttnRes (seed article)",
            "secondary/estimated": "hidden 7168, 93 layers, 96 heads, expert FFN 3072, latent 3584, "
            "dense FFN 33792, vocab 163840 (unofficial config copies)",
            "our guesses": "MLA dims (K2 family), KDA 96x128, first_k_dense=1, AttnRes block size 24",
        },
    )


def lite() -> K3Config:
    """The tiny K3-shaped model the app runs live on a laptop CPU (byte-level vocab of 256).

    Every K3 idea at toy scale: 8 layers in a 3:1 KDA:MLA pattern (last global), 32 latent-space
    routed experts top-4 + 1 shared, quantile balancing, block attention residuals.
    """
    return K3Config(
        name="lite",
        vocab_size=256,
        d_model=128,
        n_layers=8,
        mla=MLAConfig(n_heads=4, q_lora_rank=0, kv_lora_rank=64, qk_nope_head_dim=32,
                      qk_rope_head_dim=16, v_head_dim=32, use_rope=False, output_gate=True),
        kda=KDAConfig(n_heads=4, head_dim=32, conv_size=4),
        moe=MoEConfig(n_routed_experts=32, top_k=4, expert_ffn_dim=128, n_shared_experts=1,
                      shared_ffn_dim=256, latent_dim=64, latent_norm=True, balancing="quantile",
                      route_scale=1.0),
        kda_ratio=(3, 1),
        last_layer_global=True,
        first_k_dense=1,
        dense_ffn_dim=384,
        attn_res="block",
        attn_res_block_size=4,
        tie_embeddings=True,
        max_seq_len=2048,
        notes={"source": "k3lite's own toy configuration"},
    )


PRESETS = {
    "lite": lite,
    "k3-estimated": k3_estimated,
    "kimi-linear-48b-a3b": kimi_linear_48b_a3b,
    "kimi-k2": kimi_k2,
    "deepseek-v3": deepseek_v3,
}


def get_preset(name: str) -> K3Config:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[name]()
