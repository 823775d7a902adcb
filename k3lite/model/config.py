"""Typed, validated configuration for every k3lite model (the published presets: k3lite.model.presets).

Everything the model builds comes from a `K3Config`. Construction validates the whole
config and raises `ValueError` naming the violated constraint, so a bad slider
combination in the app becomes a readable message, never a traceback.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Literal

MixerType = Literal["kda", "mla"]
FFNType = Literal["dense", "moe"]
Balancing = Literal["none", "aux_loss", "bias", "quantile"]
AttnResMode = Literal["standard", "full", "block"]
FFNActivation = Literal["swiglu", "situ"]
LatentNormAt = Literal["dispatch", "combine"]

BALANCING_METHODS: tuple[str, ...] = ("none", "aux_loss", "bias", "quantile")
ATTN_RES_MODES: tuple[str, ...] = ("standard", "full", "block")
FFN_ACTIVATIONS: tuple[str, ...] = ("swiglu", "situ")
LATENT_NORM_AT: tuple[str, ...] = ("dispatch", "combine")


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
    expert_ffn_dim: int  # hidden size of one routed expert's gated FFN (SwiGLU or SiTU-GLU: K3Config.hidden_act)
    n_shared_experts: int = 0
    shared_ffn_dim: int = 0  # hidden size of ONE shared expert; 0 = expert_ffn_dim
    latent_dim: int = 0  # 0 = classic MoE (experts in d_model); >0 = LatentMoE dim
    latent_norm: bool = False  # an RMSNorm of latent_dim in the LatentMoE path (K3: `latent_moe_use_norm`)
    # where it sits: "dispatch" = on the latent before dispatch (lite, NVIDIA's LatentMoE reading);
    # "combine" = on the aggregated expert output before the up-projection, as K3 releases it
    # (report Eq. 11: y = shared(x) + W_up RMSNorm(sum_j w_j E_j(W_down x)); modeling_kimi_linear.py routed_expert_norm)
    latent_norm_at: LatentNormAt = "dispatch"
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
        if self.latent_norm_at not in LATENT_NORM_AT:
            raise ValueError(f"moe.latent_norm_at must be one of {LATENT_NORM_AT}, got {self.latent_norm_at!r}")
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
    dense_ffn_dim: int = 0  # hidden size of the dense FFN layers
    # the gated FFN of every expert, shared expert and dense layer: "swiglu" silu(g) * u, or K3's "situ"
    # (SiTU-GLU, report Eq. 12: b1 tanh(g / b1) sigmoid(g) * b2 tanh(u / b2), in fp32; k3lite.model.nn.situ_glu)
    hidden_act: FFNActivation = "swiglu"
    situ_beta: float = 4.0  # b1 (`activation_situ_beta`): bounds the gate branch to (-b1, b1)
    situ_linear_beta: float = 25.0  # b2 (`activation_situ_linear_beta`): bounds the up branch to (-b2, b2)
    attn_res: AttnResMode = "block"
    # sublayers per block in block Attention Residuals (2 per layer). K3's config states its block in *layers*
    # (`attn_res_block_size` 12 = 24 sublayers here): `attn_res_block_layers` converts.
    attn_res_block_size: int = 4
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
        if self.hidden_act not in FFN_ACTIVATIONS:
            raise ValueError(f"hidden_act must be one of {FFN_ACTIVATIONS}, got {self.hidden_act!r}")
        if not (self.situ_beta > 0 and self.situ_linear_beta > 0):
            raise ValueError(f"situ_beta and situ_linear_beta must be > 0, got {self.situ_beta}, {self.situ_linear_beta}")
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

    @property
    def attn_res_block_layers(self) -> float:
        """The AttnRes block in layers, as K3's config states it (12): sublayers / 2."""
        return self.attn_res_block_size / 2

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
