"""DeepEP's published benchmark numbers next to our byte model for the same setting.

Source: github.com/deepseek-ai/DeepEP at dd758ca, docs/legacy.md "Performance" (the V1 kernels whose code
`analytic.py` cites): H800 nodes of 8 GPUs, NVLink ~160 GB/s, one CX7 400 Gb/s RDMA NIC (~50 GB/s) per GPU.

    normal       "DeepSeek-V3/R1 pretraining setting": 4096 tokens per batch (per rank), hidden 7168, top-4 groups
                 (= node limit M = min(4, nodes)), top-8 of 256 experts, FP8 dispatch, BF16 combine. The table
                 gives bottleneck bandwidths only (EP 8: NVLink; EP 16/32/64: RDMA).
    low-latency  "typical DeepSeek-V3/R1 production setting": 128 tokens per rank, hidden 7168, top-8, FP8 dispatch,
                 BF16 combine; the table gives latency and RDMA bandwidth per EP size.

How DeepEP turns time into bandwidth (their tests, same commit): normal kernels count one RDMA copy per distinct
node *including the token's own node* (tests/legacy/test_internode.py 59-63, 224, 242: "logical bandwidth ...
contains local rank traffic", README) and, inside a node, every token a rank receives including its own
(test_intranode.py 188); payload only, FP8 as hidden x (1 + 4/128) bytes. Low-latency kernels count every top-k
selection, own GPU included, at hidden + hidden/32 + 16 bytes (dispatch) or 2 hidden (combine)
(test_low_latency.py 218-224). Our model counts what leaves the GPU: copies to *other* GPUs / nodes, with the
routing metadata and padding of each record. So "their time" = their logical bytes / their bandwidth (for the
low-latency rows it is also the reported latency, which checks the accounting), and "our time" = our bytes / the
same bandwidth: the gap is the local traffic they count and we do not, minus our metadata.
"""
from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from k3lite.base.evidence import Evidence, derived, measured_elsewhere
from k3lite.interconnect.analytic import expected_copies, layer_bytes
from k3lite.interconnect.deployment import wire_format

SOURCE = "DeepEP docs/legacy.md Performance tables (github.com/deepseek-ai/DeepEP @ dd758ca); H800, CX7 400 Gb/s"
HIDDEN, TOP_K, N_EXPERTS, GPUS_PER_NODE = 7168, 8, 256, 8
NVLINK_PEAK, RDMA_PEAK = 160e9, 50e9  # bytes/s, as DeepEP's README states them for H800 / CX7

# (EP, dispatch GB/s, combine GB/s); EP 8 is intranode (NVLink bottleneck), the rest internode (RDMA bottleneck)
NORMAL = [(8, 153, 158), (16, 43, 43), (32, 58, 57), (64, 51, 50)]
NORMAL_TOKENS = 4096
# (EP, dispatch µs, dispatch GB/s, combine µs, combine GB/s)
LOW_LATENCY = [(8, 77, 98, 114, 127), (16, 118, 63, 195, 74), (32, 155, 48, 273, 53), (64, 173, 43, 314, 46),
               (128, 192, 39, 369, 39), (256, 194, 39, 360, 40)]
LL_TOKENS = 128


def _fp8_payload(hidden: int) -> float:
    return hidden * (1 + 4 / 128)  # DeepEP's fp8_factor x bf16 bytes


def normal_rows() -> list[dict]:
    """One row per (EP, direction) of the normal-kernel table: bytes per rank and time at their bandwidth."""
    rows = []
    for ep, d_bw, c_bw in NORMAL:
        n_nodes = max(1, ep // GPUS_PER_NODE)
        limit = min(4, n_nodes) if n_nodes > 4 else 0  # top-4 groups: a real limit only beyond 4 nodes
        c = expected_copies(N_EXPERTS, TOP_K, ep, GPUS_PER_NODE, limit, "normal")
        ours = layer_bytes(c, "normal", HIDDEN, TOP_K, "fp8", "bf16")
        link = "NVLink" if n_nodes == 1 else "RDMA"
        for direction, bw, fmt in (("dispatch", d_bw, "fp8"), ("combine", c_bw, "bf16")):
            per_copy = _fp8_payload(HIDDEN) if fmt == "fp8" else wire_format("bf16").row_bytes(HIDDEN)
            counted = c.gpus_hit if link == "NVLink" else c.domains_hit  # their count includes the own GPU / node
            theirs = NORMAL_TOKENS * counted * per_copy
            mine = NORMAL_TOKENS * getattr(ours, f"{direction}_{'intra' if link == 'NVLink' else 'inter'}")
            rows.append(_row("normal", ep, direction, link, bw, theirs, mine, None, limit,
                             NVLINK_PEAK if link == "NVLink" else RDMA_PEAK))
    return rows


def low_latency_rows() -> list[dict]:
    """One row per (EP, direction) of the low-latency table (pure RDMA in DeepEP's setting)."""
    rows = []
    for ep, d_us, d_bw, c_us, c_bw in LOW_LATENCY:
        c = expected_copies(max(N_EXPERTS, ep), TOP_K, ep, 1, 0, "low-latency")  # every other GPU over RDMA
        ours = layer_bytes(c, "low-latency", HIDDEN, TOP_K, "fp8", "bf16")
        for direction, us, bw, per_sel in (("dispatch", d_us, d_bw, HIDDEN + HIDDEN / 128 * 4 + 16),
                                           ("combine", c_us, c_bw, 2 * HIDDEN)):
            theirs = LL_TOKENS * TOP_K * per_sel
            mine = LL_TOKENS * getattr(ours, direction)
            rows.append(_row("low-latency", ep, direction, "RDMA", bw, theirs, mine, us, 0, RDMA_PEAK))
    return rows


def _row(kernel, ep, direction, link, bw_gbs, theirs, mine, reported_us, limit, peak) -> dict:
    bw = bw_gbs * 1e9
    return {
        "kernels": kernel, "EP": ep, "direction": direction, "bottleneck link": link,
        "node limit M (0 = none)": limit, "their bandwidth (GB/s)": bw_gbs,
        "their bytes / rank (MB)": round(theirs / 1e6, 3), "their time (µs)": round(theirs / bw * 1e6, 1),
        "reported latency (µs)": reported_us,  # None: the normal-kernel table reports bandwidth only
        "our bytes / rank (MB)": round(mine / 1e6, 3), "our time at their bandwidth (µs)": round(mine / bw * 1e6, 1),
        "ours / theirs": round(mine / theirs, 3), "our time at link peak (µs)": round(mine / peak * 1e6, 1),
        "implied wire bandwidth (GB/s)": round(mine / theirs * bw_gbs, 1),  # our bytes / their time
    }


def comparison_table() -> list[dict]:
    return normal_rows() + low_latency_rows()


# ------------------------------------------------------------------------------------------ what the step model uses
# DeepEP's low-latency rows give one time per call; our bytes split it into the copies that stay in the node (NVLink)
# and those that leave it (the NIC). DeepEP's kernel issues both at once, so a call takes
#     latency + max(bytes inside the node / NVLink, bytes leaving the node / achieved NIC bandwidth)
# We fit latency and the NIC bandwidth per direction over all six EP sizes (8 .. 256), least squares on relative
# error. Which copies use which link: 8-GPU NVLink domains, as step.py counts them. (DeepEP's own bandwidth column
# counts every selection as RDMA traffic, "pure RDMA"; but at EP 8 and 16 the reported times are shorter than our
# NIC bytes need at the NIC's 50 GB/s peak (deepep rows: 133 and 142 µs at peak vs 77 and 118 reported), so the
# same-node copies cannot all cross the NIC there.)
LL_DOMAIN = GPUS_PER_NODE  # H800 node: the NVLink domain the fit splits the copies by
LOW_LATENCY_EVIDENCE = measured_elsewhere(SOURCE + ", low-latency kernels table (dispatch/combine µs and GB/s per EP)")
NORMAL_EVIDENCE = measured_elsewhere(SOURCE + ", normal kernels table (bottleneck GB/s per EP)")


class CallFit(NamedTuple):
    """A dispatch or combine call of DeepEP's low-latency kernels: time = latency_s + max(intra / NVLink, inter / nic_bw)."""

    direction: str
    latency_s: float  # fixed seconds per call (per MoE layer, per forward pass)
    nic_bw: float  # bytes/s our NIC bytes achieve
    nic_share: float  # nic_bw / the NIC's peak (RDMA_PEAK)
    rows: tuple  # (EP, reported µs, this fit's µs) for each published row
    evidence: Evidence  # derived: this fit
    measured: Evidence = LOW_LATENCY_EVIDENCE  # the rows it is fitted to


def ll_bytes(ep: int, direction: str) -> tuple[float, float]:
    """(NVLink, NIC) bytes one rank moves in one low-latency call of DeepEP's setting (LL_TOKENS tokens)."""
    c = expected_copies(max(N_EXPERTS, ep), TOP_K, ep, LL_DOMAIN, 0, "low-latency")
    b = layer_bytes(c, "low-latency", HIDDEN, TOP_K, "fp8", "bf16")
    return LL_TOKENS * getattr(b, f"{direction}_intra"), LL_TOKENS * getattr(b, f"{direction}_inter")


def call_time(latency_s: float, nic_bw: float, intra: float, inter: float, nvlink_bw: float = NVLINK_PEAK) -> float:
    """One call's seconds: its fixed latency + the slower of its two links (DeepEP sends on both at once)."""
    return latency_s + max(intra / nvlink_bw, inter / nic_bw)


@lru_cache(maxsize=2)
def fit_call(direction: str) -> CallFit:
    """Latency and achieved NIC bandwidth of one direction from DeepEP's low-latency table (every EP size): for
    each bandwidth on a 0.01 GB/s grid the best latency is closed-form (relative least squares), then the best pair."""
    col = {"dispatch": 1, "combine": 3}[direction]
    eps = [r[0] for r in LOW_LATENCY]
    t = np.array([r[col] * 1e-6 for r in LOW_LATENCY])
    split = [ll_bytes(ep, direction) for ep in eps]
    best = None
    for bw in np.arange(10e9, RDMA_PEAK + 1e6, 1e7):
        m = np.array([max(i / NVLINK_PEAK, o / bw) for i, o in split])  # the link term
        a = max(0.0, float(np.sum((1 - m / t) / t) / np.sum(1 / t ** 2)))
        err = float(np.sum(((a + m) / t - 1) ** 2))
        if best is None or err < best[0]:
            best = (err, a, float(bw))
    _, a, bw = best
    rows = tuple((ep, r[col], round(1e6 * call_time(a, bw, *s), 1)) for ep, r, s in zip(eps, LOW_LATENCY, split))
    return CallFit(direction, a, bw, bw / RDMA_PEAK, rows,
                   derived(f"{__name__}.fit_call", f"{__name__}.LOW_LATENCY"))


def nic_share_normal(ep: int) -> float:
    """The share of the NIC's peak our bytes achieve in DeepEP's normal (prefill) kernels at the published EP nearest
    `ep` (internode rows, 16 / 32 / 64; mean of dispatch and combine): our bytes / their time / RDMA_PEAK."""
    inter = [r for r in normal_rows() if r["bottleneck link"] == "RDMA"]
    near = min({r["EP"] for r in inter}, key=lambda e: abs(np.log2(e) - np.log2(max(ep, 1))))
    picked = [r["implied wire bandwidth (GB/s)"] for r in inter if r["EP"] == near]
    return sum(picked) / len(picked) * 1e9 / RDMA_PEAK


def nvlink_share_normal() -> float:
    """Our bytes / their time over NVLink in DeepEP's intranode normal rows (EP 8), over its ~160 GB/s: data for the
    NVLink side; step.py keeps NVLink at the GPU's peak (the one-node runs fit it)."""
    intra = [r["implied wire bandwidth (GB/s)"] for r in normal_rows() if r["bottleneck link"] == "NVLink"]
    return sum(intra) / len(intra) * 1e9 / NVLINK_PEAK


class NicTerms(NamedTuple):
    """What step.py charges a call that crosses NVLink domains, from DeepEP (H800, CX7 400 Gb/s InfiniBand)."""

    dispatch_latency_s: float
    combine_latency_s: float
    dispatch_nic_share: float  # of the NIC's peak, decode (low-latency kernels)
    combine_nic_share: float
    evidence: Evidence


@lru_cache(maxsize=1)
def nic_terms() -> NicTerms:
    d, c = fit_call("dispatch"), fit_call("combine")
    return NicTerms(d.latency_s, c.latency_s, d.nic_share, c.nic_share, d.evidence)
