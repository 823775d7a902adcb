"""The predictor's efficiencies fitted to the published K3 runs, and its error, published: leave-one-out on every
row (fit on the others, predict the one left out) for TTFT, TPOT and throughput.

Fitted terms (five numbers for 15 fitted rows; predict.Efficiency's three and two acceptances):
    layer_s          fixed time per layer per forward pass (kernel launches, synchronisation, all-reduce latency)
    hbm_fraction     achieved share of peak HBM bandwidth
    flops_fraction   achieved share of the bf16 tensor peak
    acceptance       tokens kept per verification step on each benchmark's data: SGLang's random tokens (7
                     drafted, so in [1, 8]) and vLLM's guidellm text at temperature 1.0 (8 drafted: [1, 9])
Least squares on log(predicted / measured) of each fitted row's TPOT and, for the rows whose arrivals are known
(SGLang's waves), its TTFT: relative error, so a 10 ms and a 10 s figure weigh alike. The time per layer and the
acceptances are fitted as logarithms (positive by construction), the two efficiencies as logits (in (0, 1) by
construction: no GPU beats its datasheet). A fit the rows do not identify then runs into a bound instead of past
it: envelope.py's leave-a-group-out fits report a term at its bound as not identified by the rows left.
Levenberg-Marquardt with a finite-difference Jacobian, in numpy: ~0.1 s a fit.

FITTED ships the values; tests refit and check they are reproduced.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from k3lite.analytic.serving.admission import ENGINE_RESERVE, STATE_SLOTS, admission
from k3lite.analytic.serving.deployment import K3_PRESET, Serving, Speculation
from k3lite.analytic.serving.measured import (
    ACCEPTANCE_TERMS, CHECKPOINTS, FITTED_ROWS, MEASURED, Measured, sglang_tokens_per_s_per_gpu,
)
from k3lite.analytic.serving.predict import Efficiency, Terms, Workload, evaluate, predict, queue, terms
from k3lite.analytic.serving.step import decode_step, prefill_step

NAMES = ("layer_s", "hbm_fraction", "flops_fraction") + tuple(f"acceptance {a}" for a in ACCEPTANCE_TERMS)


class Fitted(NamedTuple):
    efficiency: Efficiency
    acceptance: dict  # ACCEPTANCE_TERMS key -> tokens kept per verification step
    rms_log_error: float  # over the fitted residuals

    def values(self) -> dict:
        return {**self.efficiency._asdict(), **{f"acceptance {k}": v for k, v in self.acceptance.items()}}


# the fit of every fitted row (tests refit and compare): what the CLI and the page use without fitting
FITTED = Fitted(Efficiency(layer_s=7.60e-05, hbm_fraction=0.801, flops_fraction=0.297),
                {"sglang-random": 4.51, "vllm-guidellm": 2.70}, 0.0774)

MEANING = {
    "layer_s": "a fixed time every layer of every forward pass costs, whatever it reads: kernel launches and gaps, "
               "synchronisation and the TP all-reduces' latency; x 93 layers it is most of a one-user decode step",
    "hbm_fraction": "the share of the datasheet HBM bandwidth the decode and prefill kernels achieve while reading "
                    "weights and cache",
    "flops_fraction": "the share of the bf16 tensor peak the matmuls achieve; it sets the prefill (and so the time to "
                      "first token), where small per-expert matrices and attention keep it far from 1",
    "acceptance sglang-random": "tokens a sequence keeps per verification step with DSpark proposing 7, on SGLang's "
                                "random-token benchmark",
    "acceptance vllm-guidellm": "tokens kept per step with DSpark proposing 8, on vLLM's guidellm text at "
                                "temperature 1.0 (the cited Inferact card reports 3.3 for a 5-token block)",
}


# ------------------------------------------------------------------------------------------ rows -> deployments
def row_serving(m: Measured, acceptance: float = 1.0) -> Serving:
    spec = None if not m.draft_tokens else Speculation(m.draft_tokens, acceptance)
    return Serving(K3_PRESET, m.gpu, m.n_gpus, m.n_gpus, m.tp, CHECKPOINTS[m.checkpoint],
                   m.input_len + m.output_len // 2, spec=spec, dcp=m.dcp)


def row_workload(m: Measured) -> Workload:
    return Workload(m.concurrency, m.input_len, m.output_len, m.arrivals, m.chunk_tokens)


@lru_cache(maxsize=64)
def row_terms(m: Measured) -> Terms:
    """The row's fixed terms (the acceptance is applied in `_predict`, so one Terms serves every fit)."""
    return terms(row_serving(m, _nominal(m)), row_workload(m))


def _nominal(m: Measured) -> float:
    return m.acceptance if isinstance(m.acceptance, float) else 1.0


def _acceptance(m: Measured, acc: dict) -> float:
    return m.acceptance if isinstance(m.acceptance, float) else acc[m.acceptance]


def _predict(m: Measured, e: Efficiency, acc: dict, arrivals: str | None = None):
    w = row_workload(m)
    return evaluate(row_terms(m), w if arrivals is None else w._replace(arrivals=arrivals), e,
                    acceptance=_acceptance(m, acc) if m.draft_tokens else None)


def measured_throughput(m: Measured, ttft_s: float, tpot_s: float) -> float:
    """The row's throughput in its publisher's unit from a TTFT and a TPOT."""
    latency = ttft_s + (m.output_len - 1) * tpot_s
    if m.throughput_kind == "total":
        return sglang_tokens_per_s_per_gpu(ttft_s, tpot_s, m.concurrency, m.input_len, m.output_len, m.n_gpus)
    return m.concurrency * m.output_len / latency  # the node's output tokens/s


# ------------------------------------------------------------------------------------------ the fit
FRACTIONS = (1, 2)  # hbm_fraction, flops_fraction: fitted as logits, so each stays in (0, 1)


def _pack(f: Fitted) -> np.ndarray:
    v = np.array(list(f.efficiency) + [f.acceptance[a] for a in ACCEPTANCE_TERMS], dtype=float)
    x = np.log(v)
    x[list(FRACTIONS)] = np.log(v[list(FRACTIONS)] / (1 - v[list(FRACTIONS)]))
    return x


def _unpack(x: np.ndarray) -> tuple[Efficiency, dict]:
    v = np.exp(x)
    v[list(FRACTIONS)] = 1 / (1 + np.exp(-x[list(FRACTIONS)]))
    return Efficiency(*v[:3]), dict(zip(ACCEPTANCE_TERMS, v[3:]))


def _residuals(x: np.ndarray, rows) -> np.ndarray:
    e, acc = _unpack(x)
    out = []
    for m in rows:
        p = _predict(m, e, acc)
        if m.arrivals == "together":
            out.append(math.log(p.ttft_s / m.ttft_s))
        out.append(math.log(p.tpot_s / m.tpot_s))
    return np.array(out)


def fit(rows=FITTED_ROWS, start: Fitted = FITTED) -> Fitted:
    """Least squares on the log errors of `rows` (Levenberg-Marquardt, finite-difference Jacobian)."""
    rows = tuple(rows)
    used = {m.acceptance for m in rows if m.draft_tokens and not isinstance(m.acceptance, float)}
    x = _pack(start)
    free = [i for i in range(len(x)) if i < 3 or ACCEPTANCE_TERMS[i - 3] in used]  # an unused acceptance stays put
    r = _residuals(x, rows)
    cost, damping = float(r @ r), 1e-3
    for _ in range(100):
        jac = np.zeros((len(r), len(x)))
        for i in free:
            dx = np.zeros_like(x)
            dx[i] = 1e-6
            jac[:, i] = (_residuals(x + dx, rows) - r) / 1e-6
        a, g = jac.T @ jac, jac.T @ r
        step = None
        while damping < 1e10:
            trial = -np.linalg.solve(a + damping * np.diag(np.diag(a) + 1e-9), g)
            r_new = _residuals(x + trial, rows)
            if float(r_new @ r_new) < cost:
                step, x, r, cost, damping = trial, x + trial, r_new, float(r_new @ r_new), damping / 3
                break
            damping *= 4
        if step is None or np.abs(step).max() < 1e-8:
            break
    e, acc = _unpack(x)
    return Fitted(Efficiency(*map(float, e)), {k: float(v) for k, v in acc.items()}, math.sqrt(cost / len(r)))


# ------------------------------------------------------------------------------------------ errors
class RowError(NamedTuple):
    key: str
    fitted: bool  # in the fit (leave-one-out applies) or held out
    measured_ttft_s: float
    predicted_ttft_s: float
    measured_tpot_s: float
    predicted_tpot_s: float
    measured_throughput: float
    predicted_throughput: float
    throughput_kind: str
    ttft_scored: bool  # False: arrivals not known (vLLM), TTFT checked as a bracket instead
    ttft_bracket: tuple  # (staggered, together) predictions: the measured TTFT should lie between

    @property
    def errors(self) -> dict:
        """Relative errors, predicted / measured - 1."""
        return {"ttft": self.predicted_ttft_s / self.measured_ttft_s - 1,
                "tpot": self.predicted_tpot_s / self.measured_tpot_s - 1,
                "throughput": self.predicted_throughput / self.measured_throughput - 1}


def row_error(m: Measured, f: Fitted) -> RowError:
    p = _predict(m, f.efficiency, f.acceptance)
    lo, hi = (_predict(m, f.efficiency, f.acceptance, a).ttft_s for a in ("staggered", "together"))
    return RowError(m.key, m.fitted, m.ttft_s, p.ttft_s, m.tpot_s, p.tpot_s, m.throughput,
                    measured_throughput(m, p.ttft_s, p.tpot_s), m.throughput_kind, m.arrivals == "together", (lo, hi))


def leave_one_out(rows=FITTED_ROWS) -> list[RowError]:
    """Each fitted row predicted by a fit of all the others."""
    rows = tuple(rows)
    return [row_error(m, fit(rows[:i] + rows[i + 1:])) for i, m in enumerate(rows)]


class Summary(NamedTuple):
    mape: dict  # metric -> mean |error| over the scored rows
    worst: dict  # metric -> (row key, error)
    rows: int


def summary(errors: list[RowError]) -> Summary:
    mape, worst = {}, {}
    for metric in ("ttft", "tpot", "throughput"):
        scored = [(r.key, r.errors[metric]) for r in errors if metric != "ttft" or r.ttft_scored]
        mape[metric] = float(sum(abs(v) for _, v in scored) / len(scored))
        key, err = max(scored, key=lambda kv: abs(kv[1]))
        worst[metric] = (key, float(err))
    return Summary(mape, worst, len(errors))


# ------------------------------------------------------------------------------------------ for the page
def bound(m: Measured, acceptance: float) -> tuple[float, float, float]:
    """(TTFT, TPOT, throughput) of step.py's roofline for the row: one prefill alone at step.prefill_step's rate (the
    TP group's GPUs sharing it), the decode step alone at the row's batch (no prefill waits)."""
    s = row_serving(m, acceptance)
    per_token = prefill_step(s.with_(context=m.input_len)).s_per_token / s.tp
    ttft = queue(lambda n: n * per_token, 1, row_workload(m)).prefill_s
    st = decode_step(s, m.concurrency / m.n_gpus)
    tpot = st.step_s / st.tokens_per_step
    return ttft, tpot, measured_throughput(m, ttft, tpot)


def comparison(f: Fitted = FITTED, rows=MEASURED) -> list[dict]:
    """For each published row: measured, predicted (the shipped fit) and the bound, with errors; ready to plot."""
    out = []
    for m in rows:
        r = row_error(m, f)
        b = bound(m, _acceptance(m, f.acceptance))
        out.append({"row": m.key, "gpu": m.gpu, "concurrency": m.concurrency, "fitted": m.fitted,
                    "measured TTFT (s)": m.ttft_s, "predicted TTFT (s)": r.predicted_ttft_s, "bound TTFT (s)": b[0],
                    "measured TPOT (ms)": 1e3 * m.tpot_s, "predicted TPOT (ms)": 1e3 * r.predicted_tpot_s,
                    "bound TPOT (ms)": 1e3 * b[1], "throughput unit": m.throughput_kind,
                    "measured throughput": m.throughput, "predicted throughput": r.predicted_throughput,
                    "bound throughput": b[2], **{f"{k} error": v for k, v in r.errors.items()},
                    "TTFT scored": r.ttft_scored, "source": m.source})
    return out


class Checked(NamedTuple):
    """What the serving page opens on: every published row with the prediction a reader should trust for it (a
    fitted row: predicted by a fit of the OTHER fitted rows, leave-one-out; a held-out row: by the shipped fit, which
    never saw it) and step.py's bound beside it."""

    rows: list[dict]  # comparison()'s keys, the predictions replaced by the leave-one-out ones for fitted rows
    loo: Summary  # over the fitted rows
    held_out: Summary | None  # the rows not fitted (another platform), scored against the shipped fit
    bound_tpot_ratio: tuple[float, float]  # measured TPOT / bound TPOT, min and max over the fitted rows


def checked(rows=MEASURED) -> Checked:
    loo = {r.key: r for r in leave_one_out(tuple(m for m in rows if m.fitted))}
    out, held = [], []
    for c, m in zip(comparison(FITTED, rows), rows):
        r = loo.get(m.key) or row_error(m, FITTED)
        if not m.fitted:
            held.append(r)
        out.append({**c, "predicted TTFT (s)": r.predicted_ttft_s, "predicted TPOT (ms)": 1e3 * r.predicted_tpot_s,
                    "predicted throughput": r.predicted_throughput, **{f"{k} error": v for k, v in r.errors.items()},
                    "ttft bracket (s)": r.ttft_bracket})
    ratios = [c["measured TPOT (ms)"] / c["bound TPOT (ms)"] for c in out if c["fitted"]]
    return Checked(out, summary(list(loo.values())), summary(held) if held else None, (min(ratios), max(ratios)))


def checked_sentence(c: Checked) -> str:
    """The page's headline on the prediction, every number from `c`."""
    n, n_ttft = c.loo.rows, sum(r["fitted"] and r["TTFT scored"] for r in c.rows)
    (_, tv), (_, fv) = c.loo.worst["tpot"], c.loo.worst["ttft"]
    text = (f"Each of {n} published K3 runs predicted by a fit of the other {n - 1}: time per output token off by "
            f"{100 * c.loo.mape['tpot']:.0f}% on average (worst {100 * tv:+.0f}%), time to first token by "
            f"{100 * c.loo.mape['ttft']:.0f}% ({n_ttft} runs; worst {100 * fv:+.0f}%). The bound alone is "
            f"{c.bound_tpot_ratio[0]:.1f}-{c.bound_tpot_ratio[1]:.1f}x too fast.")
    held = [r["tpot error"] for r in c.rows if not r["fitted"]]
    if held:
        gpus = ", ".join(sorted({r["gpu"] for r in c.rows if not r["fitted"]}))
        lo, hi = min(map(abs, held)), max(map(abs, held))
        way = "too fast" if max(held) < 0 else "too slow" if min(held) > 0 else "off"
        text += f" On {gpus} (not fitted) these terms are {100 * lo:.0f}-{100 * hi:.0f}% {way}: it needs its own."
    return text


# ------------------------------------------------------------------------------------------ one deployment
def prediction_report(s: Serving, w: Workload, f: Fitted = FITTED, reserve: float = ENGINE_RESERVE,
                      state_slots: int = STATE_SLOTS) -> dict:
    """What the CLI prints: admission first (a concurrency that does not fit is refused by name), then the
    prediction with the fitted efficiencies, step.py's bound beside it, and the terms used with their meaning."""
    adm = admission(s, w.input_len, w.output_len, reserve, state_slots)
    if adm.max_concurrency < 1:
        raise ValueError(f"no request of {adm.tokens:,} tokens fits: {adm.sentence}")
    if w.concurrency > adm.max_concurrency:
        raise ValueError(f"concurrency {w.concurrency} exceeds the {adm.max_concurrency} requests that fit "
                         f"({adm.binding} binds): {adm.sentence}")
    p = predict(s, w, f.efficiency)
    b = decode_step(s.with_(context=w.input_len + w.output_len // 2), w.concurrency / s.n_gpus)
    terms_used = {k: v for k, v in f.values().items() if not k.startswith("acceptance")}
    return {
        "inputs": {**s.inputs(), **w._asdict(), "reserve": reserve, "state_slots": state_slots},
        "ttft_s": p.ttft_s, "tpot_s": p.tpot_s, "latency_s": p.latency_s,
        "output_tokens_per_s_per_gpu": p.output_tokens_per_s_per_gpu,
        "total_tokens_per_s_per_gpu": p.total_tokens_per_s_per_gpu,
        "output_tokens_per_s_per_user": p.output_tokens_per_s_per_user,
        "usd_per_m_output_tokens": p.usd_per_m_output_tokens,
        "max_concurrency": adm.max_concurrency, "binding": adm.binding, "admission": adm.sentence,
        "per_request_bytes_per_gpu": adm.per_request,
        "decode_step": p.step._asdict(), "prefill_s": p.prefill_s, "stall_s_per_token": p.stall_s_per_token,
        "bound": {"tpot_s": b.step_s / b.tokens_per_step, "tokens_per_s_per_user": b.tokens_per_s_per_user},
        "fitted_terms": {k: {"value": v, "meaning": MEANING[k]} for k, v in terms_used.items()},
        "fitted_acceptance": {k: {"value": v, "meaning": MEANING[f"acceptance {k}"]} for k, v in f.acceptance.items()},
    }
