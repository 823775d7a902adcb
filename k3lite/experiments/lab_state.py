"""The lab's headline experiment: recall vs the size of the mixer's memory, at one length (Zoology-style).

Zoology (arXiv 2312.04927) shows the axis the length sweep cannot: at a fixed task, a recurrent mixer's recall
falls below softmax attention's once its fixed-size state is too small for the pairs it must hold, and the
update rule decides how much of that state is usable. Here:

  * one task: MQAR, T = `SEQ_LEN` tokens with `NUM_PAIRS` key-value pairs (keys and values disjoint);
  * the state is set by the head dim K (`HEAD_DIMS`, 2 heads): a recurrent mixer keeps H x K x K numbers per layer
    (`state_bytes`), whatever T; softmax attention keeps its KV cache, 2 x T x H x K numbers (the ceiling);
  * mixers: softmax attention, linear attention, Mamba-2, DeltaNet, Gated DeltaNet, KDA (the library's layer in
    K3's released form, `k3lite.experiments.lab_mixers.LabKDA`);
  * per (mixer, K) the learning rate is picked from `LRS` by seed 0's final held-out accuracy (ties within 0.5
    points go to the lower loss), then `SEEDS` seeds run at it;
  * every run trains exactly `STEPS` steps (no plateau stop; a run that solves the task, held-out accuracy >=
    `SOLVED`, stops there): the stored held-out curve shows whether it was flat (`flat`);
  * the init ablation: at `ABLATION_HEAD_DIM`, the mixers whose initialisation the lab changed run again with the
    reference implementation's defaults (`LabConfig.init = "reference"`), at the same learning rate.

Each finished run is one JSON file under `assets/lab/state/` with the command that reproduces it; the sweep is
resumable and several workers share it (a run is claimed by creating a lock file first).

    python -m k3lite.experiments.lab_state all --workers 2        # everything pending, in the order above (hours on 2 cores)
    python -m k3lite.experiments.lab_state run --mixer kda --head-dim 16 --lr 0.01 --seed 0
    python -m k3lite.experiments.lab_state table                  # mean, spread and n per cell of what has finished
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from k3lite.experiments.lab import LabConfig, train
from k3lite.experiments.lab_mixers import INITS
from k3lite.experiments.lab_store import RESULTS_DIR, _claim, claims_dir_for, load_runs, run_workers, save_record
from k3lite.experiments.lab_sweep_aggregate import mean_std
from k3lite.experiments.lab_sweep_sentences import REPORT_ORDER, ranked_chain, report_verdict, short_name, within_spread
from k3lite.analytic.memory import kda_state_bytes, kv_cache_bytes
from k3lite.base.units import fmt_bytes

STATE_DIR = RESULTS_DIR / "state"

# ----------------------------------------------------------------------------------------------- protocol
MIXERS: tuple[str, ...] = ("attention", "linear", "mamba2", "deltanet", "gdn", "kda")
RECURRENT: tuple[str, ...] = MIXERS[1:]
ABLATION_MIXERS: tuple[str, ...] = ("mamba2", "deltanet", "gdn", "kda")  # the ones whose init the lab changed
HEAD_DIMS: tuple[int, ...] = (16, 8, 32)  # run in this order: 16 first (where the pilot saw the state bind)
ABLATION_HEAD_DIM = 16
N_HEADS = 2
SEQ_LEN, NUM_PAIRS, VOCAB = 128, 32, 512
LRS: tuple[float, ...] = (3e-3, 1e-2, 3e-2)
SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)
STEPS, BATCH_SIZE, EVAL_EVERY, EVAL_EXAMPLES = 2000, 32, 100, 256
LONG_STEPS = 6000  # a seed still rising at STEPS is run again from scratch with this cap; its number replaces the first
SOLVED = 0.99
FLAT_WINDOW, FLAT_GAIN = 0.25, 0.02  # flat: best held-out accuracy gained < 2 points over the last 25% of steps
BYTES_PER_ELEM = 4  # fp32, as the lab trains and as KDACache keeps the state


def state_bytes(mixer: str, head_dim: int, n_heads: int = N_HEADS, seq_len: int = SEQ_LEN) -> int:
    """Memory one mixer layer keeps to read the next token, fp32: the H x K x K state of a recurrent mixer
    (`k3lite.analytic.memory.kda_state_bytes` without the conv tail), or softmax attention's KV cache at `seq_len`."""
    if mixer == "attention":
        return kv_cache_bytes(seq_len, n_heads, head_dim, bytes_per_elem=BYTES_PER_ELEM)
    if mixer not in RECURRENT:
        raise ValueError(f"mixer must be one of {MIXERS}, got {mixer!r}")
    return kda_state_bytes(n_heads, head_dim, conv_size=0, state_bytes_per_elem=BYTES_PER_ELEM)


@dataclass(frozen=True)
class Job:
    mixer: str
    head_dim: int
    lr: float
    seed: int
    init: str = "lab"
    steps: int = STEPS

    @property
    def name(self) -> str:
        tail = ("" if self.init == "lab" else f"_{self.init}") + ("" if self.steps == STEPS else f"_steps{self.steps}")
        return f"mqar_T{SEQ_LEN}_K{self.head_dim}_{self.mixer}_lr{self.lr:g}_s{self.seed}{tail}"

    def path(self, results_dir: Path = STATE_DIR) -> Path:
        return Path(results_dir) / f"{self.name}.json"

    @property
    def command(self) -> str:
        tail = ("" if self.init == "lab" else f" --init {self.init}") + ("" if self.steps == STEPS else f" --steps {self.steps}")
        return (f"python -m k3lite.experiments.lab_state run --mixer {self.mixer} --head-dim {self.head_dim} --lr {self.lr:g} "
                f"--seed {self.seed}{tail}")

    def config(self) -> LabConfig:
        return LabConfig(task="mqar", mixer=self.mixer, seq_len=SEQ_LEN, vocab_size=VOCAB, num_pairs=NUM_PAIRS,
                         d_model=N_HEADS * self.head_dim, n_heads=N_HEADS, ffn_mult=0, steps=self.steps,
                         batch_size=BATCH_SIZE, lr=self.lr, eval_every=EVAL_EVERY, eval_examples=EVAL_EXAMPLES,
                         seed=self.seed, init=self.init)


def run_job(job: Job, results_dir: Path = STATE_DIR, quiet: bool = True) -> dict:
    """Train one run (job.steps steps, or until solved) and write its JSON atomically. Returns the record."""
    cfg = job.config()

    def on_step(rec):
        if rec.eval_acc is None:
            return True
        if not quiet:
            print(f"  {job.name} step {rec.step} eval acc {rec.eval_acc:.3f} ({rec.elapsed_s:.0f} s)", file=sys.stderr)
        return rec.eval_acc < SOLVED

    result = train(cfg, on_step=on_step)
    record = {
        "job": asdict(job), "command": job.command, "config": result.config,
        "steps_done": result.steps_done, "solved": result.final_eval_acc >= SOLVED,
        "final_eval_acc": result.final_eval_acc, "final_eval_loss": result.final_eval_loss,
        "evals": result.evals, "state_bytes": state_bytes(job.mixer, job.head_dim),
        "n_params": result.n_params, "wall_s": result.wall_s, "torch": torch.__version__,
        "threads": torch.get_num_threads(),
    }
    save_record(record, job.path(results_dir))
    return record


# ---------------------------------------------------------------------------------------------- results
def flat(run: dict) -> bool:
    """Solved, or its best held-out accuracy gained less than FLAT_GAIN over the last FLAT_WINDOW of its steps."""
    if run.get("solved"):
        return True
    steps, accs = run["evals"]["step"], run["evals"]["acc"]
    cut = steps[-1] * (1 - FLAT_WINDOW)
    earlier = [a for s, a in zip(steps, accs) if s <= cut]
    return bool(earlier) and max(accs) - max(earlier) < FLAT_GAIN


def _runs_of(runs: list[dict], mixer: str, head_dim: int, init: str = "lab", steps: int = STEPS) -> list[dict]:
    """The runs of one cell at one step cap (the grid and the seeds: STEPS; the longer reruns: LONG_STEPS)."""
    return [r for r in runs if r["job"]["mixer"] == mixer and r["job"]["head_dim"] == head_dim
            and r["job"].get("init", "lab") == init and r["job"].get("steps", STEPS) == steps]


def extended(runs: list[dict], mixer: str, head_dim: int, lr: float) -> dict[int, dict]:
    """seed -> its LONG_STEPS rerun, for the cell's seeds at `lr` that have one."""
    return {r["job"]["seed"]: r for r in _runs_of(runs, mixer, head_dim, steps=LONG_STEPS) if r["job"]["lr"] == lr}


def chosen_lr(runs: list[dict], mixer: str, head_dim: int) -> float | None:
    """The LR of `LRS` with the best final held-out accuracy at seed 0 (ties within 0.5 points: lower loss);
    None until all of them have finished."""
    found = {r["job"]["lr"]: r for r in _runs_of(runs, mixer, head_dim) if r["job"]["seed"] == 0}
    if any(lr not in found for lr in LRS):
        return None
    return min(LRS, key=lambda lr: (-round(found[lr]["final_eval_acc"] / 0.005), found[lr]["final_eval_loss"]))


def aggregate(runs: list[dict], init: str = "lab") -> list[dict]:
    """One row per (mixer, head_dim) whose LR is chosen: state bytes, mean, std, min, max, per-seed accuracies,
    n, how many seeds are their LONG_STEPS rerun (a seed still rising at STEPS is replaced by it), and how many
    runs shown were not flat at the end. Accuracies are held-out fractions."""
    rows = []
    for K in sorted(HEAD_DIMS):
        for mixer in MIXERS:
            lr = chosen_lr(runs, mixer, K)
            if lr is None:
                continue
            longer = extended(runs, mixer, K, lr) if init == "lab" else {}
            sel = sorted((longer.get(r["job"]["seed"], r) for r in _runs_of(runs, mixer, K, init)
                          if r["job"]["lr"] == lr and r["job"]["seed"] in SEEDS), key=lambda r: r["job"]["seed"])
            if not sel:
                continue
            accs = [r["final_eval_acc"] for r in sel]
            rows.append({"mixer": mixer, "head_dim": K, "init": init, "lr": lr, "state_bytes": state_bytes(mixer, K),
                         "n": len(accs), "extended": sum(r["job"].get("steps", STEPS) != STEPS for r in sel),
                         **dict(zip(("mean", "std"), mean_std(accs))), "min": min(accs),
                         "max": max(accs), "accs": accs, "seeds": [r["job"]["seed"] for r in sel],
                         "not_flat": sum(not flat(r) for r in sel),
                         "names": [Job(**r["job"]).name for r in sel],  # the runs behind the row (seed_runs)
                         "wall_s": statistics.median(r["wall_s"] for r in sel),
                         "step_s": statistics.median(r["wall_s"] / max(r["steps_done"], 1) for r in sel)})
    return rows


# ------------------------------------------------------------------------------------------- sentences
# The report's synthetic-task setting (Kimi Linear, arXiv 2510.26692, §5.1): what a like-for-like run would need.
REPORT_SETTING = {"head_dim": 128, "seq_len": 2048, "steps": 20_000}


def _cell(rows: list[dict], mixer: str, head_dim: int) -> dict | None:
    return next((r for r in rows if r["mixer"] == mixer and r["head_dim"] == head_dim), None)


def _tie(a: dict, b: dict) -> bool:
    """Two cells within seed spread (`lab_sweep_sentences.within_spread`, the rule every verdict of both sweeps uses)."""
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
                   "within seed spread" if _tie(att, best) else apart)
        parts.append(f"at K = {K}, softmax attention recalls {100 * att['mean']:.0f}% from a "
                     f"{fmt_bytes(att['state_bytes'])} KV cache and the best recurrent mixer, {short_name(best['mixer'])}, "
                     f"{100 * best['mean']:.0f}% ± {100 * best['std']:.0f} ({best['n']} seed{'s' if best['n'] > 1 else ''}) "
                     f"from a {fmt_bytes(best['state_bytes'])} state ({verdict})")
    return ("Per layer memory: " + "; ".join(parts) + ".") if parts else ""


# A recurrent mixer that recalls under a fifth of the pairs has run out of state, whatever its update rule: a
# difference between two such mixers (say 9% against 2%) is not a lesson about the rule.
RUN_OUT = 0.2


def rule_sentence(rows: list[dict]) -> str:
    """At equal state (each head dim), does the update rule order the recurrent mixers beyond seed spread, or is
    the size of the state what decides? Order with '>' (beyond spread) and '≈' (within), then a verdict per K:
    every rule run out (best below RUN_OUT), the rule separating the best from the worst, or all within spread."""
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
            verdict = (f"at K = {K} the update rule matters: {short_name(win['mixer'])} beats "
                       f"{short_name(lose['mixer'])} beyond seed spread")
            plain = _cell(rec, "linear", K)  # the additive rule with no decay: what delta updates and decay refine
            if plain is not None and plain is not top and plain is not lose and _tie(plain, top):
                verdict += (f", yet the plain additive rule (linear, {100 * plain['mean']:.0f}%) ties with the best: "
                            f"delta updates and decay buy nothing beyond seed spread here")
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
        rec = [r for r in rows if r["head_dim"] == K and r["mixer"] in RECURRENT]
        up = [r for r in rec if r["not_flat"]]
        if up:
            which = ", ".join(f"{short_name(r['mixer'])} {r['not_flat']}" for r in up)
            parts.append(f"at K = {K}, {sum(r['not_flat'] for r in up)} of {sum(r['n'] for r in rec)} recurrent runs "
                         f"({which})")
    if not parts:
        return ""
    return (" Not final: " + "; ".join(parts) + f" still gained ≥ {100 * FLAT_GAIN:.0f} points over their last "
            f"{100 * FLAT_WINDOW:.0f}% of steps, so those cells' means are lower bounds.")


def report_sentence(rows: list[dict]) -> str:
    """The report's order (KDA >= GDN > Mamba-2) checked at each head dim (`lab_sweep_sentences.report_verdict`); where it
    does not appear, what the report's setting was and what a run of it would cost on this machine (the measured
    wall time per step of the largest head dim, scaled by the state update's work per token, K^2, and by T)."""
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


def ablation_rows(runs: list[dict]) -> list[dict]:
    """The init ablation: per mixer of ABLATION_MIXERS, the reference-init seeds against the lab-init runs of the
    same seeds and learning rate (means over the seeds both have)."""
    out = []
    for mixer in ABLATION_MIXERS:
        ref = {r["job"]["seed"]: r for r in _runs_of(runs, mixer, ABLATION_HEAD_DIM, "reference")}
        if not ref:
            continue
        lr = next(iter(ref.values()))["job"]["lr"]
        lab = {r["job"]["seed"]: r for r in _runs_of(runs, mixer, ABLATION_HEAD_DIM) if r["job"]["lr"] == lr}
        seeds = sorted(set(ref) & set(lab))
        if not seeds:
            continue
        ref_acc, lab_acc = [ref[s]["final_eval_acc"] for s in seeds], [lab[s]["final_eval_acc"] for s in seeds]
        out.append({"mixer": mixer, "lr": lr, "seeds": seeds,
                    **dict(zip(("lab_mean", "lab_std"), mean_std(lab_acc))),
                    **dict(zip(("ref_mean", "ref_std"), mean_std(ref_acc)))})
    return out


def ablation_sentence(rows: list[dict]) -> str:
    """What the lab's initialisation changes, from `ablation_rows`: per mixer lab vs reference init, the order
    of the mixers under each ('>' beyond seed spread, '≈' within), and which mixers only learn with the lab's init."""
    if not rows:
        return ""
    parts = [f"{short_name(r['mixer'])} {100 * r['lab_mean']:.0f}% → {100 * r['ref_mean']:.0f}%" for r in rows]
    moved = [r for r in rows if not within_spread((r["lab_mean"], r["lab_std"]), (r["ref_mean"], r["ref_std"]))]
    by_lab, by_ref = (sorted(rows, key=lambda r: -r[k]) for k in ("lab_mean", "ref_mean"))
    stuck = [r for r in rows if r["ref_mean"] < RUN_OUT <= r["lab_mean"]]
    tail = (f" Order with the lab's init: {ranked_chain([(r['mixer'], r['lab_mean'], r['lab_std']) for r in by_lab])}; "
            f"with the reference init: {ranked_chain([(r['mixer'], r['ref_mean'], r['ref_std']) for r in by_ref])}.")
    if stuck:
        tail += (f" With the reference init {', '.join(short_name(r['mixer']) for r in stuck)} "
                 f"stay{'s' if len(stuck) == 1 else ''} under "
                 f"{100 * RUN_OUT:.0f}% in {STEPS:,} steps: the lab's init is what lets them learn in this budget, so "
                 "the recurrent numbers above assume it.")
    return (f"Init ablation at K = {ABLATION_HEAD_DIM} (lab init → reference init, same seeds and learning rate): "
            + "; ".join(parts) + f". Beyond seed spread: {', '.join(short_name(r['mixer']) for r in moved) or 'none'}."
            + tail)


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


# ----------------------------------------------------------------------------------------------- driver
def pending(results_dir: Path) -> tuple[list[Job], bool]:
    """Runs still to do, in order: per head dim (HEAD_DIMS order) every mixer's LR grid at seed 0, then the
    seeds round-robin across the mixers whose LR is chosen; the init ablation after the first two head dims. The flag: some runs wait on a grid."""
    runs = load_runs(results_dir)
    done = {Job(**r["job"]).name for r in runs}
    todo, waiting = [], False

    def cell(K: int) -> None:
        nonlocal waiting
        for mixer in MIXERS:
            todo.extend(j for j in (Job(mixer, K, lr, 0) for lr in LRS) if j.name not in done)
        chosen = {mixer: chosen_lr(runs, mixer, K) for mixer in MIXERS}
        waiting = waiting or None in chosen.values()
        for s in SEEDS:  # seed by seed across mixers: a sweep cut short still has every mixer at equal n
            todo.extend(j for j in (Job(m, K, lr, s) for m, lr in chosen.items() if lr is not None)
                        if j.name not in done)

    for i, K in enumerate(HEAD_DIMS):
        cell(K)
        if i == 1:  # the ablation, once the two cheaper head dims are under way
            for mixer in ABLATION_MIXERS:
                lr = chosen_lr(runs, mixer, ABLATION_HEAD_DIM)
                if lr is not None:
                    todo.extend(j for j in (Job(mixer, ABLATION_HEAD_DIM, lr, s, "reference") for s in SEEDS[:3])
                                if j.name not in done)
    for K in HEAD_DIMS:  # last: every seed the STEPS cap cut short, again with LONG_STEPS (HEAD_DIMS order)
        for mixer in MIXERS:
            lr = chosen_lr(runs, mixer, K)
            rising = [r for r in _runs_of(runs, mixer, K) if lr is not None and r["job"]["lr"] == lr
                      and r["job"]["seed"] in SEEDS and not flat(r)]
            todo.extend(j for j in (Job(mixer, K, lr, r["job"]["seed"], steps=LONG_STEPS) for r in rising)
                        if j.name not in done)
    return todo, waiting


def work(results_dir: Path, claims_dir: Path, poll_s: float = 10.0) -> int:
    """One worker: claim the next pending run, train it, repeat; wait while only blocked runs remain."""
    n = 0
    while True:
        todo, waiting = pending(results_dir)
        job = next((j for j in todo if _claim(j, claims_dir)), None)
        if job is None:
            if not waiting:
                return n
            time.sleep(poll_s)
            continue
        rec = run_job(job, results_dir)
        n += 1
        print(f"{job.name}: acc {rec['final_eval_acc']:.3f} after {rec['steps_done']} steps ({rec['wall_s']:.0f} s)",
              flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m k3lite.experiments.lab_state", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("all", help="run every pending run (resumable; several workers share one sweep)")
    a.add_argument("--workers", type=int, default=1)
    a.add_argument("--results", default=str(STATE_DIR))
    r = sub.add_parser("run", help="one run (its stored command)")
    r.add_argument("--mixer", required=True, choices=MIXERS)
    r.add_argument("--head-dim", type=int, required=True)
    r.add_argument("--lr", type=float, required=True)
    r.add_argument("--seed", type=int, required=True)
    r.add_argument("--init", default="lab", choices=INITS)
    r.add_argument("--steps", type=int, default=STEPS, help=f"step cap (the longer reruns: {LONG_STEPS})")
    r.add_argument("--results", default=str(STATE_DIR))
    t = sub.add_parser("table", help="print mean, spread and n per (mixer, head dim) of the finished runs")
    t.add_argument("--results", default=str(STATE_DIR))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    results = Path(args.results)
    if args.cmd == "run":
        if args.steps < 1:
            print("error: --steps must be >= 1", file=sys.stderr)
            return 2
        rec = run_job(Job(args.mixer, args.head_dim, args.lr, args.seed, args.init, args.steps), results, quiet=False)
        print(f"acc {rec['final_eval_acc']:.3f} after {rec['steps_done']} steps")
        return 0
    if args.cmd == "table":
        runs = load_runs(results)
        rows = aggregate(runs)
        print(format_table(rows))
        for text in (ceiling_sentence(rows), rule_sentence(rows), report_sentence(rows),
                     ablation_sentence(ablation_rows(runs))):
            if text:
                print(text)
        return 0
    if args.workers < 1:
        print("error: --workers must be >= 1", file=sys.stderr)
        return 2
    claims = claims_dir_for(results, "state")
    return run_workers(args.workers, work, (results, claims))


if __name__ == "__main__":
    raise SystemExit(main())
