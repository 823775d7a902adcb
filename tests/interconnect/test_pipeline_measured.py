"""Pipeline stages on gloo: the real stream tensors across each boundary, counted, and the gradients of one process."""
import pytest

import torch

from k3lite.interconnect.pipeline_measured import PipeSpec, measure_pipeline, restore_stream, stream_state
from k3lite.model.attnres import ResidualStream


@pytest.mark.timeout(300)
def test_stage_boundary_bytes_equal_analytic_and_gradients_equal_one_process():
    specs = [PipeSpec(stages=3, mode=m, n_layers=6, block_size=3, batch=1, seq_len=4, seed=1)
             for m in ("standard", "full", "block")]
    specs.append(PipeSpec(stages=3, mode="block", n_layers=26, block_size=24, batch=1, seq_len=4, seed=2))  # K3's
    results = measure_pipeline(specs)
    vectors = {}
    for res in results:
        assert res.agree, (res.measured, res.predicted)  # exact bytes per token per boundary, both directions
        assert res.gradients_match, (res.loss_err, res.grad_rel_err, res.missing)
        vectors[(res.spec.mode, res.spec.block_size)] = [b.vectors for b in res.measured]
    assert results[0].evidence["measured"].kind == "measured here"
    assert results[0].evidence["predicted"].kind == "derived"
    assert vectors[("standard", 3)] == [1, 1] and vectors[("full", 3)] == [5, 9]
    assert vectors[("block", 3)] == [3, 4]  # after 8 sublayers: embedding + 2 blocks of 3 + a partial of 2
    assert vectors[("block", 24)] == [2, 3]  # K3's 12-layer blocks: after 18 layers, embedding + 1 block + a partial


def test_restore_stream_continues_where_the_stage_stopped():
    torch.manual_seed(0)
    outs = [torch.randn(1, 2, 4) for _ in range(7)]
    for mode, block in (("standard", 1), ("full", 1), ("block", 3)):
        a = torch.randn(1, 2, 4)
        whole = ResidualStream(a, mode, block)
        for o in outs[:4]:
            whole.add(o)
        state, partial = stream_state(whole)
        cont = restore_stream(state, partial, mode, block, 4)
        for o in outs[4:]:
            whole.add(o), cont.add(o)
        got, want = stream_state(cont), stream_state(whole)
        assert got[1] == want[1] and all(torch.equal(x, y) for x, y in zip(got[0], want[0]))
