"""Typed, validated configuration for every k3lite model, plus published presets.

Everything the model builds comes from a `K3Config`. Construction validates the whole
config and raises `ValueError` naming the violated constraint, so a bad slider
combination in the app becomes a readable message, never a traceback.

Presets (sources in each function's docstring):
    deepseek-v3, kimi-k2, kimi-linear-48b-a3b, kimi-k3, lite
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


# The released K3 config this preset follows: moonshotai/Kimi-K3 `config.json` (text_config), read from the verbatim
# copy in PipeNetwork/kimi-k3-mlx `reference/config.json` (commit fe0738f5d37776d5ab256913a9e5190b71e90f7c, "unmodified
# files from moonshotai/Kimi-K3"); its `reference/model.safetensors.index.json` gives total_size 1,560,860,324,864 bytes
# in 497,220 tensors, which public audits quote for Hugging Face revision f831ab66814297da540d832a5235f8e904f29d06.
KIMI_K3_SOURCE = ("moonshotai/Kimi-K3 config.json + modeling_kimi_linear.py (HF revision f831ab66; read from the "
                  "verbatim copy in PipeNetwork/kimi-k3-mlx reference/ @ fe0738f5); Kimi K3 Technical Report (arXiv 2607.24653)")
KIMI_K3_CHECKPOINT_BYTES = 1_560_860_324_864  # model.safetensors.index.json metadata.total_size (tensor data only)
KIMI_K3_STATED_TOTAL, KIMI_K3_STATED_ACTIVE = 2.78e12, 104e9  # model card / report headline (text + vision tower)

# The released vision tower (config.json vision_config: MoonViT, 27 layers, hidden 1024, qkv 1536, MLP 4096, patch 14,
# a learned 64 x 64 position grid, no biases, RMSNorm; patchmergerv2 projector: 2 x 2 merge -> 4096 -> 4096 -> 7168).
# k3lite does not model it; it is one stated constant in the checkpoint bytes and the headline totals.
def kimi_k3_vision_params() -> int:
    """Parameters of K3's vision tower + projector, counted from vision_config (the tensor names in the released
    index: patch_embed.proj / pos_emb, blocks.N.{wqkv, wo, mlp.fc0, mlp.fc1, norm0, norm1}, final_layernorm,
    mm_projector.{proj.0, proj.1, post_norm}). About 0.447B (PipeNetwork/kimi-k3-mlx's README: 447 M)."""
    d, qkv, mlp, layers, patch, grid, merged, text = 1024, 1536, 4096, 27, 14, 64, 4 * 1024, 7168
    block = d * 3 * qkv + qkv * d + 2 * d * mlp + 2 * d  # wqkv, wo, fc0, fc1, two norms
    tower = 3 * patch * patch * d + grid * grid * d + layers * block + d  # patch conv, position grid, blocks, final norm
    projector = merged * merged + merged * text + merged  # proj.0, proj.1, post_norm (4096 wide)
    return tower + projector

# Every key of the released text_config that describes the model, and what k3lite does with it. "not modelled"
# keys change nothing k3lite computes; none is dropped without a line here. (Generation defaults such as
# max_length, top_k, temperature, num_beams and the HF bookkeeping keys, e.g. id2label, are not architecture.)
KIMI_K3_CONFIG_KEYS: dict[str, str] = {
    "vocab_size 163840": "vocab_size",
    "hidden_size 7168": "d_model",
    "num_hidden_layers 93": "n_layers",
    "linear_attn_config.kda_layers / full_attn_layers (1-based; MLA at 4, 8, ..., 92, 93)":
        "kda_ratio (3, 1) + last_layer_global: 69 KDA, 24 MLA (test_config checks the lists)",
    "linear_attn_config.num_heads 96, head_dim 128": "kda.n_heads, kda.head_dim",
    "linear_attn_config.short_conv_kernel_size 4": "kda.conv_size",
    "linear_attn_config.use_full_rank_gate true": "kda.output_gate_full_rank (g_proj 7168 -> 12288, no bias)",
    "linear_attn_config.gate_lower_bound -5.0": "kda.decay_lower_bound (K3_DECAY_LOWER_BOUND)",
    "num_attention_heads 96, num_key_value_heads 96": "mla.n_heads (MLA has no KV grouping)",
    "q_lora_rank 1536, kv_lora_rank 512": "mla.q_lora_rank, mla.kv_lora_rank",
    "qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128": "mla dims",
    "mla_use_nope true": "mla.use_rope False (the 64 'rope' dims carry no rotation)",
    "mla_use_output_gate true": "mla.output_gate (sigmoid, g_proj 7168 -> 12288)",
    "num_experts 896, num_experts_per_token 16": "moe.n_routed_experts, moe.top_k",
    "moe_intermediate_size 3072": "moe.expert_ffn_dim",
    "num_shared_experts 2": "moe.n_shared_experts (merged into one FFN of 2 x 3072 on the full width, as the code does)",
    "routed_expert_hidden_size 3584": "moe.latent_dim",
    "latent_moe_use_norm true": "moe.latent_norm, at 'combine' (routed_expert_norm on the aggregated output)",
    "moe_router_activation_func sigmoid": "moe.score_func",
    "moe_renormalize true": "Router: sigmoid gate weights renormalised over the chosen k",
    "routed_scaling_factor 1.0": "moe.route_scale",
    "num_expert_group 1, topk_group 1, use_grouped_topk true": "moe.n_groups 1 (one group: no group/node limit)",
    "topk_method noaux_tc": "moe.balancing 'quantile' (report Eq. 14; a selection-only bias, e_score_correction_bias)",
    "first_k_dense_replace 1, intermediate_size 33792": "first_k_dense, dense_ffn_dim",
    "moe_layer_freq 1": "every layer after the first is MoE (ffn_types)",
    "hidden_act situ": "hidden_act 'situ' (routed, shared and dense FFNs)",
    "activation_situ_beta 4.0, activation_situ_linear_beta 25.0": "situ_beta, situ_linear_beta",
    "attn_res_block_size 12 (layers)": "attn_res 'block', attn_res_block_size 24 sublayers",
    "rms_norm_eps 1e-05": "norm_eps",
    "max_position_embeddings 1048576": "max_seq_len",
    "tie_word_embeddings false": "tie_embeddings",
    "num_nextn_predict_layers 0": "no MTP module (none is counted)",
    "quantization_config mxfp4-pack-quantized, group 32, uint8 scales; ignore self_attn, shared_experts, dense mlp, "
    "lm_head, vision_tower, mm_projector": "k3lite.analytic.params.checkpoint_bytes and the serving default (MXFP4 routed experts, bf16 rest)",
    "dtype bfloat16": "bytes of every non-expert weight in checkpoint_bytes",
    "vision_config (MoonViT, 27 layers, hidden 1024)": "not modelled: the text model only; its parameters enter the "
    "checkpoint bytes and headline totals as VISION_TOWER_PARAMS (k3lite.analytic.params)",
    "initializer_range 0.02": "not modelled (k3lite's own init: model._init_weights, std 0.02 too)",
    "bos/eos/pad_token_id, media_placeholder_token_id": "not modelled (k3lite runs a byte-level toy tokenizer)",
    "rope settings (none: NoPE)": "rope_theta unused (use_rope False)",
}


def kimi_k3() -> K3Config:
    """Kimi K3 as released (moonshotai/Kimi-K3 config.json and modeling code; Kimi K3 Technical Report).

    93 layers, hidden 7168, vocab 163840; 69 KDA layers (96 heads x 128, short conv 4, full-rank output gate,
    decay bounded below by gate_lower_bound -5) and 24 gated MLA layers (NoPE, 96 heads, q_lora 1536,
    kv_lora 512, qk 128+64, v 128) in a 3:1 pattern with the last layer global; layer 0 dense (FFN 33792),
    the rest LatentMoE: 896 routed experts top-16 of FFN 3072 in a 3584 latent, an RMSNorm on the aggregated
    expert output before the up-projection, 2 shared experts of 3072 on the full width; sigmoid router, gate
    weights renormalised, routed_scaling_factor 1.0, no group limit; SiTU-GLU everywhere (b1 4, b2 25); block
    Attention Residuals every 12 layers (24 sublayers: 186 sublayers -> 7 full blocks + a partial, at most
    9 sources); RMSNorm eps 1e-5; MXFP4 routed experts, bf16 rest. Every key used: KIMI_K3_CONFIG_KEYS.
    What the release does not state and k3lite assumes: nothing in the shapes (the decay's A_log is counted
    per head as the modeling code allocates it, 96 per layer, where the shipped tensors hold 128 per layer:
    2,208 parameters in all). `python -m k3lite.analytic.params --preset kimi-k3` gives the count.
    """
    return K3Config(
        name="kimi-k3",
        vocab_size=163840,
        d_model=7168,
        n_layers=93,
        mla=MLAConfig(n_heads=96, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                      qk_rope_head_dim=64, v_head_dim=128, use_rope=False, output_gate=True),
        kda=KDAConfig(n_heads=96, head_dim=128, conv_size=4, decay_lower_bound=K3_DECAY_LOWER_BOUND,
                      output_gate_full_rank=True, output_gate_bias=False, beta_bias=False),
        moe=MoEConfig(n_routed_experts=896, top_k=16, expert_ffn_dim=3072, n_shared_experts=2,
                      latent_dim=3584, latent_norm=True, latent_norm_at="combine", balancing="quantile",
                      score_func="sigmoid", route_scale=1.0, n_groups=1, topk_groups=1),
        kda_ratio=(3, 1),
        last_layer_global=True,
        first_k_dense=1,
        dense_ffn_dim=33792,
        hidden_act="situ",
        situ_beta=4.0,
        situ_linear_beta=25.0,
        attn_res="block",
        attn_res_block_size=24,  # config: 12 layers
        tie_embeddings=False,
        max_seq_len=1048576,
        norm_eps=1e-5,
        notes={
            "source": KIMI_K3_SOURCE,
            "config keys": "; ".join(f"{k} -> {v}" for k, v in KIMI_K3_CONFIG_KEYS.items()),
        },
    )


def lite() -> K3Config:
    """The tiny K3-shaped model the app runs live on a laptop CPU (byte-level vocab of 256).

    K3's forms at toy scale (kimi_k3): 8 layers in a 3:1 KDA:MLA pattern (last global); KDA with the decay
    bounded below by e^-5 per token and a full-rank output gate without bias; gated NoPE MLA with a low-rank q
    (q_lora 32 of d 128, about K3's 1536 / 7168); layer 0 dense; 32 routed experts top-4 of FFN 128 in a 64
    latent (d / 2, as K3) with the RMSNorm on the aggregated expert output, 2 shared experts of the expert
    width; sigmoid router, renormalised, route scale 1.0, Eq. 14 quantile balancing; SiTU-GLU everywhere;
    block attention residuals every 2 layers (4 sublayers); RMSNorm eps 1e-5. Unlike K3: tied embeddings (a
    256-byte vocabulary makes the head 0.5% of the model).
    """
    return K3Config(
        name="lite",
        vocab_size=256,
        d_model=128,
        n_layers=8,
        mla=MLAConfig(n_heads=4, q_lora_rank=32, kv_lora_rank=64, qk_nope_head_dim=32,
                      qk_rope_head_dim=16, v_head_dim=32, use_rope=False, output_gate=True),
        kda=KDAConfig(n_heads=4, head_dim=32, conv_size=4, decay_lower_bound=K3_DECAY_LOWER_BOUND,
                      output_gate_full_rank=True, output_gate_bias=False),
        moe=MoEConfig(n_routed_experts=32, top_k=4, expert_ffn_dim=128, n_shared_experts=2,
                      shared_ffn_dim=128, latent_dim=64, latent_norm=True, latent_norm_at="combine",
                      balancing="quantile", route_scale=1.0),
        kda_ratio=(3, 1),
        last_layer_global=True,
        first_k_dense=1,
        dense_ffn_dim=384,
        hidden_act="situ",
        attn_res="block",
        attn_res_block_size=4,
        tie_embeddings=True,
        max_seq_len=2048,
        norm_eps=1e-5,
        notes={"source": "k3lite's own toy configuration in K3's forms (see kimi_k3)"},
    )


PRESETS = {
    "lite": lite,
    "kimi-k3": kimi_k3,
    "kimi-linear-48b-a3b": kimi_linear_48b_a3b,
    "kimi-k2": kimi_k2,
    "deepseek-v3": deepseek_v3,
}


def get_preset(name: str) -> K3Config:
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[name]()
