"""Pipeline stages measured: a small K3Model split into stages on gloo processes, the real residual-stream tensors
passed across each boundary, forward and backward, every byte counted.

Stage i (one process) runs layers [a_i, b_i) of one seeded model (every process builds the same one). Stage 0 embeds
the tokens; each later stage receives the stream's state from the one before: a header (how many tensors, whether the
last is an unfinished block's partial sum, their shape: the shapes change from boundary to boundary, so they travel,
as control bytes) and the tensors themselves: the running sum (standard), every source (full AttnRes), or the
embedding, completed block sums and the partial sum (block AttnRes). It rebuilds the ResidualStream from them
(`restore_stream`), runs its layers and passes the state on; the last stage mixes, applies the head and the loss.
The backward goes the other way: each stage receives the gradients of the tensors it sent, runs
torch.autograd.backward through its layers (plus its MoE layers' balancing loss) and sends the gradients of the
tensors it received. Rank 0 compares the bytes per boundary with pipeline.boundary_bytes (exact integers), the loss
and every parameter's gradient with one process's forward and backward (`summarize_pipeline`).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.distributed as dist

from k3lite.base.rng import seeded
from k3lite.base.evidence import Evidence, derived, measured_here
from k3lite.interconnect.pipeline import Boundary, boundary_bytes, boundary_vectors, stage_layers
from k3lite.model.attnres import ResidualStream
from k3lite.model.presets import get_preset
from k3lite.model.stack import K3Model, loss_fn

HEADER = 5  # int64s: tensors, has partial, B, T, d


@dataclass(frozen=True)
class PipeSpec:
    """A small model in K3's forms (the `lite` preset, untied head) split into `stages` processes."""

    stages: int = 3
    mode: str = "block"
    n_layers: int = 8
    block_size: int = 4  # sublayers (lite's 2 layers); K3's is 24
    batch: int = 2
    seq_len: int = 8
    seed: int = 0
    timeout_s: float = 120.0

    def __post_init__(self) -> None:
        if not 2 <= self.stages <= min(8, self.n_layers):
            raise ValueError(f"stages must be in [2, min(8, n_layers={self.n_layers})], got {self.stages}")
        if not 1 <= self.batch * self.seq_len <= 4096:
            raise ValueError(f"batch x seq_len must be in [1, 4096], got {self.batch} x {self.seq_len}")
        if not 0 < self.timeout_s <= 600:
            raise ValueError(f"timeout_s must be in (0, 600], got {self.timeout_s}")
        self.config()

    def config(self):
        base = get_preset("lite")
        return dataclasses.replace(base, name=f"lite-{self.mode}", n_layers=self.n_layers, attn_res=self.mode,
                                   attn_res_block_size=self.block_size if self.mode == "block" else base.attn_res_block_size,
                                   tie_embeddings=False)

    @property
    def tokens(self) -> int:
        return self.batch * self.seq_len


def build_model(spec: PipeSpec) -> tuple[K3Model, torch.Tensor, torch.Tensor]:
    """(model in eval mode, tokens (B, T), targets (B, T)): identical in every process (seeded)."""
    with seeded(spec.seed):
        model = K3Model(spec.config()).eval()  # eval: no balancing-bias update; autograd still on
    gen = torch.Generator().manual_seed(spec.seed + 1)
    ids = torch.randint(0, model.cfg.vocab_size, (spec.batch, spec.seq_len + 1), generator=gen)
    return model, ids[:, :-1], ids[:, 1:]


def stream_state(stream: ResidualStream) -> tuple[list[torch.Tensor], bool]:
    """The tensors a stage boundary carries for this stream, and whether the last one is a partial sum."""
    if stream.mode == "standard":
        return [stream.total], False
    return stream.sources(), stream.partial is not None


def restore_stream(tensors: list[torch.Tensor], has_partial: bool, mode: str, block_size: int,
                   sublayers_before: int) -> ResidualStream:
    """The ResidualStream a stage continues from, rebuilt from the received tensors."""
    stream = ResidualStream(tensors[0], mode, block_size)
    stream.n_outputs = sublayers_before
    if mode == "standard":
        stream.total = tensors[0]
        return stream
    stream.blocks = list(tensors[:-1] if has_partial else tensors)
    stream.partial = tensors[-1] if has_partial else None
    stream.in_partial = sublayers_before % stream.block_size if has_partial else 0
    return stream


class _Link:
    """Point-to-point sends between neighbouring stages, counting payload and control bytes."""

    def __init__(self):
        self.sent = {"forward": 0, "backward": 0, "control": 0}

    def send(self, tensors: list[torch.Tensor], dst: int, kind: str, has_partial: bool = False) -> None:
        if kind == "forward":  # the shapes change from boundary to boundary: they travel first
            b, t, d = tensors[0].shape
            head = torch.tensor([len(tensors), int(has_partial), b, t, d], dtype=torch.int64)
            dist.send(head, dst)
            self.sent["control"] += head.numel() * 8
        for x in tensors:
            x = x.detach().contiguous()
            dist.send(x, dst)
            self.sent[kind] += x.numel() * x.element_size()

    @staticmethod
    def recv_forward(src: int) -> tuple[list[torch.Tensor], bool]:
        head = torch.empty(HEADER, dtype=torch.int64)
        dist.recv(head, src)
        n, partial, b, t, d = head.tolist()
        out = []
        for _ in range(n):
            x = torch.empty(b, t, d)
            dist.recv(x, src)
            out.append(x.requires_grad_(True))
        return out, bool(partial)

    @staticmethod
    def recv_backward(like: list[torch.Tensor], src: int) -> list[torch.Tensor]:
        grads = []
        for x in like:
            g = torch.empty_like(x.detach())
            dist.recv(g, src)
            grads.append(g)
        return grads


def stage_step(spec: PipeSpec, rank: int) -> dict:
    """This stage's forward and backward: bytes sent, the loss (last stage), its parameters' gradients."""
    model, tokens, targets = build_model(spec)
    cfg = model.cfg
    layers = stage_layers(spec.n_layers, spec.stages)
    a = sum(layers[:rank])
    b = a + layers[rank]
    last = rank == spec.stages - 1
    link = _Link()
    received: list[torch.Tensor] = []
    if rank == 0:
        stream = ResidualStream(model.embed(tokens), cfg.attn_res, cfg.attn_res_block_size)
    else:
        received, partial = link.recv_forward(rank - 1)
        stream = restore_stream(received, partial, cfg.attn_res, cfg.attn_res_block_size, 2 * a)
    aux = []
    for layer in model.layers[a:b]:
        _, aux_l, _ = layer(stream)
        if aux_l.requires_grad:
            aux.append(aux_l)
    loss = None
    if last:
        logits = model.head(stream.mix(getattr(model, "res_final", None)).h)  # (B, T, vocab)
        loss = loss_fn(logits, targets) + sum(aux)
        loss.backward()
    else:
        state, partial = stream_state(stream)
        link.send(state, rank + 1, "forward", partial)
        grads = link.recv_backward(state, rank + 1)
        torch.autograd.backward(state + aux, grads + [torch.ones(())] * len(aux))
    if rank > 0:  # the gradients of what this stage received go back
        link.send([x.grad if x.grad is not None else torch.zeros_like(x) for x in received], rank - 1, "backward")
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    return {"sent": link.sent, "loss": None if loss is None else float(loss), "grads": grads,
            "received_tensors": len(received)}


def pipe_worker(specs: list[PipeSpec], rank: int, init_method: str, out_dir: str | None) -> list[list[dict]] | None:
    """One stage process: join the gloo group, run every spec's step, gather the parts to rank 0."""
    from datetime import timedelta  # noqa: PLC0415 - only the worker needs it
    from pathlib import Path  # noqa: PLC0415 - the same

    head = specs[0]
    if len({s.stages for s in specs}) != 1:
        raise ValueError("specs run in one process group must share the number of stages")
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=head.stages,
                            timeout=timedelta(seconds=max(s.timeout_s for s in specs)))
    gathered = []
    try:
        print(f"rank {rank}: joined gloo group", flush=True)
        for spec in specs:
            part = stage_step(spec, rank)
            parts = [None] * spec.stages if rank == 0 else None
            dist.gather_object(part, parts, dst=0)
            gathered.append(parts)
        if rank == 0 and out_dir is not None:
            torch.save(gathered, Path(out_dir) / "parts.pt")
    finally:
        dist.destroy_process_group()
    return gathered if rank == 0 else None


# ------------------------------------------------------------------------------------------ the comparison
class PipeResult(NamedTuple):
    spec: PipeSpec
    measured: list[Boundary]  # per boundary: vectors (received tensors) and bytes per token each way
    predicted: list[Boundary]  # pipeline.boundary_bytes for the same split, fp32 (4 bytes)
    control: int  # header bytes in all (not per token)
    loss_err: float  # |pipeline loss - one process's loss|
    grad_rel_err: float  # worst max|diff| / max|ref| over every parameter's gradient
    missing: tuple[str, ...]  # parameters with a gradient in one process but in no stage
    wall_s: float

    @property
    def agree(self) -> bool:
        return self.measured == self.predicted

    @property
    def gradients_match(self) -> bool:
        return not self.missing and self.loss_err <= 1e-5 and self.grad_rel_err <= 1e-4

    @property
    def evidence(self) -> dict[str, Evidence]:
        """What the measured and the predicted numbers are: the command that measured them, the counting function."""
        s = self.spec
        cmd = (f"python -m k3lite.interconnect pipeline --stages {s.stages} --layers {s.n_layers} --block "
               f"{s.block_size} --modes {s.mode}")
        return {"measured": measured_here(cmd), "predicted": derived(boundary_bytes, boundary_vectors)}


def summarize_pipeline(spec: PipeSpec, parts: list[dict], wall_s: float) -> PipeResult:
    model, tokens, targets = build_model(spec)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small runs 10-20x slower on threads that contend for shared cores
    try:
        out = model(tokens)
        loss = loss_fn(out.logits, targets) + out.aux_loss
        loss.backward()
    finally:
        torch.set_num_threads(threads)
    loss = float(loss.detach())
    n = spec.tokens
    layers = stage_layers(spec.n_layers, spec.stages)
    measured = []
    for i in range(spec.stages - 1):
        fwd, bwd = parts[i]["sent"]["forward"], parts[i + 1]["sent"]["backward"]
        if fwd % n or bwd % n:
            raise AssertionError(f"boundary {i}: {fwd} / {bwd} bytes are not a whole number per token ({n} tokens)")
        measured.append(Boundary(sum(layers[:i + 1]), parts[i + 1]["received_tensors"], fwd // n, bwd // n))
    pred = boundary_bytes(spec.n_layers, model.cfg.d_model, spec.mode, spec.stages, spec.block_size, 4).boundaries
    stage_grads: dict[str, torch.Tensor] = {}
    for p in parts:
        for name, g in p["grads"].items():
            stage_grads[name] = stage_grads[name] + g if name in stage_grads else g
    worst = 0.0
    missing = []
    for name, p in model.named_parameters():
        if p.grad is None:
            continue
        if name not in stage_grads:
            missing.append(name)
            continue
        worst = max(worst, float((stage_grads[name] - p.grad).abs().max() / p.grad.abs().max().clamp_min(1e-30)))
    return PipeResult(spec, measured, pred, sum(p["sent"]["control"] for p in parts),
                      abs(parts[-1]["loss"] - loss), worst, tuple(missing), wall_s)


def measure_pipeline(specs: list[PipeSpec], port: int = 0, progress=None) -> list[PipeResult]:
    """Run every spec (the same number of stages) in one launch of local gloo processes."""
    import json  # noqa: PLC0415 - only the launcher needs it

    from k3lite.interconnect.run import launch  # noqa: PLC0415 - run.py starts the workers; keeps this module light

    if not specs:
        raise ValueError("give at least one spec")
    t0 = time.perf_counter()
    args = ["pipeline-worker", "--spec", json.dumps([dataclasses.asdict(s) for s in specs])]
    gathered, _ = launch(specs[0].stages, args, sum(s.timeout_s for s in specs), port, progress)
    wall = time.perf_counter() - t0
    return [summarize_pipeline(s, parts, wall) for s, parts in zip(specs, gathered)]


def format_pipeline(res: PipeResult) -> str:
    s = res.spec
    lines = [f"{s.mode} residual{f' (blocks of {s.block_size} sublayers)' if s.mode == 'block' else ''}: "
             f"{s.n_layers} layers in {s.stages} stages {stage_layers(s.n_layers, s.stages)}, d_model "
             f"{s.config().d_model}, fp32 on the wire, {s.tokens} tokens",
             f"{'after layer':<13}{'vectors':>8}{'fwd B/token':>13}{'analytic':>10}{'bwd B/token':>13}{'analytic':>10}"]
    for m, p in zip(res.measured, res.predicted):
        lines.append(f"{m.after_layer:<13}{m.vectors:>8}{m.forward_bytes:>13}{p.forward_bytes:>10}"
                     f"{m.backward_bytes:>13}{p.backward_bytes:>10}")
    lines.append(f"measured == analytic at every boundary: {res.agree} (exact integers; {res.control} B of shape "
                 f"headers in all); loss and gradients vs one process: loss diff {res.loss_err:.2g}, worst gradient "
                 f"{res.grad_rel_err:.2g} -> {'MATCH' if res.gradients_match else 'MISMATCH'}")
    return "\n".join(lines)
