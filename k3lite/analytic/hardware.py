"""One table of GPUs for every page that models time or capacity (hybrid page, serving model).

Each value is a vendor datasheet number as quoted by the page in `source` (we have no direct access to the
PDFs here: every source is the stored public page we could read, and `unverified` lists the values we could
not find stated for that exact part). Conventions:
    hbm_bytes       HBM per GPU in bytes. Capacity is binary (k3lite.base.units): a datasheet's "80 GB" is 80 GiB,
                    stored as 80 x 2**30 B and printed with fmt_capacity. An "80 GB" H100 shows 81,559 MiB in
                    nvidia-smi and a "141 GB" H200 143,771 MiB (the driver keeps a little back); a row whose source is
                    nvidia-smi's MiB (the B200's) stores that MiB x 2**20. AMD's ROCm specification table heads its
                    column "VRAM (GiB)": an MI300X's 192 is 192 GiB
    hbm_bw          peak HBM bandwidth, bytes/s
    *_flops         DENSE tensor-core peak (datasheets print sparse numbers with an asterisk: half them)
    fp4_flops       0 = no FP4 tensor cores (Hopper, MI300X, MI325X): 4-bit weights are dequantised and multiplied
                    in FP8 (`peak_flops`); their bytes stay 4-bit
    nvlink_bw       scale-up bytes/s per GPU per direction: NVLink, or AMD's Infinity Fabric (datasheets print the
                    bidirectional total: half it)
    nic_bw          scale-out NIC bytes/s per GPU per direction (400 Gb/s ConnectX-7 = 50e9 B/s)
    nvlink_domain   GPUs that share one scale-up domain (8 in an HGX/DGX or AMD Instinct node, 72 in an NVL72 rack)
"""
from __future__ import annotations

from typing import NamedTuple

from k3lite.base.units import GIB

GiB = GIB  # HBM capacity is binary: a datasheet's "80 GB" and AMD's "VRAM (GiB)" are both GiB
MiB = 2 ** 20  # nvidia-smi's memory.total unit
H100_SMI_MIB, H200_SMI_MIB = 81_559, 143_771  # nvidia-smi memory.total of an "80 GB" H100 SXM, a "141 GB" H200


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
    smi_mib: int = 0  # nvidia-smi's memory.total where a source cites it (0: none cited); usable HBM, a bit under

    @property
    def capacity_words(self) -> str:
        """What the table stores and, where cited, what nvidia-smi shows: '80 GiB (the datasheet's "80 GB"; nvidia-smi
        shows 81,559 MiB = 79.6 GiB)'. Every sentence that names a GPU's HBM says it through this."""
        stored = f"{self.hbm_bytes / GiB:.3g} GiB"
        if not self.smi_mib or self.smi_mib * MiB == self.hbm_bytes:
            return stored
        return f"{stored} (the datasheet's \"{self.hbm_bytes / GiB:.0f} GB\"; nvidia-smi shows {self.smi_mib:,} MiB = " \
               f"{self.smi_mib / 1024:.1f} GiB)"

    def peak_flops(self, weight_format: str) -> float:
        """Dense peak for the matmuls of weights stored in `weight_format` (see k3lite.analytic.memory.PRECISIONS):
        bf16 -> BF16; fp8 and int4 (weight-only, dequantised to FP8) -> FP8; nvfp4 / mxfp4 -> FP4 where the
        GPU has FP4 tensor cores, else FP8."""
        if weight_format == "bf16":
            return self.bf16_flops
        if weight_format in ("nvfp4", "mxfp4") and self.fp4_flops:
            return self.fp4_flops
        return self.fp8_flops


_HOPPER = ("NVIDIA H100 SXM datasheet as tabulated at glennklockwood.com/garden/processors/h100 (80 GB HBM3, "
           "3.35 TB/s, dense matrix BF16 989.4 / FP8 1978.9 TFLOPS, NVLink 900 GB/s) and "
           "archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html (the datasheet table, sparse figures with an asterisk); "
           f"ConnectX-7 400 Gb/s per GPU as in DGX H100; 80 GB modelled as 80 GiB (nvidia-smi: {H100_SMI_MIB:,} MiB = "
           f"{H100_SMI_MIB / 1024:.1f} GiB usable)")

GPUS: dict[str, GPU] = {
    "H100 SXM": GPU("H100 SXM", 80 * GiB, 3.35e12, 989e12, 1979e12, 0.0, 450e9, 50e9, 8, _HOPPER, smi_mib=H100_SMI_MIB),
    "H800": GPU("H800", 80 * GiB, 3.35e12, 989e12, 1979e12, 0.0, 200e9, 50e9, 8,
                "H100 silicon with a cut NVLink (aiwiki.ai/wiki/nvidia_h800; tumgag/philisun pages: 400 GB/s "
                "bidirectional); DeepSeek-V3 report (arXiv 2412.19437 §3.2.2): NVLink 160 GB/s achieved, "
                "InfiniBand 50 GB/s per GPU",
                unverified="NVLink: secondary pages say 400 GB/s, Reuters-based reports 300 GB/s, no NVIDIA datasheet "
                           "stored; HBM and FLOPs taken equal to H100 SXM"),
    "H200": GPU("H200", 141 * GiB, 4.8e12, 989e12, 1979e12, 0.0, 450e9, 50e9, 8,
                "NVIDIA H200 SXM: 141 GB HBM3e, 4.8 TB/s, FP8 3,958 TFLOPS with sparsity, NVLink 900 GB/s "
                "(tabulated at lzwjava.github.io/nvidia-h200-gpu-specs-en and aiwiki.ai/wiki/nvidia_h200); "
                f"compute as H100 SXM; 141 GB modelled as 141 GiB (nvidia-smi: {H200_SMI_MIB:,} MiB = "
                f"{H200_SMI_MIB / 1024:.1f} GiB usable)", smi_mib=H200_SMI_MIB),
    "B200": GPU("B200", 183_359 * MiB, 8.0e12, 2250e12, 4500e12, 9000e12, 900e9, 50e9, 8,
                "HGX B200 (1,000 W variant) at glennklockwood.com/garden/processors/B200: dense BF16 2.25 / FP8 4.5 / "
                "FP4 9 PFLOPS, 8 TB/s, NVLink 5 2 x 900 GB/s; HBM: 192 GB on spec pages, '179 GB' visible on an HGX "
                "B200 (docs.vultr.com inference cookbook), which is nvidia-smi's memory.total of 183,359 MiB = "
                "179 GiB: we use those 183,359 MiB (DGX B200: 1,440 GB per 8 GPUs)",
                unverified="usable HBM from one provider's nvidia-smi (spec pages say 192 GB); the ConnectX-7 "
                           "400 Gb/s NIC"),
    "B300": GPU("B300", 288 * GiB, 8.0e12, 2250e12, 4500e12, 13500e12, 900e9, 100e9, 8,
                "HGX B300 (Blackwell Ultra) at glennklockwood.com/garden/processors/B300: 288 GB HBM3e, 8 TB/s, "
                "NVLink 5 2 x 900 GB/s, BF16 / FP8 as B200, dense FP4 '13 PF'; ConnectX-8 800 Gb/s (DGX B300); "
                "we read its 288 GB as 288 GiB, as for every HBM part (8 stacks of 12-high 24 Gbit HBM3e dies: "
                "8 x 36 GiB)",
                unverified="288 GB read as GiB (no nvidia-smi figure stored for a B300); dense FP4 (secondary pages "
                           "give 13.1 to 15 PFLOPS; we use 13.5)"),
    "GB300 NVL72": GPU("GB300 NVL72", 288 * GiB, 8.0e12, 2500e12, 5000e12, 15000e12, 900e9, 100e9, 72,
                       "GB300 NVL72 as advertised (glennklockwood.com/garden/processors/B300): 1.1 EF dense FP4, "
                       "360 PF FP8, ~20 TB HBM at 576 TB/s, one 72-GPU NVLink domain (130 TB/s), 72 ConnectX-8 NICs; "
                       "per GPU: 288 GB, 8 TB/s, ~15 PF FP4, 5 PF FP8, 1.8 TB/s NVLink, 800 Gb/s",
                       unverified="BF16 taken as half the FP8 figure; 288 GB per GPU read as 288 GiB, as the B300 (the "
                                  "rack figure '20 TB' / 72 = 278 GB, or 20 TiB / 72 = 284 GiB)"),
    # AMD Instinct, one 8-GPU platform: seven Infinity Fabric links per GPU, one to each peer
    "MI300X": GPU("MI300X", 192 * GiB, 5.3e12, 1307.4e12, 2614.9e12, 0.0, 448e9, 50e9, 8,
                  "AMD Instinct MI300X: ROCm GPU specifications (rocm-docs reference/gpu-specs.rst: 192 GiB, CDNA3, "
                  "304 CUs); 5.3 TB/s HBM3, dense FP16/BF16 1,307.4 / FP8 2,614.9 TFLOPS (5,229.8 with sparsity), "
                  "as tabulated at awesomeagents.ai/hardware and codesota.com; Infinity Fabric 128 GB/s bidirectional "
                  "per link, 7 links: 448 GB/s per direction (emergentmind.com MI300X review; gpu.blog: 896 GB/s "
                  "bidirectional); no FP4 tensor cores (CDNA3: FP8, FP16, BF16, INT8)",
                  unverified="the 400 Gb/s NIC per GPU (platforms ship ConnectX-7 or Pollara 400)"),
    "MI325X": GPU("MI325X", 256 * GiB, 6.0e12, 1307.4e12, 2614.9e12, 0.0, 448e9, 50e9, 8,
                  "AMD Instinct MI325X: ROCm GPU specifications (256 GiB, CDNA3, the MI300X's 304 CUs); 6 TB/s "
                  "HBM3E, dense FP16/BF16 1,307.4 / FP8 2,614.9 TFLOPS (awesomeagents.ai/hardware/amd-mi325x; "
                  "docs.vultr.com ROCm hardware requirements: 1,307 TFLOPS FP16); seven Infinity Fabric links as the "
                  "MI300X (wiaix.com product page); no FP4 tensor cores",
                  unverified="Infinity Fabric per-link rate taken equal to the MI300X's; the 400 Gb/s NIC"),
    "MI350X": GPU("MI350X", 288 * GiB, 8.0e12, 2306e12, 4612e12, 9225e12, 537.6e9, 50e9, 8,
                  "AMD Instinct MI350X: ROCm GPU specifications (288 GiB, CDNA4, 256 CUs); 8 TB/s HBM3E (aiwiki.ai, "
                  "the MI350 series); dense FP8 = 8,192 FLOPs per CU per clock (ISSCC 2026, reported by "
                  "world-today-news.com) x 256 CUs x 2.2 GHz (wccftech, Hot Chips 2025) = 4.6 PFLOPS, BF16 half, "
                  "MXFP4 twice; Infinity Fabric ~153.6 GB/s bidirectional per link (humeconsulting.co), 7 links: "
                  "537.6 GB/s per direction",
                  unverified="FLOPs derived from CUs x per-CU rate x max clock (secondary pages quote AMD's 2.3 / 4.6 / "
                             "9.2 PFLOPS); the Infinity Fabric per-link rate; the 400 Gb/s NIC"),
    "MI355X": GPU("MI355X", 288 * GiB, 8.0e12, 2517e12, 5033e12, 10066e12, 537.6e9, 50e9, 8,
                  "AMD Instinct MI355X: ROCm GPU specifications (288 GiB, CDNA4, 256 CUs); 8 TB/s HBM3E (aiwiki.ai, "
                  "boston.co.uk); dense FP8 8,192 FLOPs per CU per clock x 256 CUs x 2.4 GHz = 5.0 PFLOPS ('five "
                  "petaflops of FP8', ISSCC 2026, reported by world-today-news.com), BF16 half, MXFP4 twice ('up to "
                  "10 PFLOPS FP4', humeconsulting.co); Infinity Fabric ~153.6 GB/s bidirectional per link, 7 links: "
                  "537.6 GB/s per direction",
                  unverified="BF16 and FP4 derived from the FP8 rate; the Infinity Fabric per-link rate; the 400 Gb/s "
                             "NIC (AMD Pollara 400 on the MI355X platforms)"),
}


def _key(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


# the short names people type: "H100" is the SXM part (the table's H100), "GB300" and "NVL72" the rack
GPU_ALIASES = {**{_key(n): n for n in GPUS}, "h100": "H100 SXM", "gb300": "GB300 NVL72", "nvl72": "GB300 NVL72"}


# ------------------------------------------------------------------------------------------ your own GPU
# A GPU not in the table travels as one name, so it fits wherever a GPU name goes (a Serving, a frontier's list, a
# URL, the price table) and no session's GPU lands in the server-wide table: "custom:" then the fields below, in
# this order, colon-separated (no commas: lists travel comma-joined in a URL). Its numbers are the reader's.
CUSTOM_PREFIX = "custom:"
CUSTOM_FIELDS: tuple[tuple[str, str, float, float, float], ...] = (
    # (field, what, unit scale to the GPU tuple's unit, lowest, highest)
    ("hbm_gib", "HBM capacity (GiB)", GiB, 1, 4096),
    ("hbm_tb_s", "HBM bandwidth (TB/s)", 1e12, 0.1, 100),
    ("bf16_tflops", "dense BF16 (TFLOPS)", 1e12, 1, 100_000),
    ("fp8_tflops", "dense FP8 (TFLOPS)", 1e12, 1, 100_000),
    ("fp4_tflops", "dense FP4 (TFLOPS; 0 = none)", 1e12, 0, 100_000),
    ("nvlink_gb_s", "scale-up per direction (GB/s)", 1e9, 1, 100_000),
    ("nic_gb_s", "scale-out NIC per direction (GB/s)", 1e9, 0.1, 10_000),
    ("nvlink_domain", "GPUs in one scale-up domain", 1, 1, 1024),
    ("usd_per_hour", "$ per GPU-hour", 1, 0.01, 999),
)
YOUR_GPU = "your GPU: the numbers typed on the page"
# where the pages' "Your own GPU" inputs start: the B200's row above (179 GiB as nvidia-smi shows it), at its assumed
# $ per GPU-hour
CUSTOM_DEFAULTS = {"hbm_gib": 179.0, "hbm_tb_s": 8.0, "bf16_tflops": 2250.0, "fp8_tflops": 4500.0,
                   "fp4_tflops": 9000.0, "nvlink_gb_s": 900.0, "nic_gb_s": 50.0, "nvlink_domain": 8.0,
                   "usd_per_hour": 3.5}


def _num(v: float) -> str:
    return f"{float(v):g}"


def custom_gpu_name(**fields: float) -> str:
    """The name of a GPU described by the reader: custom_gpu_name(hbm_gib=192, hbm_tb_s=8, ...) ->
    'custom:192:8:...'. Every field of CUSTOM_FIELDS is needed and checked against its range (ValueError naming it)."""
    missing = [f for f, *_ in CUSTOM_FIELDS if f not in fields]
    extra = sorted(set(fields) - {f for f, *_ in CUSTOM_FIELDS})
    if missing or extra:
        raise ValueError(f"a custom GPU needs exactly {[f for f, *_ in CUSTOM_FIELDS]}; missing {missing}, unknown {extra}")
    values = []
    for field, what, _, lo, hi in CUSTOM_FIELDS:
        v = float(fields[field])
        if not (lo <= v <= hi) or v != v:
            raise ValueError(f"{what} must be in {lo:g}..{hi:g}, got {fields[field]!r}")
        if field == "nvlink_domain" and v != int(v):
            raise ValueError(f"{what} must be a whole number, got {fields[field]!r}")
        values.append(_num(v))
    return CUSTOM_PREFIX + ":".join(values)


def custom_or_none(values: dict, on: bool) -> tuple[str | None, str]:
    """(the reader's GPU as one name, or None when off; the constraint a value broke, or "")."""
    if not on:
        return None, ""
    try:
        return custom_gpu_name(**{f: float(values[f]) for f, *_ in CUSTOM_FIELDS}), ""
    except ValueError as e:
        return None, str(e)


def is_custom(name) -> bool:
    return isinstance(name, str) and name.strip().lower().startswith(CUSTOM_PREFIX)


def custom_fields(name: str) -> dict[str, float]:
    """The fields of a custom GPU's name, by CUSTOM_FIELDS (ValueError on a malformed one, naming the format)."""
    parts = name.strip()[len(CUSTOM_PREFIX):].split(":")
    if len(parts) != len(CUSTOM_FIELDS):
        raise ValueError(f"a custom GPU is 'custom:' and {len(CUSTOM_FIELDS)} numbers separated by ':' "
                         f"({', '.join(f for f, *_ in CUSTOM_FIELDS)}), got {name!r}")
    try:
        return {f: float(p) for (f, *_), p in zip(CUSTOM_FIELDS, parts)}
    except ValueError:
        raise ValueError(f"a custom GPU's fields must be numbers, got {name!r}") from None


def custom_gpu(name: str) -> GPU:
    """The GPU a custom name describes (validated by custom_gpu_name)."""
    canonical = custom_gpu_name(**custom_fields(name))
    f = custom_fields(canonical)
    scale = {field: unit for field, _, unit, *_ in CUSTOM_FIELDS}
    return GPU(canonical, f["hbm_gib"] * scale["hbm_gib"], f["hbm_tb_s"] * 1e12, f["bf16_tflops"] * 1e12,
               f["fp8_tflops"] * 1e12, f["fp4_tflops"] * 1e12, f["nvlink_gb_s"] * 1e9, f["nic_gb_s"] * 1e9,
               int(f["nvlink_domain"]), YOUR_GPU)


def custom_price(name: str) -> float:
    """A custom GPU's $ per GPU-hour (its last field)."""
    return custom_fields(custom_gpu_name(**custom_fields(name)))["usd_per_hour"]


def gpu_label(name: str) -> str:
    """How a page names a GPU: the table's name, or 'custom GPU (192 GiB, 8 TB/s)' for one the reader typed."""
    if not is_custom(name):
        return gpu_name(name)
    f = custom_fields(name)
    return f"custom GPU ({_num(f['hbm_gib'])} GiB, {_num(f['hbm_tb_s'])} TB/s)"


def gpu_name(name: str) -> str:
    """The table's name for a GPU typed any common way: 'H100', 'h100-sxm', 'gb300' -> 'H100 SXM', 'GB300 NVL72';
    a custom GPU's name in its canonical spelling."""
    if name in GPUS:
        return name
    if is_custom(name):
        return custom_gpu(name).name
    canonical = GPU_ALIASES.get(_key(str(name)))
    if canonical is None:
        raise ValueError(f"GPU must be one of {list(GPUS)} (or a short name: "
                         f"{', '.join(k for k in GPU_ALIASES if k not in map(_key, GPUS))}; or your own: "
                         f"'{CUSTOM_PREFIX}' and {len(CUSTOM_FIELDS)} numbers), got {name!r}")
    return canonical


def get_gpu(name: str) -> GPU:
    """The GPU by any of its names, or the one a custom name describes."""
    if is_custom(name):
        return custom_gpu(name)
    return GPUS[gpu_name(name)]
