"""Kimi Delta Attention (KDA): gated delta rule with a per-channel (diagonal) decay.

Kimi Linear tech report, arXiv 2510.26692 (https://arxiv.org/abs/2510.26692). Conventions follow
flash-linear-attention's references (fla/ops/kda/naive.py):

    q, k: (B, T, H, K)   v: (B, T, H, V)   g: (B, T, H, K) log-decay (log a_t <= 0)
    beta: (B, T, H) in (0, 1)   state S: (B, H, K, V)   scale defaults to K**-0.5

The recurrence, per head (decay first, then the delta-rule correction):

    S'_t = Diag(a_t) S_{t-1}                      a_t = exp(g_t), one decay per key channel
    S_t  = S'_t + beta_t k_t (v_t - S'_t^T k_t)^T  = (I - beta_t k_t k_t^T) Diag(a_t) S_{t-1} + beta_t k_t v_t^T
    o_t  = scale * S_t^T q_t

Lineage (all are special cases of the same two kernels below, see "special cases"):
    linear attention   S_t = S_{t-1} + k_t v_t^T                   (Katharopoulos et al. 2020)
    Mamba-2 (SSD)      S_t = a_t S_{t-1} + k_t v_t^T, scalar a_t     (Dao & Gu 2024)
    DeltaNet           S_t = (I - b_t k_t k_t^T) S_{t-1} + b_t k_t v_t^T   (Schlag 2021, Yang 2024)
    Gated DeltaNet     S_t = a_t (I - b_t k_t k_t^T) S_{t-1} + b_t k_t v_t^T, scalar a_t  (Yang 2025)
    GLA                S_t = Diag(a_t) S_{t-1} + k_t v_t^T        (Yang et al. 2024)
    KDA                the gated delta rule with Diag(a_t)          (Kimi Linear 2025)

Two kernels compute it: `recurrent_kda` (the step-by-step reference, O(T) sequential steps) and
`chunk_kda` (chunk-wise parallel: the UT transform / WY representation inside a chunk, the state
carried across chunks; mostly matrix multiplies). tests/model/test_kda.py checks they agree to 1e-4.

Laid out as the kernel libraries do (flash-linear-attention's ops / naive / layers):
    ops.py     the kernels and their special cases          naive.py   loop references (tests, teaching)
    layer.py   KimiDeltaAttention + decode cache           probe.py   the hand-built recall probe
Decode memory (state and KV-cache bytes) lives in `k3lite.analytic.memory`, with every other memory number.
"""
from k3lite.model.kda.layer import KDACache, KDAInputs, KDAOutput, KimiDeltaAttention, ShortConv
from k3lite.model.kda.naive import naive_gated_delta, naive_gla, naive_kda_matrix, naive_linear_attn, naive_mamba2
from k3lite.model.kda.ops import (MIXER_INPUTS, MIXER_KERNELS, KDATrajectory, chunk_deltanet, chunk_gdn, chunk_gla,
                            chunk_gated_delta, chunk_kda, chunk_linear_attn, chunk_mamba2, gated_delta_step, kda_step, kda_trajectory, recurrent_deltanet,
                            recurrent_gdn, recurrent_gla, recurrent_kda, recurrent_linear_attn, recurrent_mamba2)
from k3lite.model.kda.probe import RecallProbe, probe_claims, recall_probe

__all__ = [
    "KDACache", "KDAInputs", "KDAOutput", "KimiDeltaAttention", "ShortConv",
    "naive_gated_delta", "naive_gla", "naive_kda_matrix", "naive_linear_attn", "naive_mamba2",
    "MIXER_INPUTS", "MIXER_KERNELS", "KDATrajectory", "chunk_deltanet", "chunk_gated_delta", "gated_delta_step", "chunk_gdn", "chunk_gla", "chunk_kda",
    "chunk_linear_attn", "chunk_mamba2", "kda_step", "kda_trajectory", "recurrent_deltanet", "recurrent_gdn",
    "recurrent_gla", "recurrent_kda", "recurrent_linear_attn", "recurrent_mamba2", "RecallProbe", "probe_claims", "recall_probe",
]
