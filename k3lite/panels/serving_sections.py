"""The serving page's numbered sections, as lists of items (k3lite.panels.serving: Panel, Metric rows, Table, Note,
Code) the page draws in order inside its expanders; no Streamlit here.

    placement(d)          1. weights per GPU, what is left for the cache, and the seed's "six B300" claim
    capacity_section(d)   2. sequences that fit by attention design
    decode(d)             3. one decode step and the batch trade-off
    prefill(d, ...)       3b. prefill and decode as separate pools (metrics and the output/input price ratio)
    choices(context)      4. the serving waterfall (K3's ideas one at a time) and three models side by side
    published(...)        5. the model against every published serving figure
    target(d, ...)        solve for a target (users, speed); scenario(...) the export's JSON and CSV
"""
from __future__ import annotations

from functools import lru_cache

from k3lite.analytic.hardware import GPUS, get_gpu, gpu_label
from k3lite.analytic.params import count_params
from k3lite.analytic.params import fmt as fmt_params
from k3lite.analytic.serving import (
    DSPARK_DRAFT_TOKENS, K3_PRESET, MIN_TOKENS_PER_USER, SPEC_SOURCE, Serving, Speculation, capacity, check_fits,
    decode_step, pareto, placement as place_weights, prefill_step,
)
from k3lite.analytic.serving.compare import (
    gpus_for_weights, prefill_pool, price_split_sentence, side_by_side, speculation_sentence, waterfall,
)
from k3lite.analytic.serving.published import (
    multinode_sentence, validate, validate_prefill, validate_vllm_k3, vllm_k3_sentence,
)
from k3lite.analytic.serving.deployment import speculation_source
from k3lite.analytic.serving.export import serving_scenario
from k3lite.analytic.serving.measured import VLLM_K3_SOURCE
from k3lite.analytic.serving.providers import (
    PROVIDERS, YOURS, Provider, blended_at, spread_sentence, typed_provider, typed_sentence,
)
from k3lite.analytic.serving.price import Shape, request_price
from k3lite.analytic.serving.frontier import cheapest_at, frontier
from k3lite.analytic.serving.target import solve
from k3lite.base.evidence import assumed, derived, measured_elsewhere
from k3lite.base.scenario import to_csv, to_json
from k3lite.base.units import fmt_capacity
from k3lite.model.presets import get_preset
from k3lite.panels.core import Panel, Said
from k3lite.panels.serving import CONFIG_EV, FITTED_EV, LIST_EV, PRICE_EV, Code, Deployment, Metric, Note, Table
from k3lite.viz.memo import shared_figure
from k3lite.viz.serving import (
    capacity_figure, gpus_for_weights_figure, pareto_figure, placement_figure, price_ratio_figure, step_figure,
    providers_figure, validation_figure, waterfall_figure,
)
from k3lite.viz.style import fmt_bytes

CONTEXTS = [4096, 16384, 32768, 65536, 131072, 262144, 524288, 1048576]  # the page's context slider


def _rounded(rows: list[dict], digits: int) -> list[dict]:
    return [{k: (round(v, digits) if isinstance(v, float) else v) for k, v in r.items()} for r in rows]


def placement(d: Deployment) -> list:
    s, place, batch = d.serving, d.place, d.batch
    ev = derived(place_weights)
    gpu = get_gpu(s.gpu)
    six = gpus_for_weights(K3_PRESET, "B300")
    released_b300 = sum(place_weights(Serving(K3_PRESET, "B300", 1, 1, 1)).by_component.values()) / GPUS["B300"].hbm_bytes
    whole = {r.whole_gpus for r in six if r.fmt in ("nvfp4", "mxfp4", "int4")}
    n_fp8 = next(r.whole_gpus for r in six if r.fmt == "fp8")
    claim = (f"Computed: the {fmt_params(count_params(get_preset(K3_PRESET)).total)} weights need "
             f"{', '.join(f'{r.gpus:.2f} ({r.fmt})' for r in six)} B300s' worth of "
             f"{fmt_capacity(GPUS['B300'].hbm_bytes)}; as released (MXFP4 experts, bf16 rest) {released_b300:.2f}. "
             f"4-bit weights with their scales take {' or '.join(map(str, sorted(whole)))} whole B300s: "
             f"'roughly six' {'holds' if whole & {5, 6} else 'does not hold'}. At fp8 it takes {n_fp8} GPUs, "
             f"{'beyond' if n_fp8 > 8 else 'within'} one 8-GPU DGX B300.")
    return [
        (Metric("weights per GPU", fmt_bytes(place.weight_bytes_per_gpu), ev),
         Metric("HBM left for cache + activations", fmt_bytes(place.free_hbm_bytes_per_gpu), ev,
                f"of the {gpu_label(s.gpu)}'s {fmt_capacity(place.hbm_bytes)} (binary, as HBM is sold)"),
         Metric(f"{gpu_label(s.gpu)} GPUs for the weights alone", f"{place.min_gpus_for_weights}", ev),
         Metric(f"sequences of {s.context:,} tokens per GPU", f"{place.max_batch_per_gpu:,}", ev)),
        Panel(shared_figure(placement_figure, place.by_component, batch * place.cache_bytes_per_sequence,
                            place.hbm_bytes, f"One {gpu_label(s.gpu)} at batch {batch}", evidence=ev)),
        Note(f"{gpu_label(s.gpu)}: {gpu.source}." + (f" Not verified: {gpu.unverified}." if gpu.unverified else "")
             + " Byte counts: `k3lite.analytic.memory` (parameters counted from the real modules on the meta device; "
             "4-bit formats include their scales: NVFP4 +1/16 byte, MXFP4 +1/32, INT4 +2/32 per parameter)."),
        Note("**The seed's claim**: K3 'even at reduced precision spreads its weights across roughly six GPUs in an "
             "NVIDIA DGX B300 just for the weights'.", markdown=True),
        Panel(shared_figure(gpus_for_weights_figure, [r.fmt for r in six], [r.gpus for r in six], 6, "B300",
                            evidence=derived(gpus_for_weights)),
              (Said(claim, (derived(gpus_for_weights, place_weights),)),), values={"released_b300": released_b300}),
        Code((check_fits, gpus_for_weights)),
    ]


def capacity_section(d: Deployment) -> list:
    s = d.serving
    caps = capacity(s, CONTEXTS)
    at = CONTEXTS.index(s.context) if s.context in CONTEXTS else 0
    text = (f"At {s.context:,} tokens with these weights per GPU: " + "; ".join(f"{k}: {v[at]:,}" for k, v in caps.items())
            + " sequences per GPU. Cache bytes from `k3lite.analytic.memory` (the hybrid page's functions): MLA "
            "(Multi-head Latent Attention) latent per token, KDA fixed state + conv tail, GQA K and V per token.")
    return [Panel(shared_figure(capacity_figure, CONTEXTS, caps, evidence=derived(capacity)),
                  (Said(text, (derived(capacity), CONFIG_EV)),)), Code((capacity,))]


def decode(d: Deployment) -> list:
    s, step, batch = d.serving, d.step, d.batch
    ev = derived(decode_step)
    curve = pareto(s)
    text = (f"At batch {batch} the step is {step.bound}-bound ({step.hbm_s * 1e3:.1f} ms of HBM reads, "
            f"{step.compute_s * 1e3:.1f} ms of compute, {step.wire_s * 1e3:.1f} ms on the wire). Going from batch "
            f"{curve[0].batch_per_gpu} to {curve[-1].batch_per_gpu} raises tokens/s per GPU "
            f"{curve[-1].tokens_per_s_per_gpu / curve[0].tokens_per_s_per_gpu:.0f}x and lowers each user's speed from "
            f"{curve[0].tokens_per_s_per_user:.0f} to {curve[-1].tokens_per_s_per_user:.0f} tokens/s: the trade every "
            f"serving benchmark plots. " + (speculation_sentence(s, batch) if s.spec else "")
            + f" Price: ${s.price:.2f} per GPU-hour ({d.price_source}).")
    sources = (derived(decode_step, pareto), d.price_evidence,
               *([derived(speculation_sentence), assumed(speculation_source(s.name))] if s.spec else []))
    return [
        (Metric("step time", f"{step.step_s * 1e3:.1f} ms", ev, f"bound by {step.bound}"),
         Metric("tokens/s per GPU", f"{step.tokens_per_s_per_gpu:,.0f}", ev),
         Metric("tokens/s per user", f"{step.tokens_per_s_per_user:.1f}", ev),
         Metric("$ per M output tokens", f"${step.usd_per_m_output_tokens:.3f}", ev,
                f"at ${s.price:.2f} per GPU-hour ({d.price_source})")),
        Panel(shared_figure(step_figure, step.hbm_s, step.compute_s, step.wire_s, step.step_s, s.overlap, evidence=ev)),
        Panel(shared_figure(pareto_figure, [p.tokens_per_s_per_user for p in curve],
                            [p.tokens_per_s_per_gpu for p in curve], [p.batch_per_gpu for p in curve],
                            (step.tokens_per_s_per_user, step.tokens_per_s_per_gpu), evidence=derived(pareto)),
              (Said(text, sources),)),
        Code((decode_step, pareto)),
    ]


def prefill(d: Deployment, pool: int, chunk: int) -> list:
    """3b: the prefill pool (`pool` GPUs = EP of the deployment's GPU, `chunk` tokens per GPU per forward; a layout
    that fits, compare.prefill_pool, said by name when it is not the one asked for) against the deployment's decode:
    [the output/input price-ratio figure (or the Note saying why no pool fits), its metrics, its sentences, its code]."""
    s, step = d.serving, d.step
    pp = prefill_pool(s, int(pool), int(chunk))
    if pp.prefill is None:
        return [Note(f"⚠️ {pp.note}"), (), Code((prefill_pool,))]
    pre, lay = pp.prefill, pp.serving
    ratio, listed, text = price_split_sentence(step, pre, f"{lay.n_gpus} x {gpu_label(s.gpu)}, EP {lay.ep}, TP {lay.tp}",
                                               s.name)
    fig = shared_figure(price_ratio_figure, ["this deployment, at cost"] + [f"{n} list price" for n in listed],
                        [ratio, *listed.values()], evidence=derived(prefill_step, decode_step),
                        evidence_by_name={"list prices": LIST_EV})
    return [Panel(fig, values={"ratio": ratio, "pool_ep": lay.ep, "pool_tp": lay.tp}),
            (Metric("$ per M input (prefill)", f"${pre.usd_per_m_input_tokens:.3f}", derived(prefill_step),
                    f"{pre.bound}-bound"),
             Metric("$ per M output (decode)", f"${step.usd_per_m_output_tokens:.3f}", derived(decode_step),
                    f"{step.bound}-bound")),
            *([Note(pp.note)] if pp.note else []),
            Panel(None, (Said(text, (derived(price_split_sentence, prefill_step, decode_step), LIST_EV,
                                     d.price_evidence)),)),
            Code((prefill_pool, prefill_step, price_split_sentence))]


@lru_cache(maxsize=8)  # the same three searches for every reader at one context
def _choices(context: int):
    return waterfall(context=context), side_by_side(context=context), validate()


def choices(context: int) -> list:
    """4: the waterfall (a classic design to K3, one idea at a time, on the same hardware) and the side-by-side."""
    steps, rows, _ = _choices(context)
    deltas = [(b.usd_per_m - a.usd_per_m, b) for a, b in zip(steps, steps[1:])]
    biggest_delta, biggest = max(deltas, key=lambda x: abs(x[0]))  # the largest step either way
    saving_delta, saving = min(deltas, key=lambda x: x[0])
    raises = [f"'{w.label}' ({x:+.3f} $/M)" for x, w in deltas if x > 0 and w is not biggest]
    hw0 = steps[0].serving
    fall = (f"Same hardware for every bar ({hw0.n_gpus} x {hw0.gpu}, EP {hw0.ep}, context {context:,}), each at "
            f"the largest batch per GPU that fits and keeps every user at >= {MIN_TOKENS_PER_USER:.0f} tokens/s. "
            + "; ".join(f"{w.label}: ${w.usd_per_m:.3f} (batch {w.batch})" for w in steps)
            + f". The biggest step is '{biggest.label}' ({biggest_delta:+.3f} $/M)"
            + (f"; the biggest saving is '{saving.label}' ({saving_delta:+.3f} $/M)"
               if saving is not biggest and saving_delta < 0 else "")
            + (f"; {' and '.join(raises)} raise{'s' if len(raises) == 1 else ''} the cost"
               f"{' too' if biggest_delta > 0 else ''}" if raises else "")
            + f"; overall K3's choices take the cost to {steps[-1].usd_per_m / steps[0].usd_per_m:.2f}x the classic "
            "design's.")
    cheap = min(rows, key=lambda r: r["$ / M output"])
    dear = max(rows, key=lambda r: r["$ / M output"])
    side = (f"Side by side on the same hardware and context: the cheapest is {cheap['model']} with {cheap['weights']} "
            f"(${cheap['$ / M output']:.3f} per M output tokens at {cheap['batch / GPU']} sequences per GPU), the "
            f"dearest {dear['model']} with {dear['weights']} (${dear['$ / M output']:.3f} at {dear['batch / GPU']}). "
            + ("Every row is HBM-bound, so the sequences that fit next to the weights set the price."
               if all(r["bound by"] == "HBM" for r in rows) else
               "Bound by: " + ", ".join(f"{r['model']} {r['weights']}: {r['bound by']}" for r in rows) + "."))
    return [Panel(shared_figure(waterfall_figure, [w.label for w in steps], [w.usd_per_m for w in steps],
                                evidence=derived(waterfall)), (Said(fall, (derived(waterfall), PRICE_EV)),),
                  values={w.label: w.usd_per_m for w in steps}),
            Table(_rounded(rows, 3), {}, derived(side_by_side)),
            Panel(None, (Said(side, (derived(side_by_side), PRICE_EV)),)),
            Code((waterfall, side_by_side))]


@lru_cache(maxsize=1)  # the published prefill pools, predicted: the same for every reader
def _prefill_checks():
    return validate_prefill()


@lru_cache(maxsize=16)
def _vllm_checks(acceptance: float):
    return validate_vllm_k3(Speculation(DSPARK_DRAFT_TOKENS, acceptance))


def k3_acceptance(preset: str, acceptance: float) -> float:
    """The post's draft length, the page's acceptance while K3 is the model (else, or where it exceeds what 8 drafts
    allow, K3's DSpark default: another model's acceptance says nothing about K3's drafter)."""
    return float(acceptance) if preset == K3_PRESET and acceptance <= DSPARK_DRAFT_TOKENS + 1 else Speculation().acceptance


def published(context: int, acceptance: float) -> list:
    """5: the bound against every published serving figure, and vLLM's K3 runs at the acceptance given."""
    checks = _choices(context)[2]
    k3_rows = _vllm_checks(acceptance)
    labels = [c["short"] for c in checks] + [f"vLLM K3, 8 B300 TP8, {r['concurrency']} user(s)" for r in k3_rows]
    pub = measured_elsewhere("each publication: " + "; ".join(c["source"] for c in checks) + f"; {VLLM_K3_SOURCE}")
    fig = shared_figure(validation_figure, labels,
                        [c["measured tokens/s / GPU"] for c in checks] + [r["measured tokens/s (node)"] / 8 for r in k3_rows],
                        [c["model tokens/s / GPU"] for c in checks] + [r["model tokens/s (node)"] / 8 for r in k3_rows],
                        evidence=derived(validate, validate_vllm_k3), evidence_by_name={"published measurement": pub})
    lo, hi = min(c["model / measured"] for c in checks), max(c["model / measured"] for c in checks)
    standing = ("never below, as an upper bound must" if lo >= 1 else
                f"BELOW a measurement for {', '.join(c['deployment'] for c in checks if c['model / measured'] < 1)}: "
                "the model misses something those systems do")
    text = (f"The bound lands {lo:.2f}x to {hi:.2f}x the measured tokens/s (with overlap, at each publication's "
            f"batch and context): {standing}. What it leaves out: kernel efficiency below "
            "peak, expert load imbalance (EPLB gave SGLang 2.54x in decode), launch and synchronisation "
            "latency and activation memory (the wire bytes are DeepEP low-latency's, one message per token and "
            "selected expert, from `k3lite.interconnect`). DeepSeek's own figure "
            "also includes speculative multi-token prediction, which the bound does not credit.")
    vllm = measured_elsewhere(VLLM_K3_SOURCE)
    prefill = _prefill_checks()
    pre_pub = measured_elsewhere("; ".join(r["source"] for r in prefill))
    return [Panel(fig),
            Table(_rounded([{k: v for k, v in c.items() if k != "short"} for c in checks], 2),
                  {"measured tokens/s / GPU": pub, "batch / GPU": pub, "context": pub}, derived(validate)),
            Panel(None, (Said(text, (derived(validate), pub)),), values={"lo": lo, "hi": hi}),
            Panel(None, (Said(multinode_sentence(checks, prefill), (derived(validate, validate_prefill), pub, pre_pub,
                                                                    FITTED_EV)),)),
            Table(_rounded([{k: v for k, v in r.items() if k != "source"} for r in prefill], 2),
                  {"measured input tokens/s / GPU": pre_pub}, derived(validate_prefill)),
            Table(_rounded(k3_rows, 2), {"concurrency": vllm, "measured tokens/s (node)": vllm},
                  derived(validate_vllm_k3)),
            Panel(None, (Said(vllm_k3_sentence(k3_rows, acceptance), (derived(vllm_k3_sentence, validate_vllm_k3),
                                                                        vllm, assumed(SPEC_SOURCE))),)),
            Code((validate, validate_vllm_k3))]


def target_inputs(speed: float, users: int, shape: Shape) -> dict:
    """solve()'s target as the page's inputs give it (and the export lists it): the page's one request shape."""
    return {"speed": float(speed), "users": int(users), "input_len": int(shape.input_len),
            "output_len": int(shape.output_len), "cached": float(shape.cached)}


def target(d: Deployment, speed: float, users: int, input_len: int, output_len: int, cached: float = 0.0):
    """solve() for the deployment: (its answer, or None and the message that stops it)."""
    if d.step is None:
        return None, ""
    try:  # a fraction of a millisecond: computed for the export too, whether its panel is open or not
        return solve(d.serving, speed, users, input_len, output_len,
                     acceptance=d.serving.spec.acceptance if d.serving.spec else None, cached=cached), ""
    except ValueError as e:
        return None, str(e)


def target_section(d: Deployment, t) -> list:
    s, ev = d.serving, derived(solve)
    money = f"at ${s.price:.2f} per GPU-hour ({d.price_source})"
    return [(Metric("requests per replica", f"{t.concurrency:,}", ev,
                    f"of {t.admitted:,} admitted in HBM; what caps it: {t.binding}"),
             Metric("at your target: $ per M tokens", f"${t.usd_per_m:.3f}" if t.concurrency else "—", ev,
                    f"input + output at {t.price.shape.label}: ${t.price.usd_per_m_input:.3f} per M input, "
                    f"${t.price.usd_per_m_output:.3f} per M output; {money}" if t.concurrency else money),
             Metric("replicas", f"{t.replicas:,}", ev, f"{s.n_gpus} GPUs each"),
             Metric("GPUs", f"{t.gpus:,}", ev),
             Metric("$ per month", f"${t.usd_per_month:,.0f}" if t.concurrency else "—", ev, f"730 hours {money}")),
            Panel(None, (Said(t.sentence, (ev, FITTED_EV, d.price_evidence)),)), Code((solve, request_price))]


def scenario(d: Deployment, speed: float, winner, t, target_inputs: dict, preset: str, context: int,
             link: str) -> tuple[str, str]:
    """The export: the page's inputs and outputs (export.serving_scenario) as (JSON, CSV) text, with the link."""
    ins, outs = serving_scenario(d.serving, d.price_evidence, speed, winner, d.batch if d.step else None, d.price,
                                 d.bound_price, t, target_inputs, d.error)
    return to_json(f"k3lite serving scenario: {preset} at {context:,} tokens", ins, outs, link), to_csv(ins, outs)


# ------------------------------------------------------------------------------------------ providers
# the page's "your providers" table: rows to fill (a name, $ per M output, the speed it sells at)
YOUR_PROVIDER_ROWS = [{"provider": f"provider {i}", "$ / M input": None, "$ / M output": None,
                       "speed (tok/s per user)": None} for i in (1, 2, 3)]
YOUR_PROVIDER_EV = {"$ / M input": assumed(YOURS), "$ / M output": assumed(YOURS),
                    "speed (tok/s per user)": assumed(YOURS)}


def your_providers(rows: list[dict]) -> tuple[tuple[Provider, ...], str]:
    """(the filled rows of the table as providers, the first constraint a row breaks or ""); column names may carry
    their evidence marker. A bad row is left out and named: the table stays on the page to fix it."""
    def value(row: dict, column: str):
        v = next((v for k, v in row.items() if k.startswith(column)), None)
        return None if v is None or v != v or v == "" else v

    out, bad = [], ""
    for n, i, u, t in ((value(r, "provider"), value(r, "$ / M input"), value(r, "$ / M output"),
                        value(r, "speed (tok/s")) for r in rows):
        if u is not None and t is not None:
            try:
                out.append(typed_provider(str(n or ""), float(u), float(t), float(i or 0.0)))
            except ValueError as e:
                bad = bad or str(e)
    return tuple(out), bad


def providers(fr, winner, speed: float, yours: tuple = (), bad: str = "") -> list:
    """The providers' published K3 prices (dated, cited) and the reader's own rows, drawn against the self-hosted
    frontier `fr`'s cheapest setups, with what they show beside its cheapest point at the page's speed (`winner`, the
    verdict's; None when no setup reaches it); `bad`: a typed row's broken constraint, said in red (the table stays
    to fix it)."""
    sh = fr.shape
    shown = PROVIDERS + tuple(yours)
    at_shape = [blended_at(p, sh.input_len, sh.output_len, sh.cached) for p in shown]
    col = f"$ / M tokens at {sh.input_len:,} in / {sh.output_len:,} out"
    rows = [{"provider": p.name, "$ / M input": p.input_per_m, "$ / M cached input": p.cached_per_m,
             "$ / M output": p.output_per_m, col: round(u, 3), "speed (tok/s)": "not published"
             if p.tokens_per_s is None else f"{p.tokens_per_s:.0f}", "as of": p.dated}
            for p, u in zip(PROVIDERS, at_shape)]
    ev = {c: tuple(dict.fromkeys(p.evidence for p in PROVIDERS)) or PROVIDERS[0].evidence  # each row's class
          for c in ("$ / M input", "$ / M cached input", "$ / M output", "as of")}
    ev[col] = derived(blended_at)
    fig = shared_figure(providers_figure, tuple(fr.envelope), shown, speed, tuple(at_shape),
                        evidence=derived(frontier))
    items: list = [Note("**What providers charge for K3** (dated, cited; add your own below the chart)", True),
                   Panel(fig, evidence=derived(frontier)), Table(rows, ev),
                   Note("Sources: " + " · ".join(f"**{p.name}**: {p.source}" for p in PROVIDERS))]
    said = [Said(spread_sentence(winner.usd_per_m_input, winner.usd_per_m_output, speed, sh.input_len,
                                 sh.output_len, sh.cached),
                 (*(p.evidence for p in PROVIDERS), derived(spread_sentence)))] if winner is not None else []
    for p in yours:
        at = cheapest_at(fr.setups, p.tokens_per_s)
        said.append(Said(typed_sentence(p, None if at is None else (at.usd_per_m_input, at.usd_per_m_output),
                                        sh.input_len, sh.output_len, sh.cached),
                         (p.evidence, derived(cheapest_at))))
    items += [Panel(None, tuple(said))] if said else []
    return items + ([Note(f":red[⚠️ {bad}]", True)] if bad else [])
