"""The length sweep's two follow-ups, both run by `python -m k3lite.experiments.lab_sweep long` and stored in
`assets/lab/long/`: the longer cap (every run the MAX_STEPS cap stopped, again with LONG_STEPS: `long_jobs`, and what
it changed, `long_check`) and the learning-rate check (a mixer with a seed still at chance at a task's longest
length gets every seed one rate lower: `lr_check_jobs`, and what that changed, `lr_check`).
"""
from __future__ import annotations

import statistics

from k3lite.experiments.lab_sweep_aggregate import aggregate, at_chance, mean_std, still_rising
from k3lite.experiments.lab_sweep_jobs import (LONG_STEPS, LRS, MAX_STEPS, MIN_GAIN, MIXERS, PATIENCE, SEEDS, SEQ_LENS,
                                               Job, chosen_lr)
from k3lite.experiments.lab_sweep_sentences import report_verdict, seeds_phrase, short_name


def long_jobs(runs: list[dict], task: str | None = None) -> list[Job]:
    """The longer cap: every main-sweep run (`runs`, each mixer at its chosen LR) that MAX_STEPS stopped -- still
    gaining, or never having left chance -- run again from scratch with LONG_STEPS as the cap (same LR, same
    stopping rule, its own cosine schedule). Longest lengths first (where the mixers separate), runs that learned
    before runs that never left chance, then by task, mixer and seed. `task` limits it to one task."""
    jobs = []
    for r in runs:
        j = Job(**r["job"])
        if (task is not None and j.task != task) or j.steps is not None or j.seed not in SEEDS \
                or r.get("stop_reason") != "max_steps" or j.lr != chosen_lr(runs, j.task, j.mixer):
            continue
        lens = sorted(SEQ_LENS.get(j.task, (j.seq_len,)), reverse=True)
        rank = lens.index(j.seq_len) if j.seq_len in lens else len(lens)
        chance = at_chance(r)
        key = (rank, chance, list(SEQ_LENS).index(j.task) if j.task in SEQ_LENS else 99,
               MIXERS[::-1].index(j.mixer) if j.mixer in MIXERS else 99, j.seed)
        jobs.append((key, Job(j.task, j.mixer, j.seq_len, j.lr, j.seed, LONG_STEPS)))
    return [j for _, j in sorted(jobs, key=lambda kj: kj[0])]


def long_check(runs: list[dict], long_runs: list[dict], task: str = "mqar") -> tuple[list[dict], str]:
    """What the longer cap changed at the task's longest length: per mixer, the seeds the MAX_STEPS cap stopped
    that have a LONG_STEPS rerun, with their mean at each cap. Returns (rows, sentence); the sentence says how many
    of the capped runs have a rerun so far and, per mixer, the change in its mean over those seeds -- not a ranking
    (each mixer's rerun seeds are the ones its cap stopped, a different subset per mixer: the order at this
    length is `order_sentences` on the aggregate with the reruns in place). "" until a rerun has finished."""
    T = max(SEQ_LENS[task])
    capped = [j for j in long_jobs(runs, task) if j.seq_len == T]
    found: dict[str, list[tuple[dict, dict | None]]] = {}
    for job in capped:
        long_run = next((r for r in long_runs if Job(**r["job"]) == job), None)
        if long_run is not None:
            short = next((r for r in runs if Job(**r["job"]) == Job(task, job.mixer, T, job.lr, job.seed)), None)
            found.setdefault(job.mixer, []).append((long_run, short))
    rows = []
    for mixer in MIXERS:
        if mixer not in found:
            continue
        longs = [lr["final_eval_acc"] for lr, _ in found[mixer]]
        shorts = [sr["final_eval_acc"] for _, sr in found[mixer] if sr is not None]
        rows.append({"mixer": mixer, "lr": found[mixer][0][0]["job"]["lr"], "n": len(longs),
                     "seeds": [lr["job"]["seed"] for lr, _ in found[mixer]],
                     **dict(zip(("long_mean", "long_std"), mean_std(longs))),
                     "short_mean": statistics.fmean(shorts) if len(shorts) == len(longs) else None,
                     "steps": [lr["steps_done"] for lr, _ in found[mixer]],
                     "still_rising": sum(still_rising(lr) for lr, _ in found[mixer]),
                     "at_cap": sum(lr.get("stop_reason") == "max_steps" for lr, _ in found[mixer])})
    if not rows:
        return rows, ""
    done = sum(r["n"] for r in rows)
    changes = "; ".join(f"{short_name(r['mixer'])} {100 * r['short_mean']:.0f}% → {100 * r['long_mean']:.0f}% "
                        f"({seeds_phrase([r['n']])})" for r in rows if r["short_mean"] is not None)
    rising = [f"{short_name(r['mixer'])} ({r['still_rising']} of {r['n']})" for r in rows if r["still_rising"]]
    # a rerun the longer cap stopped that was not still gaining levelled off *at* its cap, not before it
    flat_at_cap = [f"{short_name(r['mixer'])} ({r['at_cap'] - r['still_rising']} of {r['n']})" for r in rows
                   if r["at_cap"] > r["still_rising"]]
    return rows, (f"{done} of the {len(capped)} runs the {MAX_STEPS}-step cap stopped at T = {T} have a "
                  f"{LONG_STEPS}-step rerun{' so far' if done < len(capped) else ''}. Mean over the rerun seeds, "
                  f"{MAX_STEPS} → {LONG_STEPS} steps: {changes}"
                  + (f"; still gaining at the longer cap: {', '.join(rising)}" if rising else "")
                  + (f"; ran all {LONG_STEPS} steps, gaining less than {MIN_GAIN:.0%} accuracy in its last "
                     f"{PATIENCE}: {', '.join(flat_at_cap)}" if flat_at_cap else "")
                  + ("; every rerun levelled off or was solved before its cap." if not rising and not flat_at_cap
                     else "."))


def lr_check_jobs(runs: list[dict], long_runs: list[dict]) -> list[Job]:
    """The learning-rate check: at each task's longest length, a mixer with a seed that never left chance at its
    chosen LR (with its rerun in place) gets every seed again at the next lower LR of `LRS`, with the LONG_STEPS
    cap. A failed start says more about the LR than about the state; this shows whether the mixer learns there
    at a gentler LR. Stored with the reruns (their LR differs from the chosen one, so nothing substitutes them)."""
    rows = aggregate(runs, long_runs, lr_checked=False)
    jobs = []
    for task in SEQ_LENS:
        T = max(SEQ_LENS[task])
        for r in rows:
            lower = [lr for lr in LRS if lr < r["lr"]]
            if r["task"] == task and r["seq_len"] == T and r["at_chance"] and lower:
                jobs += [Job(task, r["mixer"], T, max(lower), s, LONG_STEPS) for s in SEEDS]
    return jobs


def lr_check(runs: list[dict], long_runs: list[dict], task: str) -> tuple[list[dict], str]:
    """The learning-rate check's result at the task's longest length (`lr_check_jobs`): per mixer, its mean at the
    chosen LR (reruns in place) and at the lower LR, with the seeds at chance in each, and the order at that
    length with the lower LR for those mixers. Returns (rows, sentence); "" until a check run has finished."""
    T = max(SEQ_LENS[task])
    final = {r["mixer"]: r for r in aggregate(runs, long_runs, lr_checked=False)
             if r["task"] == task and r["seq_len"] == T}
    by_mixer: dict[str, list[dict]] = {}
    for job in lr_check_jobs(runs, long_runs):
        if job.task != task:
            continue
        rec = next((r for r in long_runs if Job(**r["job"]) == job), None)
        if rec is not None:
            by_mixer.setdefault(job.mixer, []).append(rec)
    rows = []
    for mixer in MIXERS:
        recs = by_mixer.get(mixer)
        if not recs:
            continue
        accs = [r["final_eval_acc"] for r in sorted(recs, key=lambda r: r["job"]["seed"])]
        rows.append({"mixer": mixer, "lr": final[mixer]["lr"], "mean": final[mixer]["mean"],
                     "at_chance": final[mixer]["at_chance"], "n": final[mixer]["n"],
                     "low_lr": recs[0]["job"]["lr"], "low_n": len(accs),
                     **dict(zip(("low_mean", "low_std"), mean_std(accs))),
                     "low_at_chance": sum(map(at_chance, recs)),
                     "low_rising": sum(still_rising(r) for r in recs)})
    if not rows:
        return rows, ""
    parts = "; ".join(f"{short_name(r['mixer'])} {100 * r['mean']:.0f}% at {r['lr']:g} ({r['at_chance']} of {r['n']} "
                      f"seeds at chance) → {100 * r['low_mean']:.0f}% at {r['low_lr']:g} ({r['low_at_chance']} of "
                      f"{r['low_n']} at chance)" for r in rows)
    text = (f"Learning-rate check at T = {T}: the mixers with a seed that never left chance at their chosen rate, "
            f"every seed again one step lower ({LONG_STEPS}-step cap): {parts}.")
    if all(r["low_n"] == len(SEEDS) for r in rows):
        low = {r["mixer"]: (r["low_mean"], r["low_std"]) for r in rows}
        order = sorted(((m, *low.get(m, (f["mean"], f["std"]))) for m, f in final.items()),
                       key=lambda x: (-x[1], MIXERS.index(x[0])))
        text += (" With the lower rate for those mixers the order at this length is "
                 + " > ".join(f"{short_name(m)} {100 * a:.0f}%" for m, a, _ in order)
                 + f" — {report_verdict(order)}.")
    return rows, text
