"""The expert-parallel layer trained one step on torch.distributed: forward and backward through the all-to-alls,
every byte of both directions counted.

Each all_to_all of measured.py becomes `_Exchange`, an autograd Function: its forward sends records laid out as
measured.py lays them (payload in the wire format | routing metadata | fp32 gate weights where they travel, padded to
`record_bytes`); its backward sends the gradient of what was received back to where it came from, with the counts of
the forward (a cached handle: no control message), in the gradient's wire format, with the source metadata and the
gate weights' gradients where the weights travelled (the record layouts of backward.py). So the backward of the
dispatch hop is a combine and the backward of the combine hop is a dispatch, as DeepEP's training example wires
them; autograd chains the hops (the normal scheme's NVLink forwarding becomes a reduction inside the domain).

`ep_train_step` runs one rank: the real router, the latent down-projection, the exchanges, the rank's expert shard,
the shared expert and the up-projection, then backward of sum(out * upstream) for a seeded upstream gradient. Rank 0
compares (`summarize_backward`) the bytes each rank sent with backward.backward_link_bytes (and the forward's with
run.predicted_for_routing) for the same routing, exact integers, and the distributed gradients (input, every
parameter: replicated ones summed over ranks, expert shards concatenated) with the single-process backward.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from k3lite.base.evidence import Evidence, derived, measured_here
from k3lite.interconnect.analytic import link_copies
from k3lite.interconnect.backward import BWD_KINDS, backward_link_bytes, backward_records
from k3lite.interconnect.deployment import expert_to_gpu, wire_format
from k3lite.interconnect.measured import (
    KINDS, TOLERANCE, MeasureSpec, _bytes, _Comm, _compute, _pad_to, build_problem, decode, encode, local_shard,
    routed_input,
)

ALL_KINDS = KINDS + BWD_KINDS


class _Hop:
    """One all_to_all, both ways: who, over which group, the records' sizes and formats, the counts."""

    def __init__(self, comm: _Comm, members: list[int], group, direction: str, dim: int, spec: MeasureSpec,
                 back_meta: int, grad_w: bool, meta_first: bool = False):
        self.comm, self.members, self.group, self.dim = comm, members, group, dim
        self.direction = direction  # "dispatch" | "combine": the forward's direction
        bwd = "grad_combine" if direction == "combine" else "grad_dispatch"
        self.fwd_kind, self.bwd_kind = direction, bwd
        self.fwd_fmt = spec.dispatch if direction == "dispatch" else spec.combine
        self.bwd_fmt = getattr(spec, bwd)
        self.fwd_rec = spec.record(direction)
        k = spec.top_k if grad_w else 0
        gc, gd = backward_records(spec.scheme, dim, spec.top_k, spec.grad_combine, spec.grad_dispatch)
        self.bwd_rec = gc if bwd == "grad_combine" else gd
        self.back_meta, self.grad_w, self.k_w, self.meta_first = back_meta, grad_w, k, meta_first
        self.counts: list[int] = []
        self.recv_counts: list[int] = []


class _Exchange(torch.autograd.Function):
    """x (M, dim) rows, w (M, kw) fp32 weights (kw 0: none travel), meta (M, mb) uint8, sorted by member ->
    (received rows (R, dim), their weights (R, kw), their metadata (R, mb))."""

    @staticmethod
    def forward(ctx, x, w, meta, hop: _Hop, counts: list[int]):
        payload = encode(x, hop.fwd_fmt)  # (M, row)
        parts = [meta, payload] if hop.meta_first else [payload, meta]
        kw = w.shape[1]
        rec = _pad_to(torch.cat(parts + ([_bytes(w, torch.float32)] if kw else []), 1), hop.fwd_rec)
        recv, rc = hop.comm.exchange(rec, counts, hop.members, hop.fwd_kind, hop.group)
        hop.counts, hop.recv_counts = counts, rc
        row, mb = payload.shape[1], meta.shape[1]
        if hop.meta_first:
            mr, xr = recv[:, :mb], decode(recv[:, mb:mb + row], hop.dim, hop.fwd_fmt)
        else:
            xr, mr = decode(recv[:, :row], hop.dim, hop.fwd_fmt), recv[:, row:row + mb]
        if kw:
            wr = recv[:, row + mb:row + mb + 4 * kw].contiguous().view(torch.float32)  # (R, kw)
        else:
            wr = xr.new_zeros(xr.shape[0], 0)
        ctx.hop, ctx.back, ctx.kw = hop, mr[:, :hop.back_meta].contiguous(), kw
        mr = mr.contiguous()
        ctx.mark_non_differentiable(mr)
        return xr, wr, mr

    @staticmethod
    def backward(ctx, gx, gw, _gmeta):
        hop = ctx.hop
        if gx is None:  # rows nobody used: a zero gradient still travels (the record count is fixed)
            gx = torch.zeros(ctx.back.shape[0], hop.dim)
        parts = [encode(gx, hop.bwd_fmt), ctx.back]  # gradient | source metadata
        if hop.grad_w:
            parts.append(_bytes(gw if gw is not None else gx.new_zeros(gx.shape[0], ctx.kw), torch.float32))
        rec = _pad_to(torch.cat(parts, 1), hop.bwd_rec)
        back, _ = hop.comm.exchange(rec, hop.recv_counts, hop.members, hop.bwd_kind, hop.group, hop.counts)
        row = wire_format(hop.bwd_fmt).row_bytes(hop.dim)
        g_x = decode(back[:, :row], hop.dim, hop.bwd_fmt)
        g_w = None
        if hop.grad_w:
            o = row + hop.back_meta
            g_w = back[:, o:o + 4 * ctx.kw].contiguous().view(torch.float32)  # (M, k)
        return g_x, g_w, None, None, None


def _send(hop: _Hop, x, w, meta, counts):
    return _Exchange.apply(x, w, meta, hop, counts)


def ep_train_step(moe, x: torch.Tensor, upstream: torch.Tensor, spec: MeasureSpec, rank: int, groups: dict,
                  device: torch.device) -> dict:
    """Forward and backward of this rank's tokens x (n, d) with loss sum(out * upstream): bytes sent by kind,
    output, routing and gradients (of x, of the replicated parameters, of this rank's expert shard)."""
    world, k, dim, g = spec.ranks, spec.top_k, spec.dim_on_wire, spec.ranks_per_node
    first, shard, placement = local_shard(moe, spec, rank, device, copy=True)
    comm = _Comm(spec, rank, device, ALL_KINDS)
    x = x.clone().requires_grad_(True)
    route, h = routed_input(moe, x, spec)  # topk_weight differentiable
    ids, w = route.topk_idx, route.topk_weight.float()  # (n, k)
    dest = placement[ids]  # (n, k)
    n = x.shape[0]
    empty_w = w.new_zeros(0, 0)

    if spec.scheme in ("direct", "low-latency"):
        everyone = list(range(world))
        toks, slots, metas, counts = [], [], [], []
        for dst in everyone:
            on_dst = dest == dst  # (n, k)
            if spec.scheme == "direct":  # int32 source index | k int64 ids; the k fp32 weights travel (grad back)
                t = on_dst.any(1).nonzero().squeeze(1)
                s = torch.full_like(t, -1)
                meta = torch.cat([_bytes(t[:, None], torch.int32), _bytes(torch.where(on_dst[t], ids[t], -1),
                                                                              torch.int64)], 1)
            else:  # one record per (token, slot): int4 header (source index, expert id, 2 reserved), first
                t, s = on_dst.nonzero(as_tuple=True)
                meta = _bytes(torch.stack([t, ids[t, s], torch.zeros_like(t), torch.zeros_like(t)], 1), torch.int32)
            toks.append(t), slots.append(s), metas.append(meta), counts.append(int(t.numel()))
        t, s, meta = torch.cat(toks), torch.cat(slots), torch.cat(metas)
        if spec.scheme == "direct":
            d_hop = _Hop(comm, everyone, None, "dispatch", dim, spec, back_meta=4, grad_w=True)
            hr, rw, rmeta = _send(d_hop, h[t], w[t], meta, counts)
            rid = rmeta[:, 4:4 + 8 * k].contiguous().view(torch.int64)  # (R, k)
            part = _compute(first[rank], shard, hr, rid, rw)
            back_meta = torch.cat([rmeta[:, :4], _bytes(rw.detach(), torch.float32)], 1)  # source | k weights
            c_hop = _Hop(comm, everyone, None, "combine", dim, spec, back_meta=4, grad_w=False)
        else:
            d_hop = _Hop(comm, everyone, None, "dispatch", dim, spec, back_meta=0, grad_w=False, meta_first=True)
            hr, _, rmeta = _send(d_hop, h[t], empty_w.new_zeros(t.numel(), 0), meta, counts)
            head = rmeta.view(torch.int32)  # (R, 4)
            ones = torch.ones(hr.shape[0], 1, device=device)
            part = _compute(first[rank], shard, hr, head[:, 1:2].long(), ones)  # unweighted expert output
            back_meta = rmeta.new_zeros(rmeta.shape[0], 0)
            c_hop = _Hop(comm, everyone, None, "combine", dim, spec, back_meta=0, grad_w=False)
        y, _, _ = _send(c_hop, part, empty_w.new_zeros(part.shape[0], 0), back_meta, d_hop.recv_counts)
        if spec.scheme == "low-latency":
            y = y * w[t, s, None]  # the weighted sum happens at the token's rank (its gradient stays here)
        routed = torch.zeros(n, dim, device=device).index_add(0, t, y)
    else:  # normal: RDMA hop over the rail group, NVLink hop inside the domain, each retraced by the backward
        dom, local, n_dom = rank // g, rank % g, world // g
        dom_hit = (dest // g)[:, :, None] == torch.arange(n_dom, device=device)  # (n, k, D)
        toks, counts = [], []
        for d in range(n_dom):
            t = dom_hit[:, :, d].any(1).nonzero().squeeze(1)
            toks.append(t), counts.append(int(t.numel()))
        t_a = torch.cat(toks)
        meta = torch.cat([_bytes(torch.stack([torch.full_like(t_a, dom), t_a], 1), torch.int32),
                          _bytes(ids[t_a], torch.int32)], 1)  # SourceMeta stand-in (8 B) | k int32 ids
        rail = [d * g + local for d in range(n_dom)]
        a_hop = _Hop(comm, rail, groups["rail"][local], "dispatch", dim, spec, back_meta=8, grad_w=True)
        h_a, w_a, m_a = _send(a_hop, h[t_a], w[t_a], meta, counts)
        gpu_a = placement[m_a[:, 8:8 + 4 * k].contiguous().view(torch.int32).long()]  # (Ra, k)
        members = [dom * g + j for j in range(g)]
        toks, counts = [], []
        for j in members:  # forward each received record to every GPU of this domain it needs
            t = (gpu_a == j).any(1).nonzero().squeeze(1)
            toks.append(t), counts.append(int(t.numel()))
        t_b = torch.cat(toks)
        b_hop = _Hop(comm, members, groups["node"][dom], "dispatch", dim, spec, back_meta=8, grad_w=True)
        h_b, w_b, m_b = _send(b_hop, h_a[t_b], w_a[t_b], m_a[t_b], counts)
        rid = m_b[:, 8:8 + 4 * k].contiguous().view(torch.int32).long()
        part = _compute(first[rank], shard, h_b, rid, w_b)
        cb_hop = _Hop(comm, members, groups["node"][dom], "combine", dim, spec, back_meta=8, grad_w=False)
        back_b, _, _ = _send(cb_hop, part, empty_w.new_zeros(part.shape[0], 0),
                             torch.cat([m_b[:, :8], _bytes(w_b.detach(), torch.float32)], 1), b_hop.recv_counts)
        node_sum = torch.zeros(h_a.shape[0], dim, device=device).index_add(0, t_b, back_b)  # reduce in the domain
        ca_hop = _Hop(comm, rail, groups["rail"][local], "combine", dim, spec, back_meta=8, grad_w=False)
        back_a, _, _ = _send(ca_hop, node_sum, empty_w.new_zeros(node_sum.shape[0], 0),
                             torch.cat([m_a[:, :8], _bytes(w_a.detach(), torch.float32)], 1), a_hop.recv_counts)
        routed = torch.zeros(n, dim, device=device).index_add(0, t_a, back_a)
    out = moe.up_proj(routed) if spec.latent_dim else routed  # (n, d)
    if moe.cfg.n_shared_experts:
        out = out + moe.shared(x)
    (out * upstream).sum().backward()
    replicated = {name: p.grad.detach().clone() for name, p in moe.named_parameters()
                  if not name.startswith("experts.") and p.grad is not None}
    return {"out": out.detach(), "sent": comm.sent, "topk_idx": route.topk_idx.detach(), "grad_x": x.grad.detach(),
            "replicated": replicated, "experts": {n_: getattr(shard, n_).grad.detach() for n_ in
                                                 ("w_gate", "w_up", "w_down")}}


def upstream_gradient(spec: MeasureSpec) -> torch.Tensor:
    """(ranks * tokens_per_rank, d) the seeded gradient of the loss w.r.t. the layer's output (the same everywhere)."""
    gen = torch.Generator().manual_seed(spec.seed + 2)
    return torch.randn(spec.ranks * spec.tokens_per_rank, spec.d_model, generator=gen)


# ------------------------------------------------------------------------------------------ the comparison
class BackwardResult(NamedTuple):
    spec: MeasureSpec
    measured: list[dict]  # per rank: bytes sent by kind, forward (KINDS) and backward (BWD_KINDS)
    predicted: list[dict]  # per rank: the analytic bytes for the same routing, both directions
    rel_err: dict  # max |distributed - single process| / max |single process|: out, grad_x, parameters
    tolerance: float
    topk_idx: np.ndarray  # (N, k) routing gathered from the ranks (tokens in rank order)
    wall_s: float
    backend: str = "gloo"

    @property
    def n_tokens(self) -> int:
        return self.spec.ranks * self.spec.tokens_per_rank

    def total(self, which: str) -> dict:
        rows = self.measured if which == "measured" else self.predicted
        return {key: sum(r[key] for r in rows) for key in ALL_KINDS}

    @property
    def agree(self) -> bool:
        return all({k: m[k] for k in ALL_KINDS} == p for m, p in zip(self.measured, self.predicted))

    @property
    def gradients_match(self) -> bool:
        return max(self.rel_err.values()) <= self.tolerance

    @property
    def evidence(self) -> dict[str, Evidence]:
        """What the measured and the predicted numbers are: the command that measured them, the counting function."""
        s = self.spec
        cmd = (f"python -m k3lite.interconnect measure --backward --ranks {s.ranks} --ranks-per-node "
               f"{s.ranks_per_node} --scheme {s.scheme} --latent {s.latent_dim} --tokens {s.tokens_per_rank} "
               f"--dispatch {s.dispatch} --combine {s.combine} --grad-combine {s.grad_combine} --grad-dispatch "
               f"{s.grad_dispatch} --node-limit {s.node_limit} --seed {s.seed}")
        return {"measured": measured_here(cmd), "predicted": derived(backward_link_bytes, link_copies)}


def predicted_both(spec: MeasureSpec, topk_idx: np.ndarray) -> list[dict]:
    """Analytic bytes each rank sends for the given routing, forward and backward (exact integers)."""
    src = np.repeat(np.arange(spec.ranks), spec.tokens_per_rank)
    placement = expert_to_gpu(spec.n_experts, spec.ranks)
    mats = link_copies(np.asarray(topk_idx), src, placement, spec.ranks_per_node, spec.scheme)  # as run.py counts
    fwd = [{kind: int(mats[kind][r].sum()) * spec.record(kind.split("_")[0]) for kind in KINDS}
           for r in range(spec.ranks)]
    bwd = backward_link_bytes(topk_idx, src, placement, spec.ranks_per_node, spec.scheme, spec.dim_on_wire,
                              spec.top_k, spec.grad_combine, spec.grad_dispatch)
    return [f | b for f, b in zip(fwd, bwd)]


def _rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    return float((a - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def summarize_backward(spec: MeasureSpec, parts: list[dict], wall_s: float, backend: str = "gloo") -> BackwardResult:
    """Compare the ranks' bytes with the analytic count and their gradients with the single-process backward."""
    moe, x = build_problem(spec)
    x = x.clone().requires_grad_(True)
    out = moe(x[None]).out[0]  # (N, d) the plain LatentMoE.forward
    (out * upstream_gradient(spec)).sum().backward()
    ref = out.detach()
    topk = torch.cat([p["topk_idx"].cpu() for p in parts]).numpy()
    rel = {"output": _rel(torch.cat([p["out"].cpu() for p in parts]), ref),
           "grad of input": _rel(torch.cat([p["grad_x"].cpu() for p in parts]), x.grad)}
    params = dict(moe.named_parameters())
    for name in parts[0]["replicated"]:
        rel[f"grad {name}"] = _rel(sum(p["replicated"][name].cpu() for p in parts), params[name].grad)
    for name in ("w_gate", "w_up", "w_down"):
        rel[f"grad experts.{name}"] = _rel(torch.cat([p["experts"][name].cpu() for p in parts]),
                                           params[f"experts.{name}"].grad)
    fmts = (spec.dispatch, spec.combine, spec.grad_combine, spec.grad_dispatch)
    tol = max(TOLERANCE[f] for f in fmts) * (1 if all(f == "fp32" for f in fmts) else 2)  # rounding compounds
    return BackwardResult(spec, [p["sent"] for p in parts], predicted_both(spec, topk), rel, tol, topk, wall_s,
                          backend)


def format_backward(res: BackwardResult) -> str:
    s, n = res.spec, res.n_tokens
    m, p = res.total("measured"), res.total("predicted")
    lines = [f"expert-parallel MoE layer trained one step, scheme {s.scheme}, {s.ranks} {res.backend} ranks = "
             f"{s.ranks // s.ranks_per_node} pretend domains x {s.ranks_per_node}; dim on wire {s.dim_on_wire}; "
             f"forward {s.dispatch} dispatch / {s.combine} combine, backward {s.grad_combine} grad of combine / "
             f"{s.grad_dispatch} grad of dispatch; {n} tokens",
             f"{'bytes/token':<22}{'measured':>12}{'analytic':>12}"]
    for key in ALL_KINDS:
        lines.append(f"{key:<22}{m[key] / n:>12.2f}{p[key] / n:>12.2f}")
    fwd, bwd = (sum(m[k] for k in kinds) / n for kinds in (KINDS, BWD_KINDS))
    lines.append(f"{'forward total':<22}{fwd:>12.2f}{sum(p[k] for k in KINDS) / n:>12.2f}")
    lines.append(f"{'backward total':<22}{bwd:>12.2f}{sum(p[k] for k in BWD_KINDS) / n:>12.2f}")
    lines.append(f"per rank measured == analytic for the same routing, both directions: {res.agree} (exact integers)")
    worst = max(res.rel_err, key=res.rel_err.get)
    lines.append(f"distributed vs single-process backward: worst max|diff|/max|ref| {res.rel_err[worst]:.3g} "
                 f"({worst}; tolerance {res.tolerance:g}) -> {'MATCH' if res.gradients_match else 'MISMATCH'}")
    lines.append(f"wall time {res.wall_s:.1f} s")
    return "\n".join(lines)
