"""Attention Residuals: the depth softmax vs a loop reference; block S=1 == full; weights sum to 1."""
import numpy as np
import pytest
import torch

from k3lite.model.attnres import DepthAttention, ResidualStream, attnres_cost, depth_attention_reference
from k3lite.model.presets import get_preset
from k3lite.model.stack import K3Model
from k3lite.viz.attnres import depth_matrix, source_names

TOL = dict(atol=1e-5, rtol=1e-5)


def run_stream(mode, block_size, emb, outputs_fn, attns, final):
    """Drive a stream through len(attns) sublayers; sublayer i's output = outputs_fn(i, its input)."""
    stream = ResidualStream(emb, mode, block_size)
    mixes = []
    for i, a in enumerate(attns):
        mix = stream.mix(a)
        mixes.append(mix)
        stream.add(outputs_fn(i, mix.h))
    mixes.append(stream.mix(final))
    return mixes


def random_attns(n, d, seed=0):
    torch.manual_seed(seed)
    attns = [DepthAttention(d) for _ in range(n + 1)]
    with torch.no_grad():
        for a in attns:
            a.query.normal_()
            a.key_norm.weight.uniform_(0.5, 1.5)
    return attns[:-1], attns[-1]


def nonlinear_sublayers(d, n, seed=1):
    torch.manual_seed(seed)
    ws = [torch.randn(d, d) / d**0.5 for _ in range(n)]
    return lambda i, h: torch.tanh(h @ ws[i])


def test_depth_attention_matches_loop_reference_and_sums_to_one():
    attn = random_attns(1, 16)[1]
    srcs = [torch.randn(2, 5, 16) for _ in range(4)]
    h, w = attn(torch.stack(srcs))
    torch.testing.assert_close(h, depth_attention_reference(attn, srcs), **TOL)
    assert w.shape == (2, 5, 4)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 5), **TOL)
    assert (w > 0).all()


def test_zero_query_gives_uniform_weights():
    attn = DepthAttention(8)
    h, w = attn(torch.randn(3, 1, 2, 8))
    torch.testing.assert_close(w, torch.full((1, 2, 3), 1 / 3))


@pytest.mark.parametrize("n_sub", [1, 4, 7])
def test_block_size_one_equals_full(n_sub):
    d = 12
    attns, final = random_attns(n_sub, d)
    f = nonlinear_sublayers(d, n_sub)
    emb = torch.randn(2, 3, d)
    full = run_stream("full", 1, emb, f, attns, final)
    block = run_stream("block", 1, emb, f, attns, final)
    for a, b in zip(full, block):
        torch.testing.assert_close(a.h, b.h, **TOL)
        torch.testing.assert_close(a.weights, b.weights, **TOL)
    # full AttnRes: sublayer l reads the embedding and every earlier output
    assert [m.weights.shape[-1] for m in full] == list(range(1, n_sub + 2))


def test_block_sources_are_embedding_completed_blocks_and_partial():
    d, n_sub, S = 8, 7, 3
    attns, final = random_attns(n_sub, d)
    mixes = run_stream("block", S, torch.randn(1, 2, d), nonlinear_sublayers(d, n_sub), attns, final)
    # sublayer s reads 1 + floor(s/S) completed sources + (1 if a partial block is open)
    expected = [1 + s // S + (1 if s % S else 0) for s in range(n_sub + 1)]
    assert [m.weights.shape[-1] for m in mixes] == expected
    for m in mixes:
        torch.testing.assert_close(m.weights.sum(-1), torch.ones(1, 2), **TOL)


def test_block_with_manual_sums():
    """Block S=2 on known outputs: the sources are exactly emb, v1+v2, and the partial v3."""
    d = 6
    emb = torch.randn(1, 1, d)
    outs = [torch.randn(1, 1, d) for _ in range(3)]
    attns, final = random_attns(3, d, seed=3)
    mixes = run_stream("block", 2, emb, lambda i, h: outs[i], attns, final)
    want = depth_attention_reference(final, [emb, outs[0] + outs[1], outs[2]])
    torch.testing.assert_close(mixes[-1].h, want, **TOL)


def test_standard_is_the_plain_sum():
    d = 6
    emb = torch.randn(1, 2, d)
    outs = [torch.randn(1, 2, d) for _ in range(4)]
    mixes = run_stream("standard", 1, emb, lambda i, h: outs[i], [None] * 4, None)
    torch.testing.assert_close(mixes[-1].h, emb + sum(outs))
    assert (mixes[-1].weights == 1).all() and mixes[-1].weights.shape[-1] == 5


def test_bad_arguments():
    with pytest.raises(ValueError, match="mode"):
        ResidualStream(torch.zeros(1, 1, 2), "dense")
    with pytest.raises(ValueError, match="block_size"):
        ResidualStream(torch.zeros(1, 1, 2), "block", 0)
    with pytest.raises(ValueError, match="DepthAttention"):
        ResidualStream(torch.zeros(1, 1, 2), "full").mix(None)
    with pytest.raises(ValueError, match="sources"):
        DepthAttention(4)(torch.zeros(2, 1, 1, 5))


def test_cost_model_block_grouping_saves_reads_and_memory():
    L, d = 64, 1024
    full = attnres_cost(L, d, "full")
    block = attnres_cost(L, d, "block", block_size=8)
    std = attnres_cost(L, d, "standard")
    assert full.live_sources == 2 * L + 1  # the embedding plus every sublayer output
    assert block.live_sources == 1 + 2 * L // 8  # embedding + 16 block sums (the last partial just completed)
    assert full.source_reads == sum(range(1, 2 * L + 2))  # 1 + 2 + ... + (2L + 1)
    assert std.source_reads == 2 * L + 1
    assert std.read_bytes < block.read_bytes < full.read_bytes
    # block size 1 is full
    assert attnres_cost(L, d, "block", block_size=1).source_reads == full.source_reads
    with pytest.raises(ValueError):
        attnres_cost(0, d, "full")


@pytest.mark.parametrize("mode, block", [("standard", 4), ("full", 4), ("block", 4), ("block", 3)])
def test_heatmap_has_one_source_label_per_column(mode, block):
    """Standard mode has 2L + 1 coefficients (one per output); it was labelled with block sums of S (5 labels
    for 17 columns on the lite model). Labels must match the matrix in every mode."""
    torch.manual_seed(0)
    cfg = get_preset("lite").with_(n_layers=4, attn_res=mode, attn_res_block_size=block)
    with torch.inference_mode():
        trace = K3Model(cfg)(torch.tensor([[1, 2, 3]]), trace=True).trace
    names, mat = source_names(trace), depth_matrix(trace)
    assert len(names) == mat.shape[1], (names, mat.shape)
    n_sub = 2 * cfg.n_layers
    assert mat.shape[1] == (n_sub + 1 if mode != "block" else 1 + -(-n_sub // block))
    if mode != "block":
        assert not any(n.startswith("B") for n in names)  # single outputs, no block-sum labels


@pytest.mark.parametrize("mode,block", [("full", 1), ("block", 2), ("block", 3)])
def test_inference_buffer_path_matches_the_stacked_path(mode, block):
    """Without autograd and with max_sources, sources live in one buffer and each 1/rms is computed once
    (DepthAttention's inv_rms): the same mixes as stacking and normalising every source each time."""
    d, n = 16, 7
    attns, final = random_attns(n, d, seed=4)
    emb = torch.randn(2, 5, d)
    sub = nonlinear_sublayers(d, n)

    def drive(max_sources):
        stream = ResidualStream(emb, mode, block, max_sources)
        assert (stream._buf is not None) == (max_sources > 0)
        mixes = []
        for i, a in enumerate(attns):
            mixes.append(stream.mix(a))
            stream.add(sub(i, mixes[-1].h))
        return mixes + [stream.mix(final)]

    with torch.no_grad():
        plain, buffered = drive(0), drive(1 + -(-n // block))
    for p, b in zip(plain, buffered):
        assert p.sources == b.sources
        torch.testing.assert_close(b.h, p.h, **TOL)
        torch.testing.assert_close(b.weights, p.weights, **TOL)


def test_block_size_is_stated_in_the_releases_unit():
    """The text "blocks of 24 sublayers" was presented as K3's; its released config states 12 *layers*
    (the same boundary). Pages and the tour say it in layers, with sublayers in brackets."""
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT
    from k3lite.model.attnres import block_size_words
    from k3lite.model.presets import get_preset
    from k3lite.tour.steps import STEPS
    assert block_size_words(24) == "12 layers (24 sublayers)" and block_size_words(2) == "1 layer (2 sublayers)"
    assert block_size_words(5) == "5 sublayers"
    with pytest.raises(ValueError, match="block_size"):
        block_size_words(0)
    words = block_size_words(get_preset("kimi-k3").attn_res_block_size)
    step = next(s for s in STEPS if s.key == "residuals")
    assert f"blocks of {words}" in step.question and f"Blocks of {words}" in step.compute().explanation
    at = AppTest.from_file(str(ROOT / "views" / "attention_residuals.py"), default_timeout=180).run()
    assert not at.exception, [e.message for e in at.exception]
    assert f"blocks of {words} read" in " ".join(m.value for m in at.markdown)


@pytest.mark.parametrize("mode,block", [("standard", 4), ("full", 4), ("block", 1), ("block", 7)])
def test_with_config_shares_the_weights_and_runs_like_a_copy(mode, block):
    """The AttnRes page caches 18 variants of the lite model: with_config shares the source's weight tensors (a copy
    each cost 29 MB of RSS), and a shared variant computes what a variant holding its own copies computes, without
    changing the source."""
    from k3lite.model.checkpoint import with_config

    torch.manual_seed(0)
    source = K3Model(get_preset("lite").with_(attn_res="block", attn_res_block_size=4)).eval()
    ids = torch.randint(0, 256, (1, 24))
    with torch.inference_mode():
        before = source(ids).logits.clone()
    variant = with_config(source, attn_res=mode, attn_res_block_size=block)
    own = dict(source.named_parameters())
    shared = [k for k, p in variant.named_parameters() if k in own and p.data_ptr() == own[k].data_ptr()]
    common = [k for k, _ in variant.named_parameters() if k in own]
    assert common and shared == common, f"{len(shared)} of {len(common)} common weights shared"
    copy = K3Model(source.cfg.with_(attn_res=mode, attn_res_block_size=block)).eval()
    target = copy.state_dict()
    copy.load_state_dict({k: v.clone() for k, v in source.state_dict().items() if k in target}, strict=False)
    copy.load_state_dict({k: v.clone() for k, v in variant.state_dict().items() if k not in own}, strict=False)
    with torch.inference_mode():
        assert torch.equal(variant(ids).logits, copy(ids).logits)
        assert torch.equal(source(ids).logits, before)


def test_depth_view_keeps_the_depth_weights_and_drops_the_mechanisms():
    """The AttnRes page caches traces of prompts up to 2,000 characters; a full trace grows as T^2 (MLA attention
    maps: ~139 MB at 2,000 tokens). Its depth view keeps every depth weight the page draws, equal, and little else."""
    import pickle

    torch.manual_seed(0)
    model = K3Model(get_preset("lite")).eval()
    with torch.inference_mode():
        trace = model(torch.randint(0, 256, (1, 300)), trace=True).trace
    view = trace.depth_view()
    full, kept = depth_matrix(trace), depth_matrix(view)
    assert len(full) == len(kept)
    for a, b in zip(full, kept):  # NaN pads sources a sublayer cannot read: equal where both are NaN
        np.testing.assert_array_equal(a, b)
    assert (view.tokens, view.attn_res, view.attn_res_block_size) == (trace.tokens, trace.attn_res, trace.attn_res_block_size)
    assert all(lt.mla_attention is None and lt.kda_decay is None and lt.router_scores is None for lt in view.layers)
    assert any(lt.mla_attention is not None for lt in trace.layers), "the source trace is not changed"
    assert len(pickle.dumps(view)) < 0.05 * len(pickle.dumps(trace))
