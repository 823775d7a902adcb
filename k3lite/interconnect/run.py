"""Running the measured layer: one rank (started locally or by torchrun), the gathered result, the local launcher.

`worker()` joins a torch.distributed group (tcp:// from the local launcher, env:// under torchrun), builds the two
levels of process groups, runs `measured.ep_forward` and gathers every rank's output, byte counts and routing to
rank 0, which compares them with the single-process layer and with `analytic.link_copies` for the same routing
(`summarize`). `measure()` starts the ranks as local gloo processes on 127.0.0.1 and always reaps them.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np
import torch
import torch.distributed as dist

from k3lite.interconnect.analytic import CopyCounts, WireBytes, expected_copies, layer_bytes, link_copies
from k3lite.interconnect.deployment import expert_to_gpu
from k3lite.interconnect.measured import KINDS, TOLERANCE, MeasureSpec, build_problem, ep_forward
from k3lite.interconnect.measured_backward import ep_train_step, summarize_backward, upstream_gradient


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


def expected_for_spec(spec: MeasureSpec) -> WireBytes:
    """The analytic expectation per token under uniform routing for the measured layer's settings: known before
    any worker starts (the page shows it first, then the measured bytes)."""
    c = expected_copies(spec.n_experts, spec.top_k, spec.ranks, spec.ranks_per_node, spec.node_limit, spec.scheme)
    return layer_bytes(c, spec.scheme, spec.dim_on_wire, spec.top_k, spec.dispatch, spec.combine)


def summarize(spec: MeasureSpec, parts: list[dict], port: int, wall_s: float, backend: str = "gloo") -> MeasureResult:
    """Compare the ranks' outputs and byte counts with the single-process layer and the analytic counts."""
    moe, x = build_problem(spec)
    with torch.inference_mode():
        ref = moe(x[None]).out[0]  # (N, d) the plain LatentMoE.forward
    dist_out = torch.cat([p["out"].cpu() for p in parts])
    topk = torch.cat([p["topk_idx"].cpu() for p in parts]).numpy()
    return MeasureResult(spec, port, [p["sent"] for p in parts], predicted_for_routing(spec, topk),
                         expected_for_spec(spec), topk,
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


def _one(spec: MeasureSpec, rank: int, groups: dict, device: torch.device, backward: bool) -> dict:
    """This rank's part of one spec's run: its output, bytes sent and routing (and gradients with `backward`)."""
    moe, x = build_problem(spec)
    moe = moe.to(device)
    n = spec.tokens_per_rank
    mine = slice(rank * n, (rank + 1) * n)
    if backward:
        part = ep_train_step(moe, x[mine].to(device), upstream_gradient(spec)[mine].to(device), spec, rank, groups,
                             device)
        return {k: ({name: t.cpu() for name, t in v.items()} if k in ("replicated", "experts") else
                    v.cpu() if isinstance(v, torch.Tensor) else v) for k, v in part.items()}
    with torch.no_grad():  # not inference_mode: collectives write into their tensors in place
        out, sent, topk = ep_forward(moe, x[mine].to(device), spec, rank, groups, device)
    return {"out": out.cpu(), "sent": sent, "topk_idx": topk.cpu()}


def worker(spec: MeasureSpec | list[MeasureSpec], backend: str = "gloo", init_method: str = "env://",
           rank: int | None = None, out_dir: str | None = None, backward: bool = False):
    """One rank: join the group, run the layer, gather to rank 0; rank 0 returns the MeasureResult (with
    `backward`: one training step through the all-to-alls, measured_backward.ep_train_step, a BackwardResult).
    A list of specs (the same ranks and domains) runs one after another in one process group: one start-up."""
    specs = spec if isinstance(spec, list) else [spec]
    if len({(s.ranks, s.ranks_per_node) for s in specs}) != 1:
        raise ValueError("specs run in one process group must share ranks and ranks_per_node")
    head = specs[0]
    rank = int(os.environ["RANK"]) if rank is None else rank
    if backend == "nccl":
        local = int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
    t0 = time.perf_counter()
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=head.ranks,
                            timeout=timedelta(seconds=max(s.timeout_s for s in specs)))
    gathered = []
    try:
        print(f"rank {rank}: joined {backend} group", flush=True)
        groups = make_groups(head, backend)
        for sp in specs:
            part = _one(sp, rank, groups, device, backward)
            parts = [None] * sp.ranks if rank == 0 else None
            dist.gather_object(part, parts, dst=0)
            gathered.append(parts)
            print(f"rank {rank}: done, sent {part['sent']}", flush=True)
        if out_dir is not None and rank == 0:
            torch.save(gathered if isinstance(spec, list) else gathered[0], Path(out_dir) / "parts.pt")
    finally:
        dist.destroy_process_group()
    if rank == 0 and out_dir is None:
        wall = time.perf_counter() - t0
        res = [summarize_backward(sp, parts, wall, backend) if backward else summarize(sp, parts, 0, wall, backend)
               for sp, parts in zip(specs, gathered)]
        return res if isinstance(spec, list) else res[0]
    return None


# ------------------------------------------------------------------------------------------ local launcher
MAX_LOCAL_RANKS = 8


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


def launch(ranks: int, args: list[str], timeout_s: float, port: int = 0,
           progress: Callable[[float, str], None] | None = None) -> tuple[list, int]:
    """Start `python -m k3lite.interconnect <args> --rank r --init tcp://127.0.0.1:port --out tmp` for r < ranks as
    local processes, stream their progress, return (rank 0's gathered parts.pt, port); always reaps them."""
    progress = progress or (lambda frac, msg: None)
    if ranks > MAX_LOCAL_RANKS:
        raise ValueError(f"ranks must be <= {MAX_LOCAL_RANKS} for local processes (each is a CPU process), got "
                         f"{ranks}; start more with torchrun (`python -m k3lite.interconnect worker`)")
    if port:
        check_port(port)
    else:
        port = free_port()
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo",
               PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(prefix="k3lite-ep-") as tmp:
        logs = []
        try:
            progress(0.05, f"starting {ranks} gloo workers on 127.0.0.1:{port}")
            for rank in range(ranks):
                log = open(Path(tmp) / f"rank{rank}.log", "w")
                logs.append(log)
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "k3lite.interconnect", *args, "--rank", str(rank), "--init",
                     f"tcp://127.0.0.1:{port}", "--out", tmp],
                    cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
            deadline = time.monotonic() + timeout_s
            reported = (-1, -1)
            while True:
                codes = [p.poll() for p in procs]
                done = sum(c == 0 for c in codes)
                joined = sum("joined" in (Path(tmp) / f"rank{r}.log").read_text() for r in range(ranks))
                if (joined, done) != reported:  # stream each stage: workers joined the group, then finished
                    progress(0.05 + 0.4 * joined / ranks + 0.4 * done / ranks,
                             f"{joined}/{ranks} ranks joined the gloo group, {done}/{ranks} finished")
                    reported = (joined, done)
                failed = [r for r, c in enumerate(codes) if c not in (None, 0)]
                if failed:
                    r = failed[0]
                    tail = (Path(tmp) / f"rank{r}.log").read_text()[-1500:]
                    raise RuntimeError(f"rank {r} exited with code {codes[r]}:\n{tail}")
                if done == ranks:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"measured run exceeded timeout_s={timeout_s:g} s; workers killed")
                time.sleep(0.05)
            parts = torch.load(Path(tmp) / "parts.pt", weights_only=True)
        finally:
            for p in procs:  # reap every worker we started, whatever happened
                if p.poll() is None:
                    p.kill()
                p.wait(timeout=10)
            for log in logs:
                log.close()
    return parts, port


def measure(spec: MeasureSpec, port: int = 0, progress: Callable[[float, str], None] | None = None,
            backward: bool = False):
    """Run the expert-parallel layer on spec.ranks gloo processes; always reaps them (also on error/timeout).
    `backward`: one training step, forward and backward through the all-to-alls (a BackwardResult)."""
    progress = progress or (lambda frac, msg: None)
    t0 = time.perf_counter()
    args = ["worker", "--spec", json.dumps(asdict(spec))] + (["--backward"] if backward else [])
    parts, port = launch(spec.ranks, args, spec.timeout_s, port, progress)
    if backward:
        progress(0.9, "single-process backward")
        res = summarize_backward(spec, parts, time.perf_counter() - t0)
        progress(1.0, "done")
        return res
    progress(0.9, "single-process reference")
    res = summarize(spec, parts, port, time.perf_counter() - t0)
    progress(1.0, "done")
    return res


def measure_backward_suite(specs: list[MeasureSpec], port: int = 0,
                           progress: Callable[[float, str], None] | None = None) -> list:
    """One training step of each spec (the same ranks and domains) in one launch of local gloo processes:
    a BackwardResult per spec, in order."""
    if not specs:
        raise ValueError("give at least one spec")
    t0 = time.perf_counter()
    args = ["worker", "--spec", json.dumps([asdict(s) for s in specs]), "--backward"]
    gathered, _ = launch(specs[0].ranks, args, sum(s.timeout_s for s in specs), port, progress)
    wall = time.perf_counter() - t0
    return [summarize_backward(s, parts, wall) for s, parts in zip(specs, gathered)]
