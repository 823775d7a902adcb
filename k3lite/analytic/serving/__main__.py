"""The serving CLI:

    python -m k3lite.analytic.serving --preset kimi-k3 --gpu GB300 --gpus 64 --ep 64 --weights bf16 --experts mxfp4 --json
    python -m k3lite.analytic.serving frontier --preset kimi-k3 --input-len 8192 --output-len 1024 [--gpus B300 GB300] --json
    python -m k3lite.analytic.serving predict --preset kimi-k3 --gpu B300 --gpus 8 --tp 8 --ep 8 --weights mxfp4 \
        --spec none --concurrency 16 --input-len 8192 --output-len 1024 --json

Every verb prices one request of a shape (--input-len, --output-len, --cached; the serving page's defaults) through
price.request_price: $ per M tokens blended at the shape, $ per M input, $ per M output. The frontier's defaults are
the page's: the prediction, K3's released formats, 50 tokens/s per user.
A setting that cannot run exits 2 with one line naming the constraint."""
from __future__ import annotations

import argparse
import json
import sys

from k3lite.model.presets import PRESETS
from k3lite.analytic.hardware import GPUS, gpu_name
from k3lite.analytic.serving.admission import ENGINE_RESERVE, STATE_SLOTS
from k3lite.analytic.serving.deployment import FORMAT_ALIASES, K3_PRESET, Serving, Speculation, precision_map
from k3lite.analytic.serving.fit import FITTED, prediction_report
from k3lite.analytic.serving.predict import ARRIVALS, Workload
from k3lite.analytic.serving.frontier import (
    DEFAULT_FORMATS, DEFAULT_MODEL, FORMAT_KEYS, FRONTIER_EP, FRONTIER_GPUS, FRONTIER_TP, INTERACTIVE_TOKENS_PER_USER,
    MODELS, frontier, verdict,
)
from k3lite.analytic.serving.price import DEFAULT_SHAPE, Shape, request_price
from k3lite.analytic.serving.step import PREFILL_CHUNK_TOKENS, report


def add_shape(ap: argparse.ArgumentParser) -> None:
    """The request shape every price is for (price.Shape), with the page's defaults."""
    ap.add_argument("--input-len", type=int, default=DEFAULT_SHAPE.input_len, help="input tokens per request")
    ap.add_argument("--output-len", type=int, default=DEFAULT_SHAPE.output_len, help="output tokens per request")
    ap.add_argument("--cached", type=float, default=DEFAULT_SHAPE.cached,
                    help="share of the input a prefix cache serves (not prefilled)")


def shape_of(a) -> Shape:
    return Shape(a.input_len, a.output_len, a.cached)


def price_line(p) -> str:
    return f"{p.model}: {p.says()}, {p.tokens_per_s_per_user:.1f} tok/s per user"


def frontier_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lite.analytic.serving frontier",
                                 description="The speed-price frontier over GPUs, formats and EP sizes")
    ap.add_argument("--preset", default=K3_PRESET, help=f"one of {sorted(PRESETS)}")
    add_shape(ap)
    ap.add_argument("--gpus", nargs="+", default=None,
                    help=f"GPUs to compare (default {list(FRONTIER_GPUS)}; any of {list(GPUS)})")
    ap.add_argument("--speed", type=float, default=INTERACTIVE_TOKENS_PER_USER,
                    help="tokens/s per user at which to name the cheapest hardware")
    ap.add_argument("--spec", action="store_true", help="speculative decoding with the default drafter")
    ap.add_argument("--model", default=DEFAULT_MODEL, choices=MODELS,
                    help="predicted (the page's default): with the efficiencies fitted to published K3 runs; bound: "
                         "step.py's roofline")
    ap.add_argument("--formats", nargs="+", default=list(DEFAULT_FORMATS), choices=list(FORMAT_KEYS),
                    help=f"weight formats searched (default {list(DEFAULT_FORMATS)}, as the page): "
                         + "; ".join(f"{k} = {v}" for k, v in FORMAT_KEYS.items()))
    ap.add_argument("--eps", type=int, nargs="+", default=list(FRONTIER_EP), help="EP sizes (= GPUs per replica)")
    ap.add_argument("--tps", type=int, nargs="+", default=list(FRONTIER_TP), help="attention TP sizes")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args(argv)
    try:
        gpus = None if a.gpus is None else [gpu_name(g) for g in a.gpus]
        fr = frontier(a.preset, shape_of(a), gpus, [FORMAT_KEYS[f] for f in a.formats], tuple(a.eps),
                      spec=Speculation() if a.spec else None, model=a.model, tps=tuple(a.tps))
        v = verdict(fr, a.speed)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps({"inputs": {"preset": fr.preset, **fr.shape._asdict(), "gpus": list(fr.by_gpu),
                                     "speed": a.speed, "spec": a.spec, "model": a.model, "formats": a.formats,
                                     "eps": a.eps, "tps": a.tps},
                          "winner": None if v.winner is None else v.winner.row(),
                          "envelope": [p.row() for p in fr.envelope],
                          "by_gpu": {g: [p.row() for p in e] for g, e in fr.by_gpu.items()},
                          "verdict": v.sentence, "skipped": list(fr.skipped)}, indent=2))
        return 0
    print(f"{fr.preset}, one request of {fr.shape.label}: the cheapest setup at each speed "
          "($ per M tokens, input + output; then per M input and per M output)")
    for p in fr.envelope:
        print(f"  {p.tokens_per_s_per_user:8.1f} tok/s/user  ${p.usd_per_m:8.3f}/M  (${p.usd_per_m_input:.3f} in, "
              f"${p.usd_per_m_output:.3f} out)  {p.tokens_per_s_per_gpu:9,.0f} tok/s/GPU  {p.label} ({p.bound})")
    print(v.sentence)
    return 0


def predict_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m k3lite.analytic.serving predict",
        description="What a closed-loop benchmark measures (TTFT, TPOT, throughput, admission): step.py's physics "
                    "with efficiencies fitted to published K3 runs")
    ap.add_argument("--preset", default=K3_PRESET, help=f"one of {sorted(PRESETS)}")
    ap.add_argument("--gpu", default="B300", help=f"one of {list(GPUS)}; short names accepted")
    ap.add_argument("--gpus", type=int, default=8, help="GPUs serving one replica")
    ap.add_argument("--tp", type=int, default=8, help="tensor-parallel size")
    ap.add_argument("--ep", type=int, default=None, help="GPUs the routed experts are split over (default --gpus; "
                    "equal to --tp: split inside the TP group, all-reduced, as the engines' TP default)")
    ap.add_argument("--dcp", type=int, default=1, help="decode context parallelism (SGLang's --dcp-size)")
    ap.add_argument("--weights", default="mxfp4",
                    help=f"routed experts' format: {list(FORMAT_ALIASES)} (K3 ships mxfp4)")
    ap.add_argument("--attention", default="bf16", help="attention weights' format (NVIDIA's NVFP4 checkpoint: fp8); "
                    "shared experts and embeddings stay bf16, as released")
    ap.add_argument("--spec", default="none", choices=("none", "dspark", "mtp"),
                    help="speculative decoding: dspark = K3's draft model (Speculation() defaults), mtp = an MTP layer")
    ap.add_argument("--draft-tokens", type=int, default=None,
                    help=f"tokens drafted per step (default {Speculation().draft_tokens}; SGLang's K3 recipe: 7)")
    ap.add_argument("--acceptance", type=float, default=None,
                    help=f"tokens kept per step (default {Speculation().acceptance}; fitted on SGLang's random data: "
                         f"{FITTED.acceptance['sglang-random']:.2f})")
    ap.add_argument("--concurrency", type=int, default=1, help="requests in flight")
    add_shape(ap)
    ap.add_argument("--arrivals", default="together", choices=ARRIVALS,
                    help="together: waves of fixed-length requests (SGLang's bench_serving); staggered: spread out")
    ap.add_argument("--chunk", type=int, default=PREFILL_CHUNK_TOKENS, help="prefill tokens per forward")
    ap.add_argument("--reserve", type=float, default=ENGINE_RESERVE,
                    help="share of HBM kept for activations and graphs")
    ap.add_argument("--state-slots", type=int, default=STATE_SLOTS,
                    help=f"KDA state slots reserved per request (default {STATE_SLOTS}: SGLang's with its radix cache "
                         "on; 1: vLLM's)")
    ap.add_argument("--usd-per-gpu-hour", type=float, default=None)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args(argv)
    try:
        weights = {**precision_map({"routed_experts": a.weights, "attention": a.attention}),
                   "shared": "bf16", "embeddings": "bf16"}
        spec = None
        if a.spec != "none":
            d = Speculation()
            spec = Speculation(a.draft_tokens or d.draft_tokens, a.acceptance or d.acceptance,
                               "mtp" if a.spec == "mtp" else "draft-model")
        s = Serving(a.preset, a.gpu, a.gpus, a.ep or a.gpus, a.tp, weights, a.input_len + a.output_len // 2,
                    usd_per_gpu_hour=a.usd_per_gpu_hour, spec=spec, dcp=a.dcp)
        r = prediction_report(s, Workload(a.concurrency, a.input_len, a.output_len, a.arrivals, a.chunk), FITTED,
                              a.reserve, a.state_slots)
        price = request_price(s, shape_of(a), a.concurrency, "predicted", acceptance=spec.acceptance if spec else None)
        r.pop("usd_per_m_output_tokens")  # every GPU-second on the output: the request price below splits it
        r["request_price"] = price.row()
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(r, indent=2))
        return 0
    print(f"{s.name} on {s.n_gpus} x {s.gpu} (TP {s.tp}, EP {s.ep}, DCP {s.dcp}), {a.concurrency} in flight, "
          f"{a.input_len:,} in / {a.output_len:,} out:")
    print(f"  TTFT {r['ttft_s']:.3f} s, TPOT {1e3 * r['tpot_s']:.2f} ms (bound {1e3 * r['bound']['tpot_s']:.2f} ms), "
          f"{r['output_tokens_per_s_per_gpu']:,.0f} output / {r['total_tokens_per_s_per_gpu']:,.0f} total tok/s/GPU")
    print(f"  {price_line(price)}")
    print(f"  {r['admission']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["frontier"]:
        return frontier_main(argv[1:])
    if argv[:1] == ["predict"]:
        return predict_main(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m k3lite.analytic.serving",
                                 description="Serving physics of one deployment: placement, decode step, price "
                                             "(a roofline bound)")
    ap.add_argument("--preset", default=K3_PRESET, help=f"one of {sorted(PRESETS)}")
    ap.add_argument("--gpu", default="GB300 NVL72", help=f"one of {list(GPUS)}; short names (H100, GB300) accepted "
                    "(default the serving page's)")
    ap.add_argument("--gpus", type=int, default=64, help="GPUs serving one replica")
    ap.add_argument("--ep", type=int, default=None, help="expert-parallel size (default: --gpus)")
    ap.add_argument("--tp", type=int, default=1, help="tensor-parallel size of attention/dense parts")
    ap.add_argument("--weights", default="bf16", help=f"storage format of all weights: {list(FORMAT_ALIASES)} "
                    "(default bf16, as K3 ships everything but its routed experts)")
    ap.add_argument("--experts", default="mxfp4", help="storage format of the routed experts (default mxfp4, as K3 "
                    "ships them; 'same' = as --weights)")
    ap.add_argument("--context", type=int, default=32768, help="tokens of context per sequence")
    ap.add_argument("--batch", type=int, default=None, help="sequences per GPU (default: the most that fit)")
    ap.add_argument("--no-overlap", action="store_true", help="communication does not overlap compute")
    ap.add_argument("--scheme", default="low-latency", help="dispatch scheme: direct, normal or low-latency")
    ap.add_argument("--usd-per-gpu-hour", type=float, default=None)
    add_shape(ap)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args(argv)
    try:
        weights = precision_map(a.weights)
        if a.experts and a.experts != "same":
            weights["routed_experts"] = precision_map({"routed_experts": a.experts})["routed_experts"]
        s = Serving(a.preset, a.gpu, a.gpus, a.ep or a.gpus, a.tp, weights, a.context, not a.no_overlap,
                    a.usd_per_gpu_hour, scheme=a.scheme)
        if a.batch is not None and a.batch < 1:
            raise ValueError(f"--batch must be >= 1, got {a.batch}")
        r = report(s, a.batch)
        c = r["batch_per_gpu"] * s.n_gpus  # the page's "your deployment": batch x GPUs requests in flight
        prices = [request_price(s, shape_of(a), c, m) for m in ("predicted", "bound")]
        for key in ("usd_per_m_output_tokens", "usd_per_m_input_tokens_prefill"):  # the decode step's and the
            r.pop(key)  # prefill's apart: the request price below is the one price, both parts at the shape
        r["request_price"] = {p.model: p.row() for p in prices}
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(r, indent=2))
        return 0
    print(f"{s.name} on {s.n_gpus} x {s.gpu} (ep {s.ep}, tp {s.tp}), context {s.context:,}:")
    print(f"  weights {r['weight_bytes_per_gpu'] / 1e9:.1f} GB/GPU, free {r['free_hbm_bytes_per_gpu'] / 1e9:.1f} GB, "
          f"max batch {r['max_batch_per_gpu']}/GPU; at batch {r['batch_per_gpu']}: step {1e3 * r['step_time_s']:.1f} ms "
          f"({r['bound']}-bound), {r['tokens_per_s_per_gpu']:,.0f} tok/s/GPU, {r['tokens_per_s_per_user']:.1f} tok/s/user")
    for p in prices:
        print(f"  {price_line(p)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
