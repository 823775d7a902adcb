"""NVIDIA's AIConfigurator beside k3lite's predictor on the published K3 runs: TTFT, TPOT and throughput errors.

    python -m k3lite.bench serving-peer [--json assets/serving_peer.json]

AIConfigurator (`aiconfigurator-core` on PyPI, a dev dependency: requirements-dev.txt; nothing outside this bench
imports it) ships a Kimi K3 model (`moonshotai/Kimi-K3`: 69 KDA + 24 MLA layers, LatentMoE, the DSpark draft) and
per-kernel timing tables measured on NVIDIA systems. Each published run of `measured.MEASURED` is put to its
aggregated (continuous-batching) estimate, `run_agg`, at the run's setting:
    system        the run's GPU (B300 -> b300_sxm); MI350X has no system there, so its runs are skipped
    engine        the run's engine and the timing tables of its newest build there (SGLang 0.5.16 for the KDA
                  kernels, earlier builds for the rest; vLLM 0.24.0)
    layout        TP 8 with the experts split over the same 8 GPUs (moe_tp 8, moe_ep 1), as the recipes run it;
                  DCP is refused for K3 there, so the balanced runs (DCP 8) are predicted without it, said per row
    formats       the checkpoint's, as AIConfigurator resolves them for the engine (MXFP4 experts on SGLang run
                  W4A8 through FlashInfer's TRT-LLM MoE); NVFP4 is asked for and refused where no table holds it
    batch         the run's concurrency; prefill tokens per step = min(chunk, concurrency x input), the engine's
                  chunked-prefill budget
    speculation   DSpark with the run's block (nextn 7 on SGLang, 8 on vLLM). AIConfigurator's core prices the
                  verify step and takes the tokens kept per step as an input: it gets k3lite's acceptance for the
                  row (the leave-one-out fit's for a fitted row, the pinned value for a held-out one), so both tools
                  share it and differ in step time and scheduling only
Throughput is recomputed in the publisher's unit from each tool's TTFT and TPOT (`fit.measured_throughput`). k3lite's
figures are `fit.checked()`'s: leave-one-out for the fitted rows, the shipped fit for the held-out ones. MAPE is over
the rows both tools predict; TTFT only where the arrivals are known (SGLang's waves), as fit.py scores it.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import re
import sys
from functools import lru_cache
from types import SimpleNamespace
from typing import NamedTuple

from k3lite.analytic.serving.fit import FITTED_ROWS, checked, fit, measured_throughput
from k3lite.analytic.serving.measured import MEASURED, Measured

AIC_DISTRIBUTION = "aiconfigurator-core"
AIC_MODEL = "moonshotai/Kimi-K3"  # the one K3 checkpoint it ships a config for (MXFP4 experts, as released)
SYSTEMS = {"B300": "b300_sxm"}  # k3lite GPU -> AIConfigurator system; it has no AMD system
ENGINE_VERSIONS = {"sglang": "next", "vllm": "current"}  # its version slots: SGLang's KDA tables are in "next"
AIC_MOE_QUANT = {"NVFP4": "nvfp4"}  # a checkpoint not its own: the experts' format asked for by name
METRICS = ("ttft", "tpot", "throughput")


class AicSetting(NamedTuple):
    """One published run as AIConfigurator's knobs."""
    system: str
    backend: str
    version: str  # a version slot of its database ("current", "next") or a literal build
    tp: int
    moe_tp: int
    moe_ep: int
    moe_quant: str | None  # None: AIConfigurator's own resolution for the checkpoint and engine
    nextn: int  # draft tokens per step (0: no speculation)
    batch: int
    isl: int
    osl: int
    ctx_tokens: int  # prefill tokens per engine step
    note: str  # what differs from the run ("" where nothing does)


class AicPrediction(NamedTuple):
    ttft_s: float
    tpot_s: float
    prefill_s: float  # one request's prefill before its queueing factor (the TTFT at an empty engine)
    throughput: float  # in the row's published unit


def engine_of(m: Measured) -> str:
    return m.key.split("-", 1)[0]


def aic_setting(m: Measured) -> AicSetting | str:
    """The run as AIConfigurator's setting, or why it has none."""
    if m.gpu not in SYSTEMS:
        return f"no {m.gpu} system in AIConfigurator (its systems are NVIDIA GPUs)"
    engine = engine_of(m)
    if engine not in ENGINE_VERSIONS:
        return f"no {engine} backend in AIConfigurator"
    note = (f"DCP {m.dcp} not modelled (AIConfigurator refuses context parallelism for K3): predicted without it"
            if m.dcp > 1 else "")
    return AicSetting(SYSTEMS[m.gpu], engine, ENGINE_VERSIONS[engine], m.tp, m.tp, m.n_gpus // m.tp,
                      AIC_MOE_QUANT.get(m.checkpoint), m.draft_tokens, m.concurrency, m.input_len, m.output_len,
                      min(m.chunk_tokens, m.concurrency * m.input_len), note)


# ------------------------------------------------------------------------------------------ AIConfigurator
@lru_cache(maxsize=1)
def _sdk() -> SimpleNamespace:
    """The AIConfigurator names this bench calls, imported on first use: a dev dependency the app never loads."""
    from aiconfigurator_core.sdk.backends.factory import get_backend  # the dev dependency, on first use
    from aiconfigurator_core.sdk.common import MoEQuantMode  # the dev dependency, on first use
    from aiconfigurator_core.sdk.config import ModelConfig, RuntimeConfig  # the dev dependency, on first use
    from aiconfigurator_core.sdk.errors import PerfDataNotAvailableError  # the dev dependency, on first use
    from aiconfigurator_core.sdk.models import get_model  # the dev dependency, on first use
    from aiconfigurator_core.sdk.models.helpers import resolve_kimi_k3_moe_arch_mode  # the dev dependency
    from aiconfigurator_core.sdk.perf_database import get_database  # the dev dependency, on first use

    return SimpleNamespace(get_backend=get_backend, MoEQuantMode=MoEQuantMode, ModelConfig=ModelConfig,
                           RuntimeConfig=RuntimeConfig, PerfDataNotAvailableError=PerfDataNotAvailableError,
                           get_model=get_model, resolve_kimi_k3_moe_arch_mode=resolve_kimi_k3_moe_arch_mode,
                           get_database=get_database)


@lru_cache(maxsize=8)
def _database(system: str, backend: str, version: str):
    return _sdk().get_database(system, backend, version)


@lru_cache(maxsize=32)
def _model(s: AicSetting):
    aic = _sdk()
    quant = (aic.MoEQuantMode[s.moe_quant] if s.moe_quant else
             aic.resolve_kimi_k3_moe_arch_mode(AIC_MODEL, s.system, s.backend))  # what its own CLI resolves
    config = aic.ModelConfig(tp_size=s.tp, moe_tp_size=s.moe_tp, moe_ep_size=s.moe_ep, moe_quant_mode=quant,
                             nextn=s.nextn)
    return aic.get_model(AIC_MODEL, config, s.backend)


def aic_predict(m: Measured, s: AicSetting, acceptance: float | None) -> AicPrediction | str:
    """AIConfigurator's aggregated estimate of the run (its TTFT, TPOT; throughput in the row's unit), or the
    reason it gives none (a missing timing table, a refused layout)."""
    aic = _sdk()
    logging.getLogger("aiconfigurator_core").setLevel(logging.ERROR)  # per-table fallback notices, not results
    kwargs = {"ctx_tokens": s.ctx_tokens}
    if s.nextn:
        kwargs["decode_tokens_per_iteration"] = acceptance
    try:
        summary = aic.get_backend(s.backend).run_agg(_model(s), _database(s.system, s.backend, s.version),
                                                     aic.RuntimeConfig(batch_size=s.batch, isl=s.isl, osl=s.osl),
                                                     **kwargs)
    except (aic.PerfDataNotAvailableError, NotImplementedError, ValueError) as e:
        return refusal(str(e), s)
    r = summary.get_result_dict()
    sched = summary.get_step_estimates()["scheduling"]
    ttft, tpot = float(r["ttft"]) / 1e3, float(r["tpot"]) / 1e3
    prefill = sched["mix_step_latency_ms"] / sched["mix_efficiency"] * math.ceil(s.isl / s.ctx_tokens) / 1e3
    return AicPrediction(ttft, tpot, prefill, measured_throughput(m, ttft, tpot))


def refusal(message: str, s: AicSetting) -> str:
    """AIConfigurator's reason for no estimate, short: a missing table is named by its op and format."""
    missing = re.search(r'(\w+) data missing for \w+ \{ quant: "(\w+)"', message)
    if missing:
        return f"no {missing[2]} {missing[1]} timing table for K3 on {s.system} ({s.backend} {s.version})"
    return "AIConfigurator refuses: " + message.split(" at /", 1)[0].splitlines()[0][:120]


def aic_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version  # only the bench asks which build it compares

    try:
        return version(AIC_DISTRIBUTION)
    except PackageNotFoundError:
        return None


# ------------------------------------------------------------------------------------------ both tools, per row
def row_acceptances(rows=MEASURED) -> dict[str, float]:
    """Tokens kept per step the row is predicted with by k3lite: for a fitted row the fit without it (leave-one-out),
    for a held-out row its pinned value or the shipped fit's."""
    fitted = tuple(m for m in FITTED_ROWS if m in rows)
    out = {}
    for m in rows:
        if not m.draft_tokens:
            continue
        if isinstance(m.acceptance, float):
            out[m.key] = m.acceptance
            continue
        others = tuple(r for r in fitted if r.key != m.key)
        out[m.key] = fit(others).acceptance[m.acceptance] if m.fitted else fit(fitted).acceptance[m.acceptance]
    return out


def compare(rows=MEASURED) -> list[dict]:
    """Every run: measured, k3lite's prediction and AIConfigurator's (or why not), with relative errors."""
    ours = {r["row"]: r for r in checked(rows).rows}
    acceptance = row_acceptances(rows)
    out = []
    for m in rows:
        k = ours[m.key]
        row = {"row": m.key, "gpu": m.gpu, "fitted": m.fitted, "ttft_scored": k["TTFT scored"],
               "concurrency": m.concurrency, "dspark": bool(m.draft_tokens), "acceptance": acceptance.get(m.key),
               "measured": {"ttft_s": m.ttft_s, "tpot_s": m.tpot_s, "throughput": m.throughput,
                            "throughput_unit": m.throughput_kind},
               "k3lite": {"ttft_s": k["predicted TTFT (s)"], "tpot_s": k["predicted TPOT (ms)"] / 1e3,
                          "throughput": k["predicted throughput"]},
               "aic": None, "note": ""}
        s = aic_setting(m)
        p = aic_predict(m, s, acceptance.get(m.key)) if isinstance(s, AicSetting) else s
        if isinstance(p, AicPrediction):
            row["aic"], row["note"] = p._asdict(), s.note
        else:
            row["note"] = p
        for tool in ("k3lite", "aic"):
            if row[tool]:
                row[tool]["errors"] = {metric: row[tool][f] / row["measured"][f] - 1 for metric, f in
                                       zip(METRICS, ("ttft_s", "tpot_s", "throughput"))}
        out.append(row)
    return out


def scored(rows: list[dict], metric: str) -> list[dict]:
    """The rows both tools predict, that `metric` is scored on (TTFT: only where the arrivals are known)."""
    return [r for r in rows if r["aic"] and (metric != "ttft" or r["ttft_scored"])]


def mape(rows: list[dict]) -> dict:
    """{metric: {tool: mean |error|, "rows": n}} over the rows both predict."""
    out = {}
    for metric in METRICS:
        both = scored(rows, metric)
        out[metric] = {"rows": len(both), **{tool: (sum(abs(r[tool]["errors"][metric]) for r in both) / len(both)
                                                    if both else None) for tool in ("k3lite", "aic")}}
    return out


def calibrated_mape(rows: list[dict]) -> dict:
    """{metric: MAPE} of AIConfigurator with one constant per metric fitted to the runs, leave-one-out: each run's
    estimate scaled by the geometric mean of measured / estimated over the OTHER runs. k3lite's leave-one-out fit
    learns five terms from the other runs; this gives AIConfigurator one, so an offset alone does not decide."""
    out = {}
    for metric, field in zip(METRICS, ("ttft_s", "tpot_s", "throughput")):
        both = scored(rows, metric)
        logs = [math.log(r["measured"][field] / r["aic"][field]) for r in both]
        if len(both) < 2:
            out[metric] = None
            continue
        errs = [math.exp((sum(logs) - own) / (len(logs) - 1)) * r["aic"][field] / r["measured"][field] - 1
                for r, own in zip(both, logs)]
        out[metric] = sum(map(abs, errs)) / len(errs)
    return out


def regime(r: dict) -> str:
    return (f"{r['row'].split('-', 1)[0]} {'DSpark' if r['dspark'] else 'no speculation'}, "
            f"{'one user' if r['concurrency'] == 1 else 'concurrency > 1'}")


def by_regime(rows: list[dict]) -> dict[str, dict]:
    groups: dict[str, list[dict]] = {}
    for r in rows:
        if r["aic"]:
            groups.setdefault(regime(r), []).append(r)
    return {name: mape(group) for name, group in groups.items()}


def verdicts(rows: list[dict]) -> list[str]:
    """One sentence per regime and metric where AIConfigurator is the closer of the two, from the numbers."""
    out = []
    for name, errs in by_regime(rows).items():
        for metric, e in errs.items():
            if e["rows"] and e["aic"] < e["k3lite"]:
                out.append(f"AIConfigurator is closer on {metric.upper() if metric != 'throughput' else metric} "
                           f"for {name} ({e['rows']} runs): {100 * e['aic']:.1f}% against k3lite's "
                           f"{100 * e['k3lite']:.1f}%.")
    return out


def family(key: str) -> str:
    """A run's setting without its concurrency: runs of one family differ in the batch only."""
    return key.rsplit("-c", 1)[0]


def scaling(rows: list[dict]) -> list[dict]:
    """TPOT at a concurrency over the same setting's one-user TPOT, measured and by each tool: how a step's cost
    grows with the batch, free of a constant offset (a tool uniformly 50% slow is exact here)."""
    alone = {family(r["row"]): r for r in rows if r["concurrency"] == 1 and r["aic"]}
    out = []
    for r in rows:
        base = alone.get(family(r["row"]))
        if base is None or base is r or not r["aic"]:
            continue
        out.append({"family": family(r["row"]), "concurrency": r["concurrency"],
                    **{src: r[src]["tpot_s"] / base[src]["tpot_s"] for src in ("measured", "k3lite", "aic")}})
    return out


def lessons(rows: list[dict]) -> list[str]:
    """Parts of AIConfigurator's answer free of its offsets, computed: the growth of TPOT with the batch where it is
    closer than k3lite's, and one request's prefill before its queueing factor."""
    out = []
    for g in scaling(rows):
        if abs(g["aic"] / g["measured"] - 1) < abs(g["k3lite"] / g["measured"] - 1):
            out.append(f"TPOT growth {g['family']} c1 -> c{g['concurrency']}: AIConfigurator x{g['aic']:.2f}, "
                       f"measured x{g['measured']:.2f}, k3lite x{g['k3lite']:.2f} (its per-op tables are closer on "
                       f"how a step's cost grows with the batch)")
    for r in rows:
        if r["aic"] and r["concurrency"] == 1 and r["ttft_scored"]:
            alone = r["aic"]["prefill_s"] / r["measured"]["ttft_s"] - 1
            out.append(f"{r['row']}: AIConfigurator's prefill alone {100 * alone:+.1f}% off the measured TTFT "
                       f"(k3lite {100 * r['k3lite']['errors']['ttft']:+.1f}%); its TTFT multiplies it by "
                       f"{r['aic']['ttft_s'] / r['aic']['prefill_s']:.2f}, a queueing factor a lone request never waits")
    return out


# ------------------------------------------------------------------------------------------ printing
def _pct(v: float | None) -> str:
    return f"{100 * v:+6.1f}%" if v is not None else "      -"


def table(rows: list[dict]) -> list[str]:
    head = (f"{'run':<40} {'set':<4} {'TTFT s':>7} {'TPOT ms':>7} {'thr':>6} | {'k3lite TTFT':>11} {'TPOT':>7} "
            f"{'thr':>7} | {'AIC TTFT':>8} {'TPOT':>7} {'thr':>7}  AIC prefill s / note")
    lines = [head, "-" * len(head)]
    for r in rows:
        me, k, a = r["measured"], r["k3lite"]["errors"], (r["aic"] or {}).get("errors", {})
        ttft_mark = "" if r["ttft_scored"] else "*"
        extra = (f"{r['aic']['prefill_s']:.3f}" if r["aic"] else "") + (f"  {r['note']}" if r["note"] else "")
        lines.append(f"{r['row']:<40} {'fit' if r['fitted'] else 'held':<4} {me['ttft_s']:>7.3f} "
                     f"{1e3 * me['tpot_s']:>7.2f} {me['throughput']:>6.0f} | {_pct(k['ttft']) + ttft_mark:>11} "
                     f"{_pct(k['tpot'])} {_pct(k['throughput'])} | {_pct(a.get('ttft')) + ttft_mark:>8} "
                     f"{_pct(a.get('tpot'))} {_pct(a.get('throughput'))}  {extra}")
    return lines


def report(rows: list[dict]) -> list[str]:
    lines = table(rows)
    lines.append("* TTFT not scored: vLLM's arrivals are not known (fit.py checks them as a bracket)")
    lines.append("")
    lines.append("MAPE over the runs both tools predict:")
    for metric, e in mape(rows).items():
        if e["rows"]:
            lines.append(f"  {metric:<10} k3lite {100 * e['k3lite']:5.1f}%   AIConfigurator {100 * e['aic']:5.1f}%"
                         f"   ({e['rows']} runs)")
    cal = calibrated_mape(rows)
    lines.append("  AIConfigurator with one constant per metric fitted to the other runs (leave-one-out): "
                 + ", ".join(f"{metric} {100 * v:.1f}%" for metric, v in cal.items() if v is not None))
    lines.append("By regime (k3lite / AIConfigurator MAPE):")
    for name, errs in by_regime(rows).items():
        cells = "  ".join(f"{metric} {100 * e['k3lite']:.1f}/{100 * e['aic']:.1f}%" for metric, e in errs.items()
                          if e["rows"])
        lines.append(f"  {name:<38} {cells}")
    skipped = [r for r in rows if not r["aic"]]
    if skipped:
        lines.append(f"Not predicted by AIConfigurator ({len(skipped)} of {len(rows)}):")
        lines += [f"  {r['row']}: {r['note']}" for r in skipped]
    lines += verdicts(rows) or ["AIConfigurator is not the closer of the two on any regime and metric."]
    lines.append("Parts of the answer, scale-free:")
    lines += [f"  {line}" for line in lessons(rows)]
    return lines


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m k3lite.bench serving-peer", description=__doc__.split("\n")[0])
    p.add_argument("--json", help="also write the rows, MAPEs and verdicts here (assets/serving_peer.json)")
    args = p.parse_args(argv)
    version = aic_version()
    if version is None:
        print(f"{AIC_DISTRIBUTION} is not installed: pip install -r requirements-dev.txt", file=sys.stderr)
        return 2
    rows = compare()
    print(f"AIConfigurator {version} (aggregated estimate) beside k3lite on {len(rows)} published K3 runs; "
          f"errors are predicted / measured - 1")
    print("\n".join(report(rows)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": "python -m k3lite.bench serving-peer " + " ".join(argv),
                       "aiconfigurator_core": version, "rows": rows, "mape": mape(rows), "aic_calibrated_mape": calibrated_mape(rows),
                       "by_regime": by_regime(rows), "verdicts": verdicts(rows), "scaling": scaling(rows),
                       "lessons": lessons(rows)}, f, indent=1)
            f.write("\n")
    return 0
