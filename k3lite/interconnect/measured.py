"""A real expert-parallel MoE layer on torch.distributed processes, with every byte handed to a collective counted.

Each rank owns a contiguous block of the experts of one seeded `LatentMoE`, routes its own tokens with the real
`Router` (node-limited routing = the router's group-limited top-k with one group per pretend domain) and moves
records with `all_to_all_single`, laid out byte for byte as `analytic.record_bytes` says (payload in the wire
format, routing metadata, padding). Ranks form pretend domains of `ranks_per_node` consecutive ranks:

    direct       one flat all_to_all over all ranks: one record per (token, distinct destination rank)
    normal       two levels of process groups: the "RDMA" hop is an all_to_all among the ranks with the same
                 local index across domains (one record per distinct destination domain, to the entry rank
                 there), the "NVLink" hop an all_to_all inside each domain (the entry rank forwards a record to
                 every rank of its domain hosting one of the token's experts). Combine: partial sums go back
                 inside the domain, are summed at the entry rank, and go back over the RDMA hop once per domain.
    low-latency  one flat all_to_all: one record per (token, top-k slot) on another rank, the weight applied
                 at the token's rank when the expert outputs come back

Bytes are counted from the buffers handed to the collectives, excluding each rank's chunk to itself, and compared
rank by rank with `analytic.link_copies` for the same routing decisions (exact integers), and the output with the
single-process `LatentMoE.forward`, in run.py: `run.measure()` starts the workers as local processes on gloo
(127.0.0.1); `python -m k3lite.interconnect worker` is the same worker under torchrun (`--backend nccl` on GPUs).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist

from k3lite.model.config import MoEConfig
from k3lite.interconnect.deployment import check_scheme, expert_to_gpu, experts_per_gpu, record_bytes, wire_format
from k3lite.model.moe import LatentMoE, RoutedExperts, expert_forward
from k3lite.base.rng import seeded

KINDS = ("dispatch_intra", "dispatch_inter", "combine_intra", "combine_inter")
# bound on max|diff| / max|ref| vs the fp32 single-process output: float summation order only (fp32), or the
# rounding of the wire format (bf16: 8 mantissa bits, ~0.4% per element; fp8 e4m3: 3 bits, ~6% per element)
TOLERANCE = {"fp32": 1e-5, "bf16": 2e-2, "fp8": 1e-1}


# ------------------------------------------------------------------------------------------ wire codecs
def encode(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """(M, dim) float -> (M, row_bytes) uint8 exactly as it would travel."""
    f = wire_format(fmt)
    x = x.float().contiguous()
    if fmt == "fp32":
        return x.view(torch.uint8)  # (M, 4 dim)
    if fmt == "bf16":
        return x.to(torch.bfloat16).view(torch.uint8)  # (M, 2 dim)
    m, dim = x.shape
    n_groups = math.ceil(dim / f.group_size)
    pad = torch.zeros(m, n_groups * f.group_size, device=x.device)
    pad[:, :dim] = x
    grouped = pad.view(m, n_groups, f.group_size)  # (M, n_groups, 128)
    scale = grouped.abs().amax(-1).clamp_min(1e-12) / 448.0  # (M, n_groups) e4m3 max is 448
    q = (grouped / scale[..., None]).to(torch.float8_e4m3fn).view(torch.uint8).reshape(m, -1)[:, :dim]
    return torch.cat([q, scale.contiguous().view(torch.uint8)], dim=1)  # (M, dim + 4 n_groups)


def decode(buf: torch.Tensor, dim: int, fmt: str) -> torch.Tensor:
    """(M, row_bytes) uint8 -> (M, dim) float32."""
    f = wire_format(fmt)
    buf = buf.contiguous()
    if fmt == "fp32":
        return buf.view(torch.float32)
    if fmt == "bf16":
        return buf.view(torch.bfloat16).float()
    m = buf.shape[0]
    n_groups = math.ceil(dim / f.group_size)
    q = torch.zeros(m, n_groups * f.group_size, dtype=torch.uint8, device=buf.device)
    q[:, :dim] = buf[:, :dim]
    scale = buf[:, dim:].contiguous().view(torch.float32)  # (M, n_groups)
    vals = q.view(torch.float8_e4m3fn).float().view(m, n_groups, f.group_size) * scale[..., None]
    return vals.reshape(m, -1)[:, :dim]


def _bytes(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(M, n) tensor -> (M, n * itemsize) uint8 view of it in `dtype`."""
    return t.to(dtype).contiguous().view(torch.uint8).reshape(t.shape[0], -1)


def _pad_to(rec: torch.Tensor, n_bytes: int) -> torch.Tensor:
    """Right-pad (M, b) uint8 records with zeros to (M, n_bytes)."""
    if rec.shape[1] > n_bytes:
        raise AssertionError(f"record of {rec.shape[1]} B exceeds the modelled {n_bytes} B")
    return torch.cat([rec, rec.new_zeros(rec.shape[0], n_bytes - rec.shape[1])], 1)


# ------------------------------------------------------------------------------------------ the problem
@dataclass(frozen=True)
class MeasureSpec:
    """One small MoE layer for the measured run (the same on every rank: built from `seed`)."""

    ranks: int = 4
    ranks_per_node: int = 2  # pretend NVLink domains of this many ranks, to split intra / inter
    d_model: int = 64
    latent_dim: int = 32  # 0 = classic MoE (d_model travels)
    n_experts: int = 16
    top_k: int = 4
    ffn_dim: int = 32
    tokens_per_rank: int = 32
    dispatch: str = "fp32"
    combine: str = "fp32"
    node_limit: int = 0  # > 0: the real router's group-limited top-k with one group per pretend domain
    scheme: str = "direct"
    seed: int = 0
    grad_combine: str = "fp32"  # backward (measured_backward): the grad of the combine travels like a dispatch
    grad_dispatch: str = "fp32"  # and the grad of the dispatch like a combine
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if not 1 <= self.ranks <= 1024:
            raise ValueError(f"ranks must be in [1, 1024], got {self.ranks}")
        if self.ranks_per_node < 1 or self.ranks % self.ranks_per_node:
            raise ValueError(f"ranks ({self.ranks}) must be a multiple of ranks_per_node ({self.ranks_per_node})")
        if not 1 <= self.tokens_per_rank <= 1024:
            raise ValueError(f"tokens_per_rank must be in [1, 1024], got {self.tokens_per_rank}")
        if not 8 <= self.d_model <= 512:
            raise ValueError(f"d_model must be in [8, 512] for the measured run, got {self.d_model}")
        if self.n_experts < self.ranks or self.n_experts > max(256, self.ranks):
            raise ValueError(f"n_experts must be in [ranks={self.ranks}, {max(256, self.ranks)}], got {self.n_experts}")
        if not 1 <= self.ffn_dim <= 1024:
            raise ValueError(f"ffn_dim must be in [1, 1024], got {self.ffn_dim}")
        if not 0 < self.timeout_s <= 600:
            raise ValueError(f"timeout_s must be in (0, 600], got {self.timeout_s}")
        wire_format(self.dispatch), wire_format(self.combine), check_scheme(self.scheme)
        wire_format(self.grad_combine), wire_format(self.grad_dispatch)
        n_dom = self.ranks // self.ranks_per_node
        if self.node_limit and (self.node_limit > n_dom or self.n_experts % self.ranks):
            raise ValueError(f"node_limit ({self.node_limit}) must be <= pretend domains ({n_dom}) and needs "
                             f"n_experts ({self.n_experts}) divisible by ranks ({self.ranks})")
        self.moe_config()  # validates top_k <= n_experts (reachable ones) and latent_dim <= d_model

    def moe_config(self) -> MoEConfig:
        if self.latent_dim > self.d_model or self.latent_dim < 0:
            raise ValueError(f"latent_dim ({self.latent_dim}) must be in [0, d_model={self.d_model}]")
        # experts are contiguous per rank, so one router group of experts = one pretend domain
        groups = self.ranks // self.ranks_per_node if self.node_limit else 1
        return MoEConfig(n_routed_experts=self.n_experts, top_k=self.top_k, expert_ffn_dim=self.ffn_dim,
                         n_shared_experts=1, latent_dim=self.latent_dim, latent_norm=bool(self.latent_dim),
                         balancing="none", route_scale=1.0, n_groups=groups, topk_groups=self.node_limit or 1)

    @property
    def dim_on_wire(self) -> int:
        return self.latent_dim or self.d_model

    def record(self, direction: str) -> int:
        return record_bytes(self.scheme, direction, self.dim_on_wire, self.top_k,
                            self.dispatch if direction == "dispatch" else self.combine)


def build_problem(spec: MeasureSpec):
    """(LatentMoE, x (ranks * tokens_per_rank, d)) - identical on every process (seeded)."""
    with seeded(spec.seed):
        moe = LatentMoE(spec.d_model, spec.moe_config()).eval()
    gen = torch.Generator().manual_seed(spec.seed + 1)
    x = torch.randn(spec.ranks * spec.tokens_per_rank, spec.d_model, generator=gen)  # (N, d)
    return moe, x


# ------------------------------------------------------------------------------------------ the layer
class _Comm:
    """all_to_all_single over one group, counting the bytes each chunk to another rank carries."""

    def __init__(self, spec: MeasureSpec, rank: int, device: torch.device, kinds: tuple[str, ...] = KINDS):
        self.spec, self.rank, self.device = spec, rank, device
        self.sent = dict.fromkeys(kinds, 0) | {"control": 0}

    def exchange(self, send: torch.Tensor, counts: list[int], members: list[int], kind: str, group=None,
                 recv_counts: list[int] | None = None):
        """Send counts[i] rows of `send` (sorted by member) to members[i]; -> (received rows, recv counts).
        `recv_counts` known (the backward retraces a forward exchange): no control message."""
        if recv_counts is None:
            ct = torch.tensor(counts, dtype=torch.int64, device=self.device)
            rc = torch.empty_like(ct)
            dist.all_to_all_single(rc, ct, group=group)  # control: how many records each peer will send
            self.sent["control"] += 8 * (len(members) - 1)
            recv_counts = rc.tolist()
        recv = torch.empty((sum(recv_counts), send.shape[1]), dtype=torch.uint8, device=self.device)
        dist.all_to_all_single(recv, send.contiguous(), output_split_sizes=recv_counts, input_split_sizes=counts,
                               group=group)
        g = self.spec.ranks_per_node
        for dst, c in zip(members, counts):
            if dst != self.rank:  # the chunk to itself never leaves the process
                side = "intra" if dst // g == self.rank // g else "inter"
                self.sent[f"{kind}_{side}"] += c * send.shape[1]
        return recv, recv_counts


def _compute(shard_lo: int, shard: RoutedExperts, h: torch.Tensor, ids: torch.Tensor,
             w: torch.Tensor) -> torch.Tensor:
    """Rows h (R, dim) with k global expert ids (-1 / other ranks' ids ignored) and weights -> (R, dim) sums."""
    mine = (ids >= shard_lo) & (ids < shard_lo + shard.n_experts)  # (R, k)
    row, slot = mine.nonzero(as_tuple=True)  # (P,) pairs (row, top-k slot)
    y = expert_forward(shard, h[row], ids[row, slot] - shard_lo) * w[row, slot, None]  # (P, dim)
    return torch.zeros_like(h).index_add_(0, row, y)


def local_shard(moe, spec: MeasureSpec, rank: int, device: torch.device, *, copy: bool):
    """(first expert of each rank (world + 1,), this rank's experts as a RoutedExperts over the full layer's weights,
    the expert -> rank placement (E,)). copy=False: the shard's weights are views (the forward only); True: copies
    (a training step's gradients must stay this rank's own)."""
    first = [int(v) for v in np.cumsum([0] + experts_per_gpu(spec.n_experts, spec.ranks))]
    placement = torch.from_numpy(expert_to_gpu(spec.n_experts, spec.ranks)).to(device)  # (E,)
    shard = RoutedExperts(first[rank + 1] - first[rank], spec.dim_on_wire, spec.ffn_dim).to(device)
    for name in ("w_gate", "w_up", "w_down"):
        part = getattr(moe.experts, name).data[first[rank]:first[rank + 1]]
        getattr(shard, name).data = part.clone() if copy else part
    return first, shard, placement


def routed_input(moe, x: torch.Tensor, spec: MeasureSpec):
    """(the real router's choice for x (n, d), what is dispatched: x, or its latent (n, l) normed as the layer does)."""
    route = moe.router(x)  # topk_idx (n, k), topk_weight (n, k)
    h = x
    if spec.latent_dim:
        h = moe.down_proj(x)  # (n, l)
        if moe.latent_norm is not None:
            h = moe.latent_norm(h)
    return route, h


def ep_forward(moe, x: torch.Tensor, spec: MeasureSpec, rank: int, groups: dict,
               device: torch.device) -> tuple[torch.Tensor, dict, torch.Tensor]:
    """Expert-parallel forward of this rank's tokens x (n, d): (out (n, d), bytes sent by kind, topk_idx (n, k))."""
    world, k, dim, g = spec.ranks, spec.top_k, spec.dim_on_wire, spec.ranks_per_node
    first, shard, placement = local_shard(moe, spec, rank, device, copy=False)
    comm = _Comm(spec, rank, device)
    d_rec, c_rec = spec.record("dispatch"), spec.record("combine")
    route, h = routed_input(moe, x, spec)
    ids, w = route.topk_idx, route.topk_weight.float()  # (n, k)
    dest = placement[ids]  # (n, k) rank of each chosen expert
    payload = encode(h, spec.dispatch)  # (n, row) uint8
    n = x.shape[0]

    if spec.scheme in ("direct", "low-latency"):
        toks, slots, recs, counts = [], [], [], []
        for dst in range(world):
            on_dst = dest == dst  # (n, k)
            if spec.scheme == "direct":  # one record per (token, distinct destination):
                t = on_dst.any(1).nonzero().squeeze(1)  # payload | int32 source index | k int64 ids | k fp32 w
                s = torch.full_like(t, -1)
                rec = torch.cat([payload[t], _bytes(t[:, None], torch.int32),
                                 _bytes(torch.where(on_dst[t], ids[t], -1), torch.int64), _bytes(w[t], torch.float32)], 1)
            else:  # one record per (token, slot): int4 header (source index, expert id, 2 reserved) | payload
                t, s = on_dst.nonzero(as_tuple=True)
                head = torch.stack([t, ids[t, s], torch.zeros_like(t), torch.zeros_like(t)], 1)
                rec = torch.cat([_bytes(head, torch.int32), payload[t]], 1)
            toks.append(t), slots.append(s), recs.append(rec), counts.append(int(t.numel()))
        t, s, rec = torch.cat(toks), torch.cat(slots), torch.cat(recs)
        recv, rcounts = comm.exchange(_pad_to(rec, d_rec), counts, list(range(world)), "dispatch")
        if spec.scheme == "direct":
            hr = decode(recv[:, :payload.shape[1]], dim, spec.dispatch)
            o = payload.shape[1] + 4
            rid = recv[:, o:o + 8 * k].contiguous().view(torch.int64)
            rw = recv[:, o + 8 * k:o + 12 * k].contiguous().view(torch.float32)
            part = _compute(first[rank], shard, hr, rid, rw)
            back_rec = torch.cat([encode(part, spec.combine), recv[:, payload.shape[1]:o], _bytes(rw, torch.float32)], 1)
        else:
            head = recv[:, :16].contiguous().view(torch.int32)  # (R, 4)
            hr = decode(recv[:, 16:], dim, spec.dispatch)
            ones = torch.ones(hr.shape[0], 1, device=device)
            part = _compute(first[rank], shard, hr, head[:, 1:2].long(), ones)  # unweighted expert output
            back_rec = encode(part, spec.combine)
        back, _ = comm.exchange(_pad_to(back_rec, c_rec), rcounts, list(range(world)), "combine")
        y = decode(back[:, :wire_format(spec.combine).row_bytes(dim)], dim, spec.combine)  # (sum counts, dim)
        if spec.scheme == "low-latency":
            y = y * w[t, s, None]  # the weighted sum happens at the token's rank
        routed = torch.zeros(n, dim, device=device).index_add_(0, t, y)
    else:  # normal: RDMA hop over the rail group, NVLink hop inside the domain
        dom, local, n_dom = rank // g, rank % g, world // g
        dom_hit = (dest // g)[:, :, None] == torch.arange(n_dom, device=device)  # (n, k, D)
        toks, counts = [], []
        for d in range(n_dom):
            t = dom_hit[:, :, d].any(1).nonzero().squeeze(1)
            toks.append(t), counts.append(int(t.numel()))
        t_a = torch.cat(toks)  # tokens in send order of the RDMA hop
        meta = torch.stack([torch.full_like(t_a, dom), t_a], 1)  # SourceMeta stand-in: (source domain, index)
        rec = torch.cat([payload[t_a], _bytes(meta, torch.int32), _bytes(ids[t_a], torch.int32),
                         _bytes(w[t_a], torch.float32)], 1)
        rail = [d * g + local for d in range(n_dom)]
        recv_a, rc_a = comm.exchange(_pad_to(rec, d_rec), counts, rail, "dispatch", groups["rail"][local])
        row_b = payload.shape[1]
        ids_a = recv_a[:, row_b + 8:row_b + 8 + 4 * k].contiguous().view(torch.int32).long()  # (Ra, k)
        gpu_a = placement[ids_a]  # (Ra, k)
        members = [dom * g + j for j in range(g)]
        toks, counts = [], []
        for j in members:  # forward each received record to every GPU of this domain it needs
            t = (gpu_a == j).any(1).nonzero().squeeze(1)
            toks.append(t), counts.append(int(t.numel()))
        t_b = torch.cat(toks)
        recv_b, rc_b = comm.exchange(recv_a[t_b], counts, members, "dispatch", groups["node"][dom])
        hr = decode(recv_b[:, :row_b], dim, spec.dispatch)
        rid = recv_b[:, row_b + 8:row_b + 8 + 4 * k].contiguous().view(torch.int32).long()
        rw = recv_b[:, row_b + 8 + 4 * k:row_b + 8 + 8 * k].contiguous().view(torch.float32)
        part = _compute(first[rank], shard, hr, rid, rw)
        c_row = wire_format(spec.combine).row_bytes(dim)

        def combine_rec(vals: torch.Tensor, src_rec: torch.Tensor) -> torch.Tensor:
            wts = src_rec[:, row_b + 8 + 4 * k:row_b + 8 + 8 * k]  # the k fp32 weights travel back
            return _pad_to(torch.cat([encode(vals, spec.combine), src_rec[:, row_b:row_b + 8], wts], 1), c_rec)

        back_b, _ = comm.exchange(combine_rec(part, recv_b), rc_b, members, "combine", groups["node"][dom])
        node_sum = torch.zeros(recv_a.shape[0], dim, device=device).index_add_(
            0, t_b, decode(back_b[:, :c_row], dim, spec.combine))  # reduce inside the domain at the entry rank
        back_a, _ = comm.exchange(combine_rec(node_sum, recv_a), rc_a, rail, "combine", groups["rail"][local])
        routed = torch.zeros(n, dim, device=device).index_add_(0, t_a, decode(back_a[:, :c_row], dim, spec.combine))
    out = moe.up_proj(routed) if spec.latent_dim else routed  # (n, d)
    if moe.cfg.n_shared_experts:
        out = out + moe.shared(x)
    return out, comm.sent, route.topk_idx
