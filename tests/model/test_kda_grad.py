"""The hand-written backward of the chunk kernel (k3lite/model/kda/grad.py) against autograd of the step-by-step
recurrence: every mixer the lab trains, initial and final state, ragged tails, chunks of up to and over 32
rows, and chunks whose decay is so strong that the Grams fall back to the steep path (exact blocks up to 32
rows, the two-level factorisation beyond).

Tolerance: 1e-3 max abs error on gradients in fp32 (sums over up to T steps of products of O(1) terms).
"""
import pytest
import torch
import torch.nn.functional as F

from k3lite.model import kda
from k3lite.model.kda import ops
from k3lite.model.kda.grad import ChunkGatedDelta

TOL = 1e-3

# name -> (chunk kernel, recurrent reference on the same arguments); g kind and beta use from MIXER_INPUTS
KERNELS = {
    "kda": (ops.chunk_kda, ops.recurrent_kda),
    "gdn": (ops.chunk_gdn, ops.recurrent_gdn),
    "deltanet": (lambda q, k, v, g, b, **kw: ops.chunk_deltanet(q, k, v, b, **kw),
                 lambda q, k, v, g, b, **kw: ops.recurrent_deltanet(q, k, v, b, **kw)),
    "mamba2": (ops.chunk_mamba2, ops.recurrent_mamba2),
    "gla": (lambda q, k, v, g, b, **kw: ops.chunk_gla(q, k, v, g, **kw),
            lambda q, k, v, g, b, **kw: ops.recurrent_gla(q, k, v, g, **kw)),
    "linear": (lambda q, k, v, g, b, **kw: ops.chunk_linear_attn(q, k, v, **kw),
               lambda q, k, v, g, b, **kw: ops.recurrent_linear_attn(q, k, v, **kw)),
}
G_KIND = {"kda": "channel", "gdn": "head", "deltanet": None, "mamba2": "head", "gla": "channel", "linear": None}


def inputs(name, B=2, T=37, H=2, K=8, V=6, seed=0, strong=False):
    gen = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    k = F.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    v = torch.randn(B, T, H, V, generator=gen)
    g = F.logsigmoid(torch.randn(B, T, H, K, generator=gen) + 2)
    if strong:  # a burst of very strong decay: chunk spans above the cap use the exact Grams
        g[:, 3:12] *= 60.0
    g = {"channel": g, "head": g.mean(-1), None: None}[G_KIND[name]]
    beta = torch.rand(B, T, H, generator=gen)
    S0 = torch.randn(B, H, K, V, generator=gen)
    return [q, k, v, g, beta, S0]


def grads(fn, args, w_o, w_S, chunk_size=None):
    leaves = [None if a is None else a.clone().requires_grad_() for a in args]
    kw = {} if chunk_size is None else {"chunk_size": chunk_size}
    o, S = fn(*leaves[:5], initial_state=leaves[5], output_final_state=True, **kw)
    ((o * w_o).sum() + (S * w_S).sum()).backward()
    return o, [None if a is None else a.grad for a in leaves]


@pytest.mark.parametrize("name", list(KERNELS))
@pytest.mark.parametrize("chunk_size,strong", [(8, False), (32, False), (16, True), (40, True), (64, False), (64, True)])
def test_chunk_backward_equals_recurrent_autograd(name, chunk_size, strong):
    """Gradients of o and of the final state w.r.t. q, k, v, g, beta and the initial state."""
    args = inputs(name, strong=strong, seed=chunk_size)
    gen = torch.Generator().manual_seed(1)
    w_o, w_S = torch.randn(args[2].shape, generator=gen), torch.randn(args[5].shape, generator=gen)
    chunk, rec = KERNELS[name]
    o_c, g_c = grads(chunk, args, w_o, w_S, chunk_size)
    o_r, g_r = grads(rec, args, w_o, w_S)
    assert o_c.grad_fn is not None
    assert (o_c - o_r).abs().max().item() <= 1e-4
    for label, a, b in zip(("q", "k", "v", "g", "beta", "S0"), g_c, g_r):
        if b is None:  # an argument this mixer ignores gets no gradient from either
            continue
        assert a is not None, f"{name}: no gradient for {label}"
        assert (a - b).abs().max().item() <= TOL, f"{name} {label} (chunk {chunk_size})"


def test_training_uses_the_hand_written_backward():
    """With gradients on, the kernel is one autograd node (ChunkGatedDelta), not a graph of the chunk loop."""
    q, k, v, g, beta, _ = inputs("kda", T=70)
    q.requires_grad_()
    o, _ = kda.chunk_kda(q, k, v, g, beta, chunk_size=16)
    seen, stack = set(), [o.grad_fn]
    while stack:  # walk the graph down to the leaves
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        stack += [f for f, _ in fn.next_functions]
    names = {type(fn).__name__ for fn in seen}
    assert any(n.startswith(ChunkGatedDelta.__name__) for n in names)
    assert not any(n.startswith(("Bmm", "Baddbmm", "LinalgSolveTriangular")) for n in names)


def test_no_grad_path_equals_grad_path():
    """Inference (in-place, grouped) and training (autograd Function) run the same forward."""
    args = inputs("kda", T=300)
    with torch.no_grad():
        o_ng, S_ng = kda.chunk_kda(*args[:5], initial_state=args[5], output_final_state=True, chunk_size=32)
    q = args[0].clone().requires_grad_()
    o_g, S_g = kda.chunk_kda(q, *args[1:5], initial_state=args[5], output_final_state=True, chunk_size=32)
    assert (o_g.detach() - o_ng).abs().max().item() <= 1e-5
    assert (S_g.detach() - S_ng).abs().max().item() <= 1e-5
