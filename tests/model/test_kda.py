"""KDA kernels, special cases, the layer and its parameter count.

Tolerance: 1e-4 max abs error in fp32 for every fast-vs-reference comparison (chunk vs recurrent,
special case vs its own loop, decode vs full pass).
"""
import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from conftest import ROOT
from k3lite.model import kda
from k3lite.analytic import memory
from k3lite.model.config import KDAConfig
from k3lite.model.presets import get_preset
from k3lite.model.kda.layer import KimiDeltaAttention
from k3lite.analytic.params import count_params
from k3lite.viz.kda_state import MAX_FRAMES

TOL = 1e-4


def make_inputs(B=2, T=16, H=2, K=8, V=6, seed=0, decay_scale=1.0):
    gen = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    k = F.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    v = torch.randn(B, T, H, V, generator=gen)
    g = F.logsigmoid(torch.randn(B, T, H, K, generator=gen)) * decay_scale  # log decay <= 0
    beta = torch.rand(B, T, H, generator=gen)
    S0 = torch.randn(B, H, K, V, generator=gen)
    return q, k, v, g, beta, S0


def maxerr(a, b):
    return (a.float() - b.float()).abs().max().item()


# ----------------------------------------------------------------------------------- chunk == recurrent
@pytest.mark.parametrize("T", [1, 7, 64, 100, 1000])
@pytest.mark.parametrize("with_state", [False, True])
def test_chunk_equals_recurrent(T, with_state):
    dims = dict(B=1, H=2, K=4, V=4) if T == 1000 else dict(B=2, H=3, K=8, V=6)
    q, k, v, g, beta, S0 = make_inputs(T=T, seed=T, **dims)
    S0 = S0 if with_state else None
    o_ref, S_ref = kda.recurrent_kda(q, k, v, g, beta, initial_state=S0, output_final_state=True)
    for chunk_size in (16, 64) if T == 1000 else (5, 16, 40, 64):  # 40, 64: longer than a Gram sub-block
        o, S = kda.chunk_kda(q, k, v, g, beta, initial_state=S0, output_final_state=True, chunk_size=chunk_size)
        assert o.shape == o_ref.shape == (q.shape[0], T, q.shape[2], v.shape[-1])
        assert maxerr(o, o_ref) <= TOL, (T, chunk_size)
        assert maxerr(S, S_ref) <= TOL, (T, chunk_size)


@pytest.mark.parametrize("chunk_size", [32, 64])  # steep chunks: exact Grams (<= 32 rows), two-level (64)
@pytest.mark.parametrize("decay_scale", [0.0, 30.0, 300.0])
def test_chunk_strong_and_zero_decay(decay_scale, chunk_size):
    """Strong decay forces the steep-chunk fallback for the Grams (span > cap); zero decay = DeltaNet."""
    q, k, v, g, beta, S0 = make_inputs(T=80, decay_scale=decay_scale, seed=3)
    o_ref, S_ref = kda.recurrent_kda(q, k, v, g, beta, initial_state=S0, output_final_state=True)
    o, S = kda.chunk_kda(q, k, v, g, beta, initial_state=S0, output_final_state=True, chunk_size=chunk_size)
    assert torch.isfinite(o).all() and torch.isfinite(S).all()
    assert maxerr(o, o_ref) <= TOL and maxerr(S, S_ref) <= TOL


def test_chunk_mixed_fallback_blocks():
    """Some blocks need the exact path and others not, in the same call."""
    q, k, v, g, beta, S0 = make_inputs(B=2, T=64, H=2, seed=4)
    g = g.clone()
    g[0, :16, 0] *= 200.0  # only one (batch, head, block) gets an enormous span
    o_ref, _ = kda.recurrent_kda(q, k, v, g, beta, initial_state=S0)
    o, _ = kda.chunk_kda(q, k, v, g, beta, initial_state=S0)
    assert maxerr(o, o_ref) <= TOL


@pytest.mark.parametrize("C", [1, 5, 16, 17, 32, 33, 64])
def test_blocked_unit_lower_inverse(C):
    """The UT transform's blocked inverse equals the plain inverse and reads only the strict lower triangle."""
    from k3lite.model.kda.chunk import _unit_lower_inverse
    gen = torch.Generator().manual_seed(C)
    N = torch.randn(3, C, C, generator=gen, dtype=torch.float64) * 0.3
    want = torch.linalg.inv(torch.eye(C, dtype=torch.float64) + N.tril(-1))
    assert maxerr(_unit_lower_inverse(N), want) <= 1e-10
    assert maxerr(_unit_lower_inverse(N, leaf=4), want) <= 1e-10  # more levels of blocking


def test_state_carries_across_calls():
    """Two chunk calls with the state handed over == one call over the whole sequence."""
    q, k, v, g, beta, _ = make_inputs(T=50, seed=5)
    o_full, S_full = kda.chunk_kda(q, k, v, g, beta, output_final_state=True, chunk_size=16)
    o1, S1 = kda.chunk_kda(q[:, :23], k[:, :23], v[:, :23], g[:, :23], beta[:, :23], output_final_state=True)
    o2, S2 = kda.chunk_kda(q[:, 23:], k[:, 23:], v[:, 23:], g[:, 23:], beta[:, 23:], initial_state=S1,
                           output_final_state=True)
    assert maxerr(torch.cat([o1, o2], 1), o_full) <= TOL and maxerr(S2, S_full) <= TOL


def test_kda_step_matches_recurrent_and_matrix_form():
    q, k, v, g, beta, S0 = make_inputs(T=9, seed=6)
    o_ref, S_ref = kda.recurrent_kda(q, k, v, g, beta, initial_state=S0, output_final_state=True)
    S, outs = S0, []
    for t in range(9):
        o_t, S = kda.kda_step(q[:, t], k[:, t], v[:, t], g[:, t], beta[:, t], S)
        outs.append(o_t)
    assert maxerr(torch.stack(outs, 1), o_ref) <= TOL and maxerr(S, S_ref) <= TOL
    # the (I - b k k^T) Diag(a) S + b k v^T form, with an explicit K x K transition matrix
    o_mat = kda.naive_kda_matrix(q, k, v, g, beta)
    assert maxerr(o_mat, kda.recurrent_kda(q, k, v, g, beta)[0]) <= TOL


def test_trajectory_matches_and_records():
    q, k, v, g, beta, S0 = make_inputs(T=12, seed=7)
    traj = kda.kda_trajectory(q, k, v, g, beta, initial_state=S0, keep_states=True)
    o_ref, S_ref = kda.recurrent_kda(q, k, v, g, beta, initial_state=S0, output_final_state=True)
    assert maxerr(traj.o, o_ref) <= TOL
    assert maxerr(traj.states[:, -1], S_ref) <= TOL
    assert maxerr(traj.state_norm, torch.linalg.vector_norm(traj.states, dim=(-2, -1))) <= TOL
    # correction at step 0 from S0: v_0 - (exp(g_0) * S0)^T k_0
    c0 = v[:, 0] - torch.einsum("bhk,bhkv->bhv", k[:, 0], g[:, 0].exp()[..., None] * S0)
    assert maxerr(traj.correction[:, 0], c0) <= TOL


@pytest.mark.parametrize("chunk_size", [16, 40])
def test_gradients_match(chunk_size):
    """The chunk kernel is differentiable (the lab trains through it) and its gradients match."""
    q, k, v, g, beta, _ = make_inputs(B=1, T=40, H=2, K=4, V=4, seed=8)
    g = g.clone()
    g[0, 3:9, 1] *= 100.0  # one exact-fallback block on the way
    leaves = [x.clone().requires_grad_() for x in (q, k, v, g, beta)]
    leaves2 = [x.clone().requires_grad_() for x in (q, k, v, g, beta)]
    w = torch.randn(1, 40, 2, 4)
    (kda.chunk_kda(*leaves, chunk_size=chunk_size)[0] * w).sum().backward()
    (kda.recurrent_kda(*leaves2)[0] * w).sum().backward()
    for a, b in zip(leaves, leaves2):
        assert maxerr(a.grad, b.grad) <= 1e-3


def test_bad_shapes_raise():
    q, k, v, g, beta, S0 = make_inputs()
    with pytest.raises(ValueError, match="g must be"):
        kda.chunk_kda(q, k, v, g[..., 0], beta)
    with pytest.raises(ValueError, match="beta must be"):
        kda.recurrent_kda(q, k, v, g, beta[..., :1])
    with pytest.raises(ValueError, match="initial_state"):
        kda.chunk_kda(q, k, v, g, beta, initial_state=S0[:, :1])
    with pytest.raises(ValueError, match="chunk_size"):
        kda.chunk_kda(q, k, v, g, beta, chunk_size=0)


# ----------------------------------------------------------------------------------- special cases
def test_gated_deltanet_equals_its_loop():
    q, k, v, _, beta, _ = make_inputs(T=70, seed=9)
    g = F.logsigmoid(torch.randn(2, 70, 2) + 2)  # one log decay per head (B, T, H)
    ref = kda.naive_gated_delta(q, k, v, g.exp(), beta)
    assert maxerr(kda.chunk_gdn(q, k, v, g, beta, chunk_size=16)[0], ref) <= TOL
    assert maxerr(kda.recurrent_gdn(q, k, v, g, beta)[0], ref) <= TOL


def test_deltanet_equals_its_loop():
    q, k, v, _, beta, _ = make_inputs(T=70, seed=10)
    ref = kda.naive_gated_delta(q, k, v, torch.ones(2, 70, 2), beta)
    assert maxerr(kda.chunk_deltanet(q, k, v, beta, chunk_size=32)[0], ref) <= TOL
    assert maxerr(kda.recurrent_deltanet(q, k, v, beta)[0], ref) <= TOL


def test_gla_equals_its_loop():
    q, k, v, g, _, _ = make_inputs(T=70, seed=11)
    ref = kda.naive_gla(q, k, v, g)
    assert maxerr(kda.chunk_gla(q, k, v, g, chunk_size=16)[0], ref) <= TOL
    assert maxerr(kda.recurrent_gla(q, k, v, g)[0], ref) <= TOL


def test_mamba2_equals_its_quadratic_form():
    q, k, v, _, beta, _ = make_inputs(T=70, seed=12)
    g = F.logsigmoid(torch.randn(2, 70, 2) + 1)
    ref = kda.naive_mamba2(q, k, v, g, beta)
    assert maxerr(kda.chunk_mamba2(q, k, v, g, beta, chunk_size=16)[0], ref) <= TOL
    assert maxerr(kda.recurrent_mamba2(q, k, v, g, beta)[0], ref) <= TOL


def test_linear_attention_equals_its_quadratic_form():
    q, k, v, _, _, _ = make_inputs(T=70, seed=13)
    ref = kda.naive_linear_attn(q, k, v)
    assert maxerr(kda.chunk_linear_attn(q, k, v, chunk_size=16)[0], ref) <= TOL
    assert maxerr(kda.recurrent_linear_attn(q, k, v)[0], ref) <= TOL


def test_special_cases_are_kda_with_special_gates():
    """GDN is KDA with g equal across K; DeltaNet is KDA with g = 0 (same kernel, different gates)."""
    q, k, v, _, beta, _ = make_inputs(T=30, seed=14)
    g_head = F.logsigmoid(torch.randn(2, 30, 2))
    o_gdn = kda.chunk_gdn(q, k, v, g_head, beta)[0]
    o_kda = kda.recurrent_kda(q, k, v, g_head[..., None].expand(2, 30, 2, 8), beta)[0]
    assert maxerr(o_gdn, o_kda) <= TOL
    o_dn = kda.chunk_deltanet(q, k, v, beta)[0]
    assert maxerr(o_dn, kda.recurrent_kda(q, k, v, torch.zeros(2, 30, 2, 8), beta)[0]) <= TOL


def test_mixer_kernels_uniform_signature():
    q, k, v, g, beta, _ = make_inputs(T=20, seed=15)
    g_head = g.mean(-1)
    for name, fn in kda.MIXER_KERNELS.items():
        g_kind, _uses_beta = kda.MIXER_INPUTS[name]
        gg = {"channel": g, "head": g_head, None: None}[g_kind]
        o, S = fn(q, k, v, gg, beta, output_final_state=True)
        assert o.shape == v.shape and S.shape == (2, 2, 8, 6), name
    assert maxerr(kda.MIXER_KERNELS["kda"](q, k, v, g, beta)[0], kda.recurrent_kda(q, k, v, g, beta)[0]) <= TOL


# ----------------------------------------------------------------------------------- the layer
def small_layer(seed=0, conv_size=4):
    torch.manual_seed(seed)
    return kda.KimiDeltaAttention(32, KDAConfig(n_heads=2, head_dim=8, conv_size=conv_size)).eval()


@pytest.mark.parametrize("conv_size", [1, 4])
def test_layer_decode_equals_full_pass(conv_size):
    layer = small_layer(conv_size=conv_size)
    x = torch.randn(2, 19, 32)
    with torch.no_grad():
        full = layer(x)
        cache, outs = None, []
        for t in range(19):
            r = layer(x[:, t : t + 1], cache=cache, use_cache=True)
            cache = r.cache
            outs.append(r.out)
        assert maxerr(torch.cat(outs, 1), full.out) <= TOL
        # prefill 11 tokens, then continue with the rest in one call
        a = layer(x[:, :11], use_cache=True)
        b = layer(x[:, 11:], cache=a.cache, use_cache=True, mode="recurrent")
        assert maxerr(torch.cat([a.out, b.out], 1), full.out) <= TOL
        assert maxerr(b.cache.state, cache.state) <= TOL


def test_layer_modes_agree_and_stats():
    layer = small_layer()
    x = torch.randn(1, 70, 32)
    with torch.no_grad():
        a = layer(x, mode="chunk", trace=True)
        b = layer(x, mode="recurrent")
    assert a.out.shape == (1, 70, 32) and a.cache is None
    assert maxerr(a.out, b.out) <= TOL
    g, beta, norm = a.stats["g"], a.stats["beta"], a.stats["state_norm"]
    assert g.shape == (1, 70, 2, 8) and (g <= 0).all()
    assert beta.shape == (1, 70, 2) and ((beta > 0) & (beta < 1)).all()
    assert norm.shape == (1, 70, 2) and (norm >= 0).all()
    assert "state_norm" not in b.stats  # only computed when trace=True
    # gate formula: g = -exp(A_log)[h] * softplus(f_up(f_down(x)) + dt_bias)
    inp = layer.kernel_inputs(x)
    f = layer.f_up(layer.f_down(x)) + layer.dt_bias
    g_formula = -layer.A_log.exp()[:, None] * F.softplus(f).view(1, 70, 2, 8)
    assert maxerr(inp.g, g_formula) <= 1e-6
    assert maxerr(inp.q.norm(dim=-1), torch.ones(1, 70, 2)) <= 1e-5


def test_layer_bad_input_raises():
    layer = small_layer()
    with pytest.raises(ValueError, match="d_model"):
        layer(torch.randn(1, 4, 31))
    with pytest.raises(ValueError, match="mode"):
        layer(torch.randn(1, 4, 32), mode="fast")


def test_kimi_linear_param_count_within_5_percent():
    """Kimi Linear 48B-A3B: stated 48B total / 3B active (arXiv 2510.26692); active excludes the
    input-embedding lookup (params.py convention)."""
    rep = count_params(get_preset("kimi-linear-48b-a3b"))
    assert abs(rep.total / 48e9 - 1) <= 0.05, rep.total
    assert abs(rep.active / 3e9 - 1) <= 0.05, rep.active
    assert rep.by_component["attention_kda"] > 0


def released_kda_layer_params(d: int, H: int, K: int, conv: int, full_rank_gate: bool) -> int:
    """One KDA layer's parameters from the released modeling code's shapes (Kimi-Linear's modeling_kimi.py and
    K3's modeling_kimi_k3.py): q/k/v proj, three depthwise convs, f_a/f_b, A_log, dt_bias, b_proj, the output gate
    (g_a/g_b low rank, or one g_proj when `use_full_rank_gate`), all bias-free; o_norm weight; o_proj."""
    gate = d * H * K if full_rank_gate else d * K + K * H * K
    return 3 * d * H * K + 3 * H * K * conv + (d * K + K * H * K) + H + H * K + d * H + gate + K + H * K * d


@pytest.mark.parametrize("full_rank", [False, True])
def test_kda_layer_has_the_released_parameters(full_rank):
    """Regression (third reading, C): the Kimi-Linear preset's output gate carried a bias the released code does not
    have (+81,920 parameters over 20 layers). Count one layer as built against the released shapes."""
    cfg = get_preset("kimi-linear-48b-a3b")
    kda_cfg = cfg.kda if not full_rank else dataclasses.replace(cfg.kda, output_gate_full_rank=True)
    with torch.device("meta"):
        layer = KimiDeltaAttention(cfg.d_model, kda_cfg)
    got = sum(p.numel() for p in layer.parameters())
    H, K = kda_cfg.n_heads, kda_cfg.head_dim
    assert got == released_kda_layer_params(cfg.d_model, H, K, kda_cfg.conv_size, full_rank)


def test_memory_helpers():
    # fp32 state + bf16 conv tail of q, k, v (3 past inputs each): Kimi Linear's 2.07 MiB per layer, any context
    assert memory.kda_state_bytes(32, 128) == 32 * 128 * 128 * 4 + 3 * 3 * 32 * 128 * 2
    assert memory.kda_state_bytes(32, 128, conv_size=0, batch=2) == 2 * 32 * 128 * 128 * 4  # kernel state only
    assert memory.kv_cache_bytes(1000, 32, 128, 2) == 1000 * 2 * 32 * 128 * 2
    with pytest.raises(ValueError, match="conv_size"):
        memory.kda_state_bytes(32, 128, conv_size=-1)


def test_state_bytes_equal_what_the_layer_caches():
    """The one memory number is what `KDACache` really holds after decoding (fp32 state, bf16 conv tail)."""
    cfg = KDAConfig(n_heads=2, head_dim=8, conv_size=4)
    layer = kda.KimiDeltaAttention(32, cfg).to(torch.bfloat16)
    with torch.inference_mode():
        out = layer(torch.randn(3, 5, 32, dtype=torch.bfloat16), use_cache=True)
    assert out.cache.state.dtype == torch.float32
    assert out.cache.nbytes() == memory.kda_state_bytes(2, 8, conv_size=4, batch=3)


# ----------------------------------------------------------------------------------- probe, memory, viz
def test_recall_probe_shapes_and_lineage():
    probe = kda.recall_probe(64, fast_decay=0.9, keys="aligned")
    assert set(probe.scores) == {"linear attention", "DeltaNet", "Gated DeltaNet", "KDA"}
    assert all(s.shape == (64,) for s in probe.scores.values())
    s = {m: x for m, x in probe.scores.items()}
    # the delta rule keeps the most recent pair sharp; linear attention does not once n > K
    assert s["DeltaNet"][-1] > 0.9 and s["linear attention"][-1] < s["DeltaNet"][-1]
    # per-channel decay keeps the fact in its slow channels; a scalar decay with the same mean forgets it
    assert s["KDA"][0] > s["Gated DeltaNet"][0] + 0.3
    with pytest.raises(ValueError, match="fast_decay"):
        kda.recall_probe(8, fast_decay=0.0)


def test_probe_claims_say_what_the_probe_shows():
    """At the page's defaults linear attention recalls the oldest pair best (0.79) and the page must say so;
    the old text claimed it 'recalls every pair about equally badly' and that per-channel decay keeps the fact."""
    probe = kda.recall_probe(64, fast_decay=0.9, keys="aligned")
    fact = {m: float(x[0]) for m, x in probe.scores.items()}
    text = " ".join(kda.probe_claims(probe))
    best = max(fact, key=fact.get)
    assert best == "linear attention" and f"Oldest pair (the fact), best first: linear attention {fact[best]:.2f}" in text
    assert "Linear attention recalls the fact best here" in text and "equally badly" not in text
    assert "Per-channel decay keeps more of the fact" in text  # KDA 0.69 vs GDN -0.01: that part holds
    # random keys: both decays lose the fact, and the text says neither keeps it
    rand = " ".join(kda.probe_claims(kda.recall_probe(64, fast_decay=0.9, keys="random")))
    assert "Neither decay keeps the fact" in rand and "Per-channel decay keeps more" not in rand
    # no leak: nothing overwrites the fact's channels, every mechanism's cosine for it is 1 (decay only scales it)
    clean = kda.recall_probe(64, fast_decay=0.9, keys="aligned", leak=0.0)
    assert all(float(x[0]) > 0.99 for x in clean.scores.values())
    assert "does not keep more of the fact" in " ".join(kda.probe_claims(clean))
    with pytest.raises(ValueError, match="leak"):
        kda.recall_probe(8, leak=1.5)


def test_page_formula_has_the_scale_the_kernel_applies():
    """The page's read-out o_t = K^-1/2 S^T q_t is what chunk_kda computes by default."""
    text = (ROOT / "k3lite" / "panels" / "kda.py").read_text()  # the page's words live with its panels
    assert r"o_t = K^{-1/2}\,S_t^\top q_t" in text
    torch.manual_seed(0)
    B, T, H, K = 1, 6, 1, 8
    q, k, v = (torch.nn.functional.normalize(torch.randn(B, T, H, K), dim=-1) for _ in range(3))
    g, beta = -torch.rand(B, T, H, K), torch.rand(B, T, H)
    torch.testing.assert_close(kda.chunk_kda(q, k, v, g, beta)[0], kda.chunk_kda(q, k, v, g, beta, scale=K**-0.5)[0])
    # and the lineage sentence: Mamba-2 -> DeltaNet is not "adding" an idea (DeltaNet has no decay)
    assert "DeltaNet the correction (and no decay)" in " ".join(text.split())


def test_memory_vs_context_hybrid_saving():
    cfg = get_preset("kimi-linear-48b-a3b")
    curves = memory.memory_vs_context(cfg, [1, 1_000_000])
    state = 32 * 128 * 128 * 4 + 3 * 3 * 32 * 128 * 2  # fp32 state + bf16 conv tail
    assert curves["KDA layer: state"] == [state, state]
    assert memory.break_even_context(cfg) == -(-state // ((512 + 64) * 2)) == 1885
    assert curves["MLA layer: latent KV cache"][1] == (512 + 64) * 2 * 1_000_000
    hybrid = memory.sequence_cache_bytes(cfg, 1_000_000).total  # by name, not by position in the legend
    full = 27 * memory.mla_cache_bytes_per_token(cfg.mla) * 1_000_000
    assert hybrid in (ys[1] for ys in curves.values()) and full in (ys[1] for ys in curves.values())  # both drawn
    assert 0.70 < 1 - hybrid / full < 0.76  # 7 of 27 layers keep a cache: ~74% less (report: "up to 75%")


def test_figures_build():
    from k3lite.viz import kda as viz

    a = torch.rand(5, 8).numpy()
    assert len(viz.decay_heatmap(a, list("abcde"), 0).data) == 2
    fig = viz.state_figure(torch.randn(8, 6).numpy(), torch.randn(6).numpy(), torch.randn(6).numpy(), 2, "h0")
    assert len(fig.data) == 3
    curves = memory.memory_vs_context(get_preset("lite"), [1, 10, 100])
    assert len(viz.memory_figure([1, 10, 100], curves).data) == len(curves)
    assert len(viz.recall_figure(kda.recall_probe(10).scores).data) == 4


# ----------------------------------------------------------------------------------- the page
def page(**query):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "views" / "kda.py"), default_timeout=120)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def ok(at):
    assert not at.exception, [e.message for e in at.exception]
    assert at.title and at.title[0].value == "Kimi Delta Attention"


def _animation(at) -> dict:
    import json
    return json.loads(at.get("plotly_chart")[0].proto.spec)  # the page opens on the state animation


def test_state_animation_frames_are_the_trained_layers_recurrence():
    """The state animation is the TRAINED checkpoint's KDA layer on the prompt as the model feeds it,
    and frame t is exactly S_t of the token-by-token recurrence (gated_delta_step)."""
    from k3lite.model.checkpoint import load_lite_model
    from k3lite.model.kda.ops import gated_delta_step
    from k3lite.viz.kda_state import kda_layers, layer_input, state_animation, trained_kda_run

    model, _ = load_lite_model()
    ids = list(b"Bob used the key.")
    layer = kda_layers(model)[1]
    run = trained_kda_run(model, ids, layer)
    with torch.inference_mode():
        inp = model.layers[layer].mixer.kernel_inputs(layer_input(model, torch.tensor([ids]), layer))
    S = torch.zeros(1, inp.q.shape[2], inp.q.shape[3], inp.v.shape[3])
    for t in range(len(ids)):  # the recurrence written out here, one token at a time
        _, S, _ = gated_delta_step(inp.q[:, t].float(), inp.k[:, t].float(), inp.v[:, t].float(), inp.g[:, t].float(),
                                   inp.beta[:, t].float(), S, inp.q.shape[-1] ** -0.5, delta=True)
        assert np.allclose(run.states[t], S[0].detach().numpy(), atol=1e-6)
    # the layer's own chunk-wise forward (what the model computes) ends in the same state
    with torch.inference_mode():
        _, S_chunk = kda.chunk_kda(inp.q, inp.k, inp.v, inp.g, inp.beta, output_final_state=True)
    assert np.allclose(run.states[-1], S_chunk[0].numpy(), atol=1e-4)
    head = 2
    fig = state_animation(run.states[:, head], run.correction[:, head], run.v[:, head], run.beta[:, head],
                          [chr(b) for b in ids])
    assert len(fig.frames) == len(ids)
    for t, frame in enumerate(fig.frames):
        assert np.array_equal(np.asarray(frame.data[0].z), run.states[t, head])
    assert fig.layout.sliders and fig.layout.updatemenus[0].buttons[0].method == "animate"  # plays in the browser
    other = trained_kda_run(model, ids, kda_layers(model)[0])
    assert not np.allclose(other.states, run.states)  # another layer, another picture
    with pytest.raises(ValueError, match="KDA layers"):
        trained_kda_run(model, ids, 3)  # layer 3 is MLA


def test_page_default_and_extremes():
    at = page()
    ok(at)
    assert not at.error
    at.slider(key="kda_head").set_value(3).run()
    ok(at)
    assert len(_animation(at)["frames"]) == min(47, MAX_FRAMES)  # the default prompt's 47 bytes, played in the browser
    at.toggle(key="kda_probe").set_value(True).run()
    ok(at)
    at.slider(key="kda_probe_n").set_value(512).run()
    at.slider(key="kda_probe_decay").set_value(0.5).run()
    ok(at)
    at.slider(key="kda_probe_n").set_value(1).run()
    at.slider(key="kda_probe_decay").set_value(1.0).run()
    ok(at)
    at.radio(key="kda_probe_keys").set_value("random").run()
    at.selectbox(key="kda_preset").set_value("lite").run()
    ok(at)
    assert sum("mechanism" in df.value.columns for df in at.dataframe) == 1  # the probe's table (beside the assumptions')


def test_page_random_input_extremes():
    at = page(kda_source="random", kda_T="256")
    ok(at)
    assert len(_animation(at)["frames"]) == MAX_FRAMES  # 256 tokens run, the first MAX_FRAMES animated
    at.slider(key="kda_T").set_value(1).run()  # one token: one frame
    ok(at)
    assert not at.error and len(_animation(at)["frames"]) == 1


def test_page_bad_input_is_a_message():
    at = page(kda_head="9", kda_T="100000")  # out of range in the link -> warning, defaults used
    ok(at)
    assert any("kda_head" in w.value for w in at.warning)
    at.text_input(key="kda_prompt").set_value("").run()
    assert at.error and "empty" in at.error[0].value
    at.text_input(key="kda_prompt").set_value("é" * 200).run()  # 400 bytes > 256
    assert at.error and "256" in at.error[0].value


def test_short_conv_is_the_depthwise_conv1d():
    """short_conv (shifted multiply-adds) gives the bits of the grouped F.conv1d it replaces, tail included."""
    from k3lite.model.kda.layer import short_conv
    torch.manual_seed(0)
    x, w, tail = torch.randn(2, 9, 12), torch.randn(12, 1, 4), torch.randn(2, 3, 12)
    xx = torch.cat([tail, x], dim=1)
    want = F.conv1d(xx.transpose(1, 2), w, groups=12).transpose(1, 2)
    y, new_tail = short_conv(x, w, tail)
    assert torch.equal(y, want) and torch.equal(new_tail, xx[:, -3:])


def test_fused_inputs_equal_module_by_module():
    """The layer runs its six input projections as one matmul and its three convs as one: same numbers."""
    layer = small_layer()
    x = torch.randn(2, 11, 32)
    with torch.no_grad():
        inp = layer.kernel_inputs(x)
        B, T, H, K = 2, 11, layer.n_heads, layer.head_dim
        q, _ = layer.q_conv(layer.q_proj(x))
        k, _ = layer.k_conv(layer.k_proj(x))
        v, _ = layer.v_conv(layer.v_proj(x))
        assert maxerr(inp.q, F.normalize(F.silu(q).view(B, T, H, K), dim=-1, eps=1e-6)) <= 1e-6
        assert maxerr(inp.k, F.normalize(F.silu(k).view(B, T, H, K), dim=-1, eps=1e-6)) <= 1e-6
        assert maxerr(inp.v, F.silu(v).view(B, T, H, K)) <= 1e-6
        assert maxerr(inp.beta, torch.sigmoid(layer.b_proj(x))) <= 1e-6
        assert [t.shape for t in inp.conv_tail] == [(2, layer.cfg.conv_size - 1, H * K)] * 3


# ------------------------------------------------------------------ the readable chunk-wise reference
def _kda_inputs(B=2, T=37, H=2, K=8, V=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, K, generator=gen)
    k = torch.nn.functional.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    v = torch.randn(B, T, H, V, generator=gen)
    g = -torch.rand(B, T, H, K, generator=gen) * 2.0  # per-channel log decay in (-2, 0]
    beta = torch.rand(B, T, H, generator=gen)
    return q, k, v, g, beta


@pytest.mark.parametrize("chunk_size", [1, 4, 16, 64])
def test_readable_chunk_reference_equals_the_token_loop(chunk_size):
    """reference.chunk_kda_reference (the paper's six steps) == naive_kda_matrix (the recurrence with its explicit
    K x K transition), for chunk sizes that do and do not divide T (37)."""
    from k3lite.model.kda.naive import naive_kda_matrix
    from k3lite.model.kda.reference import chunk_kda_reference

    q, k, v, g, beta = _kda_inputs()
    o_ref, _ = chunk_kda_reference(q, k, v, g, beta, chunk_size=chunk_size)
    torch.testing.assert_close(o_ref, naive_kda_matrix(q, k, v, g, beta), rtol=1e-4, atol=1e-4)


def test_fast_chunk_kernel_equals_the_readable_reference():
    """The optimised kernel the model runs (ops.chunk_kda) against the readable one, outputs and final state,
    from a non-zero initial state."""
    from k3lite.model.kda.ops import chunk_kda
    from k3lite.model.kda.reference import chunk_kda_reference

    q, k, v, g, beta = _kda_inputs(T=70, seed=1)
    S0 = torch.randn(2, 2, 8, 6, generator=torch.Generator().manual_seed(2))
    o_ref, S_ref = chunk_kda_reference(q, k, v, g, beta, chunk_size=16, initial_state=S0)
    o, S = chunk_kda(q, k, v, g, beta, initial_state=S0, output_final_state=True, chunk_size=16)
    torch.testing.assert_close(o.float(), o_ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(S.float(), S_ref, rtol=1e-4, atol=1e-4)


def test_readable_reference_is_the_delta_rule_not_plain_gating():
    """The same inputs through gated linear attention (per-channel decay, no delta correction) give different
    outputs: the equality above pins the delta rule, not just the decay."""
    from k3lite.model.kda.naive import naive_gla
    from k3lite.model.kda.reference import chunk_kda_reference

    q, k, v, g, beta = _kda_inputs(T=20)
    o_ref, _ = chunk_kda_reference(q, k, v, g, beta, chunk_size=8)
    assert not torch.allclose(o_ref, naive_gla(q, k, v * beta[..., None], g), atol=1e-2)


@pytest.mark.parametrize("preset", ["lite", "kimi-linear-48b-a3b"])
def test_fused_layer_inputs_equal_the_module_by_module_reference(preset):
    """The layer's fused projections and convs (one matmul, one conv over stacked channels) give what the three
    ShortConv modules and six projections give one by one (KimiDeltaAttention.kernel_inputs_reference)."""
    cfg = get_preset(preset).kda
    if preset != "lite":  # the big preset's dims, scaled down: head dim and rank as released, fewer heads
        cfg = dataclasses.replace(cfg, n_heads=2)
    torch.manual_seed(0)
    layer = KimiDeltaAttention(64, cfg)
    x = torch.randn(2, 11, 64)
    fast, ref = layer.kernel_inputs(x), layer.kernel_inputs_reference(x)
    for name in ("q", "k", "v", "g", "beta"):
        torch.testing.assert_close(getattr(fast, name), getattr(ref, name), rtol=1e-5, atol=1e-5, msg=name)
    for a, b in zip(fast.conv_tail, ref.conv_tail):
        torch.testing.assert_close(a, b)
