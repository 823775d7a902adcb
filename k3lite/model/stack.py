"""The K3-lite hybrid stack: embedding -> [depth mix -> KDA|MLA -> depth mix -> MoE|dense] x L -> head.

    v_0 = Embed(tokens)                                             (B, T, d)
    for each layer l (pattern from the config: KDA x3 : MLA x1, last layer global):
        h = depth_mix(v_0, earlier outputs)     Attention Residuals (k3lite/model/attnres.py), or a plain sum
        v = Mixer(RMSNorm(h))                   KimiDeltaAttention (k3lite/model/kda/layer.py) or GatedMLA (k3lite/model/mla.py)
        h = depth_mix(...)                      the FFN sublayer's own depth mix
        v = FFN(RMSNorm(h))                     LatentMoE (k3lite/model/moe/latent.py), a dense FFN in the first k layers
                                                (gated: SwiGLU, or K3's SiTU-GLU, cfg.hidden_act)
    logits = LM_head(RMSNorm(depth_mix(...)))                       (B, T, vocab)

Decoding keeps one cache per layer: a KDA layer a fixed-size state + conv tail, an MLA layer the
compressed KV latent. `generate` uses them; tests/model/test_stack.py checks incremental == full pass.
`DenseTransformer` is the plain baseline (softmax attention + SwiGLU, standard residual) that the
training log and `python -m k3lite.bench model` compare against.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from k3lite.model.attnres import DepthAttention, ResidualStream
from k3lite.model.config import K3Config
from k3lite.model.kda import KimiDeltaAttention
from k3lite.model.mla import GatedMLA, apply_rope, rope_cos_sin
from k3lite.model.moe import LatentMoE
from k3lite.model.nn import GLUActivation, RMSNorm, SwiGLU
from k3lite.model.trace import LayerTrace, Trace, detach

RECURRENT_MAX_T = 8  # KDA runs its token-by-token recurrence for inputs this short, chunk-wise above
# KDA chunk length without autograd. lite's KDA decay is bounded below as K3's is (kda.decay_lower_bound -5 per
# token): a 16-token chunk's cumulative decay stays above e^-80, the chunk kernel's safe span (k3lite/model/kda/chunk.py,
# _CAP), so no 16-token chunk takes its slow exact-block path (a 32-token one can reach e^-160). The checkpoint
# trained before the bound learned decays down to e^-33 per token, which sent 8% of 16-token chunk-heads that way.
# Same numbers either way. Training keeps the layer's default.
INFERENCE_KDA_CHUNK = 16


class ModelCache(NamedTuple):
    layers: list  # per layer: KDACache | MLACache
    length: int  # tokens already processed


class ModelOutput(NamedTuple):
    logits: torch.Tensor  # (B, T, vocab)
    cache: ModelCache | None
    trace: Trace | None
    aux_loss: torch.Tensor  # () sum of the MoE layers' balancing losses


class Layer(nn.Module):
    def __init__(self, cfg: K3Config, index: int):
        super().__init__()
        self.index = index
        self.mixer_type = cfg.layer_types()[index]
        self.ffn_type = cfg.ffn_types()[index]
        d = cfg.d_model
        self.attn_norm = RMSNorm(d, cfg.norm_eps)
        if self.mixer_type == "kda":
            assert cfg.kda is not None
            self.mixer = KimiDeltaAttention(d, cfg.kda, cfg.norm_eps)
        else:
            self.mixer = GatedMLA(d, cfg.mla, cfg.norm_eps, cfg.rope_theta)
        self.ffn_norm = RMSNorm(d, cfg.norm_eps)
        act = GLUActivation(cfg.hidden_act, cfg.situ_beta, cfg.situ_linear_beta)  # SwiGLU, or K3's SiTU-GLU
        if self.ffn_type == "dense":
            self.ffn = SwiGLU(d, cfg.dense_ffn_dim, act)
        else:
            self.ffn = LatentMoE(d, cfg.moe, cfg.norm_eps, act)
        if cfg.attn_res != "standard":
            self.res_mixer = DepthAttention(d, cfg.norm_eps)  # before the mixer sublayer
            self.res_ffn = DepthAttention(d, cfg.norm_eps)  # before the FFN sublayer

    def forward(self, stream: ResidualStream, cache=None, use_cache: bool = False, trace: bool = False,
                update_balance: bool = False):
        """Run both sublayers, appending their outputs to `stream`. Returns (cache, aux_loss, LayerTrace|None)."""
        mix1 = stream.mix(getattr(self, "res_mixer", None))
        x = self.attn_norm(mix1.h)  # (B, T, d)
        if self.mixer_type == "kda":  # short inputs (decode steps): the recurrence beats padding a 64-chunk
            mode = "recurrent" if x.shape[1] <= RECURRENT_MAX_T else "chunk"
            chunk = {} if torch.is_grad_enabled() else {"chunk_size": INFERENCE_KDA_CHUNK}
            res = self.mixer(x, cache=cache, use_cache=use_cache, mode=mode, trace=trace, **chunk)  # KDAOutput
        else:
            res = self.mixer(x, cache=cache, use_cache=use_cache, trace=trace)  # MLAOutput
        stream.add(res.out)

        mix2 = stream.mix(getattr(self, "res_ffn", None))
        x = self.ffn_norm(mix2.h)  # (B, T, d)
        aux = x.new_zeros(())
        routing = None
        if self.ffn_type == "moe":
            moe = self.ffn(x, update_balance=update_balance, stats=trace)  # routing stats only for a Trace
            ffn_out, aux, routing = moe.out, moe.aux_loss, moe.stats
        else:
            ffn_out = self.ffn(x)  # (B, T, d)
        stream.add(ffn_out)
        if not trace:
            return res.cache, aux, None
        lt = LayerTrace(
            index=self.index, mixer_type=self.mixer_type, ffn_type=self.ffn_type,
            depth_weights_mixer=detach(mix1.weights), depth_weights_ffn=detach(mix2.weights),
            depth_sources_mixer=mix1.sources, depth_sources_ffn=mix2.sources,
            mixer_out_norm=detach(res.out.norm(dim=-1)), ffn_out_norm=detach(ffn_out.norm(dim=-1)),
        )
        if self.mixer_type == "kda":
            stats = res.stats or {}
            lt.kda_decay, lt.kda_beta = detach(stats.get("g")), detach(stats.get("beta"))
            lt.kda_state_norm = detach(stats.get("state_norm"))
        else:
            lt.mla_attention = detach(res.stats.attn)
        if routing is not None:
            lt.router_topk_idx, lt.router_topk_weight = detach(routing.topk_idx), detach(routing.topk_weight)
            lt.router_scores, lt.expert_load = detach(routing.scores), detach(routing.load)
            lt.load_max_violation, lt.load_entropy, lt.dropped = routing.max_violation, routing.entropy, routing.dropped
            lt.dispatch_dim = routing.dispatch_dim
        return res.cache, aux, lt


class K3Model(nn.Module):
    def __init__(self, cfg: K3Config):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(Layer(cfg, i) for i in range(cfg.n_layers))
        if cfg.attn_res != "standard":
            self.res_final = DepthAttention(cfg.d_model, cfg.norm_eps)  # final AttnRes before the head
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        if not cfg.tie_embeddings:
            self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if not any(p.is_meta for p in self.parameters()):
            self.apply(_init_weights)

    # ------------------------------------------------------------------------------------ forward
    def head(self, h: torch.Tensor) -> torch.Tensor:
        w = self.embed.weight if self.cfg.tie_embeddings else self.lm_head.weight
        return F.linear(self.norm(h), w)  # (B, T, vocab)

    def check_tokens(self, tokens: torch.Tensor, cache: ModelCache | None) -> None:
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.dtype not in (torch.long, torch.int):
            raise ValueError("tokens must be an integer tensor of shape (B, T)")
        if tokens.shape[1] == 0:
            raise ValueError("tokens must hold at least one token (T >= 1)")
        if tokens.numel() and (tokens.min() < 0 or tokens.max() >= self.cfg.vocab_size):
            raise ValueError(f"token ids must be in [0, {self.cfg.vocab_size})")
        past = cache.length if cache is not None else 0
        if past + tokens.shape[1] > self.cfg.max_seq_len:
            raise ValueError(
                f"sequence too long: {past} cached + {tokens.shape[1]} new tokens > max_seq_len {self.cfg.max_seq_len}"
            )

    def forward(self, tokens: torch.Tensor, trace: bool = False, cache: ModelCache | None = None,
                use_cache: bool = False, update_balance: bool = False) -> ModelOutput:
        """tokens (B, T) -> ModelOutput(logits (B, T, vocab), cache, trace, aux_loss).

        `cache` continues a sequence (positions follow the cached tokens); `use_cache` returns the new one.
        `trace=True` records a Trace (k3lite/model/trace.py) for every layer.
        """
        self.check_tokens(tokens, cache)
        cfg = self.cfg
        emb = self.embed(tokens)  # (B, T, d)
        per_source = cfg.attn_res_block_size if cfg.attn_res == "block" else 1  # sublayer outputs per source
        max_sources = 1 + -(-2 * cfg.n_layers // per_source)  # embedding + ceil(2L / S) sums: the buffer size
        stream = ResidualStream(emb, cfg.attn_res, cfg.attn_res_block_size, max_sources)
        tr = None
        if trace:
            tr = Trace(tokens=tokens[0].tolist(), attn_res=cfg.attn_res, attn_res_block_size=cfg.attn_res_block_size,
                       embedding_norm=detach(emb.norm(dim=-1)), embedding=detach(emb), start_pos=cache.length if cache else 0)
        new_caches, aux = [], emb.new_zeros(())
        for i, layer in enumerate(self.layers):
            layer_cache = cache.layers[i] if cache is not None else None
            c, a, lt = layer(stream, layer_cache, use_cache, trace, update_balance)
            new_caches.append(c)
            aux = aux + a
            if tr is not None:
                tr.layers.append(lt)
        final = stream.mix(getattr(self, "res_final", None))
        if tr is not None:
            tr.final_depth_weights, tr.final_depth_sources = detach(final.weights), final.sources
        logits = self.head(final.h)  # (B, T, vocab)
        new_cache = None
        if use_cache:
            new_cache = ModelCache(new_caches, (cache.length if cache else 0) + tokens.shape[1])
        return ModelOutput(logits, new_cache, tr, aux)

    # ----------------------------------------------------------------------------------- generate
    @torch.inference_mode()
    def generate(self, tokens, max_new_tokens: int = 32, temperature: float = 0.0, top_k: int | None = None,
                 seed: int = 0) -> list[int]:
        """Continue `tokens` (list of ids or (1, T) tensor) by `max_new_tokens`, using the caches.

        temperature 0 = greedy; otherwise sample from softmax(logits / temperature) (optionally top-k),
        with a private generator seeded by `seed` (the same call gives the same text).
        """
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        ids = tokens if isinstance(tokens, torch.Tensor) else torch.tensor([list(tokens)], dtype=torch.long)
        if ids.dim() == 1:
            ids = ids[None]
        if ids.shape[0] != 1:
            raise ValueError("generate takes one sequence (batch 1)")
        if ids.shape[1] + max_new_tokens > self.cfg.max_seq_len:
            raise ValueError(f"prompt + max_new_tokens ({ids.shape[1]} + {max_new_tokens}) > max_seq_len {self.cfg.max_seq_len}")
        gen = torch.Generator().manual_seed(seed)
        out: list[int] = []
        if max_new_tokens == 0:
            return out
        res = self(ids, use_cache=True)
        for _ in range(max_new_tokens):
            logits = res.logits[0, -1].float()  # (vocab,)
            if temperature == 0:
                nxt = int(logits.argmax())
            else:
                logits = logits / temperature
                if top_k:
                    kth = logits.topk(min(top_k, logits.numel())).values[-1]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                nxt = int(torch.multinomial(logits.softmax(-1), 1, generator=gen))
            out.append(nxt)
            if len(out) == max_new_tokens:
                break
            res = self(torch.tensor([[nxt]]), cache=res.cache, use_cache=True)
        return out


def released_attn_res_forward(model: K3Model, tokens: torch.Tensor) -> torch.Tensor:
    """Logits of `model` with block Attention Residuals applied as K3's released code applies them (per *layer*:
    `KimiDecoderLayer._forward_attn_residual`, `_apply_attn_res` and `KimiLinearModel.forward` in
    modeling_kimi_linear.py), written out token by token for the depth mixes; the sublayers are the model's own.

        prefix = layer input; if blocks: h = mix(blocks + [prefix]) else h = prefix      (the attention's query)
        if layer % block_layers == 0: blocks.append(prefix); prefix = None                (a block boundary)
        prefix = attn(norm(h)) (+ prefix);  h = mix(blocks + [prefix]);  prefix += ffn(norm(h))
        logits = head(mix(blocks + [prefix]))                                              (the output mix)

    mix(v) = sum_i softmax_i(rsqrt(mean(v_i^2) + eps) v_i . (norm.weight * proj)) v_i in fp32. A test checks
    K3Model.forward (ResidualStream, blocks counted in sublayers) gives the same logits."""
    cfg = model.cfg
    if cfg.attn_res != "block" or cfg.attn_res_block_size % 2:
        raise ValueError("the released form needs block AttnRes with a whole number of layers per block")
    block_layers = cfg.attn_res_block_size // 2

    def mix(sources: list[torch.Tensor], attn: DepthAttention) -> torch.Tensor:  # sources: (B, T, d) each
        w = attn.key_norm.weight.float() * attn.query.float()  # (d,)
        out = torch.empty_like(sources[0])
        for b in range(out.shape[0]):
            for t in range(out.shape[1]):
                v = torch.stack([s[b, t].float() for s in sources])  # (N, d)
                k = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + attn.key_norm.eps)
                p = (k @ w).softmax(-1)  # (N,)
                out[b, t] = (p @ v).to(out.dtype)
        return out

    hidden = model.embed(tokens)  # (B, T, d)
    blocks: list[torch.Tensor] = []
    for i, layer in enumerate(model.layers):
        prefix = hidden
        h = mix(blocks + [prefix], layer.res_mixer) if blocks else prefix
        if i % block_layers == 0:
            blocks.append(prefix)
            prefix = None
        a = layer.mixer(layer.attn_norm(h)).out
        prefix = a if prefix is None else prefix + a
        h = mix(blocks + [prefix], layer.res_ffn)
        f = layer.ffn(layer.ffn_norm(h))
        prefix = prefix + (f.out if hasattr(f, "out") else f)
        hidden = prefix
    return model.head(mix(blocks + [hidden], model.res_final))


def _init_weights(module: nn.Module) -> None:
    """GPT-2 style: linear and embedding weights N(0, 0.02) (biases and special parameters kept)."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)


# ======================================================================== the dense baseline
class CausalSelfAttention(nn.Module):
    """Plain multi-head softmax attention with RoPE (no cache; the baseline is only trained and timed)."""

    def __init__(self, d_model: int, n_heads: int, rope_theta: float = 10000.0):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.n_heads, self.head_dim, self.rope_theta = n_heads, d_model // n_heads, rope_theta
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)  # (B, H, T, hd) each
        cos, sin = rope_cos_sin(torch.arange(T, device=x.device), self.head_dim, self.rope_theta)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, hd)
        return self.proj(y.transpose(1, 2).reshape(B, T, d))


class DenseBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, ffn_dim: int, eps: float):
        super().__init__()
        self.attn_norm, self.attn = RMSNorm(d_model, eps), CausalSelfAttention(d_model, n_heads)
        self.ffn_norm, self.ffn = RMSNorm(d_model, eps), SwiGLU(d_model, ffn_dim)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        return x + self.ffn(self.ffn_norm(x))


class DenseTransformer(nn.Module):
    """The baseline: Llama-style pre-norm transformer, tied embeddings, standard residual."""

    def __init__(self, vocab_size: int, d_model: int, n_layers: int, n_heads: int, ffn_dim: int,
                 max_seq_len: int = 2048, eps: float = 1e-6):
        super().__init__()
        self.vocab_size, self.max_seq_len = vocab_size, max_seq_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(DenseBlock(d_model, n_heads, ffn_dim, eps) for _ in range(n_layers))
        self.norm = RMSNorm(d_model, eps)
        self.apply(_init_weights)
        self.spec = dict(vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads,
                         ffn_dim=ffn_dim, max_seq_len=max_seq_len)

    def forward(self, tokens: torch.Tensor, **_) -> ModelOutput:
        x = self.embed(tokens)  # (B, T, d)
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.norm(x), self.embed.weight)  # (B, T, vocab)
        return ModelOutput(logits, None, None, x.new_zeros(()))


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def loss_fn(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy in nats; targets (B, T) aligned with logits (B, T, V)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1))
