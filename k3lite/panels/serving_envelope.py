"""How far a serving answer sits from the published runs, in words and a table (k3lite.analytic.serving.envelope).

    groups_items()            the leave-a-group-out table and its sentence: the error of extrapolating along each
                              axis the runs vary, and the terms the runs do not identify
    distance_said(dist, usd)  one sentence for one answer: the axes it leaves the runs on, and the band its price
                              carries
    verdict_said(fr, w, speed)  one sentence beside the verdict: its answer's band, and the cheapest answer inside
                              the runs
"""
from __future__ import annotations

from k3lite.analytic.serving.envelope import (
    Distance, distance, envelope, inside_error, leave_group_out, other_gpu_error,
)
from k3lite.analytic.serving.fit import fit
from k3lite.analytic.hardware import gpu_label
from k3lite.analytic.serving.frontier import FRONTIER_FORMATS
from k3lite.analytic.serving.measured import SGLANG_MI350X_SOURCE, SGLANG_SOURCE, VLLM_K3_SOURCE
from k3lite.base.evidence import derived, measured_elsewhere
from k3lite.base.wording import join_words
from k3lite.panels.core import Panel, Said, Table

RUNS = measured_elsewhere(f"published K3 runs: {SGLANG_SOURCE}; {VLLM_K3_SOURCE}; MI350X: {SGLANG_MI350X_SOURCE}")
GROUP_EV = derived(leave_group_out, fit)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


TERM_WORDS = {"hbm_fraction": "the HBM efficiency", "flops_fraction": "the compute efficiency",
              "acceptance sglang-random": "DSpark's acceptance on SGLang's data",
              "acceptance vllm-guidellm": "DSpark's acceptance on vLLM's data"}


def _band(d: Distance) -> str:
    """The band in words: "±10%", or "at least ±59%" where an axis left has no measured error."""
    return ("at least " if d.at_least else "") + f"±{_pct(d.band)}"


def _why_not(g) -> str:
    parts = [f"{TERM_WORDS[k]} runs to its bound of 1" for k in g.at_bound]
    parts += [f"{TERM_WORDS[k]}: only these runs fit it (kept at the shipped value, so the error is optimistic)"
              for k in g.borrowed]
    return "; ".join(parts) or "every term"


def groups_sentence() -> str:
    groups = leave_group_out()
    ok = [g for g in groups if g.identified and g.rows > 1]
    lo, hi = min(ok, key=lambda g: g.tpot_mape), max(ok, key=lambda g: g.tpot_mape)
    text = (f"Held out a whole group at a time (every run at one concurrency, of one checkpoint, with or without "
            f"speculation, of one engine) and predicted by a fit of the rest, time per output token is off by "
            f"{_pct(lo.tpot_mape)}-{_pct(hi.tpot_mape)} on average where the rest identify every term (worst: the "
            f"runs {hi.value}), against {_pct(inside_error())} leaving out one run.")
    for g in (g for g in groups if g.at_bound):
        text += (f" Without the runs {g.value}, {join_words([TERM_WORDS[k] for k in g.at_bound])} runs to its "
                 f"bound of 1 and those runs come out {_pct(g.tpot_mape)} off: only they tell it apart from speculation's "
                 "acceptance, so the fit does not identify it without them.")
    return text


def groups_items() -> list:
    """The leave-a-group-out table and its sentence (the 'what the prediction fits' expander)."""
    rows = [{"held out": f"the runs {g.value}", "runs": g.rows,
             "TPOT error, mean": _pct(g.tpot_mape), "TPOT error, worst": _pct(g.tpot_worst),
             "throughput error, mean": _pct(g.throughput_mape),
             "HBM efficiency of the fit": f"{g.fitted.efficiency.hbm_fraction:.2f}",
             "time per layer (µs)": f"{1e6 * g.fitted.efficiency.layer_s:.0f}",
             "the other runs fit": _why_not(g)} for g in leave_group_out()]
    return [Panel(None, (Said("**Leave a group out.** " + groups_sentence(), (GROUP_EV, RUNS)),)),
            Table(rows, {"runs": RUNS}, GROUP_EV)]


def distance_said(d: Distance, usd: float | None = None, what: str = "This answer") -> Said:
    """`what` sits inside the runs or leaves them on these axes; its band (and the price's, when given)."""
    band = _band(d)
    price = f" (${usd * (1 - d.band):,.2f}-{usd * (1 + d.band):,.2f}" + (" or wider" if d.at_least else "") + ")" \
        if usd else ""
    if d.inside:
        env = envelope()
        text = (f"{what} sits inside the published runs (one {env.gpus[0]} node, TP = EP = {env.tps[0]}, "
                f"{env.contexts[0]:,}-{env.contexts[1]:,} tokens of context): its price carries {band}{price}, leave-one-out's error.")
        return Said(text, (derived(distance, inside_error),))
    axes = "; ".join(f"{a.name}: {a.here} (every run: {a.measured}"
                     + (f"; {_pct(a.error)} off {a.source})" if a.error is not None else ")") for a in d.axes)
    unchecked = [a.name for a in d.axes if a.error is None]
    n = "one axis" if len(d.axes) == 1 else f"{len(d.axes)} axes"
    text = (f"{what} leaves the published runs on {n}: {axes}. Its price carries {band}{price}"
            + (f": no published run checks the {join_words(unchecked)} part{'s' if len(unchecked) > 1 else ''} of the model, so the error there is "
               "not known" if unchecked else ": the largest error measured for leaving them") + ".")
    return Said(text, (derived(distance, inside_error, other_gpu_error),))


def point_distance(p, shape) -> Distance:
    """A frontier point's distance from the runs (its GPU, EP, TP, formats, batch; the shape's decode context)."""
    return distance(p.gpu, p.ep, p.tp, FRONTIER_FORMATS[p.formats], shape.decode_context, p.batch_per_gpu)


def verdict_said(fr, w, speed: float) -> list[Said]:
    """One sentence beside the verdict: the band its answer's distance from the runs gives (the axes by name), and
    the cheapest point of the same search that sits inside the runs (or that none does)."""
    if w is None:
        return []
    d = point_distance(w, fr.shape)
    band = _band(d)
    where = ("inside the published runs" if d.inside else
             f"outside the published runs on {join_words([a.name for a in d.axes])}")
    inside = [p for p in fr.points if p.tokens_per_s_per_user >= speed and point_distance(p, fr.shape).inside]
    if inside:
        best = min(inside, key=lambda p: p.usd_per_m)
        beside = (f"inside them the cheapest is {gpu_label(best.gpu)}, EP {best.ep}, TP {best.tp} at "
                  f"${best.usd_per_m:,.3f} (±{_pct(inside_error())}), {best.usd_per_m / w.usd_per_m:,.2f}x")
    else:
        beside = "no setup searched at this speed sits inside them"
    return [Said(f"Its price carries {band} ({where}; the table under 'What the prediction fits'); {beside}.",
                 (derived(distance, inside_error), RUNS))]
