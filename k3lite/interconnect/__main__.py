"""CLI: python -m k3lite.interconnect analytic | measure | worker | deepep

    analytic  expected copies and bytes per token per MoE layer for presets on a deployment (--json for machines)
    measure   a real expert-parallel layer on local gloo processes, bytes compared with the analytic count
    worker    one rank of that run; under torchrun it reads RANK / WORLD_SIZE / MASTER_ADDR from the environment:
                torchrun --nproc-per-node 4 -m k3lite.interconnect worker --ranks-per-node 2 --scheme normal
              (--backend nccl on GPUs; on several machines add torchrun's --nnodes / --rdzv-endpoint as usual)
    deepep    DeepEP's published benchmark settings: their bandwidth and time next to ours
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
    p.add_argument("--node-limit", type=int, default=0, help="max pretend domains per token (0 = none)")
    p.add_argument("--scheme", default="normal", choices=SCHEMES)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=60.0)


def _spec(args, ranks: int):
    # the measured module imports torch.distributed and the MoE layer: only the measure / worker commands need it
    from k3lite.interconnect.measured import MeasureSpec

    if args.spec:
        return MeasureSpec(**json.loads(args.spec))
    # under torchrun on several machines a node is a machine; on one machine, pretend nodes of half the ranks
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "0"))
    rpn = args.ranks_per_node or (local if 0 < local < ranks else max(1, ranks // 2))
    return MeasureSpec(ranks=ranks, ranks_per_node=rpn, d_model=args.d_model, latent_dim=args.latent,
                       n_experts=args.experts, top_k=args.top_k, tokens_per_rank=args.tokens, dispatch=args.dispatch,
                       combine=args.combine, node_limit=args.node_limit, scheme=args.scheme, seed=args.seed,
                       timeout_s=args.timeout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m k3lite.interconnect", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("analytic", help="bytes per token for the presets on a topology")
    a.add_argument("--presets", default="deepseek-v3,kimi-k2,kimi-k3")
    a.add_argument("--topology", default="nvl72", choices=list(TOPOLOGIES))
    a.add_argument("--ep", type=int, default=64, help="expert-parallel size (GPUs)")
    a.add_argument("--node-limit", type=int, default=0)
    a.add_argument("--scheme", default="normal", choices=SCHEMES)
    a.add_argument("--dispatch", default="fp8", choices=list(WIRE_FORMATS))
    a.add_argument("--combine", default="bf16", choices=list(WIRE_FORMATS))
    a.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    m = sub.add_parser("measure", help="a real expert-parallel run on local gloo worker processes")
    m.add_argument("--ranks", type=int, default=4)
    m.add_argument("--port", type=int, default=0, help="0 = pick a free port")
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
    args = ap.parse_args(argv)
    try:
        if args.cmd == "analytic":
            rows = cli_rows(tuple(args.presets.split(",")), args.topology, args.ep, args.node_limit, args.scheme,
                            args.dispatch, args.combine)
            if args.json:
                print(json.dumps({"topology": args.topology, "source": get_topology(args.topology).source,
                                  "units": "copies and bytes per token per MoE layer; uniform routing",
                                  "presets": {r["preset"]: r for r in rows}}, indent=2))
                return 0
            print(f"{TOPOLOGIES[args.topology].name}, EP={args.ep}, scheme {args.scheme}, dispatch {args.dispatch}, "
                  f"combine {args.combine}, node limit {args.node_limit or 'none'}; uniform routing")
            for r in rows:
                print(f"  {r['preset']}: NVLink copies {r['intra_copies']:.3f}, NIC copies {r['inter_copies']:.3f}, "
                      f"dispatch {r['dispatch_bytes'] / 1e3:.2f} kB, combine {r['combine_bytes'] / 1e3:.2f} kB "
                      f"per token per layer; {r['bytes_per_forward'] / 1e6:.3f} MB per forward")
            return 0
        if args.cmd == "deepep":
            from k3lite.interconnect.deepep import comparison_table  # only this command needs the DeepEP table

            for row in comparison_table():
                print("  " + ", ".join(f"{k}: {v}" for k, v in row.items()))
            return 0
        # the measured run: imported only here (torch.distributed and the MoE layer are not needed for the rest)
        from k3lite.interconnect.run import format_result, measure, worker

        if args.cmd == "worker":  # a traceback here goes to the rank's log, which the launcher quotes
            ranks = int(os.environ.get("WORLD_SIZE", "0")) or json.loads(args.spec or "{}").get("ranks", 0)
            spec = _spec(args, ranks)
            res = worker(spec, args.backend, args.init, args.rank, args.out)
            if res is not None:
                print(format_result(res))
                if args.json_out:
                    with open(args.json_out, "w") as f:
                        json.dump({"spec": asdict(spec), "measured": res.measured, "predicted": res.predicted,
                                   "agree": res.agree, "max_rel_err": res.max_rel_err,
                                   "outputs_match": res.outputs_match, "backend": res.backend}, f, indent=2)
                return 0 if res.agree and res.outputs_match else 1
            return 0
        spec = _spec(args, args.ranks)
        res = measure(spec, args.port, progress=lambda f, msg: print(f"[{f:4.0%}] {msg}", file=sys.stderr))
        print(format_result(res))
        return 0 if res.agree and res.outputs_match else 1
    except (ValueError, RuntimeError, TimeoutError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
