"""One table of GPUs for every page that models time or capacity (hybrid page, serving model).

Each value is a vendor datasheet number as quoted by the page in `source` (we have no direct access to the
PDFs here: every source is the stored public page we could read, and `unverified` lists the values we could
not find stated for that exact part). Conventions:
    hbm_bytes       usable HBM per GPU, decimal bytes (80 GB = 80e9)
    hbm_bw          peak HBM bandwidth, bytes/s
    *_flops         DENSE tensor-core peak (datasheets print sparse numbers with an asterisk: half them)
    fp4_flops       0 = no FP4 tensor cores (Hopper): 4-bit weights are dequantised and multiplied in FP8
    nvlink_bw       NVLink bytes/s per GPU per direction (datasheets print the bidirectional total: half it)
    nic_bw          scale-out NIC bytes/s per GPU per direction (400 Gb/s ConnectX-7 = 50e9 B/s)
    nvlink_domain   GPUs that share one NVLink domain (8 in an HGX/DGX node, 72 in an NVL72 rack)
"""
from __future__ import annotations

from typing import NamedTuple


class GPU(NamedTuple):
    name: str
    hbm_bytes: float
    hbm_bw: float
    bf16_flops: float
    fp8_flops: float
    fp4_flops: float
    nvlink_bw: float
    nic_bw: float
    nvlink_domain: int
    source: str
    unverified: str = ""

    def peak_flops(self, weight_format: str) -> float:
        """Dense peak for the matmuls of weights stored in `weight_format` (see k3lite.memory.PRECISIONS):
        bf16 -> BF16; fp8 and int4 (weight-only, dequantised to FP8) -> FP8; nvfp4 / mxfp4 -> FP4 where the
        GPU has FP4 tensor cores, else FP8."""
        if weight_format == "bf16":
            return self.bf16_flops
        if weight_format in ("nvfp4", "mxfp4") and self.fp4_flops:
            return self.fp4_flops
        return self.fp8_flops


_HOPPER = ("NVIDIA H100 Tensor Core GPU datasheet (SXM): 80 GB HBM3, 3.35 TB/s, BF16 1,979 / FP8 3,958 TFLOPS "
           "with sparsity (dense = half), NVLink 900 GB/s, as tabulated at glennklockwood.com/garden/processors/h100 "
           "and archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html; DGX H100: 8x ConnectX-7 400 Gb/s")

GPUS: dict[str, GPU] = {
    "H100 SXM": GPU("H100 SXM", 80e9, 3.35e12, 989e12, 1979e12, 0.0, 450e9, 50e9, 8, _HOPPER),
    "H800": GPU("H800", 80e9, 3.35e12, 989e12, 1979e12, 0.0, 200e9, 50e9, 8,
                "H100 silicon with NVLink cut to 400 GB/s (NVIDIA H800 SXM5 spec); DeepSeek-V3 report "
                "(arXiv 2412.19437 §3.2.2): NVLink 160 GB/s achieved, InfiniBand 50 GB/s per GPU",
                unverified="400 GB/s NVLink: not found in a stored NVIDIA page; memory and FLOPs assumed equal to H100 SXM"),
    "H200": GPU("H200", 141e9, 4.8e12, 989e12, 1979e12, 0.0, 450e9, 50e9, 8,
                "NVIDIA H200 datasheet: 141 GB HBM3e, 4.8 TB/s; compute and NVLink as H100 SXM"),
    "B200": GPU("B200", 180e9, 8.0e12, 2250e12, 4500e12, 9000e12, 900e9, 50e9, 8,
                "NVIDIA HGX/DGX B200: 1,440 GB HBM3e per 8 GPUs (180 GB each), 8 TB/s, dense BF16 2.25 / FP8 4.5 / "
                "FP4 9 PFLOPS, NVLink 5 1.8 TB/s per GPU; ConnectX-7 400 Gb/s",
                unverified="dense FP4 9 PFLOPS taken as half the 18 PFLOPS sparse figure"),
    "B300": GPU("B300", 288e9, 8.0e12, 2250e12, 4500e12, 13500e12, 900e9, 100e9, 8,
                "NVIDIA HGX/DGX B300 (Blackwell Ultra): 2.3 TB HBM3e per 8 GPUs (288 GB each), 8 TB/s, dense FP4 "
                "108 PFLOPS per 8 GPUs (13.5 each), FP8 as B200, NVLink 5 1.8 TB/s per GPU, ConnectX-8 800 Gb/s "
                "(glennklockwood.com/garden/processors/B300; fibermall HGX B300 table)",
                unverified="dense FP4 (secondary pages disagree: 13.1-15 PFLOPS); BF16/FP8 assumed equal to B200"),
    "GB300 NVL72": GPU("GB300 NVL72", 288e9, 8.0e12, 2500e12, 5000e12, 15000e12, 900e9, 100e9, 72,
                       "NVIDIA GB300 NVL72 spec per rack / 72: ~20.7 TB HBM3e (288 GB each), 576 TB/s (8 TB/s each), "
                       "1.1 EF dense FP4 (~15 PF each), 360 PF FP8 (5 PF each), one 72-GPU NVLink domain at 1.8 TB/s "
                       "per GPU, 72 ConnectX-8 800 Gb/s (glennklockwood.com/garden/processors/B300)",
                       unverified="BF16 taken as half the FP8 figure"),
}


def get_gpu(name: str) -> GPU:
    if name not in GPUS:
        raise ValueError(f"GPU must be one of {list(GPUS)}, got {name!r}")
    return GPUS[name]
