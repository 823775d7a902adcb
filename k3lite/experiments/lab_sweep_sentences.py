"""The length sweep's computed sentences and its text table, built from `aggregate`'s rows: the order per length
against the report's (`order_sentences`), what each idea KDA adds to linear attention changes
(`mechanism_sentence`), whether linear attention runs out of room (`capacity_sentence`), how the mixers spread with
length (`spread_sentence`); and the verdict rules the state-size sweep's sentences use too (`within_spread`,
`ranked_chain`, `report_verdict`, `short_name`).
"""
from __future__ import annotations

import statistics

from k3lite.base.wording import compare
from k3lite.experiments.lab_sweep_jobs import LONG_STEPS, MAX_STEPS, MIN_GAIN, MIXERS, PATIENCE, SEQ_LENS, VOCAB
from k3lite.experiments.tasks import chance_accuracy

REPORT_ORDER: tuple[str, ...] = ("kda", "gdn", "mamba2")  # Kimi Linear report: KDA >= GDN > Mamba-2


def order_at(rows: list[dict], task: str, seq_len: int, min_seeds: int = 1) -> list[tuple[str, float, float]]:
    """(mixer, mean, std) at one (task, length), best first, over mixers with at least `min_seeds` seeds."""
    sel = [r for r in rows if r["task"] == task and r["seq_len"] == seq_len and r["n"] >= min_seeds]
    return [(r["mixer"], r["mean"], r["std"]) for r in sorted(sel, key=lambda r: (-r["mean"], MIXERS.index(r["mixer"])))]


TIE_FLOOR = 0.02  # two means closer than this (2 points) tie whatever their seed spread


def within_spread(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Two (mean, std) cells tie: their means differ by at most the larger seed spread, or by TIE_FLOOR."""
    return abs(a[0] - b[0]) <= max(TIE_FLOOR, a[1], b[1])


def tie_phrase(a: tuple[float, float], b: tuple[float, float]) -> str:
    """Which half of `within_spread`'s rule ties two (mean, std) cells, in words with its numbers: 'within seed
    spread of ± 3.1 points' when the gap is inside the larger std, else 'a 0.7-point gap, under the 2-point floor
    below which two cells count as tied; seed spread ± 0.1'. ValueError when they do not tie."""
    gap, spread = abs(a[0] - b[0]), max(a[1], b[1])
    if not within_spread(a, b):
        raise ValueError(f"the cells do not tie: gap {gap:.3f} > max({TIE_FLOOR}, {spread:.3f})")
    if gap <= spread:
        return f"within seed spread of ± {100 * spread:.1f} points"
    return (f"a {100 * gap:.1f}-point gap, under the {100 * TIE_FLOOR:g}-point floor below which two cells count as "
            f"tied; seed spread ± {100 * spread:.1f}")


def ranked_chain(order: list[tuple[str, float, float]]) -> str:
    """(mixer, mean, std) best first as 'KDA 97% ≈ GDN 96% > linear 94%': '>' only beyond seed spread."""
    out = f"{short_name(order[0][0])} {100 * order[0][1]:.0f}%"
    for (_, m0, s0), (mixer, m, sd) in zip(order, order[1:]):
        out += f" {'≈' if within_spread((m0, s0), (m, sd)) else '>'} {short_name(mixer)} {100 * m:.0f}%"
    return out


def report_verdict(order: list[tuple[str, float, float]]) -> str:
    """Does KDA >= GDN > Mamba-2 (the report's direction) hold at this length? Differences within the larger
    of the two seed spreads (std), or within 0.02, count as ties."""
    means = {m: (mean, std) for m, mean, std in order}
    present = [m for m in REPORT_ORDER if m in means]
    if len(present) < 2:
        return "not comparable yet"
    reversed_pairs, ties = [], []
    for i, a in enumerate(present):
        for b in present[i + 1:]:
            if within_spread(means[a], means[b]):
                ties.append(f"{short_name(a)} ≈ {short_name(b)}")
            elif means[b][0] > means[a][0]:
                reversed_pairs.append(f"{short_name(b)} > {short_name(a)}")
    if reversed_pairs:
        return "differs from the report (" + ", ".join(reversed_pairs) + ")"
    if ties:
        return "matches up to ties within seed spread (" + ", ".join(ties) + ")"
    return "matches the report"


def seeds_phrase(counts: list[int]) -> str:
    """'1 seed', '3 seeds' or '1–3 seeds' for the seed counts behind a set of means."""
    ns = sorted(set(counts))
    return f"{ns[0]} seed{'s' if ns[0] > 1 else ''}" if len(ns) == 1 else f"{ns[0]}–{ns[-1]} seeds"


def short_name(mixer: str) -> str:
    return {"linear": "linear", "mamba2": "Mamba-2", "deltanet": "DeltaNet", "gdn": "GDN", "kda": "KDA",
            "attention": "attention"}.get(mixer, mixer)


def order_sentences(rows: list[dict], task: str) -> list[str]:
    """One sentence per length, computed from the runs: the order, with means, and the verdict vs the report."""
    out = []
    for T in SEQ_LENS.get(task, ()):
        order = order_at(rows, task, T)
        if not order:
            continue
        ranked = ranked_chain(order)
        seeds = seeds_phrase([r["n"] for r in rows if r["task"] == task and r["seq_len"] == T])
        rising = [r for r in rows if r["task"] == task and r["seq_len"] == T and r.get("rising")]
        caveat = ""
        if rising:
            n = sum(r["rising"] for r in rising)
            caveat = (f" Not final: {n} of these runs ({', '.join(short_name(r['mixer']) for r in rising)}) "
                      f"{'was' if n == 1 else 'were'} still gaining when "
                      f"{'its' if n == 1 else 'their'} step cap stopped {'it' if n == 1 else 'them'} (at least "
                      f"{100 * MIN_GAIN:.0f} point over the last {PATIENCE} steps), so "
                      f"{'its mixer' if n == 1 else 'their'} means are lower bounds.")
        out.append(f"T = {T}: {ranked} (mean over {seeds} per mixer) — {report_verdict(order)}.{caveat}")
    return out


# What each idea KDA adds to linear attention buys, one step at a time: (with, without, what changes)
MECHANISM_STEPS: tuple[tuple[str, str, str], ...] = (
    ("deltanet", "linear", "the delta rule"),
    ("gdn", "deltanet", "a scalar decay on top of it"),
    ("kda", "gdn", "per-channel instead of scalar decay"),
)


def mechanism_sentence(rows: list[dict], task: str) -> str:
    """At the longest length where all five mixers have results: what the delta rule, the decay and the
    per-channel decay each change, from the means (differences within max(2 points, seed std) are called ties)."""
    lens = [T for T in SEQ_LENS.get(task, ())
            if {m for m, _, _ in order_at(rows, task, T)} >= {m for pair in MECHANISM_STEPS for m in pair[:2]}]
    if not lens:
        return ""
    T = lens[-1]
    stats = {m: (mean, std) for m, mean, std in order_at(rows, task, T)}
    parts = []
    for a, b, what in MECHANISM_STEPS:
        (ma, sa), (mb, sb) = stats[a], stats[b]
        shown_a, shown_b = round(100 * ma, 1), round(100 * mb, 1)  # the difference of the numbers printed
        tie = within_spread((ma, sa), (mb, sb))
        parts.append(f"{what} ({short_name(a)} vs {short_name(b)}): {round(shown_a - shown_b, 1) + 0.0:+.1f} points "
                     f"({shown_a:.1f}% vs {shown_b:.1f}%"
                     + (f"; {tie_phrase((ma, sa), (mb, sb))}" if tie else "") + ")")
    at_T = [r for r in rows if r["task"] == task and r["seq_len"] == T
            and r["mixer"] in {m for pair in MECHANISM_STEPS for m in pair[:2]}]
    rising, chance = sum(r.get("rising", 0) for r in at_T), sum(r.get("at_chance", 0) for r in at_T)
    notes = []
    if rising:
        notes.append(f"{rising} of these runs {'was' if rising == 1 else 'were'} still gaining at "
                     f"{'its' if rising == 1 else 'their'} step cap, so read these differences as learning speed as "
                     "much as capacity")
    if chance:
        notes.append(f"{chance} never left chance, which pulls {'its' if chance == 1 else 'their'} mixer's mean "
                     "down by a whole run (a failed start at this learning rate, not a full state)")
    caveat = f" ({'; '.join(notes)}.)" if notes else ""
    return f"At T = {T}, " + "; ".join(parts) + "." + caveat


DELTA_MIXERS: tuple[str, ...] = ("deltanet", "gdn", "kda")


def capacity_sentence(rows: list[dict], runs: list[dict], final_rows: list[dict] | None = None,
                      task: str = "mqar") -> str:
    """Whether the shipped runs show a capacity effect (linear attention below the best delta-rule mixer): at the
    longest length with linear and a delta-rule mixer, their means with the MAX_STEPS cap (`rows`: `aggregate`
    without reruns), the median wall time of such a run here, and, once every capped run of the two has its
    LONG_STEPS rerun (`final_rows`: `aggregate` with them), whether the gap survives the longer cap (a gap that
    closes with training was learning speed, not room in the state)."""
    for T in reversed(SEQ_LENS.get(task, ())):
        order = {m: mean for m, mean, _ in order_at(rows, task, T)}
        delta = [m for m in DELTA_MIXERS if m in order]
        if "linear" not in order or not delta:
            continue
        best = max(delta, key=order.get)
        walls = [r["wall_s"] for r in runs if r["job"]["task"] == task and r["job"]["seq_len"] == T
                 and r["job"]["mixer"] in ("linear", best) and "wall_s" in r]
        minutes = statistics.median(walls) / 60 if walls else float("nan")
        n = min(r["n"] for r in rows if r["task"] == task and r["seq_len"] == T and r["mixer"] in ("linear", best))
        text = (f"At T = {T}, with the {MAX_STEPS}-step cap, linear attention reached {100 * order['linear']:.0f}% "
                f"against {short_name(best)} {100 * order[best]:.0f}% (mean over {seeds_phrase([n])}); one "
                f"such run took {minutes:.1f} minutes here (median wall time of those runs).")
        capped = {r["mixer"]: r["not_plateaued"] for r in rows if r["task"] == task and r["seq_len"] == T}
        final = {r["mixer"]: r for r in (final_rows or []) if r["task"] == task and r["seq_len"] == T}
        if all(m in final and capped[m] and final[m].get("extended", 0) + final[m].get("rerun_shorter", 0) == capped[m]
               for m in ("linear", best)):  # every capped run of the two has its rerun (used, or shorter and not)
            lin, bst = final["linear"], final[best]
            closes = bst["mean"] - lin["mean"] <= max(0.02, lin["std"], bst["std"])
            text += (f" With every capped run of the two rerun with a {LONG_STEPS}-step cap they reach "
                     f"{100 * lin['mean']:.0f}% and {100 * bst['mean']:.0f}%: "
                     + ("the gap closes, so at this length it was learning speed, not room in the state; a state "
                        "that runs out of room needs longer sequences (or smaller heads) than this CPU sweep covers."
                        if closes else "the gap stays, so at this length it is room in the state, not only speed."))
        return text
    return ""


def spread_sentence(rows: list[dict], task: str) -> str:
    """How the mixers spread from the shortest to the longest length, from the numbers (one sentence)."""
    lens = [T for T in SEQ_LENS.get(task, ()) if order_at(rows, task, T)]
    if len(lens) < 2:
        return ""
    lo, hi = order_at(rows, task, lens[0]), order_at(rows, task, lens[-1])
    mean_lo, mean_hi = {m: a for m, a, _ in lo}, {m: a for m, a, _ in hi}
    both = [m for m in MIXERS if m in mean_lo and m in mean_hi]
    if not both:
        return ""
    drop = max(both, key=lambda m: mean_lo[m] - mean_hi[m])
    best = hi[0][0]
    return (f"From T = {lens[0]} to T = {lens[-1]} the largest drop is {short_name(drop)}'s "
            f"({100 * mean_lo[drop]:.0f}% → {100 * mean_hi[drop]:.0f}%); at T = {lens[-1]} {short_name(best)} is best "
            f"with {100 * hi[0][1]:.0f}%.")


def live_sentence(finals: dict[str, tuple[float, int, float]], task: str, labels: dict[str, str] | None = None,
                  vocab_size: int = VOCAB) -> str:
    """The live run's result: {mixer: (final held-out accuracy, steps trained, seconds)} in the order trained, the
    one ahead (or a tie within half a point), and the task's chance level (`tasks.chance_accuracy`) to the digits
    that show it (1/256 is 0.39%, not '0%')."""
    if not finals:
        raise ValueError("no finished run to describe")
    labels = labels or {}
    text = "Held-out accuracy at the end: " + ", ".join(
        f"{labels.get(m, m)} {100 * acc:.0f}% after {steps} steps ({seconds:.1f} s)"
        for m, (acc, steps, seconds) in finals.items())
    if len(finals) > 1:
        ranked = sorted(finals, key=lambda m: -finals[m][0])
        first, second = ranked[0], ranked[1]
        word = compare(finals[first][0], finals[second][0], "higher", "lower", "level", rel_tol=0.0)
        text += ("; the top two are level" if abs(finals[first][0] - finals[second][0]) < 0.005 else
                 f"; {labels.get(first, first)} ends {word}, "
                 f"{100 * (finals[first][0] - finals[second][0]):.1f} points ahead of {labels.get(second, second)}")
    chance = chance_accuracy(task, vocab_size)
    return text + f". Chance is {100 * chance:.2g}% per answer token (a guess among {round(1 / chance)} tokens)."


def format_table(rows: list[dict]) -> str:
    lines = []
    for task in sorted({r["task"] for r in rows}):
        lens = SEQ_LENS[task]
        lines.append(f"{task}: held-out accuracy, mean ± std over seeds (n), LR per mixer")
        lines.append(f"{'mixer':<9}{'lr':>7}  " + "".join(f"{'T=' + str(T):>16}" for T in lens))
        for mixer in MIXERS:
            cells, lr = [], None
            for T in lens:
                r = next((r for r in rows if r["task"] == task and r["mixer"] == mixer and r["seq_len"] == T), None)
                if r is None:
                    cells.append(f"{'-':>16}")
                else:
                    lr = r["lr"]
                    cells.append(f"{100 * r['mean']:>8.1f} ±{100 * r['std']:4.1f} ({r['n']})")
            if lr is not None:
                lines.append(f"{mixer:<9}{lr:>7g}  " + "".join(cells))
        lines.append("")
    return "\n".join(lines)
