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
rank by rank with `analytic.link_copies` for the same routing decisions (exact integers); the output is compared
with the single-process `LatentMoE.forward`. `measure()` starts the workers as local processes on gloo
(127.0.0.1); `python -m k3lite.interconnect worker` is the same worker under torchrun (`--backend nccl` on GPUs).
"""
from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np
import torch
import torch.distributed as dist

from k3lite.config import MoEConfig
from k3lite.interconnect.analytic import (
    SCHEMES, CopyCounts, WireBytes, check_scheme, expected_copies, expert_to_gpu, experts_per_gpu, layer_bytes,
    link_copies, record_bytes, wire_format,
)
from k3lite.moe import LatentMoE, RoutedExperts, expert_forward

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
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if not 1 <= self.ranks <= 8:
            raise ValueError(f"ranks must be in [1, 8] (each is a CPU process), got {self.ranks}")
        if self.ranks_per_node < 1 or self.ranks % self.ranks_per_node:
            raise ValueError(f"ranks ({self.ranks}) must be a multiple of ranks_per_node ({self.ranks_per_node})")
        if not 1 <= self.tokens_per_rank <= 1024:
            raise ValueError(f"tokens_per_rank must be in [1, 1024], got {self.tokens_per_rank}")
        if not 8 <= self.d_model <= 512:
            raise ValueError(f"d_model must be in [8, 512] for the measured run, got {self.d_model}")
        if self.n_experts < self.ranks or self.n_experts > 256:
            raise ValueError(f"n_experts must be in [ranks={self.ranks}, 256], got {self.n_experts}")
        if not 1 <= self.ffn_dim <= 1024:
            raise ValueError(f"ffn_dim must be in [1, 1024], got {self.ffn_dim}")
        if not 0 < self.timeout_s <= 600:
            raise ValueError(f"timeout_s must be in (0, 600], got {self.timeout_s}")
        wire_format(self.dispatch), wire_format(self.combine), check_scheme(self.scheme)
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
    torch.manual_seed(spec.seed)
    moe = LatentMoE(spec.d_model, spec.moe_config()).eval()
    gen = torch.Generator().manual_seed(spec.seed + 1)
    x = torch.randn(spec.ranks * spec.tokens_per_rank, spec.d_model, generator=gen)  # (N, d)
    return moe, x


# ------------------------------------------------------------------------------------------ the layer
class _Comm:
    """all_to_all_single over one group, counting the bytes each chunk to another rank carries."""

    def __init__(self, spec: MeasureSpec, rank: int, device: torch.device):
        self.spec, self.rank, self.device = spec, rank, device
        self.sent = dict.fromkeys(KINDS, 0) | {"control": 0}

    def exchange(self, send: torch.Tensor, counts: list[int], members: list[int], kind: str, group=None):
        """Send counts[i] rows of `send` (sorted by member) to members[i]; -> (received rows, recv counts)."""
        ct = torch.tensor(counts, dtype=torch.int64, device=self.device)
        rc = torch.empty_like(ct)
        dist.all_to_all_single(rc, ct, group=group)  # control: how many records each peer will send
        self.spec_control(len(members))
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

    def spec_control(self, n_members: int) -> None:
        self.sent["control"] += 8 * (n_members - 1)


def _compute(moe, shard_lo: int, shard: RoutedExperts, h: torch.Tensor, ids: torch.Tensor,
             w: torch.Tensor) -> torch.Tensor:
    """Rows h (R, dim) with k global expert ids (-1 / other ranks' ids ignored) and weights -> (R, dim) sums."""
    mine = (ids >= shard_lo) & (ids < shard_lo + shard.n_experts)  # (R, k)
    row, slot = mine.nonzero(as_tuple=True)  # (P,) pairs (row, top-k slot)
    y = expert_forward(shard, h[row], ids[row, slot] - shard_lo) * w[row, slot, None]  # (P, dim)
    return torch.zeros_like(h).index_add_(0, row, y)


def ep_forward(moe, x: torch.Tensor, spec: MeasureSpec, rank: int, groups: dict,
               device: torch.device) -> tuple[torch.Tensor, dict, torch.Tensor]:
    """Expert-parallel forward of this rank's tokens x (n, d): (out (n, d), bytes sent by kind, topk_idx (n, k))."""
    world, k, dim, g = spec.ranks, spec.top_k, spec.dim_on_wire, spec.ranks_per_node
    first = [int(v) for v in np.cumsum([0] + experts_per_gpu(spec.n_experts, world))]
    placement = torch.from_numpy(expert_to_gpu(spec.n_experts, world)).to(device)  # (E,)
    shard = RoutedExperts(first[rank + 1] - first[rank], dim, spec.ffn_dim).to(device)
    for name in ("w_gate", "w_up", "w_down"):
        getattr(shard, name).data = getattr(moe.experts, name).data[first[rank]:first[rank + 1]]  # a view
    comm = _Comm(spec, rank, device)
    d_rec, c_rec = spec.record("dispatch"), spec.record("combine")

    route = moe.router(x)  # the real router: topk_idx (n, k), topk_weight (n, k)
    h = x
    if spec.latent_dim:
        h = moe.down_proj(x)  # (n, l)
        if moe.latent_norm is not None:
            h = moe.latent_norm(h)
    ids, w = route.topk_idx, route.topk_weight.float()  # (n, k)
    dest = placement[ids]  # (n, k) rank of each chosen expert
    payload = encode(h, spec.dispatch)  # (n, row) uint8
    n = x.shape[0]
    tok_idx = torch.arange(n, device=device)

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
            part = _compute(moe, first[rank], shard, hr, rid, rw)
            back_rec = torch.cat([encode(part, spec.combine), recv[:, payload.shape[1]:o], _bytes(rw, torch.float32)], 1)
        else:
            head = recv[:, :16].contiguous().view(torch.int32)  # (R, 4)
            hr = decode(recv[:, 16:], dim, spec.dispatch)
            ones = torch.ones(hr.shape[0], 1, device=device)
            part = _compute(moe, first[rank], shard, hr, head[:, 1:2].long(), ones)  # unweighted expert output
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
        part = _compute(moe, first[rank], shard, hr, rid, rw)
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


# ------------------------------------------------------------------------------------------ results
class MeasureResult(NamedTuple):
    spec: MeasureSpec
    port: int
    measured: list[dict]  # per rank: bytes sent by kind (dispatch/combine x intra/inter, control)
    predicted: list[dict]  # per rank: analytic bytes for the same routing decisions
    uniform: WireBytes  # analytic expectation per token under uniform routing
    topk_idx: np.ndarray  # (N, k) routing decisions gathered from the ranks (tokens in rank order)
    max_rel_err: float  # max |distributed - single process| / max |single process|
    tolerance: float
    wall_s: float
    backend: str = "gloo"

    @property
    def n_tokens(self) -> int:
        return self.spec.ranks * self.spec.tokens_per_rank

    @property
    def uniform_copies(self) -> CopyCounts:
        return self.uniform.copies

    def total(self, which: str) -> dict:
        rows = self.measured if which == "measured" else self.predicted
        return {key: sum(r[key] for r in rows) for key in KINDS}

    @property
    def agree(self) -> bool:
        return all({k: m[k] for k in KINDS} == p for m, p in zip(self.measured, self.predicted))

    @property
    def outputs_match(self) -> bool:
        return self.max_rel_err <= self.tolerance

    def uniform_gap(self) -> float:
        """(measured total per token) / (uniform expectation) - 1: how far this routing is from the uniform model."""
        return sum(self.total("measured").values()) / self.n_tokens / self.uniform.total - 1


def predicted_for_routing(spec: MeasureSpec, topk_idx: np.ndarray) -> list[dict]:
    """Analytic bytes SENT by each rank for the given routing (N, k), tokens in rank order."""
    src = np.repeat(np.arange(spec.ranks), spec.tokens_per_rank)
    mats = link_copies(np.asarray(topk_idx), src, expert_to_gpu(spec.n_experts, spec.ranks), spec.ranks_per_node,
                       spec.scheme)
    rec = {kind: spec.record(kind.split("_")[0]) for kind in KINDS}
    return [{kind: int(mats[kind][r].sum()) * rec[kind] for kind in KINDS} for r in range(spec.ranks)]


def summarize(spec: MeasureSpec, parts: list[dict], port: int, wall_s: float, backend: str = "gloo") -> MeasureResult:
    """Compare the ranks' outputs and byte counts with the single-process layer and the analytic counts."""
    moe, x = build_problem(spec)
    with torch.inference_mode():
        ref = moe(x[None]).out[0]  # (N, d) the plain LatentMoE.forward
    dist_out = torch.cat([p["out"].cpu() for p in parts])
    topk = torch.cat([p["topk_idx"].cpu() for p in parts]).numpy()
    c = expected_copies(spec.n_experts, spec.top_k, spec.ranks, spec.ranks_per_node, spec.node_limit, spec.scheme)
    uniform = layer_bytes(c, spec.scheme, spec.dim_on_wire, spec.top_k, spec.dispatch, spec.combine)
    return MeasureResult(spec, port, [p["sent"] for p in parts], predicted_for_routing(spec, topk), uniform, topk,
                         float((dist_out - ref).abs().max() / ref.abs().max().clamp_min(1e-30)),
                         max(TOLERANCE[spec.dispatch], TOLERANCE[spec.combine]), wall_s, backend)


def format_result(res: MeasureResult) -> str:
    s = res.spec
    n = res.n_tokens
    m, p = res.total("measured"), res.total("predicted")
    lines = [
        f"expert-parallel MoE layer, scheme {s.scheme}, on {s.ranks} {res.backend} ranks = {s.ranks // s.ranks_per_node} "
        f"pretend domains x {s.ranks_per_node}; {s.n_experts} experts top-{s.top_k}, d_model {s.d_model}, dim on wire "
        f"{s.dim_on_wire}, {n} tokens, node limit {s.node_limit or 'none'}; records: dispatch {s.record('dispatch')} B "
        f"({s.dispatch} payload + metadata), combine {s.record('combine')} B ({s.combine})",
        f"{'bytes/token':<16}{'measured':>12}{'same routing':>14}{'uniform E[.]':>14}",
    ]
    for key in KINDS:
        lines.append(f"{key:<16}{m[key] / n:>12.2f}{p[key] / n:>14.2f}{getattr(res.uniform, key):>14.2f}")
    lines.append(f"{'total':<16}{sum(m.values()) / n:>12.2f}{sum(p.values()) / n:>14.2f}{res.uniform.total:>14.2f}")
    lines.append(f"per rank measured == analytic for the same routing: {res.agree} "
                 f"(exact integer byte counts; control traffic {res.measured[0]['control']} B/rank not per token); "
                 f"this routing is {100 * res.uniform_gap():+.1f}% off the uniform expectation")
    lines.append(f"distributed output vs single-process LatentMoE.forward: max|diff|/max|ref| = {res.max_rel_err:.3g} "
                 f"(tolerance {res.tolerance:g}) -> {'MATCH' if res.outputs_match else 'MISMATCH'}")
    lines.append(f"wall time {res.wall_s:.1f} s")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ one worker
def make_groups(spec: MeasureSpec, backend: str) -> dict:
    """Every rank creates every subgroup in the same order (torch.distributed requires it)."""
    g, n_dom = spec.ranks_per_node, spec.ranks // spec.ranks_per_node
    node = [dist.new_group([d * g + j for j in range(g)], backend=backend) for d in range(n_dom)]
    rail = [dist.new_group([d * g + j for d in range(n_dom)], backend=backend) for j in range(g)]
    return {"node": node, "rail": rail}


def worker(spec: MeasureSpec, backend: str = "gloo", init_method: str = "env://", rank: int | None = None,
           out_dir: str | None = None) -> MeasureResult | None:
    """One rank: join the group, run the layer, gather to rank 0; rank 0 returns the MeasureResult."""
    rank = int(os.environ["RANK"]) if rank is None else rank
    if backend == "nccl":
        local = int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
    t0 = time.perf_counter()
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=spec.ranks,
                            timeout=timedelta(seconds=spec.timeout_s))
    try:
        print(f"rank {rank}: joined {backend} group", flush=True)
        groups = make_groups(spec, backend)
        moe, x = build_problem(spec)
        moe = moe.to(device)
        n = spec.tokens_per_rank
        with torch.no_grad():  # not inference_mode: collectives write into their tensors in place
            out, sent, topk = ep_forward(moe, x[rank * n:(rank + 1) * n].to(device), spec, rank, groups, device)
        part = {"out": out.cpu(), "sent": sent, "topk_idx": topk.cpu()}
        parts = [None] * spec.ranks if rank == 0 else None
        dist.gather_object(part, parts, dst=0)
        if out_dir is not None and rank == 0:
            torch.save(parts, Path(out_dir) / "parts.pt")
        print(f"rank {rank}: done, sent {sent}", flush=True)
    finally:
        dist.destroy_process_group()
    if rank == 0 and out_dir is None:
        return summarize(spec, parts, 0, time.perf_counter() - t0, backend)
    return None


# ------------------------------------------------------------------------------------------ local launcher
class PortInUseError(ValueError):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_port(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            raise PortInUseError(f"port {port} on 127.0.0.1 is already in use ({e.strerror}); "
                                 f"pass another --port, or --port 0 to pick a free one") from None


def measure(spec: MeasureSpec, port: int = 0, progress: Callable[[float, str], None] | None = None) -> MeasureResult:
    """Run the expert-parallel layer on spec.ranks gloo processes; always reaps them (also on error/timeout)."""
    progress = progress or (lambda frac, msg: None)
    if port:
        check_port(port)
    else:
        port = free_port()
    t0 = time.perf_counter()
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    spec_json = json.dumps(asdict(spec))
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="k3lite-ep-") as tmp:
        logs = []
        try:
            progress(0.05, f"starting {spec.ranks} gloo workers on 127.0.0.1:{port}")
            for rank in range(spec.ranks):
                log = open(Path(tmp) / f"rank{rank}.log", "w")
                logs.append(log)
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "k3lite.interconnect", "worker", "--rank", str(rank), "--init",
                     f"tcp://127.0.0.1:{port}", "--spec", spec_json, "--out", tmp],
                    cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
            deadline = time.monotonic() + spec.timeout_s
            reported = -1
            while True:
                codes = [p.poll() for p in procs]
                done = sum(c == 0 for c in codes)
                if done != reported:
                    progress(0.05 + 0.8 * done / spec.ranks, f"{done}/{spec.ranks} ranks finished")
                    reported = done
                failed = [r for r, c in enumerate(codes) if c not in (None, 0)]
                if failed:
                    r = failed[0]
                    tail = (Path(tmp) / f"rank{r}.log").read_text()[-1500:]
                    raise RuntimeError(f"rank {r} exited with code {codes[r]}:\n{tail}")
                if done == spec.ranks:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"measured run exceeded timeout_s={spec.timeout_s:g} s; workers killed")
                time.sleep(0.05)
            parts = torch.load(Path(tmp) / "parts.pt", weights_only=True)
        finally:
            for p in procs:  # reap every worker we started, whatever happened
                if p.poll() is None:
                    p.kill()
                p.wait(timeout=10)
            for log in logs:
                log.close()
    progress(0.9, "single-process reference")
    res = summarize(spec, parts, port, time.perf_counter() - t0)
    progress(1.0, "done")
    return res
