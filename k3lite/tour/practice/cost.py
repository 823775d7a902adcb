"""Practice on the cost-per-task page: $ per attempt and per completed task, how often a task gets done, the
planner/worker split, and (with the serving page) a task priced at the roofline (k3lite.analytic.cost)."""
from __future__ import annotations

from k3lite.analytic.cost import PRICES, ModelPrice, TaskProfile, analyze, planner_worker, savings, single_model
from k3lite.analytic.serving import Serving, check_fits, decode_step
from k3lite.base.evidence import derived
from k3lite.tour.practice.core import Instance, Problem, final, num

K3 = PRICES["kimi-k3"]


def _price(m: ModelPrice) -> str:
    """Every price `analyze` uses for `m`, as a question states it: input, cached input (the discount), output."""
    cached = m.input_per_m * (1 - m.cache_discount)
    shown = f"{cached:.2f}" if cached >= 0.1 else f"{cached:.3g}"  # $0.30, $0.15; $0.0702, $0.025
    return (f"${m.input_per_m:g} / ${m.output_per_m:g} per M input / output tokens, cached input ${shown} "
            f"({100 * m.cache_discount:.0f}% off)")


def _profile(rng) -> TaskProfile:
    return TaskProfile(turns=float(rng.choice([5, 10, 20, 40])), input_tokens_per_turn=float(rng.choice([5, 10, 20, 50])) * 1e3,
                       output_tokens_per_turn=float(rng.choice([500, 1000, 2000])),
                       success_rate=rng.choice([0.5, 0.6, 0.7, 0.8, 0.9]), turn_retry_rate=rng.choice([0.0, 0.05, 0.1]),
                       cache_hit_rate=rng.choice([0.0, 0.25, 0.5, 0.75]), max_attempts=rng.choice([1, 2, 3, 5]))


def _query(p: TaskProfile) -> dict:
    return {"cost_turns": int(p.turns), "cost_in_k": int(p.input_tokens_per_turn / 1e3),
            "cost_out": int(p.output_tokens_per_turn), "cost_success": round(100 * p.success_rate),
            "cost_retry": round(100 * p.turn_retry_rate), "cost_cache": round(100 * p.cache_hit_rate),
            "cost_attempts": p.max_attempts}


def _words(p: TaskProfile) -> str:
    return (f"**{p.turns:g} turns** per attempt, **{p.input_tokens_per_turn / 1e3:g}k input** and "
            f"**{p.output_tokens_per_turn:g} output tokens** per turn, **{100 * p.cache_hit_rate:g}%** of input from "
            f"the prompt cache, **{100 * p.turn_retry_rate:g}%** of calls re-sent, an attempt succeeds "
            f"**{100 * p.success_rate:g}%** of the time, at most **{p.max_attempts}** attempts")


def _code(p: TaskProfile) -> str:
    return ("from k3lite.analytic.cost import PRICES, TaskProfile, analyze, single_model\n"
            f"p = TaskProfile({p.turns}, {p.input_tokens_per_turn}, {p.output_tokens_per_turn}, {p.success_rate}, "
            f"{p.turn_retry_rate}, {p.cache_hit_rate}, {p.max_attempts})\n"
            "c = analyze(single_model(PRICES['kimi-k3'], p))\n")


def per_task(rng) -> Instance:
    p = _profile(rng)
    c = analyze(single_model(K3, p))
    return Instance(
        f"{K3.name} at {_price(K3)}. A task takes {_words(p)}. What does one **completed** task cost, in dollars?",
        c.per_completed_task, "$", 0.02, "Cost per task page at these sliders: '$ / completed task'", "cost_per_task",
        _query(p),
        (f"Calls per turn with re-sends: 1 / (1 - {p.turn_retry_rate:g}) = {num(1 / (1 - p.turn_retry_rate))}.",
         f"One attempt: input ${num(c.input_cost * p.success_rate)} + cached ${num(c.cached_input_cost * p.success_rate)}"
         f" + output ${num(c.output_cost * p.success_rate)} = ${num(c.per_attempt)}.",
         f"Per completed task: ${num(c.per_attempt)} / {p.success_rate:g} = ${num(c.per_completed_task)} (`analyze`).",
         final(c.per_completed_task, "$")),
        _code(p) + "answer = c.per_completed_task",
        {"turns": p.turns, "success": p.success_rate}, derived(analyze))


def completion(rng) -> Instance:
    p = _profile(rng)
    c = analyze(single_model(K3, p))
    pct = 100 * c.completion_rate
    return Instance(
        f"An attempt at a task succeeds **{100 * p.success_rate:g}%** of the time and a task is abandoned after "
        f"**{p.max_attempts}** failed attempts. What percentage of tasks get done?",
        pct, "%", 0.01, "Cost per task page: 'completion rate'", "cost_per_task", _query(p),
        (f"A task is abandoned only if every attempt fails: (1 - {p.success_rate:g})^{p.max_attempts} = "
         f"{num((1 - p.success_rate) ** p.max_attempts)}.",
         f"Done: 1 - that = {num(c.completion_rate)} (`analyze(...).completion_rate`).", final(pct, "%")),
        _code(p) + "answer = 100 * c.completion_rate",
        {"success": p.success_rate, "attempts": p.max_attempts}, derived(analyze))


def split_factor(rng) -> Instance:
    p = _profile(rng)
    share = rng.choice([0.05, 0.075, 0.1, 0.2])
    worker_success = rng.choice([0.6, 0.7, 0.8, 0.9])
    worker = ModelPrice("small worker", 0.10, 0.40, PRICES["small-worker"].cache_discount)
    alone, split = single_model(K3, p), planner_worker(K3, worker, p, share, 0.98, worker_success)
    factor = savings(alone, split)
    a, b = analyze(alone), analyze(split)
    return Instance(
        f"A task takes {_words(p)} with K3 alone ({_price(K3)}). Split it: K3 plans **{100 * share:g}%** of the turns "
        f"(its plans succeed 98% of the time), a worker at {_price(worker)} does the rest and succeeds "
        f"**{100 * worker_success:g}%**. How many times cheaper per completed task is the split (below 1: dearer)?",
        factor, "x", 0.02, "Cost per task page, 'planner + worker' section at these settings", "cost_per_task",
        {**_query(p), "cost_share": 100 * share, "cost_worker_success": round(100 * worker_success)},
        (f"K3 alone: ${num(a.per_completed_task)} per completed task.",
         f"Split: ${num(b.per_attempt)} per attempt, succeeding {num(0.98 * worker_success)}: "
         f"${num(b.per_completed_task)} per completed task.",
         f"{num(a.per_completed_task)} / {num(b.per_completed_task)} = {num(factor)} (`savings`).", final(factor, "x")),
        "from k3lite.analytic.cost import PRICES, ModelPrice, TaskProfile, planner_worker, savings, single_model\n"
        f"p = TaskProfile({p.turns}, {p.input_tokens_per_turn}, {p.output_tokens_per_turn}, {p.success_rate}, "
        f"{p.turn_retry_rate}, {p.cache_hit_rate}, {p.max_attempts})\n"
        "worker = ModelPrice('small worker', 0.10, 0.40, PRICES['small-worker'].cache_discount)\n"
        f"answer = savings(single_model(PRICES['kimi-k3'], p), planner_worker(PRICES['kimi-k3'], worker, p, {share}, "
        f"0.98, {worker_success}))",
        {"share": share, "worker_success": worker_success}, derived(savings, planner_worker))


def cheaper_model(rng) -> Instance:
    p = _profile(rng)
    other = rng.choice(["kimi-k2", "deepseek-v3"])
    success = rng.choice([0.1, 0.2, 0.3, 0.4, 0.5])
    turns = rng.choice([1.5, 2.0, 3.0, 5.0, 8.0])
    q = p.with_(success_rate=min(success, p.success_rate), turns=p.turns * turns)
    k3, them = analyze(single_model(K3, p)), analyze(single_model(PRICES[other], q))
    right = K3.name if k3.per_completed_task < them.per_completed_task else PRICES[other].name
    return Instance(
        f"A task with K3 ({_price(K3)}): {_words(p)}. **{PRICES[other].name}** ({_price(PRICES[other])}) needs "
        f"**{turns:g}x the turns** and succeeds **{100 * q.success_rate:g}%** per attempt (the same input, output, "
        "cache hits and re-sends per turn). Which costs less per **completed** task?",
        right, "", 0.0, "Cost per task page: the side-by-side of models per completed task", "cost_per_task",
        _query(p),
        ("Per completed task = $ per attempt / success per attempt: a cheap model that fails more, or needs more turns, "
         "pays for it.",
         f"`analyze`: {K3.name} ${num(k3.per_completed_task)}, {PRICES[other].name} ${num(them.per_completed_task)}.",
         final(right)),
        _code(p) + f"q = p.with_(success_rate={q.success_rate}, turns={q.turns})\n"
        f"them = analyze(single_model(PRICES[{other!r}], q))\n"
        f"answer = {K3.name!r} if c.per_completed_task < them.per_completed_task else {PRICES[other].name!r}",
        {"success": q.success_rate, "turns_factor": turns}, derived(analyze), choices=(K3.name, PRICES[other].name))


def roofline_task(rng) -> Instance:
    gpu, n, context = rng.choice(["B300", "GB300 NVL72"]), rng.choice([32, 64]), rng.choice([16384, 32768, 65536])
    s = Serving("kimi-k3", gpu, n, n, 1, context=context)
    batch = check_fits(s).max_batch_per_gpu
    usd = decode_step(s, batch).usd_per_m_output_tokens
    turns, out = rng.choice([10, 20, 40]), rng.choice([500, 1000, 2000])
    p = TaskProfile(turns=float(turns), input_tokens_per_turn=0.0, output_tokens_per_turn=float(out), success_rate=1.0,
                    turn_retry_rate=0.0, cache_hit_rate=0.0, max_attempts=1)
    cents = 100 * analyze(single_model(ModelPrice("K3 at the roofline", 0.0, usd), p)).per_completed_task
    return Instance(
        f"On the serving page, K3 as released on **{n} {gpu}** GPUs at **{context:,}-token** contexts, every GPU full, "
        f"gives a roofline price per M output tokens. At that price, what do the output tokens of a task of "
        f"**{turns} turns x {out} tokens** cost, in **cents** (input not counted, one attempt)?",
        cents, "¢", 0.02, "Serving page for the $ per M output tokens, then the cost page's arithmetic",
        "serving", {"sv_preset": "kimi-k3", "sv_gpu": gpu, "sv_gpus": n, "sv_ep": n, "sv_context": context},
        (f"Serving page: {batch} sequences per GPU fit; `decode_step` gives ${num(usd)} per M output tokens.",
         f"Task: {turns} x {out} = {turns * out:,} output tokens; x ${num(usd)} / 10^6 = "
         f"${num(cents / 100)} (`analyze` with that price).", f"= {num(cents)} ¢.", final(cents, "¢")),
        "from k3lite.analytic.cost import ModelPrice, TaskProfile, analyze, single_model\n"
        "from k3lite.analytic.serving import Serving, check_fits, decode_step\n"
        f"s = Serving('kimi-k3', {gpu!r}, {n}, {n}, 1, context={context})\n"
        "usd = decode_step(s, check_fits(s).max_batch_per_gpu).usd_per_m_output_tokens\n"
        f"p = TaskProfile({float(turns)}, 0.0, {float(out)}, 1.0, 0.0, 0.0, 1)\n"
        "answer = 100 * analyze(single_model(ModelPrice('K3 at the roofline', 0.0, usd), p)).per_completed_task",
        {"turns": turns, "output": out}, derived(decode_step, analyze), pages=("serving", "cost_per_task"))


PROBLEMS = (
    Problem("cost-per-task", "cost_per_task", "compute", 2, "$ per completed task", per_task,
            {"turns": (5, 40), "success": (0.5, 0.9)}),
    Problem("cost-completion", "cost_per_task", "compute", 1, "Tasks that get done", completion,
            {"success": (0.5, 0.9), "attempts": (1, 5)}),
    Problem("cost-split", "cost_per_task", "compute", 3, "Planner + worker: how much cheaper?", split_factor,
            {"share": (0.05, 0.2), "worker_success": (0.6, 0.9)}),
    Problem("cost-cheaper-model", "cost_per_task", "predict", 2, "Cheaper per token, cheaper per task?",
            cheaper_model, {"success": (0.1, 0.9), "turns_factor": (1.5, 8)}),
    Problem("cost-roofline-task", "cost_per_task", "compute", 3, "From the serving page to a task's price",
            roofline_task, {"turns": (10, 40), "output": (500, 2000)}),
)
