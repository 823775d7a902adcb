"""The state-size sweep's computed sentences and its text table, built from `aggregate`'s rows: where softmax
attention and the recurrent mixers part (`ceiling_sentence`), whether the update rule orders the mixers at equal
state (`rule_sentence`), the report's order at each head dim and what the report's setting would cost here
(`report_sentence`), and what the lab's initialisation changes (`ablation_sentence`). The verdict rules are the
length sweep's (`k3lite.experiments.lab_sweep_sentences`).
"""
from __future__ import annotations

import statistics

from k3lite.base.units import fmt_bytes
from k3lite.base.wording import compare
from k3lite.experiments.lab_state_jobs import (ABLATION_HEAD_DIM, FLAT_GAIN, FLAT_WINDOW, LONG_STEPS, MIXERS,
                                               NUM_PAIRS, RECURRENT, SEQ_LEN, STEPS)
from k3lite.experiments.lab_sweep_sentences import (REPORT_ORDER, ranked_chain, report_verdict, short_name, tie_phrase,
                                                 within_spread)


# The report's synthetic-task setting (Kimi Linear, arXiv 2510.26692, §5.1): what a like-for-like run would need.
REPORT_SETTING = {"head_dim": 128, "seq_len": 2048, "steps": 20_000}


def _cell(rows: list[dict], mixer: str, head_dim: int) -> dict | None:
    return next((r for r in rows if r["mixer"] == mixer and r["head_dim"] == head_dim), None)


def _tie(a: dict, b: dict) -> bool:
    """Two cells within seed spread (`lab_sweep_sentences.within_spread`, the rule every verdict of both sweeps
    uses)."""
    return within_spread((a["mean"], a["std"]), (b["mean"], b["std"]))


def ceiling_sentence(rows: list[dict]) -> str:
    """Where softmax attention and the recurrent mixers part, per head dim: attention's recall with its KV cache
    against the best recurrent mixer's with its fixed state, and whether the gap is beyond seed spread."""
    parts = []
    for K in sorted({r["head_dim"] for r in rows}):
        att = _cell(rows, "attention", K)
        rec = [r for r in rows if r["head_dim"] == K and r["mixer"] in RECURRENT]
        if att is None or not rec:
            continue
        best = max(rec, key=lambda r: r["mean"])
        apart = f"{100 * (att['mean'] - best['mean']):.0f} points apart"
        verdict = (f"{apart}; {min(att['n'], best['n'])} seed so far, no spread yet" if min(att["n"], best["n"]) < 2 else
                   tie_phrase((att["mean"], att["std"]), (best["mean"], best["std"])) if _tie(att, best) else apart)
        parts.append(f"at K = {K}, softmax attention recalls {100 * att['mean']:.0f}% from a "
                     f"{fmt_bytes(att['state_bytes'])} KV cache, the best recurrent mixer ({short_name(best['mixer'])}) "
                     f"{100 * best['mean']:.0f}% ± {100 * best['std']:.0f} from a {fmt_bytes(best['state_bytes'])} "
                     f"state ({verdict})")
    return ("Per layer memory: " + "; ".join(parts) + ".") if parts else ""


# A recurrent mixer that recalls under a fifth of the pairs has run out of state, whatever its update rule: a
# difference between two such mixers (say 9% against 2%) is not a lesson about the rule.
RUN_OUT = 0.2


def _clearly_apart(hi: dict, lo: dict) -> bool:
    """`hi`'s mean above `lo`'s by more than twice the larger seed spread (and 2 points): with 5 seeds a gap of
    one spread is about 1.6 standard errors of the difference, twice it about 3. Beyond one spread, the chains'
    '>', is enough to order two cells, not to say what orders them."""
    return hi["mean"] - lo["mean"] > max(0.02, 2 * hi["std"], 2 * lo["std"])


def rule_sentence(rows: list[dict]) -> str:
    """At equal state (each head dim), does the update rule order the recurrent mixers, or is the size of the
    state what decides? Order with '>' (beyond seed spread) and '≈' (within), then a verdict per K: every rule run
    out (best below RUN_OUT); the rule matters (a pair more than twice the larger seed spread apart, the lower
    cell's seeds all levelled off); a gap too small, or a lower cell still rising, to credit the rule; or all within spread."""
    parts, verdicts = [], []
    for K in sorted({r["head_dim"] for r in rows}):
        rec = sorted((r for r in rows if r["head_dim"] == K and r["mixer"] in RECURRENT), key=lambda r: -r["mean"])
        if len(rec) < 2:
            continue
        parts.append(f"K = {K} ({fmt_bytes(rec[0]['state_bytes'])}): "
                     + ranked_chain([(r["mixer"], r["mean"], r["std"]) for r in rec]))
        top, bottom = rec[0], rec[-1]
        apart = [(a, b) for a, b in zip(rec, rec[1:]) if not _tie(a, b)]  # neighbours beyond seed spread
        if top["mean"] < RUN_OUT:
            verdicts.append(f"at K = {K} every update rule has run out of state (the best recalls "
                            f"{100 * top['mean']:.0f}%)")
        elif min(r["n"] for r in rec) < 2:
            verdicts.append(f"at K = {K} too few seeds yet to tell ({min(r['n'] for r in rec)} for some mixer)")
        elif not _tie(top, bottom) or apart:
            win, lose = (top, bottom) if not _tie(top, bottom) else apart[0]
            # the difference of the one-decimal means, so the sentence's numbers add up as printed
            gap = round(round(100 * win["mean"], 1) - round(100 * lose["mean"], 1), 1)
            spread = 100 * max(win["std"], lose["std"])
            if _clearly_apart(win, lose) and not lose["not_flat"]:
                verdict = (f"at K = {K} the update rule matters: {short_name(win['mixer'])} "
                           f"{compare(win['mean'], lose['mean'], 'beats', 'trails', 'ties with')} "
                           f"{short_name(lose['mixer'])} by {gap:.1f} points, over twice the larger seed spread "
                           f"({spread:.1f})")
                plain = _cell(rec, "linear", K)  # the additive rule with no decay: what delta updates and decay refine
                if plain is not None and plain is not top and plain is not lose and _tie(plain, top):
                    verdict += (f", yet the plain additive rule (linear, {100 * plain['mean']:.0f}%) ties with the "
                                "best: delta updates and decay buy nothing beyond seed spread here")
            else:
                why = [] if _clearly_apart(win, lose) else ["not beyond twice it"]
                if lose["not_flat"]:
                    why.append(f"with {lose['not_flat']} {short_name(lose['mixer'])} seed"
                               f"{'s' * (lose['not_flat'] != 1)} still rising")
                verdict = (f"at K = {K} {short_name(win['mixer'])} leads {short_name(lose['mixer'])} by {gap:.1f} "
                           f"points, beyond the seed spread ({spread:.1f}) but " + " and ".join(why)
                           + ": too close to credit the update rule")
            verdicts.append(verdict)
        else:
            verdicts.append(f"at K = {K} all are within seed spread: the size of the state decides")
    if not parts:
        return ""
    return "Recurrent mixers at equal state: " + "; ".join(parts) + " — " + "; ".join(verdicts) + "." + _rising(rows)


def _rising(rows: list[dict]) -> str:
    """Which recurrent cells still had seeds gaining at their cap (`flat`): their means are lower bounds."""
    parts = []
    for K in sorted({r["head_dim"] for r in rows}):
        up = [r for r in rows if r["head_dim"] == K and r["mixer"] in RECURRENT and r["not_flat"]]
        if up:
            parts.append(f"K = {K} " + ", ".join(f"{short_name(r['mixer'])} {r['not_flat']}" for r in up))
    if not parts:
        return ""
    return (f" Not final (seeds still gaining ≥ {100 * FLAT_GAIN:.0f} points over their last {100 * FLAT_WINDOW:.0f}% "
            "of steps, so their cells' means are lower bounds): " + "; ".join(parts) + ".")


def report_sentence(rows: list[dict]) -> str:
    """The report's order (KDA >= GDN > Mamba-2) checked at each head dim (`lab_sweep_sentences.report_verdict`);
    where it does not appear, what the report's setting was and what a run of it would cost on this machine (the
    measured wall time per step of the largest head dim, scaled by the state update's work per token, K^2, and by
    T)."""
    verdicts = []
    for K in sorted({r["head_dim"] for r in rows}):
        order = [(r["mixer"], r["mean"], r["std"]) for r in sorted(
            (r for r in rows if r["head_dim"] == K and r["mixer"] in REPORT_ORDER), key=lambda r: -r["mean"])]
        if len(order) >= 2:
            verdicts.append((K, report_verdict(order) if order[0][1] >= RUN_OUT else
                             f"not a test of the order (all under {100 * RUN_OUT:.0f}%: the state has run out)"))
    if not verdicts:
        return ""
    text = "The report's order, KDA ≥ GDN > Mamba-2: " + "; ".join(f"K = {K}: {v}" for K, v in verdicts) + "."
    if any(v.startswith("differs") or "ties" in v for _, v in verdicts):
        K = max(r["head_dim"] for r in rows if r["mixer"] in RECURRENT)
        per_step = statistics.median(r["step_s"] for r in rows if r["head_dim"] == K and r["mixer"] in RECURRENT)
        rep = REPORT_SETTING
        hours = per_step * (rep["head_dim"] / K) ** 2 * (rep["seq_len"] / SEQ_LEN) * rep["steps"] / 3600
        text += (f" The report trained head dim {rep['head_dim']} at lengths 256–{rep['seq_len']:,} for up to "
                 f"{rep['steps']:,} steps (Kimi Linear, arXiv 2510.26692, §5.1). Scaled from a K = {K} step here "
                 f"({1000 * per_step:.0f} ms median) by K² and T, one such run would take about {hours:,.0f} CPU-hours "
                 "on this machine: a GPU job, not this page's.")
    return text


def ablation_sentence(rows: list[dict], table_rows: list[dict] | None = None) -> str:
    """What the lab's initialisation changes, from `ablation_rows`: per mixer lab vs reference init, the order
    of the mixers under each ('>' beyond seed spread, '≈' within), and which mixers only learn with the lab's init.
    Both inits are compared at the STEPS cap on the seeds both have; `table_rows` (`aggregate`'s, the headline
    table) adds what the table shows for the same cells where it differs (more seeds, LONG_STEPS reruns)."""
    if not rows:
        return ""
    parts = [f"{short_name(r['mixer'])} {100 * r['lab_mean']:.0f}% → {100 * r['ref_mean']:.0f}%" for r in rows]
    moved = [r for r in rows if not within_spread((r["lab_mean"], r["lab_std"]), (r["ref_mean"], r["ref_std"]))]
    by_lab, by_ref = (sorted(rows, key=lambda r: -r[k]) for k in ("lab_mean", "ref_mean"))
    stuck = [r for r in rows if r["ref_mean"] < RUN_OUT <= r["lab_mean"]]
    seeds = sorted({s for r in rows for s in r["seeds"]})
    tail = (f" Order with the lab's init: {ranked_chain([(r['mixer'], r['lab_mean'], r['lab_std']) for r in by_lab])}; "
            f"with the reference init: {ranked_chain([(r['mixer'], r['ref_mean'], r['ref_std']) for r in by_ref])}.")
    if stuck:
        tail += (f" With the reference init {', '.join(short_name(r['mixer']) for r in stuck)} "
                 f"stay{'s' if len(stuck) == 1 else ''} under "
                 f"{100 * RUN_OUT:.0f}% in {STEPS:,} steps: the lab's init is what lets them learn in this budget, so "
                 "the recurrent numbers above assume it.")
    shown = {r["mixer"]: r for r in (table_rows or []) if r["head_dim"] == ABLATION_HEAD_DIM}
    differ = [(r, shown[r["mixer"]]) for r in rows
              if r["mixer"] in shown and round(100 * shown[r["mixer"]]["mean"]) != round(100 * r["lab_mean"])]
    if differ:
        n_table = sorted({t["n"] for _, t in differ})
        reruns = sum(t["extended"] for _, t in differ)
        tail += (f" These are the {STEPS:,}-step runs of seeds {seeds[0]}–{seeds[-1]} on both sides; the table above "
                 f"averages {'/'.join(map(str, n_table))} seeds"
                 + (f" and puts {LONG_STEPS:,}-step reruns in place of the {reruns} seeds still rising at {STEPS:,}"
                    if reruns else "")
                 + ", so for the lab init it shows "
                 + ", ".join(f"{short_name(r['mixer'])} {100 * t['mean']:.0f}%" for r, t in differ) + ".")
    return (f"Init ablation at K = {ABLATION_HEAD_DIM} (lab init → reference init, same seeds, learning rate and "
            f"{STEPS:,}-step cap): " + "; ".join(parts)
            + f". Beyond seed spread: {', '.join(short_name(r['mixer']) for r in moved) or 'none'}." + tail)


def fmt_points(value: float) -> str:
    """'26.7 points': a recall difference in percentage points (the lab page's headline format)."""
    return f"{value:.1f} points"


def format_table(rows: list[dict]) -> str:
    dims = sorted({r["head_dim"] for r in rows})
    lines = [f"MQAR T={SEQ_LEN}, {NUM_PAIRS} pairs: held-out accuracy %, mean ± std (n) [not flat] "
             f"{{seeds at {LONG_STEPS} steps}}, per head dim K"]
    lines.append(f"{'mixer':<10}" + "".join(f"{'K=' + str(K):>24}" for K in dims))
    for mixer in MIXERS:
        cells = []
        for K in dims:
            r = next((r for r in rows if r["mixer"] == mixer and r["head_dim"] == K), None)
            cells.append(f"{'-':>24}" if r is None else
                         f"{100 * r['mean']:>9.1f} ±{100 * r['std']:4.1f} ({r['n']}) lr {r['lr']:<6g}"
                         + (f"[{r['not_flat']}]" if r["not_flat"] else "") + (f"{{{r['extended']}}}" if r["extended"] else ""))
        lines.append(f"{mixer:<10}" + "".join(cells))
    return "\n".join(lines)
