"""The lab: tiny 2-layer, 2-head models trained on recall tasks, one sequence mixer swapped at a time.

Kimi Linear tech report (arXiv 2510.26692), synthetic tasks: with 2 layers and 2 heads, KDA solves MQAR and
Palindrome at longer sequence lengths than Gated DeltaNet, which in turn beats a Mamba-2-style model.
This module lets anyone rerun that comparison on a laptop CPU.

Every model here is the same stack; only the sequence mixer changes:

    x = embed(tokens)                                          # (B, T, d)
    for each of the 2 layers:
        x = x + mixer(RMSNorm(x))                              # linear | mamba2 | deltanet | gdn | kda | attention
        x = x + SwiGLU(RMSNorm(x))
    logits = head(RMSNorm(x))                                  # (B, T, vocab)

The mixers (linear | mamba2 | deltanet | gdn | kda | attention), their state updates and their initialisation are
in `k3lite.experiments.lab_mixers`.
`hybrid` is the 2-layer reading of Kimi Linear's 3:1 pattern: every layer but the last is KDA, the last is
global softmax attention (Kimi Linear always makes the final layer global), so with 2 layers it is
KDA -> attention: the linear layer writes local structure, the global layer does exact lookup.

Residual variants (`residual=`): "standard" (x + f(x)), or Attention Residuals "full" / "block"
(arXiv 2603.15031) built from `k3lite.model.attnres` (DepthAttention per sublayer + ResidualStream).
(The residual experiment on the *lite language model* lives in `k3lite.experiments.lm_train`.)

CLI: `python -m k3lite.experiments.train --task ...` (k3lite/experiments/train.py; lists run every combination, 1 torch thread):

    python -m k3lite.experiments.train --task mqar --mixer kda --seq-len 256 --steps 300 --json out.json

The shipped accuracy-vs-length sweep is `python -m k3lite.experiments.lab_sweep all` (see k3lite/experiments/lab_sweep.py); the
residual experiment's files are made by the commands in `k3lite.experiments.lm_train`'s docstring.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterator, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from k3lite.model.attnres import DepthAttention, ResidualStream
from k3lite.model.nn import RMSNorm, SwiGLU, warmup_cosine_lr
from k3lite.base.rng import seeded
from k3lite.experiments.lab_mixers import INITS, RECURRENT_MIXERS, LabKDA, RecurrentMixer, SoftmaxAttention
from k3lite.experiments.tasks import IGNORE, TaskSpec, make_batch

MIXERS: tuple[str, ...] = RECURRENT_MIXERS + ("attention", "hybrid")
RESIDUALS: tuple[str, ...] = ("standard", "full", "block")
MIXER_LABELS = {
    "linear": "linear attention",
    "mamba2": "Mamba-2-style (scalar decay, no delta)",
    "deltanet": "DeltaNet (delta rule, no decay)",
    "gdn": "Gated DeltaNet (scalar decay + delta)",
    "kda": "KDA (per-channel decay + delta)",
    "attention": "softmax attention",
    "hybrid": "hybrid (KDA, then softmax attention)",
}
EVAL_STEP_OFFSET = 1_000_000  # eval batches use steps >= this, never seen in training


# --------------------------------------------------------------------------------------------- config
@dataclass(frozen=True)
class LabConfig:
    """One lab run. Defaults: the shipped table's settings (2 layers, 2 heads of 64, no FFN, 150 x 16 sequences)."""

    task: str = "mqar"
    seq_len: int = 64
    vocab_size: int = 128
    num_pairs: int = 8  # MQAR key-value pairs
    mixer: str = "kda"
    residual: str = "standard"
    n_layers: int = 2
    n_heads: int = 2
    d_model: int = 128  # head_dim = d_model / n_heads (64: at 32 no recurrent mixer learned MQAR in 150 steps)
    conv_size: int = 4
    ffn_mult: int = 0  # SwiGLU hidden = ffn_mult * d_model; 0 = no FFN (mixer-only blocks: CPU budget)
    attn_res_block_size: int = 2  # sublayers per AttnRes block (block residual only)
    steps: int = 150
    batch_size: int = 16
    lr: float = 3e-3
    weight_decay: float = 0.1
    warmup_frac: float = 0.1
    chunk_size: int = 32  # chunk length of the chunk-wise KDA kernel
    init: str = "lab"  # "lab" (small beta, slow decay) or "reference" (fla's defaults): see INITS
    eval_every: int = 50
    eval_examples: int = 128
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mixer not in MIXERS:
            raise ValueError(f"mixer must be one of {MIXERS}, got {self.mixer!r}")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        if self.residual not in RESIDUALS:
            raise ValueError(f"residual must be one of {RESIDUALS}, got {self.residual!r}")
        if not isinstance(self.ffn_mult, int) or self.ffn_mult < 0:
            raise ValueError(f"ffn_mult must be a non-negative integer (0 = no FFN), got {self.ffn_mult!r}")
        for name in ("n_layers", "n_heads", "d_model", "conv_size", "steps", "batch_size",
                     "chunk_size", "eval_every", "eval_examples", "attn_res_block_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        if self.mixer == "hybrid" and self.n_layers < 2:
            raise ValueError("the hybrid mixer needs n_layers >= 2 (linear layers below, a global layer on top)")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not 0 <= self.warmup_frac < 1:
            raise ValueError(f"warmup_frac must be in [0, 1), got {self.warmup_frac}")
        if self.seq_len > 4096:
            raise ValueError(f"seq_len must be <= 4096 in the lab (CPU training), got {self.seq_len}")
        self.task_spec()  # validates task, seq_len, vocab, num_pairs

    def task_spec(self) -> TaskSpec:
        return TaskSpec(task=self.task, seq_len=self.seq_len, vocab_size=self.vocab_size, num_pairs=self.num_pairs)

    def layer_mixers(self) -> list[str]:
        if self.mixer == "hybrid":
            return ["kda"] * (self.n_layers - 1) + ["attention"]
        return [self.mixer] * self.n_layers

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


# --------------------------------------------------------------------------------------------- mixers
def make_mixer(kind: str, cfg: LabConfig) -> nn.Module:
    if kind == "attention":
        return SoftmaxAttention(cfg.d_model, cfg.n_heads, cfg.conv_size)
    if kind == "kda":
        return LabKDA(cfg.d_model, cfg.n_heads, cfg.conv_size, cfg.chunk_size, cfg.init)
    return RecurrentMixer(cfg.d_model, cfg.n_heads, kind, cfg.conv_size, cfg.chunk_size, cfg.init)


# ---------------------------------------------------------------------------------------------- model
class LabModel(nn.Module):
    """embed -> [mixer, SwiGLU] x n_layers (pre-norm, residual per `cfg.residual`) -> norm -> head."""

    def __init__(self, cfg: LabConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.embed = nn.Embedding(cfg.vocab_size, d)
        self.mixer_norms = nn.ModuleList(RMSNorm(d) for _ in range(cfg.n_layers))
        self.mixers = nn.ModuleList(make_mixer(kind, cfg) for kind in cfg.layer_mixers())
        n_ffn = cfg.n_layers if cfg.ffn_mult else 0
        self.ffn_norms = nn.ModuleList(RMSNorm(d) for _ in range(n_ffn))
        self.ffns = nn.ModuleList(SwiGLU(d, cfg.ffn_mult * d) for _ in range(n_ffn))
        if cfg.residual != "standard":  # Attention Residuals: one depth query per sublayer + one before the head
            n_sub = (2 if cfg.ffn_mult else 1) * cfg.n_layers
            self.depth_attn = nn.ModuleList(DepthAttention(d) for _ in range(n_sub))
            self.depth_final = DepthAttention(d)
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, cfg.vocab_size, bias=False)
        nn.init.normal_(self.embed.weight, std=0.02)

    def sublayers(self) -> list[Callable[[torch.Tensor], torch.Tensor]]:
        """The sublayer functions f_i in order (mixer, ffn, mixer, ffn, ...; mixers only when ffn_mult = 0)."""
        fns = []
        for i, (mnorm, mixer) in enumerate(zip(self.mixer_norms, self.mixers)):
            fns.append(lambda h, n=mnorm, m=mixer: m(n(h)))
            if self.ffns:
                fns.append(lambda h, n=self.ffn_norms[i], f=self.ffns[i]: f(n(h)))
        return fns

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)  # (B, T, d)
        if self.cfg.residual == "standard":
            for f in self.sublayers():
                x = x + f(x)  # h_l = v_0 + v_1 + ... + v_(l-1)
        else:  # k3lite.model.attnres: each sublayer reads a softmax-over-depth mix of earlier outputs (or block sums)
            stream = ResidualStream(x, self.cfg.residual, self.cfg.attn_res_block_size)
            for f, attn in zip(self.sublayers(), self.depth_attn):
                stream.add(f(stream.mix(attn).h))
            x = stream.mix(self.depth_final).h  # (B, T, d)
        return self.head(self.norm(x))  # (B, T, vocab)


# ------------------------------------------------------------------------------------------- training
class StepRecord(NamedTuple):
    step: int  # 1-based optimisation step just finished
    loss: float  # training loss on this step's batch (nats per scored token)
    acc: float  # training accuracy on this step's scored tokens (fraction)
    eval_loss: float | None  # held-out loss, only on eval steps
    eval_acc: float | None
    elapsed_s: float


@dataclass
class LabResult:
    config: dict
    steps_done: int
    final_eval_loss: float
    final_eval_acc: float
    curve: dict = field(default_factory=dict)  # step, loss, acc lists (every step)
    evals: dict = field(default_factory=dict)  # step, loss, acc lists (every eval_every steps)
    n_params: int = 0
    wall_s: float = 0.0
    stopped: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def scored_loss_acc(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy and accuracy over the scored positions only (targets != IGNORE)."""
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
    mask = targets != IGNORE  # (B, T)
    acc = (logits.argmax(-1)[mask] == targets[mask]).float().mean()
    return loss, acc


@torch.no_grad()
def evaluate(model: LabModel, cfg: LabConfig, examples: int | None = None) -> tuple[float, float]:
    """Held-out loss and accuracy on fixed batches (seeded by cfg.seed, steps >= EVAL_STEP_OFFSET)."""
    examples = examples or cfg.eval_examples
    was_training = model.training
    model.eval()
    spec, total_loss, total_correct, total = cfg.task_spec(), 0.0, 0.0, 0
    for i in range(math.ceil(examples / cfg.batch_size)):
        n = min(cfg.batch_size, examples - i * cfg.batch_size)
        batch = make_batch(spec, n, seed=cfg.seed, step=EVAL_STEP_OFFSET + i)
        logits = model(batch.inputs)
        scored = int((batch.targets != IGNORE).sum())
        loss, acc = scored_loss_acc(logits, batch.targets)
        total_loss += float(loss) * scored
        total_correct += float(acc) * scored
        total += scored
    model.train(was_training)
    return total_loss / total, total_correct / total


def lr_at(step: int, cfg: LabConfig) -> float:
    """Linear warmup over `warmup_frac` of the steps, then cosine decay to 10% (step is 0-based)."""
    return warmup_cosine_lr(step, cfg.steps, cfg.lr, max(1, int(cfg.warmup_frac * cfg.steps)))


def build(cfg: LabConfig) -> tuple[LabModel, torch.optim.Optimizer]:
    with seeded(cfg.seed):
        model = LabModel(cfg)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.98))
    return model, opt


def iter_train(cfg: LabConfig, model: LabModel | None = None,
               opt: torch.optim.Optimizer | None = None) -> Iterator[StepRecord]:
    """Train `cfg.steps` steps, yielding a StepRecord after each; the caller may stop early by not iterating."""
    if model is None or opt is None:
        model, opt = build(cfg)
    spec, start = cfg.task_spec(), time.perf_counter()
    model.train()
    for step in range(cfg.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        batch = make_batch(spec, cfg.batch_size, seed=cfg.seed, step=step)
        loss, acc = scored_loss_acc(model(batch.inputs), batch.targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        done = step + 1
        ev_loss = ev_acc = None
        if done % cfg.eval_every == 0 or done == cfg.steps:
            ev_loss, ev_acc = evaluate(model, cfg)
        yield StepRecord(done, float(loss.detach()), float(acc), ev_loss, ev_acc, time.perf_counter() - start)


def train(cfg: LabConfig, on_step: Callable[[StepRecord], bool | None] | None = None) -> LabResult:
    """Run `iter_train` to the end (or until `on_step` returns False) and collect the curves."""
    model, opt = build(cfg)
    curve = {"step": [], "loss": [], "acc": []}
    evals = {"step": [], "loss": [], "acc": []}
    start, stopped, rec = time.perf_counter(), False, None
    for rec in iter_train(cfg, model, opt):
        curve["step"].append(rec.step)
        curve["loss"].append(round(rec.loss, 5))
        curve["acc"].append(round(rec.acc, 5))
        if rec.eval_loss is not None:
            evals["step"].append(rec.step)
            evals["loss"].append(round(rec.eval_loss, 5))
            evals["acc"].append(round(rec.eval_acc, 5))
        if on_step is not None and on_step(rec) is False:
            stopped = rec.step < cfg.steps
            break
    if not evals["step"] or evals["step"][-1] != (rec.step if rec else 0):
        ev_loss, ev_acc = evaluate(model, cfg)
        evals["step"].append(rec.step if rec else 0)
        evals["loss"].append(round(ev_loss, 5))
        evals["acc"].append(round(ev_acc, 5))
    return LabResult(config=asdict(cfg), steps_done=rec.step if rec else 0, final_eval_loss=evals["loss"][-1],
                     final_eval_acc=evals["acc"][-1], curve=curve, evals=evals,
                     n_params=sum(p.numel() for p in model.parameters()),
                     wall_s=round(time.perf_counter() - start, 2), stopped=stopped)


# -------------------------------------------------------------------------------------------- results
def format_table(runs: list[dict]) -> str:
    """Final held-out accuracy per (task, seq_len) row and mixer column, as plain text."""
    rows = summary_rows(runs)
    mixers = sorted({m for r in rows for m in r["acc"]}, key=MIXERS.index)
    lines = [f"{'task':<11}{'T':>6}  " + "".join(f"{m:>10}" for m in mixers)]
    for r in rows:
        cells = "".join(f"{r['acc'][m]:>10.3f}" if m in r["acc"] else f"{'':>10}" for m in mixers)
        lines.append(f"{r['task']:<11}{r['seq_len']:>6}  " + cells)
    return "\n".join(lines)


def summary_rows(runs: list[dict]) -> list[dict]:
    """Group runs by (task, seq_len, residual): mean final eval accuracy per mixer over seeds."""
    groups: dict[tuple, dict[str, list[float]]] = {}
    for run in runs:
        c = run["config"]
        key = (c["task"], c["seq_len"], c["residual"])
        groups.setdefault(key, {}).setdefault(c["mixer"], []).append(run["final_eval_acc"])
    return [{"task": t, "seq_len": T, "residual": res, "acc": {m: sum(v) / len(v) for m, v in accs.items()}}
            for (t, T, res), accs in sorted(groups.items())]
