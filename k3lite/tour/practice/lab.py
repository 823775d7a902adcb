"""Practice on the lab page: the memory each mixer keeps (lab_state_jobs.state_bytes) and the shipped sweeps'
recall (assets/lab/, made offline by the lab's CLIs and read here: no training runs)."""
from __future__ import annotations

from functools import lru_cache

from k3lite.base.evidence import derived, measured_here
from k3lite.experiments import lab_state_jobs as state
from k3lite.experiments import lab_sweep_jobs as sweep
from k3lite.experiments.lab import MIXER_LABELS
from k3lite.experiments.lab_state_aggregate import aggregate as state_aggregate
from k3lite.experiments.lab_store import RESULTS_DIR, load_runs
from k3lite.panels.lab_sweep import SWEEP_RUNS, SweepData
from k3lite.tour.practice.core import Instance, Problem, final, num
from k3lite.viz.lab import state_figure, sweep_figure

RECURRENT = tuple(m for m in state.MIXERS if m != "attention")
STATE_RUNS = measured_here("python -m k3lite.experiments.lab_state all (shipped in assets/lab/state/)")
READABLE = 0.3  # cells below this recall are left out of the reading problems: a 5% band there is a hairline


@lru_cache(maxsize=1)  # ~1 s: every shipped run file is read once per process
def state_results() -> tuple[list[dict], list[dict]]:
    runs = load_runs(state.STATE_DIR)
    return runs, state_aggregate(runs)


@lru_cache(maxsize=1)  # (the reason above)
def sweep_rows() -> list[dict]:
    """The rows the lab page's length sweep draws (figure and tables): `SweepData.load` over the shipped runs and
    the longer cap's reruns, which stand in where the step cap stopped a run."""
    return SweepData.load(load_runs(RESULTS_DIR), load_runs(sweep.LONG_DIR)).rows


# what the solutions' code runs: the lab page's own rows
SWEEP_CODE = ("from k3lite.experiments.lab_store import RESULTS_DIR, load_runs\n"
              "from k3lite.experiments.lab_sweep_jobs import LONG_DIR\nfrom k3lite.panels.lab_sweep import SweepData\n"
              "rows = SweepData.load(load_runs(RESULTS_DIR), load_runs(LONG_DIR)).rows\n")
SWEEP_SECTION = {"lab_section": "Recall vs length"}  # the lab page's section that draws the length sweep
RERUNS = (f"the lab page's rows: where the {sweep.MAX_STEPS}-step cap stopped a run, its {sweep.LONG_STEPS}-step "
          "rerun stands in")


def state_kb(rng) -> Instance:
    mixer = rng.choice(RECURRENT)
    head_dim = rng.choice(sorted(state.HEAD_DIMS))  # the state-size sweep's head dims: its x axis shows them
    kb = state.state_bytes(mixer, head_dim) / 1e3
    return Instance(
        f"A lab model's **{MIXER_LABELS[mixer]}** layer has {state.N_HEADS} heads of **head dim {head_dim}** and keeps "
        "an fp32 state of head_dim x head_dim per head. How many kB is that state?",
        kb, "kB", 0.02, "Lab page: the state-size sweep's x axis (memory per layer)", "lab", {},
        (f"{state.N_HEADS} x {head_dim} x {head_dim} x {state.BYTES_PER_ELEM} bytes "
         "(`lab_state_jobs.state_bytes`, the KDA state formula without the conv tail).",
         f"= {num(kb * 1e3)} B = {num(kb)} kB.", final(kb, "kB")),
        "from k3lite.experiments.lab_state_jobs import state_bytes\n"
        f"answer = state_bytes({mixer!r}, {head_dim}) / 1e3",
        {"head_dim": head_dim}, derived(state.state_bytes))


def cache_over_state(rng) -> Instance:
    head_dim = rng.choice([8, 16, 32])
    seq_len = rng.choice([128, 256, 512, 1024])
    mixer = rng.choice(RECURRENT)
    cache, st = state.state_bytes("attention", head_dim, seq_len=seq_len), state.state_bytes(mixer, head_dim)
    ratio = cache / st
    return Instance(
        f"At head dim **{head_dim}** ({state.N_HEADS} heads), softmax attention keeps K and V for every one of "
        f"**{seq_len} tokens**; {MIXER_LABELS[mixer]} keeps one head_dim x head_dim state per head. How many times "
        "more memory does attention keep?",
        ratio, "x", 0.02, "Lab page: the state-size sweep (attention's points sit at its KV cache)", "lab", {},
        (f"Attention: 2 x {seq_len} x {state.N_HEADS} x {head_dim} x 4 B = {num(cache / 1e3)} kB.",
         f"State: {state.N_HEADS} x {head_dim} x {head_dim} x 4 B = {num(st / 1e3)} kB.",
         f"Ratio: 2 T / K = {num(ratio)}.", final(ratio, "x")),
        "from k3lite.experiments.lab_state_jobs import state_bytes\n"
        f"answer = state_bytes('attention', {head_dim}, seq_len={seq_len}) / state_bytes({mixer!r}, {head_dim})",
        {"head_dim": head_dim, "seq_len": seq_len}, derived(state.state_bytes))


def read_state(rng) -> Instance:
    runs, rows = state_results()
    cells = [r for r in rows if r["mean"] >= READABLE]
    row = rng.choice(cells)
    pct = 100 * row["mean"]
    return Instance(
        f"The picture is the lab's state-size sweep (MQAR, {state.SEQ_LEN} tokens). Read the **{MIXER_LABELS[row['mixer']]}"
        f"** line at **head dim {row['head_dim']}**: what held-out recall (%) does it reach, averaged over seeds?",
        pct, "%", 0.05, "Lab page: the state-size sweep", "lab", {"lab_state_mixers": row["mixer"]},
        (f"The line is the mean over {row['n']} seeds (the points); hover it: "
         f"{', '.join(f'{100 * a:.1f}' for a in row['accs'])} %.",
         f"Mean = {num(pct)} % (`lab_state_aggregate.aggregate` over the shipped runs).", final(pct, "%")),
        "from k3lite.experiments import lab_state_jobs as state\n"
        "from k3lite.experiments.lab_state_aggregate import aggregate\nfrom k3lite.experiments.lab_store import load_runs\n"
        f"row = next(r for r in aggregate(load_runs(state.STATE_DIR)) if r['mixer'] == {row['mixer']!r} and "
        f"r['head_dim'] == {row['head_dim']})\nanswer = 100 * row['mean']",
        {"recall": row["mean"]}, STATE_RUNS, figure=(state_figure, (runs, rows)))


def read_sweep(rng) -> Instance:
    rows = sweep_rows()
    cells = [r for r in rows if r["mean"] >= READABLE]
    row = rng.choice(cells)
    pct = 100 * row["mean"]
    return Instance(
        f"The picture is the lab's length sweep for **{row['task']}**. Read the **{MIXER_LABELS[row['mixer']]}** line "
        f"at **{row['seq_len']} tokens**: what held-out accuracy (%) does it reach, averaged over seeds?",
        pct, "%", 0.05, f"Lab page: the length sweep, task {row['task']}", "lab", SWEEP_SECTION,
        (f"The line is the mean over {row['n']} seeds; the band runs from the worst to the best seed "
         f"({100 * row['min']:.1f} to {100 * row['max']:.1f} %).",
         f"Mean = {num(pct)} % ({RERUNS}).", final(pct, "%")),
        SWEEP_CODE + f"row = next(r for r in rows if (r['task'], r['mixer'], r['seq_len']) == "
        f"({row['task']!r}, {row['mixer']!r}, {row['seq_len']}))\nanswer = 100 * row['mean']",
        {"accuracy": row["mean"]}, SWEEP_RUNS, figure=(sweep_figure, (rows, row["task"])))


DIRECTIONS = ("falls by more than 5 points", "stays within 5 points", "rises by more than 5 points")


def direction(delta_points: float) -> str:
    """Which of DIRECTIONS a change in accuracy (in percentage points) is."""
    return DIRECTIONS[0] if delta_points < -5 else DIRECTIONS[2] if delta_points > 5 else DIRECTIONS[1]


def longer(rng) -> Instance:
    rows = sweep_rows()
    task = rng.choice(sorted(sweep.SEQ_LENS))
    lengths = sweep.SEQ_LENS[task]
    i = rng.randrange(len(lengths) - 1)
    mixer = rng.choice([m for m in sweep.MIXERS if any(r["mixer"] == m and r["task"] == task for r in rows)])
    cell = {r["seq_len"]: r for r in rows if r["task"] == task and r["mixer"] == mixer}
    a, b = lengths[i], lengths[i + 1]
    delta = 100 * (cell[b]["mean"] - cell[a]["mean"])
    answer = direction(delta)
    return Instance(
        f"In the lab's length sweep, **{MIXER_LABELS[mixer]}** on **{task}**: the sequence doubles from **{a}** to "
        f"**{b}** tokens (more to remember, same model). Its held-out accuracy...",
        answer, "", 0.0, f"Lab page: the length sweep, task {task}", "lab", SWEEP_SECTION,
        (f"Shipped means over seeds ({RERUNS}): {100 * cell[a]['mean']:.1f} % at {a}, "
         f"{100 * cell[b]['mean']:.1f} % at {b} tokens.",
         f"Change: {delta:+.1f} points.", final(answer)),
        SWEEP_CODE + "from k3lite.tour.practice.lab import direction\n"
        f"m = {{r['seq_len']: r['mean'] for r in rows if r['task'] == {task!r} and "
        f"r['mixer'] == {mixer!r}}}\nanswer = direction(100 * (m[{b}] - m[{a}]))",
        {"seq_len": a}, SWEEP_RUNS, choices=DIRECTIONS)


PROBLEMS = (
    Problem("lab-state-kb", "lab", "compute", 1, "The memory a mixer keeps", state_kb, {"head_dim": (8, 128)}),
    Problem("lab-cache-over-state", "lab", "compute", 2, "Attention's cache against a state", cache_over_state,
            {"head_dim": (8, 32), "seq_len": (128, 1024)}),
    Problem("lab-read-state", "lab", "read", 2, "Recall against memory, from the picture", read_state,
            {"recall": (READABLE, 1)}),
    Problem("lab-read-sweep", "lab", "read", 2, "Accuracy against length, from the picture", read_sweep,
            {"accuracy": (READABLE, 1)}),
    Problem("lab-longer", "lab", "predict", 2, "Twice as long: what happens?", longer, {"seq_len": (16, 256)}),
)
