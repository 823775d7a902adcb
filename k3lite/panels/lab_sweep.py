"""The lab page's length sweep (assets/lab/, `python -m k3lite.experiments.lab_sweep all`): the tables, notes and
checks its "Recall vs length" section shows, as plain rows and text (views/lab.py draws them).

    SweepData.load(runs, long_runs)   each seed's final number (the longer rerun where the cap stopped it), the capped
                                      numbers, and what the longer cap changed per task
    stale_caption, order_lines, task_tables, protocol_caption, long_tables, lr_tables, mechanisms_line, chance_note
"""
from __future__ import annotations

from typing import NamedTuple

from k3lite.base.evidence import measured_here
from k3lite.experiments import lab_sweep_jobs as sweep
from k3lite.experiments.lab import MIXER_LABELS
from k3lite.experiments.lab_sweep_aggregate import aggregate as sweep_aggregate
from k3lite.experiments.lab_sweep_aggregate import stale_rows
from k3lite.experiments.lab_sweep_checks import long_check, lr_check
from k3lite.experiments.lab_sweep_sentences import mechanism_sentence, order_sentences, short_name

SWEEP_RUNS = measured_here("python -m k3lite.experiments.lab_sweep all, then python -m k3lite.experiments.lab_sweep long "
                           "(assets/lab/, assets/lab/long/: each file stores its command)")


class SweepData(NamedTuple):
    runs: list
    long_runs: list
    rows: list  # each seed's final number: the LONG_STEPS rerun where the cap stopped it
    rows_cap: list  # every run at the MAX_STEPS cap (what the longer cap is compared with)
    checks: dict  # task -> (rows, sentence): what the longer cap changed

    @classmethod
    def load(cls, runs: list, long_runs: list) -> "SweepData":
        return cls(runs, long_runs, sweep_aggregate(runs, long_runs), sweep_aggregate(runs),
                   {t: long_check(runs, long_runs, t) for t in sweep.SEQ_LENS})

    @property
    def tasks(self) -> list[str]:
        return sorted({r["task"] for r in self.rows})


def stale_caption(rows: list) -> str:
    """'' when every cell runs the library's KDA layer, else which cells still show the lab's earlier copy."""
    stale = stale_rows(rows)
    if not stale:
        return ""
    return (f"{len(stale)} cells ({', '.join(sorted({short_name(r['mixer']) for r in stale}))}) still "
            "show runs of the lab's earlier KDA copy (unbounded decay, low-rank output gate); "
            "`python -m k3lite.experiments.lab_sweep all` reruns them on the library's layer.")


def order_lines(rows: list) -> list[str]:
    """Markdown per task: its heading, then the order per length as a list."""
    out = []
    for task in sorted({r["task"] for r in rows}):
        out += [f"**{task}: the order per length** (report: KDA ≥ GDN > Mamba-2)",
                "\n".join(f"- {s}" for s in order_sentences(rows, task))]
    return out


def _cell(sel: dict, T: int) -> str:
    if T not in sel:
        return "not run yet"
    r = sel[T]
    return (f"{100 * r['mean']:.1f} ± {100 * r['std']:.1f} (n={r['n']}"
            + (f", {r['extended']} at {sweep.LONG_STEPS}" if r["extended"] else "") + ")")


def lr_text(sel: dict) -> str:
    """The learning rate each cell of one (task, mixer) row was made at (`sel`: seq_len -> aggregate row): one rate
    when every length used it, else the chosen one and the lengths the learning-rate check's lower rate stands in
    at ("0.03; 0.01 at T=128")."""
    chosen = {r["lr"] for r in sel.values() if not r.get("lr_checked")}
    checked = {T: r["lr"] for T, r in sel.items() if r.get("lr_checked")}
    parts = [f"{lr:g}" for lr in sorted(chosen)]
    parts += [f"{lr:g} at " + ", ".join(f"T={T}" for T in sorted(T for T, x in checked.items() if x == lr))
              for lr in sorted(set(checked.values()))]
    return "; ".join(parts)


def task_tables(rows: list) -> list[tuple[str, list[dict]]]:
    """(heading, rows) per task: one table each, its own lengths as columns, the learning rate per length."""
    out = []
    for task in sorted({r["task"] for r in rows}):
        cells = []
        for mixer in sweep.MIXERS:
            sel = {r["seq_len"]: r for r in rows if r["task"] == task and r["mixer"] == mixer}
            if sel:
                cells.append({"mixer": MIXER_LABELS[mixer], "learning rate": lr_text(sel),
                              **{f"T={T} (%)": _cell(sel, T) for T in sweep.SEQ_LENS[task]}})
        out.append((f"**{task}**: held-out accuracy (%), mean ± std over seeds (n; how many of them are the "
                    f"{sweep.LONG_STEPS}-step reruns)", cells))
    return out


def protocol_caption(d: SweepData) -> str:
    """The sweep's model, protocol, stopping rule and rerun counts."""
    rows, rows_cap = d.rows, d.rows_cap
    n_cap = sum(r["not_plateaued"] for r in rows)  # with the reruns in place
    n_capped = sum(r["not_plateaued"] for r in rows_cap)
    n_ext = sum(r["extended"] + r["rerun_shorter"] for r in rows)  # capped runs with a rerun
    n_short = sum(r["rerun_shorter"] for r in rows)
    so_far = f" so far (the others show their {sweep.MAX_STEPS}-step number)" if n_ext < n_capped else ""
    checked = sorted((r["task"], r["seq_len"], r["mixer"]) for r in rows if r.get("lr_checked"))
    lr_note = ("" if not checked else
               f", except {len(checked)} cell{'s' if len(checked) > 1 else ''} ("
               + ", ".join(f"{t} T={T} {short_name(m)}" for t, T, m in checked)
               + ") where the learning-rate check ran every seed one rate lower and did better, so those runs stand "
               "in (the table's learning-rate column names the rate per length)")
    return (
        f"Held-out accuracy on the answer tokens of {sweep.EVAL_EXAMPLES} fresh sequences, mean ± std over seeds (n). "
        f"Model: {sweep.D_MODEL}-wide, 2 layers x {sweep.N_HEADS} heads, no FFN, vocabulary {sweep.VOCAB}, batch "
        f"{sweep.BATCH_SIZE}. Protocol: per task and mixer the learning rate is the best of {list(sweep.LRS)} at "
        f"T = " + " / ".join(f"{T} ({t})" for t, T in sweep.LR_SEQ_LEN.items()) + " (seed 0), then used at every "
        f"length and seed{lr_note}; a run stops when held-out accuracy "
        f"reaches {100 * sweep.SOLVED:.0f}%, or its best held-out accuracy gained less than "
        f"{100 * sweep.MIN_GAIN:.0f} point{'s' if sweep.MIN_GAIN != 0.01 else ''} over {sweep.PATIENCE} steps (after "
        f"{sweep.MIN_STEPS}), or at "
        f"{sweep.MAX_STEPS} steps (a run still at chance, below {100 * sweep.ESCAPE_ACC:.0f}%, is never called a "
        f"plateau). A run that cap stopped (still gaining, or still at chance) is run again from scratch with a "
        f"{sweep.LONG_STEPS}-step cap and the same rule, and the table shows the rerun in its place unless the rerun "
        f"stopped on a plateau after fewer steps than the capped run had trained (its learning rate anneals over "
        f"{sweep.LONG_STEPS} steps, so a plateau can be called while it is still high; then the longer-trained "
        f"capped run stands: {n_short} seeds): {n_ext} of the {n_capped} capped runs have a rerun{so_far}; {n_cap} "
        f"of the {sum(r['n'] for r in rows)} runs shown ended at their step cap rather than a plateau "
        f"({sum(r['rising'] for r in rows)} of them still gaining). {len(d.runs)} runs in all (LR sweep included) "
        f"and {len(d.long_runs)} reruns; each file in "
        "assets/lab/ and assets/lab/long/ stores the command that reproduces it; `python -m k3lite.experiments.lab_sweep all` "
        "then `python -m k3lite.experiments.lab_sweep long` make (or complete) the set.")


def long_tables(d: SweepData) -> list[tuple[str, list[dict]]]:
    """(markdown, rows) per task the longer cap changed something in, at its longest length."""
    out = []
    for task, (long_rows, long_sentence) in d.checks.items():
        if not long_rows:
            continue
        T_max = max(sweep.SEQ_LENS[task])
        at_max = [r for r in d.rows_cap if r["task"] == task and r["seq_len"] == T_max]
        out.append((f"**What the longer cap changed ({task}, T = {T_max}, {sum(r['n'] for r in at_max)} runs).** "
                    + long_sentence,
                    [{"mixer": MIXER_LABELS[r["mixer"]], "seeds": ", ".join(map(str, r["seeds"])),
                      f"held-out % ({sweep.MAX_STEPS}-step cap)":
                          None if r["short_mean"] is None else round(100 * r["short_mean"], 1),
                      f"held-out % ({sweep.LONG_STEPS}-step cap)": f"{100 * r['long_mean']:.1f} ± {100 * r['long_std']:.1f}",
                      "steps run": ", ".join(map(str, r["steps"])),
                      "still gaining at the cap": r["still_rising"]} for r in long_rows]))
    return out


def lr_tables(d: SweepData) -> list[tuple[str, list[dict]]]:
    """(sentence, rows) per task with a learning-rate check: the chosen LR against the next lower one."""
    out = []
    for task in sweep.SEQ_LENS:
        lr_rows, lr_sentence = lr_check(d.runs, d.long_runs, task)
        if lr_rows:
            out.append((lr_sentence, [{"mixer": MIXER_LABELS[r["mixer"]],
                                       "chosen LR": r["lr"], "held-out % (chosen LR)": round(100 * r["mean"], 1),
                                       "seeds at chance (chosen LR)": f"{r['at_chance']} of {r['n']}",
                                       "lower LR": r["low_lr"],
                                       "held-out % (lower LR)": f"{100 * r['low_mean']:.1f} ± {100 * r['low_std']:.1f}",
                                       "seeds at chance (lower LR)": f"{r['low_at_chance']} of {r['low_n']}",
                                       "still gaining (lower LR)": r["low_rising"]} for r in lr_rows]))
    return out


def mechanisms_line(rows: list) -> str:
    """'' or the one-idea-at-a-time sentence per task."""
    tasks = sorted({r["task"] for r in rows})
    mechanisms = [m for m in (mechanism_sentence(rows, t) for t in tasks) if m]
    if not mechanisms:
        return ""
    return ("**One idea at a time** (DeltaNet is the control: the delta rule without decay). "
            + " ".join(f"{t}: {m}" for t, m in zip(tasks, mechanisms)))


def chance_note(rows: list) -> str:
    """The runs that never left chance, and what evidence would move the numbers."""
    n_chance = sum(r["at_chance"] for r in rows)
    at_chance = sorted({(r["task"], r["seq_len"], r["mixer"]) for r in rows if r["at_chance"]})
    return ((f"{n_chance} of the {sum(r['n'] for r in rows)} runs shown never left chance (best held-out accuracy "
             f"below {100 * sweep.ESCAPE_ACC:.0f}%) within their step cap ("
             + ", ".join(f"{t} T={T} {short_name(m)}" for t, T, m in at_chance) + "): these tasks are learned in a "
             "sudden jump after a flat stretch at chance, so such a number says 'had not started within the step "
             "cap', not where a learning model levels off. " if n_chance else "")
            + "What would change a verdict that differs from the report: the report's models are larger and trained "
            "far longer, with learning rates swept at every length. Here the learning rate is chosen at one length, "
            f"training stops at {sweep.LONG_STEPS} steps at most, and the sequences may not be long enough for the "
            "state to run out of room; a learning-rate grid per length (the runs that never left chance are the first "
            "place it would change a number), more steps, and longer sequences are the evidence that would move these "
            "numbers.")
