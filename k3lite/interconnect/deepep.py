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
