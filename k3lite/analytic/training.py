"""One training step's traffic per token: expert parallelism forward and backward, pipeline boundaries, data-parallel
gradients, the pipeline bubble, each turned into time on the topology's links.

A layout is PP x EP x DP (EP groups inside the data-parallel ranks, as DeepSeek-V3's "64-way EP spanning 8 nodes"),
ZeRO-1 (optimizer state sharded over DP: gradients reduce-scattered, updated parameters all-gathered), m micro-batches
per step per pipeline. Per token of the global batch (DP x m x micro-batch tokens), cluster-wide bytes sent:

    EP forward / backward   every MoE layer's dispatch + combine (interconnect.analytic) and the backward's grad of
                            the combine + grad of the dispatch (interconnect.backward), on NVLink and the NIC
    PP                      the stage boundaries, activations forward and gradients backward (interconnect.pipeline),
                            stages on different nodes: the NIC
    DP                      ring reduce-scatter of the gradients + all-gather of the parameters of each GPU's shard:
                            (R - 1) / R x shard bytes each, R = DP for the non-expert parameters and DP / EP for the
                            experts (each expert is replicated on DP / EP GPUs), summed over the GPUs and divided by
                            the global batch: the NIC

Time: GPU-seconds per token, bytes / the link's per-GPU bandwidth (NVLink or NIC, not overlapped, latency ignored),
beside the compute: 6 x active parameters per token (forward 2, backward 4) at an achieved FLOP/s per GPU. The
pipeline bubble, in units of one micro-batch's forward F on one stage (DeepSeek-V3 report Table 2):

    1F1B        (PP - 1)(F + B)                  Narayanan et al. 2021 (Megatron-LM, SC'21): bubble (p - 1) / m
    ZB1P        (PP - 1)(F + B - 2W)             Qi et al. 2023, "Zero Bubble Pipeline Parallelism" (arXiv 2401.10241)
    DualPipe    (PP / 2 - 1)(F&B + B - 3W)       DeepSeek-V3 report (arXiv 2412.19437) §3.2.1, Table 2

with B = 2F, W = F (the backward's input and weight gradients each cost one forward) and F&B = F + B (two chunks
overlapped take as long as both): assumptions, each labelled. The bubble's share of the step is
bubble / (m (F + B) + bubble), so it adds that share over (1 - share) to the compute time per token.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from k3lite.analytic.params import active_params, count_params
from k3lite.base.evidence import Evidence, assumed, derived, measured_elsewhere, released
from k3lite.interconnect.analytic import link_seconds
from k3lite.interconnect.backward import DSV3_REPORT, h800_topology, training_ep_bytes
from k3lite.interconnect.deepep import NORMAL
from k3lite.interconnect.deepep import SOURCE as DEEPEP_SOURCE
from k3lite.interconnect.deployment import Deployment, Topology
from k3lite.interconnect.pipeline import pipeline_bytes
from k3lite.model.config import K3Config
from k3lite.model.presets import KIMI_K3_CONFIG_KEYS, get_preset

SCHEDULES = ("1f1b", "zb1p", "dualpipe")
SCHEDULE_SOURCES = {
    "1f1b": "Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM "
            "(SC'21); formula as DeepSeek-V3 report Table 2",
    "zb1p": "Qi et al. 2023, Zero Bubble Pipeline Parallelism (arXiv 2401.10241); formula as DeepSeek-V3 report Table 2",
    "dualpipe": f"{DSV3_REPORT} §3.2.1 and Table 2",
}
# DeepSeek-V3: 2.788M H800 GPU hours for the full training, of which pre-training 2.664M for 14.8T tokens
# ("180K H800 GPU hours per trillion tokens", §1 and Table 1)
DSV3_GPU_HOURS_PER_TRILLION = 180e3


def bubble_units(schedule: str, pp: int, b_over_f: float = 2.0, w_over_f: float = 1.0) -> float:
    """The bubble in units of F (one micro-batch's forward on one stage), DeepSeek-V3 Table 2's formulas."""
    f, b, w = 1.0, b_over_f, w_over_f
    if schedule == "1f1b":
        return (pp - 1) * (f + b)
    if schedule == "zb1p":
        return (pp - 1) * (f + b - 2 * w)
    if schedule == "dualpipe":
        if pp % 2:
            raise ValueError(f"DualPipe needs an even number of stages, got {pp}")
        return (pp / 2 - 1) * ((f + b) + b - 3 * w)  # F&B = F + B
    raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")


def bubble_share(schedule: str, pp: int, micro_batches: int, b_over_f: float = 2.0, w_over_f: float = 1.0) -> float:
    """The bubble's share of one step: bubble / (m (F + B) + bubble)."""
    if micro_batches < 1:
        raise ValueError(f"micro_batches must be >= 1, got {micro_batches}")
    bub = bubble_units(schedule, pp, b_over_f, w_over_f)
    return bub / (micro_batches * (1 + b_over_f) + bub)


@dataclass(frozen=True)
class TrainingLayout:
    """Where a training step runs and how it is split; `evidence` says what each field rests on."""

    name: str
    preset: str
    pp: int
    ep: int
    dp: int
    micro_batches: int  # per step, per pipeline
    micro_batch_tokens: int
    schedule: str
    topology: Topology
    node_limit: int = 0
    scheme: str = "normal"
    dispatch: str = "fp8"
    combine: str = "bf16"
    grad_bytes: int = 2  # per gradient element reduce-scattered over DP
    param_bytes: int = 2  # per parameter element all-gathered over DP
    pp_bytes: int = 2  # per activation / gradient element across a stage boundary
    achieved_flops: float = 0.0  # per GPU; 0 = DeepSeek-V3's, from its published GPU hours
    evidence: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for name in ("pp", "ep", "dp", "micro_batches", "micro_batch_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.dp % self.ep:
            raise ValueError(f"EP ({self.ep}) must divide DP ({self.dp}): expert groups live inside the DP ranks")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.pp * self.dp > self.topology.n_gpus:
            raise ValueError(f"PP x DP = {self.pp * self.dp} GPUs > the topology's {self.topology.n_gpus}")

    @property
    def gpus(self) -> int:
        return self.pp * self.dp

    @property
    def global_tokens(self) -> int:
        return self.dp * self.micro_batches * self.micro_batch_tokens

    def deployment(self) -> Deployment:
        return Deployment(self.topology, self.ep, self.dispatch, self.combine, self.node_limit, self.scheme)


def deepseek_v3_layout() -> TrainingLayout:
    """DeepSeek-V3's published training layout (report §3.2 and §4.2): 2048 H800s, PP 16 x EP 64 (8 nodes) with
    ZeRO-1 DP, DualPipe, at most 4 nodes per token, FP8 dispatch, 4K-token sequences, a final batch of 15,360
    sequences. Not published: the micro-batch (we take one sequence, so m = 15360 / 128 = 120)."""
    rep = released(f"{DSV3_REPORT} §3.2, §4.2")
    return TrainingLayout(
        "DeepSeek-V3 (published layout)", "deepseek-v3", 16, 64, 128, 120, 4096, "dualpipe", h800_topology(), 4,
        evidence={"pp": rep, "ep": rep, "dp": derived("2048 GPUs / PP 16"), "schedule": rep, "node_limit": rep,
                  "topology": rep, "micro_batch_tokens": rep,
                  "micro_batches": assumed("one 4K sequence per micro-batch: 15,360 sequences / DP 128 = 120"),
                  "formats": released(f"{DSV3_REPORT} §3.3.2"),
                  "grad_bytes": assumed("BF16 gradients reduce-scattered"),
                  "param_bytes": assumed("BF16 parameters all-gathered"),
                  "pp_bytes": assumed("BF16 activations across stage boundaries"),
                  "achieved_flops": derived(achieved_flops_dsv3)})


def k3_layout() -> TrainingLayout:
    """K3's training layout is unpublished: we ASSUME DeepSeek-V3's (same cluster, PP 16 x EP 64 x DP 128,
    DualPipe, 120 micro-batches of 4K tokens), so the difference is the model's; K3's config has no node limit."""
    why = assumed("K3's training layout is unpublished: DeepSeek-V3's taken, so the difference is the model's")
    base = deepseek_v3_layout()
    return replace(base, name="Kimi K3 (assumed layout)", preset="kimi-k3", node_limit=0,
                   evidence={**{k: why for k in base.evidence}, "achieved_flops": assumed(
                       "K3 trains at the FLOP/s per GPU DeepSeek-V3's published GPU hours imply"),
                       "node_limit": released(k3_group_source())})


def k3_group_source() -> str:
    """Where K3's 'no node limit' comes from, built from the preset's group rule and the released key it records:
    'num_expert_group 1, topk_group 1, use_grouped_topk true' (present, one group: nothing to limit)."""
    moe = get_preset("kimi-k3").moe
    key = next(k for k in KIMI_K3_CONFIG_KEYS if k.startswith("num_expert_group"))
    limit = "no group or node limit" if moe.topk_groups >= moe.n_groups else f"best {moe.topk_groups} groups"
    return (f"moonshotai/Kimi-K3 config.json: {key} (present; the preset routes by {moe.n_groups} group, best "
            f"{moe.topk_groups}: {limit})")


LAYOUTS = {"deepseek-v3": deepseek_v3_layout, "kimi-k3": k3_layout}


@functools.lru_cache(maxsize=16)
def _params(model: str | K3Config) -> tuple[int, int, int]:
    """(total, active, routed-expert) parameters of a preset or a config (count_params builds it on the meta
    device): a variant's own (MLA everywhere has other attention weights than K3's)."""
    cfg = get_preset(model) if isinstance(model, str) else model
    rep = count_params(cfg)
    return rep.total, active_params(cfg), rep.by_component["routed_experts"]


def achieved_flops_dsv3() -> float:
    """FLOP/s one H800 achieved in DeepSeek-V3's pre-training: 6 x active parameters per token x 10^12 tokens /
    (180K GPU hours x 3600 s)."""
    return 6 * _params("deepseek-v3")[1] * 1e12 / (DSV3_GPU_HOURS_PER_TRILLION * 3600)


class Kind(NamedTuple):
    """One kind of traffic per token of the global batch."""

    kind: str  # "EP forward" | "EP backward" | "PP" | "DP"
    intra: float  # bytes over NVLink
    inter: float  # bytes over the NIC
    seconds: float  # GPU-seconds on the links
    evidence: Evidence

    @property
    def total(self) -> float:
        return self.intra + self.inter


class StepTraffic(NamedTuple):
    layout: TrainingLayout
    kinds: list[Kind]
    compute_s: float  # GPU-seconds of compute per token
    bubble: float  # share of the step
    bubble_s: float  # GPU-seconds per token the bubble adds
    deepep_ep_inter_s: float  # the EP NIC bytes at DeepEP's measured normal-kernel bandwidth (EP 64)
    evidence: dict  # field -> Evidence

    def by_kind(self) -> dict[str, Kind]:
        return {k.kind: k for k in self.kinds}

    @property
    def total_bytes(self) -> float:
        return sum(k.total for k in self.kinds)

    @property
    def comm_s(self) -> float:
        return sum(k.seconds for k in self.kinds)


def step_traffic(layout: TrainingLayout, *, latent: bool = True, residual: str | None = None,
                 cfg: K3Config | None = None) -> StepTraffic:
    """Bytes and GPU-seconds per token of one training step. latent=False: the classic MoE's width on the EP wire;
    residual: 'standard' / 'full' / 'block' instead of the config's own (what each of K3's ideas changes)."""
    cfg = cfg or get_preset(layout.preset)
    topo = layout.topology
    dep = layout.deployment()
    ep = training_ep_bytes(cfg, dep, latent=latent)
    n_moe = sum(t == "moe" for t in cfg.ffn_types())
    pp = pipeline_bytes(cfg, layout.pp, residual, layout.pp_bytes) if layout.pp > 1 else None
    total, active, experts = _params(cfg)
    dense = total - experts
    edp = layout.dp // layout.ep  # GPUs holding each expert
    shard = (layout.grad_bytes + layout.param_bytes)
    per_gpu = (dense / layout.pp * (layout.dp - 1) / layout.dp
               + experts / (layout.pp * layout.ep) * ((edp - 1) / edp if edp > 1 else 0)) * shard
    dp_bytes = per_gpu * layout.gpus / layout.global_tokens
    ev_ep = ep.evidence
    kinds = [
        Kind("EP forward", n_moe * ep.forward.intra, n_moe * ep.forward.inter,
             n_moe * link_seconds(ep.forward, topo), ev_ep),
        Kind("EP backward", n_moe * ep.backward.intra, n_moe * ep.backward.inter,
             n_moe * link_seconds(ep.backward, topo), ev_ep),
        Kind("PP", 0.0, float(pp.total) if pp else 0.0, (pp.total if pp else 0) / topo.inter_bw,
             derived(pipeline_bytes)),
        Kind("DP", 0.0, dp_bytes, dp_bytes / topo.inter_bw, derived(step_traffic, count_params)),
    ]
    flops = layout.achieved_flops or achieved_flops_dsv3()
    compute = 6 * active / flops
    share = bubble_share(layout.schedule, layout.pp, layout.micro_batches)
    ep_inter = kinds[0].inter + kinds[1].inter
    deepep_bw = dict((e, (d + c) / 2) for e, d, c in NORMAL)[64] * 1e9  # their EP 64 RDMA bandwidth
    ev = {"kinds": derived(step_traffic),
          "compute_s": layout.evidence.get("achieved_flops", derived(achieved_flops_dsv3, active_params)),
          "bubble": derived(bubble_share), "deepep_ep_inter_s": measured_elsewhere(DEEPEP_SOURCE),
          "layout": layout.evidence}
    return StepTraffic(layout, kinds, compute, share, compute * share / (1 - share), ep_inter / deepep_bw, ev)


def idea_variants(layout: TrainingLayout) -> dict[str, StepTraffic]:
    """The layout's step as the model has it, with the classic width on the EP wire ("no latent"), and with full
    AttnRes or a standard residual across the stage boundaries: what each of K3's ideas changes. Short keys: they
    are a figure's bar labels, which must fit a phone."""
    return {"as configured": step_traffic(layout), "no latent":
            step_traffic(layout, latent=False), "full AttnRes": step_traffic(layout, residual="full"),
            "standard residual": step_traffic(layout, residual="standard")}


def traffic_rows(step: StepTraffic) -> list[dict]:
    """A table: per kind, bytes per token, where they go, GPU-µs per token; then compute and the bubble."""
    rows = [{"kind": k.kind, "NVLink kB / token": k.intra / 1e3, "NIC kB / token": k.inter / 1e3,
             "GPU-µs / token on links": k.seconds * 1e6} for k in step.kinds]
    rows.append({"kind": "compute (6 x active params)", "NVLink kB / token": 0.0, "NIC kB / token": 0.0,
                 "GPU-µs / token on links": 0.0, "GPU-µs / token": step.compute_s * 1e6})
    return rows


def training_headline(micro_batches: float = 120, micro_batch_tokens: float = 4096, grad_bytes: float = 2,
                      pp_bytes: float = 2) -> float:
    """K3 under the assumed layout: GPU-µs per token of communication plus the bubble (the headline a page's
    assumptions block moves ±20%)."""
    lay = replace(k3_layout(), micro_batches=max(1, round(micro_batches)),
                  micro_batch_tokens=max(1, round(micro_batch_tokens)), grad_bytes=grad_bytes, pp_bytes=pp_bytes)
    step = step_traffic(lay)
    return (step.comm_s + step.bubble_s) * 1e6


def training_sentence(layout: str = "kimi-k3", schedule: str | None = None, micro_batches: int | None = None) -> str:
    """What to notice: which kind of traffic is largest per token, and what the latent saves on the EP wire."""
    from k3lite.base.units import fmt_bytes  # noqa: PLC0415 - the one byte formatter, only the sentence needs it
    from k3lite.base.wording import times  # noqa: PLC0415 - comparison words from the numbers

    lay = LAYOUTS[layout]()
    lay = replace(lay, schedule=schedule or lay.schedule, micro_batches=micro_batches or lay.micro_batches)
    step, wide = step_traffic(lay), step_traffic(lay, latent=False)
    top = max(step.kinds, key=lambda k: k.total)
    ep, ep_wide = (sum(k.total for k in s.kinds if k.kind.startswith("EP")) for s in (step, wide))
    latent = (f"Without the latent the expert-parallel bytes would be {times(ep_wide, ep, 'more', 'less')} "
              f"({fmt_bytes(ep_wide)} against {fmt_bytes(ep)})" if get_preset(lay.preset).moe.latent_dim else
              f"This model has no latent: its {fmt_bytes(ep)} of expert-parallel bytes travel at full width")
    return (f"Per token, {top.kind} moves the most: {fmt_bytes(top.total)} of {fmt_bytes(step.total_bytes)}. "
            f"{latent}; the {lay.schedule} bubble takes {100 * step.bubble:.1f}% of the step at "
            f"{lay.micro_batches} micro-batches.")


def main(argv: list[str] | None = None) -> int:
    """python -m k3lite.analytic.training [--layout kimi-k3] [--pp 16 --ep 64 --dp 128 --micro-batches 120
    --schedule dualpipe] [--json]: one training step's traffic per token, the bubble, DeepSeek-V3's checks."""
    import argparse  # noqa: PLC0415 - only the command line needs them
    import json  # noqa: PLC0415 - the same

    from k3lite.interconnect.backward import deepseek_v3_checks  # noqa: PLC0415 - samples routing: CLI only

    ap = argparse.ArgumentParser(prog="python -m k3lite.analytic.training", description=main.__doc__.split("\n")[0])
    ap.add_argument("--layout", default="kimi-k3", choices=list(LAYOUTS))
    for name in ("pp", "ep", "dp", "micro-batches", "micro-batch-tokens"):
        ap.add_argument(f"--{name}", type=int, default=0, help="override the layout's (0 = keep)")
    ap.add_argument("--schedule", default="", choices=("", *SCHEDULES))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    lay = LAYOUTS[args.layout]()
    over = {k: v for k, v in (("pp", args.pp), ("ep", args.ep), ("dp", args.dp), ("micro_batches", args.micro_batches),
                              ("micro_batch_tokens", args.micro_batch_tokens), ("schedule", args.schedule)) if v}
    try:
        lay = replace(lay, **over)
        step = step_traffic(lay)
    except ValueError as e:
        print(f"error: {e}")
        return 2
    if args.json:
        print(json.dumps({"layout": {k: getattr(lay, k) for k in ("name", "preset", "pp", "ep", "dp", "micro_batches",
                                                                  "micro_batch_tokens", "schedule", "node_limit")},
                          "evidence": {k: e.note for k, e in lay.evidence.items()},
                          "per_token": traffic_rows(step), "bubble_share": step.bubble,
                          "bubble_us_per_token": step.bubble_s * 1e6,
                          "deepep_ep_nic_us_per_token": step.deepep_ep_inter_s * 1e6}, indent=2))
        return 0
    print(f"{lay.name}: PP {lay.pp} x EP {lay.ep} x DP {lay.dp} = {lay.gpus} GPUs on {lay.topology.name}; "
          f"{lay.micro_batches} micro-batches of {lay.micro_batch_tokens} tokens, {lay.schedule}, node limit "
          f"{lay.node_limit or 'none'}; per token of the {lay.global_tokens:,}-token global batch")
    print(f"  {'kind':<28}{'NVLink kB':>11}{'NIC kB':>11}{'GPU-µs':>9}  evidence")
    for k in step.kinds:
        print(f"  {k.kind:<28}{k.intra / 1e3:>11.1f}{k.inter / 1e3:>11.1f}{k.seconds * 1e6:>9.1f}  {k.evidence.note}")
    print(f"  {'compute (6 x active params)':<28}{'':>22}{step.compute_s * 1e6:>9.1f}  {step.evidence['compute_s'].note}")
    print(f"  {'bubble (' + lay.schedule + ')':<28}{'':>22}{step.bubble_s * 1e6:>9.1f}  {100 * step.bubble:.1f}% "
          f"of the step ({SCHEDULE_SOURCES[lay.schedule]})")
    print(f"  EP NIC bytes at DeepEP's measured EP 64 bandwidth: {step.deepep_ep_inter_s * 1e6:.1f} GPU-µs per token "
          f"({DEEPEP_SOURCE})")
    print(f"  {training_sentence(args.layout, lay.schedule, lay.micro_batches)}")
    print("DeepSeek-V3's interconnect statements (report §3.2.2), ours beside:")
    for c in deepseek_v3_checks():
        print(f"  {c.claim}: theirs {c.relation} {c.theirs:g}, ours {c.ours:.3g} -> {'holds' if c.holds else 'FAILS'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
