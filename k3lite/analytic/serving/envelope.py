"""How far an answer sits from the data the predictor was checked on, and what error that distance carries.

The predictor (predict.py) is fitted on 15 published K3 runs (measured.py): one 8-GPU B300 node, attention TP 8 with
the experts split over the same 8 GPUs (no expert dispatch over a wire, no NIC), 8k-token requests, 1 to 64
requests in flight, two checkpoints (MXFP4, NVFP4), with and without DSpark, two engines. Leave-one-out says how
well it interpolates inside that set (fit.py). This module says two more things:

    leave a group out   fit on every run but one group (every run at one concurrency, one checkpoint, with or
                        without speculation, one engine) and predict the group: the error of extrapolating along
                        that axis. A term the runs left cannot place shows it: it runs into its bound (an
                        efficiency at 1) or keeps the value the held-out runs gave it (borrowed: that error is
                        optimistic). Such a group says the rows do not identify the term, and is named so.
    distance            for one deployment: each axis on which it leaves the measured envelope (another GPU, expert
                        dispatch beyond the TP group, the NIC, another TP, context, batch per GPU, formats), and an
                        error band: leave-one-out's inside the envelope, widened to the leave-a-group-out error of
                        each axis it leaves that some runs vary, and marked "at least" where it leaves an axis no
                        run varies (no published run checks that part of the model at all). Expert dispatch and
                        the NIC take the shipped fit's error on the published multi-node decode deployments
                        (`multinode_error`): other models on other GPUs, the only runs that cross a NIC.

Numbers only: the serving panels word them (k3lite/panels/serving_envelope.py).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable, NamedTuple

from k3lite.analytic.hardware import get_gpu
from k3lite.analytic.serving.published import PUBLISHED, predicted_decode
from k3lite.analytic.serving.deployment import Serving, precision_map
from k3lite.analytic.serving.fit import FITTED, Fitted, fit, leave_one_out, row_error, row_serving, summary
from k3lite.analytic.serving.measured import CHECKPOINTS, FITTED_ROWS, MEASURED, Measured

# how the fitted runs are grouped for leave-a-group-out: a run's group, named as "the runs <name>"
GROUPINGS: dict[str, Callable[[Measured], str]] = {
    "concurrency": lambda m: f"at concurrency {m.concurrency}",
    "speculation": lambda m: "with DSpark" if m.draft_tokens else "without speculation",
    "checkpoint": lambda m: f"of the {m.checkpoint} checkpoint",
    "engine": lambda m: "on " + ("SGLang" if m.key.startswith("sglang") else "vLLM"),
}
AT_BOUND = 0.999  # an efficiency fitted above this sits at its bound of 1: the rows left do not place it


class GroupError(NamedTuple):
    grouping: str  # a GROUPINGS key
    value: str  # the held-out group's value
    rows: int
    tpot_mape: float
    tpot_worst: float  # the largest |error| in the group
    throughput_mape: float
    fitted: Fitted  # the fit of the other runs
    at_bound: tuple[str, ...]  # efficiencies the fit pushed to their bound
    borrowed: tuple[str, ...]  # terms the group needs that no run left fits: kept at the shipped value

    @property
    def identified(self) -> bool:
        return not (self.at_bound or self.borrowed)


def _group_error(grouping: str, value: str, out: list[Measured], keep: list[Measured]) -> GroupError:
    f = fit(keep)
    errors = [row_error(m, f).errors for m in out]
    tpot = [abs(e["tpot"]) for e in errors]
    at_bound = tuple(k for k in ("hbm_fraction", "flops_fraction") if getattr(f.efficiency, k) > AT_BOUND)
    needs = {m.acceptance for m in out if m.draft_tokens and isinstance(m.acceptance, str)}
    fitted_by_rest = {m.acceptance for m in keep if m.draft_tokens and isinstance(m.acceptance, str)}
    borrowed = tuple(f"acceptance {a}" for a in sorted(needs - fitted_by_rest))
    return GroupError(grouping, value, len(out), sum(tpot) / len(tpot), max(tpot),
                      sum(abs(e["throughput"]) for e in errors) / len(errors), f, at_bound, borrowed)


@lru_cache(maxsize=1)
def leave_group_out() -> tuple[GroupError, ...]:
    """Every grouping's every group held out in turn (~1 s: 10 fits of 15 rows)."""
    out = []
    for grouping, key in GROUPINGS.items():
        for value in sorted({key(m) for m in FITTED_ROWS}, key=lambda v: (len(v), v)):  # "at concurrency 1" first
            held = [m for m in FITTED_ROWS if key(m) == value]
            out.append(_group_error(grouping, value, held, [m for m in FITTED_ROWS if key(m) != value]))
    return tuple(out)


def axis_error(grouping: str) -> float:
    """The error of extrapolating along one grouping: the largest mean TPOT error of its identified groups (a
    group the rest cannot identify is left out of the band and named beside it)."""
    errs = [g.tpot_mape for g in leave_group_out() if g.grouping == grouping and g.identified]
    return max(errs) if errs else float("nan")


@lru_cache(maxsize=1)
def inside_error() -> float:
    """Leave-one-out's mean TPOT error over the fitted runs: the band inside the envelope."""
    return summary(leave_one_out()).mape["tpot"]


@lru_cache(maxsize=1)
def other_gpu_error() -> dict[str, float]:
    """Per held-out GPU (another platform's published runs), the shipped fit's mean TPOT error on it."""
    by: dict[str, list[float]] = {}
    for m in MEASURED:
        if not m.fitted:
            by.setdefault(m.gpu, []).append(abs(row_error(m, FITTED).errors["tpot"]))
    return {g: sum(v) / len(v) for g, v in by.items()}


@lru_cache(maxsize=1)
def multinode_error() -> float:
    """The shipped fit's mean TPOT error on the published multi-node decode deployments (published.PUBLISHED: expert
    dispatch over the NIC, EP 72-144; other models and Hopper GPUs too, so the error is not the NIC's alone). At the
    publication's batch, TPOT error = measured tokens/s / predicted tokens/s - 1."""
    errs = [abs(p.measured_tokens_per_s_per_gpu / predicted_decode(p).tokens_per_s_per_gpu - 1) for p in PUBLISHED]
    return sum(errs) / len(errs)


MULTINODE_SOURCE = (f"on the {len(PUBLISHED)} published multi-node decode deployments (DeepSeek-V3 and Kimi K2 on "
                    "H800 / H100 / H200, EP 72-144: other models and GPUs as well)")


class Envelope(NamedTuple):
    """The regime the fitted runs cover, read off them."""

    gpus: tuple[str, ...]
    tps: tuple[int, ...]
    eps: tuple[int, ...]
    contexts: tuple[int, int]  # min, max of input + output / 2
    batch_per_gpu: tuple[float, float]
    formats: tuple[tuple[tuple[str, str], ...], ...]  # the checkpoints' formats, as sorted items


@lru_cache(maxsize=1)
def envelope() -> Envelope:
    rows = [(m, row_serving(m)) for m in FITTED_ROWS]
    ctx = [s.context for _, s in rows]
    b = [m.concurrency / m.n_gpus for m, _ in rows]
    return Envelope(tuple(sorted({s.gpu for _, s in rows})), tuple(sorted({s.tp for _, s in rows})),
                    tuple(sorted({s.ep for _, s in rows})), (min(ctx), max(ctx)), (min(b), max(b)),
                    tuple(sorted({tuple(sorted(CHECKPOINTS[m.checkpoint].items())) for m, _ in rows})))


class Axis(NamedTuple):
    name: str  # "GPU", "expert dispatch", "NIC", "TP", "context", "batch per GPU", "formats"
    here: str  # this deployment's value, in words
    measured: str  # what every fitted run has, in words
    error: float | None  # the error measured for leaving it (None: no published run varies it)
    source: str  # where that error is measured (empty when None)


class Distance(NamedTuple):
    axes: tuple[Axis, ...]  # the axes this deployment leaves the envelope on (empty: inside)
    band: float  # relative TPOT (so price) error: the largest of inside_error and the axes' errors
    at_least: bool  # True: some axis left has no measured error, so the band is a floor

    @property
    def inside(self) -> bool:
        return not self.axes


def _range(lo: float, hi: float, fmt: str = "{:,.0f}") -> str:
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}-{fmt.format(hi)}"


def distance(gpu: str, ep: int, tp: int, weights: dict, context: int, batch_per_gpu: float) -> Distance:
    """How far one deployment (as the frontier's points and the deployment panel describe it) sits from the runs."""
    env, axes = envelope(), []
    g = get_gpu(gpu)
    if g.name not in env.gpus:
        errs = other_gpu_error()
        axes.append(Axis("GPU", g.name, ", ".join(env.gpus), max(errs.values()) if errs else None,
                         "on " + ", ".join(errs) + ", the other GPU with published runs" if errs else ""))
    if ep > tp:  # the multi-node deployments dispatch their experts over NVLink and the NIC
        axes.append(Axis("expert dispatch", f"EP {ep} over TP {tp}",
                         "the experts inside the TP group (EP = TP), so no dispatch over a wire", multinode_error(),
                         MULTINODE_SOURCE))
    if ep > g.nvlink_domain:
        axes.append(Axis("NIC", f"EP {ep} over {-(-ep // g.nvlink_domain)} NVLink domains of {g.nvlink_domain}",
                         "one node, no NIC", multinode_error(), MULTINODE_SOURCE))
    if tp not in env.tps:
        axes.append(Axis("TP", f"TP {tp}", "TP " + ", ".join(map(str, env.tps)), None, ""))
    lo, hi = env.contexts
    if not lo <= context <= hi:
        axes.append(Axis("context", f"{context:,} tokens", f"{_range(lo, hi)} tokens", None, ""))
    blo, bhi = env.batch_per_gpu
    if not blo <= batch_per_gpu <= bhi:
        axes.append(Axis("batch per GPU", f"{batch_per_gpu:,.3g} sequences", f"{_range(blo, bhi, '{:,.3g}')}",
                         axis_error("concurrency"), "leaving out every run at one concurrency"))
    if tuple(sorted(precision_map(weights).items())) not in env.formats:
        axes.append(Axis("formats", ", ".join(f"{k} {v}" for k, v in sorted(precision_map(weights).items())),
                         "the MXFP4 or the NVFP4 checkpoint", axis_error("checkpoint"),
                         "leaving out every run of one checkpoint"))
    known = [a.error for a in axes if a.error is not None]
    return Distance(tuple(axes), max([inside_error(), *known]), any(a.error is None for a in axes))


def distance_of(s: Serving, batch_per_gpu: float) -> Distance:
    return distance(s.gpu, s.ep, s.tp, s.weights, s.context, batch_per_gpu)
