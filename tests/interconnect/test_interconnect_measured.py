"""The measured expert-parallel run: real torch.distributed processes, two levels of process groups, bytes counted."""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from k3lite.interconnect import expert_to_gpu
from k3lite.interconnect.measured import MeasureSpec
from k3lite.interconnect.run import PortInUseError, free_port, measure, predicted_for_routing


def _children() -> set[int]:
    me, kids = os.getpid(), set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            kids.add(int(stat.parent.name))
    return kids


@pytest.mark.parametrize("ranks,rpn,dispatch,combine,node_limit,scheme", [
    (2, 1, "fp32", "fp32", 0, "direct"),
    (4, 2, "fp8", "bf16", 1, "normal"),  # 2 x 2: each token limited to one pretend domain by the real router
    (8, 4, "fp32", "fp32", 1, "normal"),  # 2 x 4
    (4, 2, "bf16", "bf16", 0, "low-latency"),
])
def test_measured_bytes_equal_analytic_and_output_equals_single_process(ranks, rpn, dispatch, combine, node_limit,
                                                                        scheme):
    before = _children()
    spec = MeasureSpec(ranks=ranks, ranks_per_node=rpn, tokens_per_rank=24, dispatch=dispatch, combine=combine,
                       node_limit=node_limit, scheme=scheme, seed=ranks, timeout_s=180)
    res = measure(spec)
    assert _children() <= before  # every worker reaped
    for m, p in zip(res.measured, res.predicted):
        for key in p:
            assert m[key] == p[key], (key, m, p)  # exact byte counts, rank by rank
    total = res.total("measured")
    assert total["dispatch_intra"] > 0 or rpn == 1
    assert total["combine_inter"] > 0
    assert res.outputs_match, res.max_rel_err
    if node_limit:
        domains = expert_to_gpu(spec.n_experts, ranks)[res.topk_idx] // rpn  # (N, k)
        assert max(len(set(row)) for row in domains.tolist()) <= node_limit
    if dispatch == "fp32":
        assert res.max_rel_err < 1e-5  # same math, only the summation order differs
    # the comparison can fail: the same counts for a different routing (tokens moved to other ranks) differ
    moved = predicted_for_routing(spec, (res.topk_idx + spec.n_experts // spec.ranks) % spec.n_experts)
    assert moved != [{k: m[k] for k in p} for m, p in zip(res.measured, res.predicted)]


def test_torchrun_starts_the_same_worker_on_loopback(root, tmp_path):
    out = tmp_path / "res.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", PYTHONPATH=str(root))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", "4", "--master-addr",
           "127.0.0.1", "--master-port", str(free_port()), "-m", "k3lite.interconnect", "worker", "--backend", "gloo",
           "--ranks-per-node", "2", "--scheme", "normal", "--node-limit", "1", "--tokens", "16", "--json-out", str(out)]
    run = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["agree"] and data["outputs_match"] and data["spec"]["ranks"] == 4
    assert [{k: m[k] for k in p} for m, p in zip(data["measured"], data["predicted"])] == data["predicted"]
    assert "same routing: True" in run.stdout


def test_port_in_use_is_a_clear_error():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        with pytest.raises(PortInUseError, match=f"port {port}.*in use"):
            measure(MeasureSpec(ranks=2), port=port)


def test_timeout_kills_workers():
    before = _children()
    with pytest.raises(TimeoutError, match="timeout"):
        measure(MeasureSpec(ranks=2, timeout_s=0.3))
    assert _children() <= before


def test_a_crashing_worker_is_reported_and_the_others_reaped(monkeypatch):
    before = _children()
    monkeypatch.setattr(sys, "executable", "/bin/false")  # every "worker" exits 1 at once
    with pytest.raises(RuntimeError, match="exited with code 1"):
        measure(MeasureSpec(ranks=2, timeout_s=10))
    assert _children() <= before


def test_spec_validation():
    with pytest.raises(ValueError, match="ranks must be <= 8 for local processes"):
        measure(MeasureSpec(ranks=16, ranks_per_node=8, n_experts=16))
    with pytest.raises(ValueError, match="ranks"):
        MeasureSpec(ranks=0)
    with pytest.raises(ValueError, match="scheme"):
        MeasureSpec(scheme="ring")
    with pytest.raises(ValueError, match="node_limit"):
        MeasureSpec(ranks=4, ranks_per_node=2, node_limit=3)
