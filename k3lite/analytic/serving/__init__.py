"""From architecture to price: where the weights go, how many sequences fit, how long a decode step takes,
and what a million output tokens cost to produce. A roofline model: an upper bound on throughput.

Layout (what DeepSeek's and SGLang's deployments do, arXiv 2412.19437 §3.4 and lmsys.org/blog/2025-05-05):
    n_gpus GPUs serve one model replica. Routed experts are split over `ep` of them (replicated n_gpus / ep
    times); everything else (attention, shared experts, dense FFN, embeddings, head) is split over `tp` GPUs
    and replicated over dp = n_gpus / tp data-parallel attention groups. MLA's one latent head cannot be
    split by heads, so each TP rank keeps the whole latent cache of its group's sequences; a KDA state splits
    by heads.
Per GPU, with B = batch per GPU (sequences per DP group / tp) and N = context:
    weights     routed / ep + rest / tp, each component at its storage format (k3lite.analytic.memory.weight_bytes)
    cache       B x (tp x MLA latent(N) / dcp + KDA state)        (k3lite.analytic.memory.sequence_cache_bytes): the
                B x tp sequences of a TP group, each GPU with every latent whole (or 1/dcp of each under decode context
                parallelism) and 1/tp of each KDA state
    max batch   the largest B with weights + cache <= HBM (activations and workspace are not modelled: a bound)
One decode step (every sequence emits one token):
    HBM reads   non-routed active weights / tp + the experts this GPU hosts that the step touches: each of
                its E/ep experts per MoE layer is hit with probability 1 - (1 - k/E)^(B x ep) (the B x ep tokens
                that reach one copy of the experts) + the cache above
    compute     B x (2 x active params + attention FLOPs(N)) at the dense peak of each part's format
    wire        inside one NVLink domain: B x MoE layers x intra bytes / NVLink; across domains, per MoE layer
                and direction: B x max(intra / NVLink, inter / (share x NIC)) + a fixed latency per call, the
                share and latency fitted to DeepEP's published kernels (interconnect.deepep.nic_terms; prefill:
                its normal-kernel share). Bytes per token from k3lite.interconnect.wire_bytes_per_token through
                one adapter here; default scheme DeepEP low-latency (what DeepSeek and SGLang decode with: one
                message per (token, selected expert))
    step time   max(HBM, compute) + wire (no overlap) or max(HBM, compute, wire) (full overlap: DeepSeek and
                SGLang overlap two micro-batches)
    tokens/s per GPU = B / step; per user = 1 / step; a decode step's $ per M output = $/GPU-hour / 3600 / (tokens/s) x 1e6
    (the price the pages quote is one request's, prefill and decode: price.py)
Speculative decoding (`Speculation`): the step verifies d + 1 tokens of each sequence (compute, wire and the
expert hits see B (d + 1) tokens; the cache is read once), a drafter adds its time (an MTP layer: one layer of the
model per drafted token; a draft model: its bf16 weights once per step, its FLOPs per drafted token), and each
sequence keeps `acceptance` tokens: tokens/s per user = acceptance / step.
Prefill (`prefill_step`), a pool of its own as DeepSeek and SGLang deploy it: per input token, compute = 2 x active
+ attention over the N/2 average earlier tokens at peak, wire = DeepEP normal-kernel bytes, HBM = this GPU's weights
once per chunk; the max of them (overlap): $ per M input tokens from the same $/GPU-hour.
Not modelled here (each makes real systems slower than this bound): kernel efficiency, expert load imbalance,
launch and collective latency (except the expert calls' across domains, above), activation memory. predict.py adds the first, third and fourth as three efficiencies
fitted to published K3 runs (fit.py), and turns the bound into a prediction of TTFT, TPOT and throughput.

Default weights: as K3 ships them (memory.RELEASED_K3_FORMATS: MXFP4 routed experts, bf16 everything else).

Modules:
    deployment.py  one deployment to evaluate (`Serving`), speculative decoding (`Speculation`), formats, $/GPU-hour
    step.py        the physics above: placement and fit, the wire adapter, one decode step, prefill, batch curves
    compare.py     what each design choice buys (the waterfall), three models side by side, the published checks
    frontier.py    the speed-price frontier over GPUs, formats and EP sizes, and its verdict (bound or predicted)
    measured.py    published K3 runs as data with their sources (SGLang's cookbook, vLLM's post)
    predict.py     the predictor: step.py's bytes and FLOPs, collectives, chunked prefill queued against decode,
                   speculation, requests arriving together; three named efficiencies
    fit.py         the efficiencies fitted to measured.py's rows, leave-one-out error, the page's comparison rows
    admission.py   how many requests fit (weights, reserve, KDA state, MLA latent, draft cache) and what binds
    price.py       one request, one price: a shape's prefill + decode GPU-seconds -> $ per M input, output, blended
    export.py      the page's scenario (inputs, outputs, evidence classes) and its link
    __main__.py    the CLI

The package namespace is deployment.py and step.py (the physics); import the rest from their modules.

CLI: python -m k3lite.analytic.serving --preset kimi-k3 --gpu B300 --gpus 64 --ep 64 --weights bf16 --experts mxfp4 --context 32768 --json
     python -m k3lite.analytic.serving frontier --preset kimi-k3 --input-len 8192 --output-len 1024 [--gpus B300 GB300] --json
     python -m k3lite.analytic.serving predict --gpu B300 --gpus 8 --tp 8 --weights mxfp4 --concurrency 16 --json
"""
from k3lite.analytic.serving.deployment import (
    DSPARK_ACCEPTANCE, DSPARK_DRAFT_LAYERS, DSPARK_DRAFT_PARAMS, DSPARK_DRAFT_TOKENS, FORMAT_ALIASES, K3_PRESET,
    MIN_TOKENS_PER_USER, MTP_LAYERS, SPEC_SOURCE, USD_PER_GPU_HOUR, Serving, Speculation, has_mtp, precision_map,
)
from k3lite.analytic.serving.step import (
    PREFILL_CHUNK_TOKENS, Placement, Prefill, Step, StepTerms, TokenFlops, best_batch, cache_bytes_per_sequence,
    capacity, check_fits, curve_batches, decode_step, forward_bytes, pareto, placement, prefill_step,
    prefill_usd_per_m_input, report, step_at, step_terms, token_flops, wire_bytes_per_token,
)

__all__ = [
    "DSPARK_ACCEPTANCE", "DSPARK_DRAFT_LAYERS", "DSPARK_DRAFT_PARAMS", "DSPARK_DRAFT_TOKENS", "FORMAT_ALIASES",
    "K3_PRESET", "MIN_TOKENS_PER_USER", "MTP_LAYERS", "PREFILL_CHUNK_TOKENS", "SPEC_SOURCE", "USD_PER_GPU_HOUR",
    "Placement", "Prefill", "Serving", "Speculation", "Step", "StepTerms", "TokenFlops", "best_batch", "cache_bytes_per_sequence",
    "capacity", "check_fits", "curve_batches", "decode_step", "forward_bytes", "has_mtp", "pareto", "placement",
    "precision_map", "prefill_step", "prefill_usd_per_m_input", "report", "step_at", "step_terms", "token_flops",
    "wire_bytes_per_token",
]
