"""Practice on the serving page: weights per GPU, how many sequences fit, the decode step's speed and its $ per
million output tokens (k3lite.analytic.serving: placement, check_fits, decode_step; a roofline, a floor on cost)."""
from __future__ import annotations

from k3lite.analytic.serving import Serving, check_fits, decode_step, placement
from k3lite.analytic.serving.deployment import USD_PER_GPU_HOUR
from k3lite.base.evidence import derived
from k3lite.tour.practice.core import Instance, Problem, final, num

GPUS = ("B200", "B300", "GB300 NVL72", "MI355X")
CONTEXTS = (4096, 16384, 32768, 65536, 131072, 262144)  # the serving page's choices (sv_context), up to 256K
SIZES = (32, 64, 128)


def _deployment(rng) -> Serving:
    """A K3 deployment as released (MXFP4 routed experts, bf16 rest) that holds at least one sequence."""
    gpu, n, context = rng.choice(GPUS), rng.choice(SIZES), rng.choice(CONTEXTS)
    s = Serving("kimi-k3", gpu, n, n, 1, context=context)
    while placement(s).max_batch_per_gpu < 1:  # too long to fit next to the weights: halve the context
        s = s.with_(context=s.context // 2)
    return s


def _query(s: Serving, batch: int = 0) -> dict:
    return {"sv_preset": "kimi-k3", "sv_gpu": s.gpu, "sv_gpus": s.n_gpus, "sv_ep": s.ep, "sv_tp": s.tp,
            "sv_context": s.context, "sv_batch": batch}


def _where(s: Serving) -> str:
    return (f"Kimi K3 as released (MXFP4 routed experts, bf16 rest) on **{s.n_gpus} {s.gpu}** GPUs, EP {s.ep}, "
            f"TP {s.tp}, **{s.context:,}-token** contexts")


def _setup(s: Serving) -> str:
    return (f"s = Serving('kimi-k3', {s.gpu!r}, {s.n_gpus}, {s.ep}, {s.tp}, context={s.context})\n")


IMPORTS = "from k3lite.analytic.serving import Serving, check_fits, decode_step, placement\n"


def weights_per_gpu(rng) -> Instance:
    fmt = rng.choice(["mxfp4", "fp8", "bf16"])
    s = _deployment(rng)
    s = s.with_(weights={**s.weights, "routed_experts": fmt})
    p = placement(s)
    gb = p.weight_bytes_per_gpu / 1e9
    experts = p.by_component["routed_experts"] / 1e9
    return Instance(
        f"Kimi K3 on **{s.n_gpus} {s.gpu}** GPUs, EP {s.ep}, TP {s.tp}, routed experts in **{fmt}**, the rest bf16. "
        "The routed experts are split over the EP group, everything else is on every GPU. How many GB of weights "
        "does each GPU hold?",
        gb, "GB", 0.02, "Serving page at this deployment: the placement bars", "serving",
        {**_query(s), "sv_experts": fmt},
        (f"Routed experts: all of them / EP {s.ep} = {num(experts)} GB per GPU.",
         f"The rest (attention, shared experts, dense layers, embeddings): {num(gb - experts)} GB on each GPU.",
         f"`placement(s).weight_bytes_per_gpu` = {num(gb)} GB.", final(gb, "GB")),
        IMPORTS + f"s = Serving('kimi-k3', {s.gpu!r}, {s.n_gpus}, {s.ep}, {s.tp}, weights={s.weights!r})\n"
        "answer = placement(s).weight_bytes_per_gpu / 1e9",
        {"gpus": s.n_gpus}, derived(placement))


def max_batch(rng) -> Instance:
    s = _deployment(rng)
    p = check_fits(s)
    return Instance(
        f"{_where(s)}. How many sequences fit on each GPU next to its weights (the largest batch per GPU)?",
        p.max_batch_per_gpu, "sequences", 0.02, "Serving page at this deployment: 'largest batch that fits'",
        "serving", _query(s),
        (f"Free HBM per GPU: {num(p.hbm_bytes / 1e9)} GB - {num(p.weight_bytes_per_gpu / 1e9)} GB of weights = "
         f"{num(p.free_hbm_bytes_per_gpu / 1e9)} GB.",
         f"One sequence's cache on a GPU: {num(p.cache_bytes_per_sequence / 1e9)} GB (MLA latents + KDA states).",
         f"floor({num(p.free_hbm_bytes_per_gpu / 1e9)} / {num(p.cache_bytes_per_sequence / 1e9)}) = "
         f"{p.max_batch_per_gpu} (`check_fits`).", final(p.max_batch_per_gpu, "sequences")),
        IMPORTS + _setup(s) + "answer = check_fits(s).max_batch_per_gpu",
        {"gpus": s.n_gpus, "context": s.context}, derived(check_fits))


def _batch(rng, s: Serving) -> int:
    top = check_fits(s).max_batch_per_gpu
    return max(1, min(top, rng.choice([1, 4, 16, 64, top])))


def usd_per_m(rng) -> Instance:
    s = _deployment(rng)
    batch = _batch(rng, s)
    step = decode_step(s, batch)
    price = USD_PER_GPU_HOUR[s.gpu][0]
    return Instance(
        f"{_where(s)}, **{batch} sequences per GPU**, ${price:g} per GPU-hour. What do a million output tokens cost "
        "in GPU time (the roofline: a floor), in dollars?",
        step.usd_per_m_output_tokens, "$", 0.02, "Serving page at this deployment and batch: '$ per M output tokens'",
        "serving", _query(s, batch),
        (f"One decode step: {num(1e3 * step.step_s)} ms ({step.bound}-bound), {batch} tokens per GPU per step.",
         f"Tokens per GPU-second: {num(step.tokens_per_s_per_gpu)}; per GPU-hour x 3600.",
         f"${price:g} / ({num(step.tokens_per_s_per_gpu)} x 3600) x 10^6 = ${num(step.usd_per_m_output_tokens)} "
         "(`decode_step`).", final(step.usd_per_m_output_tokens, "$")),
        IMPORTS + _setup(s) + f"answer = decode_step(s, {batch}).usd_per_m_output_tokens",
        {"gpus": s.n_gpus, "batch": batch, "context": s.context}, derived(decode_step))


def user_speed(rng) -> Instance:
    s = _deployment(rng)
    batch = _batch(rng, s)
    step = decode_step(s, batch)
    return Instance(
        f"{_where(s)}, **{batch} sequences per GPU**. How many tokens per second does each user see (the roofline)?",
        step.tokens_per_s_per_user, "tokens/s", 0.02, "Serving page at this deployment and batch: the speed-price "
        "curve's point", "serving", _query(s, batch),
        (f"One step reads {num(step.hbm_bytes / 1e9)} GB per GPU: {num(1e3 * step.hbm_s)} ms of HBM, "
         f"{num(1e3 * step.compute_s)} ms of compute, {num(1e3 * step.wire_s)} ms on the wire.",
         f"Step = {num(1e3 * step.step_s)} ms ({step.bound}-bound); each user gets one token per step: "
         f"1 / {num(step.step_s)} s = {num(step.tokens_per_s_per_user)} tokens/s (`decode_step`).",
         final(step.tokens_per_s_per_user, "tokens/s")),
        IMPORTS + _setup(s) + f"answer = decode_step(s, {batch}).tokens_per_s_per_user",
        {"gpus": s.n_gpus, "batch": batch, "context": s.context}, derived(decode_step))


def cheaper_gpu(rng) -> Instance:
    a, b = rng.sample(GPUS, 2)
    n, context = rng.choice(SIZES), rng.choice((16384, 32768, 65536))

    def full_price(gpu: str) -> float:
        s = Serving("kimi-k3", gpu, n, n, 1, context=context)
        return decode_step(s, check_fits(s).max_batch_per_gpu).usd_per_m_output_tokens

    pa, pb = full_price(a), full_price(b)
    right = a if pa < pb else b
    return Instance(
        f"Kimi K3 as released on **{n}** GPUs (EP {n}), **{context:,}-token** contexts, each GPU filled with as many "
        f"sequences as fit, each GPU at its rate per hour on the serving page. Which gives cheaper output tokens: "
        f"**{a}** or **{b}**?",
        right, "", 0.0, "Serving page: switch the GPU at this size and context", "serving",
        {"sv_preset": "kimi-k3", "sv_gpu": a, "sv_gpus": n, "sv_ep": n, "sv_context": context},
        ("Price per token = $ per GPU-hour / tokens per GPU-hour; a GPU with more HBM holds more sequences, so each "
         "step's weight reads are shared by more tokens.",
         f"`decode_step` at the largest batch: {a} ${num(pa)}, {b} ${num(pb)} per M output tokens.", final(right)),
        IMPORTS + f"def price(gpu):\n    s = Serving('kimi-k3', gpu, {n}, {n}, 1, context={context})\n"
        "    return decode_step(s, check_fits(s).max_batch_per_gpu).usd_per_m_output_tokens\n"
        f"answer = {a!r} if price({a!r}) < price({b!r}) else {b!r}",
        {"gpus": n, "context": context}, derived(decode_step, check_fits), choices=(a, b))


PROBLEMS = (
    Problem("sv-weights-per-gpu", "serving", "compute", 1, "Weights on each GPU", weights_per_gpu,
            {"gpus": (32, 128)}),
    Problem("sv-max-batch", "serving", "compute", 2, "How many sequences fit", max_batch,
            {"gpus": (32, 128), "context": (2048, 262144)}),
    Problem("sv-usd-per-m", "serving", "compute", 3, "$ per million output tokens", usd_per_m,
            {"gpus": (32, 128), "batch": (1, 100_000), "context": (2048, 262144)}),
    Problem("sv-user-speed", "serving", "compute", 2, "Tokens per second per user", user_speed,
            {"gpus": (32, 128), "batch": (1, 100_000), "context": (2048, 262144)}),
    Problem("sv-cheaper-gpu", "serving", "predict", 2, "Which GPU is cheaper per token?", cheaper_gpu,
            {"gpus": (32, 128), "context": (16384, 65536)}),
)
