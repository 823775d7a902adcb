"""Published K3 serving runs, as data with their sources: what the predictor (predict.py) is fitted to and checked
against (fit.py). Each row is one benchmark setting: engine, hardware, parallel layout, checkpoint, speculation,
concurrency, lengths, and what was measured.

SGLang's Kimi K3 cookbook (sgl-project/sglang docs/src/snippets/configs/moonshotai/kimi-k3-benchmarks.jsx, rows
marked "v0.5.18 @ 71de97b2", read at commit 4e248400): one B300 node, `bench_serving` on random data, 8,192 input /
1,024 output tokens (--random-range-ratio 1.0: every request exactly so), num_prompts = 5 x concurrency,
--flush-cache (kimi-k3.jsx `benchmarkCommands`). Its launch recipes (kimi-k3.jsx `cells`, read at commit 0df5db69):
    low-latency   --tp-size 8 (experts split over the 8 GPUs, no --ep-size), --mem-fraction-static 0.85
    balanced      --tp-size 8 --dcp-size 8 (decode context parallelism: each GPU keeps 1/8 of every latent cache)
    DSpark        --speculative-algorithm DSPARK --speculative-dspark-block-size 7 (7 tokens proposed per step),
                  draft RadixArk/Kimi-K3-DSpark
    NVFP4         nvidia/Kimi-K3-NVFP4: NVFP4 routed experts, 128x128 block-FP8 weight-only attention (the rest
                  bf16 as released), on the FlashInfer TRT-LLM MoE runner
    defaults      no --chunked-prefill-size: SGLang's server_args gives 16,384 on GPUs of >= 160 GiB, CUDA graphs up
                  to batch 512; radix (prefix) cache on
Its `tokens_per_sec_per_gpu` counts input AND output tokens: c x (input + output) / (TTFT + (output - 1) x TPOT)
/ 8 reproduces the published figure to 0.6% on 11 of the 12 B300 rows (`sglang_tokens_per_s_per_gpu`, tested). The
twelfth, balanced NVFP4 with DSpark at 64, publishes 9% less (and MI350X's DSpark at 64, 31% less): with speculation
each request keeps its own number of tokens per step, and a wave lasts as long as its slowest request, not its mean.

vLLM's K3 post (VLLM_K3 below, the one copy of its table; compare.py checks the bound against it): one B300 node,
TP8, DSpark with 8 speculative tokens (RedHatAI/Kimi-K3-speculator.dspark), guidellm synthetic text of 8,000 prompt
/ 1,000 output tokens, temperature 1.0, reasoning_effort max, concurrency 1 / 4 / 16 for 150 s each. Its "Throughput" column is output tokens per second
SUMMED over the node's requests, not per request: at concurrency 16 one request's 1,000 tokens take 22.17 s (45
tok/s) while the column says 725; 16 x 1,000 / 22.17 = 722. Its TPOT is derived here: (latency - TTFT) / 999.
Its requests do not stay in waves: with speculation at temperature 1.0 each request keeps a different number of
tokens per step, so streams finish apart and the next prefills arrive spread out (TTFT at 16 is 3.0 x the lone
prefill's, not the 9 x of SGLang's waves): its rows are predicted with arrivals "staggered" and their TTFT is checked
as a bracket (fit.py), not fitted.

SGLang's MI350X rows (the same file at commit 008b79d2, "v0.5.19 @ 12771786"; TP8, fp8 KV cache, CUDA graphs to
256; DSpark's acceptance pinned to 5.00 by SGLANG_SIMULATE_ACC_LEN=5) are held out: another GPU and engine build,
predicted with the B300 efficiencies to show how far those carry (they do not: fit.py reports it).
"""
from __future__ import annotations

from typing import NamedTuple

from k3lite.analytic.memory import RELEASED_K3_FORMATS

SGLANG_SOURCE = ("SGLang Kimi K3 cookbook benchmarks, sgl-project/sglang docs/src/snippets/configs/moonshotai/"
                 "kimi-k3-benchmarks.jsx (commit 4e248400), sglang v0.5.18 @ 71de97b2; recipes in kimi-k3.jsx")
SGLANG_MI350X_SOURCE = ("the same kimi-k3-benchmarks.jsx at commit 008b79d2, sglang v0.5.19 @ 12771786, MI350X "
                        "balanced cell (TP8, fp8 KV cache); DSpark acceptance pinned to 5.00 (SGLANG_SIMULATE_ACC_LEN)")
SGLANG_CHUNK_TOKENS = 16384  # server_args.py: chunked_prefill_size 16,384 for GPUs with >= 160 GiB ("B200, MI300")
SGLANG_DSPARK_BLOCK = 7  # --speculative-dspark-block-size 7: tokens proposed per step
VLLM_K3_SOURCE = ("vLLM blog 'Kimi K3 Performance Optimizations in vLLM' (2026-09-13; vllm-project.github.io "
                  "_posts/2026-09-13-kimi-k3-performance-optimization.md): one B300 node, TP8, guidellm 8,000 prompt / "
                  "1,000 output tokens, DSpark num_speculative_tokens 8, concurrency 1 / 4 / 16, commit 82a85dc1")
VLLM_K3_INPUT, VLLM_K3_OUTPUT = 8000, 1000


class VllmK3(NamedTuple):
    concurrency: int
    output_tokens_per_s: float  # the node's output throughput, summed over its requests
    latency_s: float  # average request latency
    ttft_s: float  # average time to first token


VLLM_K3: tuple[VllmK3, ...] = (VllmK3(1, 183.3, 5.30, 0.3763), VllmK3(4, 416.7, 10.50, 0.6405),
                               VllmK3(16, 725.0, 22.17, 1.1210))
VLLM_DSPARK_TOKENS = 8  # num_speculative_tokens 8
VLLM_CHUNK_TOKENS = 16384  # max_num_batched_tokens for the high-memory tier (as the post cites a vLLM pull request)

# the checkpoints as their engines load them: {component: storage format}
CHECKPOINTS: dict[str, dict[str, str]] = {
    "MXFP4": dict(RELEASED_K3_FORMATS),  # moonshotai/Kimi-K3 as released
    "NVFP4": {**RELEASED_K3_FORMATS, "routed_experts": "nvfp4", "attention": "fp8"},  # nvidia/Kimi-K3-NVFP4
}
# acceptance (tokens kept per verification step) of each benchmark's data, a fitted term unless the run pinned it
ACCEPTANCE_TERMS = ("sglang-random", "vllm-guidellm")


class Measured(NamedTuple):
    key: str  # short and unique: engine-strategy-checkpoint-spec-concurrency
    gpu: str
    n_gpus: int
    tp: int  # experts split over the same GPUs (the engines' TP default)
    dcp: int
    checkpoint: str  # a CHECKPOINTS key
    draft_tokens: int  # tokens drafted per step; 0 = no speculation
    acceptance: str | float  # an ACCEPTANCE_TERMS key (fitted) or the value the run pinned
    concurrency: int
    input_len: int
    output_len: int
    arrivals: str  # predict.ARRIVALS
    chunk_tokens: int
    ttft_s: float
    tpot_s: float
    throughput: float  # as published
    throughput_kind: str  # "total" (input + output tokens/s per GPU) or "output" (output tokens/s of the node)
    fitted: bool  # False: held out (another GPU), predicted with the B300 efficiencies
    source: str


def sglang_tokens_per_s_per_gpu(ttft_s: float, tpot_s: float, concurrency: int, input_len: int, output_len: int,
                                n_gpus: int) -> float:
    """SGLang's `tokens_per_sec_per_gpu` from its TTFT and TPOT: every request's input and output tokens over a
    request's latency (TTFT + (output - 1) x TPOT), c requests at once, per GPU."""
    return concurrency * (input_len + output_len) / (ttft_s + (output_len - 1) * tpot_s) / n_gpus


def _sglang(strategy: str, ckpt: str, spec: bool, c: int, ttft_ms: float, tpot_ms: float, tps: float,
            gpu: str = "B300", pinned: float | None = None) -> Measured:
    return Measured(f"sglang-{gpu.lower()}-{strategy}-{ckpt.lower()}-{'dspark' if spec else 'nospec'}-c{c}", gpu, 8, 8,
                    8 if strategy == "balanced" and gpu == "B300" else 1, ckpt, SGLANG_DSPARK_BLOCK if spec else 0,
                    (pinned or "sglang-random") if spec else 1.0, c, 8192, 1024, "together", SGLANG_CHUNK_TOKENS,
                    ttft_ms / 1e3, tpot_ms / 1e3, tps, "total", gpu == "B300",
                    SGLANG_SOURCE if gpu == "B300" else SGLANG_MI350X_SOURCE)


SGLANG_K3: tuple[Measured, ...] = tuple(
    _sglang(strategy, ckpt, spec, c, ttft, tpot, tps) for strategy, ckpt, spec, c, ttft, tpot, tps in (
        ("low-latency", "MXFP4", False, 1, 378, 8.51, 127), ("low-latency", "MXFP4", False, 16, 3539, 19.47, 785),
        ("low-latency", "MXFP4", True, 1, 389, 2.84, 351), ("low-latency", "MXFP4", True, 16, 3942, 9.88, 1319),
        ("low-latency", "NVFP4", False, 1, 369, 10.12, 107), ("low-latency", "NVFP4", False, 16, 3387, 20.94, 742),
        ("low-latency", "NVFP4", True, 1, 380, 3.24, 313), ("low-latency", "NVFP4", True, 16, 3765, 9.77, 1345),
        ("balanced", "MXFP4", False, 64, 11635, 40.19, 1395), ("balanced", "MXFP4", True, 64, 12038, 24.47, 1987),
        ("balanced", "NVFP4", False, 64, 11063, 41.55, 1373), ("balanced", "NVFP4", True, 64, 11664, 22.17, 1946)))

VLLM_K3_ROWS: tuple[Measured, ...] = tuple(
    Measured(f"vllm-b300-tp8-mxfp4-dspark-c{m.concurrency}", "B300", 8, 8, 1, "MXFP4", VLLM_DSPARK_TOKENS,
             "vllm-guidellm", m.concurrency, VLLM_K3_INPUT, VLLM_K3_OUTPUT, "staggered", VLLM_CHUNK_TOKENS, m.ttft_s,
             (m.latency_s - m.ttft_s) / (VLLM_K3_OUTPUT - 1), m.output_tokens_per_s, "output", True, VLLM_K3_SOURCE)
    for m in VLLM_K3)

MI350X_K3: tuple[Measured, ...] = tuple(
    _sglang("balanced", "MXFP4", spec, c, ttft, tpot, tps, gpu="MI350X", pinned=5.0)
    for spec, c, ttft, tpot, tps in ((True, 1, 604, 5.39, 186), (True, 16, 6035, 15.32, 864),
                                     (True, 64, 23720, 31.45, 913), (False, 1, 590, 18.55, 58),
                                     (False, 16, 6331, 32.80, 462), (False, 64, 18665, 70.39, 813)))

MEASURED: tuple[Measured, ...] = SGLANG_K3 + VLLM_K3_ROWS + MI350X_K3
FITTED_ROWS: tuple[Measured, ...] = tuple(m for m in MEASURED if m.fitted)
