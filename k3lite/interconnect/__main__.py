"""CLI: python -m k3lite.interconnect analytic | measure | worker | deepep

    analytic  expected copies and bytes per token per MoE layer for presets on a deployment (--json for machines)
    measure   a real expert-parallel layer on local gloo processes, bytes compared with the analytic count;
              --backward: one training step, forward and backward through the all-to-alls, both directions counted
    worker    one rank of that run; under torchrun it reads RANK / WORLD_SIZE / MASTER_ADDR from the environment:
                torchrun --nproc-per-node 4 -m k3lite.interconnect worker --ranks-per-node 2 --scheme normal
              (--backend nccl on GPUs; on several machines add torchrun's --nnodes / --rdzv-endpoint as usual)
    deepep    DeepEP's published benchmark settings: their bandwidth and time next to ours, and the per-call
              latency and achieved NIC share fitted to the low-latency table (what serving/step.py uses)
    pipeline  pipeline stages with Attention Residuals: bytes per token across each stage boundary, forward and
              backward, for a standard residual, full and block AttnRes; measured on gloo stage processes for a small
              model, and the analytic count for a preset (--preset kimi-k3 --pp 16)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict

from k3lite.interconnect.analytic import cli_rows
from k3lite.interconnect.deployment import SCHEMES, TOPOLOGIES, WIRE_FORMATS, get_topology


def _spec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ranks-per-node", type=int, default=0, help="pretend NVLink domain size (default ranks/2)")
    p.add_argument("--tokens", type=int, default=32, help="tokens per rank")
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--latent", type=int, default=32)
    p.add_argument("--experts", type=int, default=16)
    p.add_argument("--top-k", type=int, default=4)
    p.add_argument("--dispatch", default="fp32", choices=list(WIRE_FORMATS))
    p.add_argument("--combine", default="fp32", choices=list(WIRE_FORMATS))
    p.add_argument("--grad-combine", default=None, choices=list(WIRE_FORMATS),
                   help="backward: the gradient of the combine, sent like a dispatch (default: --dispatch)")
    p.add_argument("--grad-dispatch", default=None, choices=list(WIRE_FORMATS),
                   help="backward: the gradient of the dispatch, sent like a combine (default: --combine)")
    p.add_argument("--training-formats", action="store_true",
                   help="DeepSeek-V3's training formats: FP8 dispatch and grad of combine, BF16 combine and grad of "
                        "dispatch (overrides the four format flags)")
    p.add_argument("--backward", action="store_true", help="forward and backward (one training step), both counted")
    p.add_argument("--node-limit", type=int, default=0, help="max domains per token on top of the model's own routing rule (0 = its rule only)")
    p.add_argument("--scheme", default="normal", choices=(*SCHEMES, "all"),
                   help="'all' (measure --backward only): the three schemes in one launch")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=60.0)


def _spec(args, ranks: int):
    # the measured module imports torch.distributed and the MoE layer: only the measure / worker commands need it
    from k3lite.interconnect.measured import MeasureSpec

    if args.spec:
        given = json.loads(args.spec)  # one spec, or a list run one after another in one process group
        return [MeasureSpec(**g) for g in given] if isinstance(given, list) else MeasureSpec(**given)
    # under torchrun on several machines a node is a machine; on one machine, pretend nodes of half the ranks
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "0"))
    rpn = args.ranks_per_node or (local if 0 < local < ranks else max(1, ranks // 2))
    fmts = (("fp8", "bf16", "fp8", "bf16") if args.training_formats else
            (args.dispatch, args.combine, args.grad_combine or args.dispatch, args.grad_dispatch or args.combine))
    return MeasureSpec(ranks=ranks, ranks_per_node=rpn, d_model=args.d_model, latent_dim=args.latent,
                       n_experts=args.experts, top_k=args.top_k, tokens_per_rank=args.tokens, dispatch=fmts[0],
                       combine=fmts[1], grad_combine=fmts[2], grad_dispatch=fmts[3], node_limit=args.node_limit,
                       scheme=args.scheme, seed=args.seed, timeout_s=args.timeout)


def _pipeline(args) -> int:
    # the stage processes import torch.distributed and the model: only these two commands need them
    from k3lite.interconnect.pipeline import residual_comparison
    from k3lite.interconnect.pipeline_measured import PipeSpec, format_pipeline, measure_pipeline, pipe_worker  # torch
    from k3lite.model.presets import get_preset  # builds configs: only the pipeline commands need it

    if args.cmd == "pipeline-worker":
        pipe_worker([PipeSpec(**s) for s in json.loads(args.spec)], args.rank, args.init, args.out)
        return 0
    specs = [PipeSpec(stages=args.stages, mode=m, n_layers=args.layers, block_size=args.block)
             for m in args.modes.split(",")]
    results = measure_pipeline(specs, args.port, lambda f, msg: print(f"[{f:4.0%}] {msg}", file=sys.stderr))
    print("\n\n".join(format_pipeline(r) for r in results))
    cfg = get_preset(args.preset)
    print(f"\n{args.preset} (analytic): {cfg.n_layers} layers, d_model {cfg.d_model}, PP {args.pp}, BF16; bytes per "
          f"token summed over the {args.pp - 1} boundaries, each way")
    for mode, pb in residual_comparison(cfg, args.pp).items():
        print(f"  {mode:<9} forward {pb.forward / 1e3:10.1f} kB, backward {pb.backward / 1e3:10.1f} kB; widest "
              f"boundary {pb.widest} vectors")
    return 0 if all(r.agree and r.gradients_match for r in results) else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lite.interconnect", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("analytic", help="bytes per token for the presets on a topology")
    a.add_argument("--presets", default="deepseek-v3,kimi-k2,kimi-k3")
    a.add_argument("--topology", default="nvl72", choices=list(TOPOLOGIES))
    a.add_argument("--ep", type=int, default=64, help="expert-parallel size (GPUs)")
    a.add_argument("--node-limit", type=int, default=0,
                   help="a deployment's limit of domains per token (0 = only the preset's own group rule)")
    a.add_argument("--scheme", default="normal", choices=SCHEMES)
    a.add_argument("--dispatch", default="fp8", choices=list(WIRE_FORMATS))
    a.add_argument("--combine", default="bf16", choices=list(WIRE_FORMATS))
    a.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    m = sub.add_parser("measure", help="a real expert-parallel run on local gloo worker processes")
    m.add_argument("--ranks", type=int, default=4)
    m.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    m.add_argument("--both-widths", action="store_true",
                   help="with --backward: the latent (--latent) and the full width (d_model) on the wire")
    _spec_args(m)

    m.set_defaults(spec=None)
    w = sub.add_parser("worker", help="one rank (started by `measure`, or by torchrun)")
    w.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    w.add_argument("--rank", type=int, default=None, help="default: $RANK (torchrun)")
    w.add_argument("--init", default="env://", help="init_method (default env://, as torchrun sets it up)")
    w.add_argument("--spec", default=None, help="MeasureSpec as JSON (else built from the flags below)")
    w.add_argument("--out", default=None, help="write the gathered parts here instead of printing a summary")
    w.add_argument("--json-out", default=None, help="rank 0 writes the summary as JSON here")
    _spec_args(w)
    sub.add_parser("deepep", help="DeepEP's published settings: their numbers next to ours")
    pp = sub.add_parser("pipeline", help="stage-boundary bytes per token with Attention Residuals, measured")
    pp.add_argument("--stages", type=int, default=3, help="stage processes of the measured run")
    pp.add_argument("--layers", type=int, default=8, help="layers of the measured model")
    pp.add_argument("--block", type=int, default=4, help="block size in sublayers of the measured model")
    pp.add_argument("--modes", default="standard,full,block")
    pp.add_argument("--preset", default="kimi-k3", help="the analytic count for this preset's shape")
    pp.add_argument("--pp", type=int, default=16, help="pipeline stages for the preset")
    pp.add_argument("--port", type=int, default=0)
    pw = sub.add_parser("pipeline-worker", help="one stage of that run (started by `pipeline`)")
    pw.add_argument("--spec", required=True, help="a JSON list of PipeSpec")
    pw.add_argument("--rank", type=int, required=True)
    pw.add_argument("--init", required=True)
    pw.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "analytic":
            rows = cli_rows(tuple(args.presets.split(",")), args.topology, args.ep, args.node_limit, args.scheme,
                            args.dispatch, args.combine)
            if args.json:
                print(json.dumps({"topology": args.topology, "source": get_topology(args.topology).source,
                                  "units": "copies and bytes per token per MoE layer; uniform scores, each "
                                           "preset routed by its own group rule (the row's routing)",
                                  "presets": {r["preset"]: r for r in rows}}, indent=2))
                return 0
            print(f"{TOPOLOGIES[args.topology].name}, EP={args.ep}, scheme {args.scheme}, dispatch {args.dispatch}, "
                  f"combine {args.combine}, node limit {args.node_limit or 'none'}; uniform scores, each preset "
                  "routed by its own group rule")
            for r in rows:
                print(f"  {r['preset']} ({r['routing']}): NVLink copies {r['intra_copies']:.3f}, NIC copies {r['inter_copies']:.3f}, "
                      f"dispatch {r['dispatch_bytes'] / 1e3:.2f} kB, combine {r['combine_bytes'] / 1e3:.2f} kB "
                      f"per token per layer; {r['bytes_per_forward'] / 1e6:.3f} MB per forward")
            return 0
        if args.cmd == "deepep":
            from k3lite.interconnect.deepep import comparison_table, fit_call  # only this command needs DeepEP's

            for row in comparison_table():
                print("  " + ", ".join(f"{k}: {v}" for k, v in row.items()))
            for f in (fit_call("dispatch"), fit_call("combine")):  # what serving/step.py charges across domains
                rows = "; ".join(f"EP {ep} {rep} vs {mod} µs" for ep, rep, mod in f.rows)
                print(f"  {f.direction} call fit: latency {1e6 * f.latency_s:.1f} µs + max(NVLink, NIC at "
                      f"{f.nic_bw / 1e9:.1f} GB/s = {100 * f.nic_share:.1f}% of peak); published vs fit: {rows}")
            return 0
        if args.cmd in ("pipeline", "pipeline-worker"):
            return _pipeline(args)
        # the measured run: imported only here (torch.distributed and the MoE layer are not needed for the rest)
        from k3lite.interconnect.measured_backward import format_backward  # torch.distributed: measure only
        from k3lite.interconnect.run import format_result, measure, worker  # the same reason

        show = format_backward if args.backward else format_result

        if args.cmd == "worker":  # a traceback here goes to the rank's log, which the launcher quotes
            given = json.loads(args.spec or "{}")
            ranks = int(os.environ.get("WORLD_SIZE", "0")) or (given[0] if isinstance(given, list) else given).get(
                "ranks", 0)
            spec = _spec(args, ranks)
            res = worker(spec, args.backend, args.init, args.rank, args.out, args.backward)
            if res is not None:
                print(show(res))
                if args.backward:
                    return 0 if res.agree and res.gradients_match else 1
                if args.json_out:
                    with open(args.json_out, "w") as f:
                        json.dump({"spec": asdict(spec), "measured": res.measured, "predicted": res.predicted,
                                   "agree": res.agree, "max_rel_err": res.max_rel_err,
                                   "outputs_match": res.outputs_match, "backend": res.backend}, f, indent=2)
                return 0 if res.agree and res.outputs_match else 1
            return 0
        if args.backward and (args.scheme == "all" or args.both_widths):
            from dataclasses import replace  # noqa: PLC0415 - only the suite of specs needs it

            from k3lite.interconnect.run import measure_backward_suite  # noqa: PLC0415 - torch.distributed

            schemes = SCHEMES if args.scheme == "all" else (args.scheme,)
            args.scheme = schemes[0]
            base = _spec(args, args.ranks)
            widths = (base.latent_dim, 0) if args.both_widths else (base.latent_dim,)
            specs = [replace(base, scheme=sc, latent_dim=lat) for sc in schemes for lat in widths]
            results = measure_backward_suite(specs, args.port, progress=lambda f, msg: print(
                f"[{f:4.0%}] {msg}", file=sys.stderr))
            print("\n\n".join(format_backward(r) for r in results))
            return 0 if all(r.agree and r.gradients_match for r in results) else 1
        if args.scheme == "all":
            raise ValueError("--scheme all needs --backward (the forward run measures one scheme)")
        spec = _spec(args, args.ranks)
        res = measure(spec, args.port, progress=lambda f, msg: print(f"[{f:4.0%}] {msg}", file=sys.stderr),
                      backward=args.backward)
        print(show(res))
        if args.backward:
            return 0 if res.agree and res.gradients_match else 1
        return 0 if res.agree and res.outputs_match else 1
    except (ValueError, RuntimeError, TimeoutError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
