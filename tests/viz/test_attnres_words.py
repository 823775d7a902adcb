"""Attention Residuals' figures and sentences (k3lite/viz/attnres.py): what block grouping saves, worded from the
numbers."""
import itertools

from k3lite.analytic.hardware import GPUS
from k3lite.model.attnres import attnres_cost
from k3lite.viz.attnres import block_cost_details, block_read_bytes, block_saving_sentence
from wording_check import wording_problems

SHAPES = list(itertools.product((4, 27, 93), (2304, 4096, 7168), (1, 2, 4, 24, 64)))


def test_block_cost_sentences_word_every_comparison_from_their_numbers():
    """'Nx fewer bytes', 'Nx less memory': chosen from the counts, over depths x widths x block sizes x GPUs (S = 1 is
    full AttnRes: 'as many bytes as full AttnRes', not '1.0x fewer')."""
    grid = [dict(n_layers=n, d_model=d, block_size=s) for n, d, s in SHAPES]
    assert wording_problems(block_saving_sentence, grid) == []
    grid = [dict(n_layers=n, d_model=d, block_size=s, hbm_bw=g.hbm_bw, gpu_name=g.name)
            for (n, d, s), g in itertools.product(SHAPES, GPUS.values())]
    assert wording_problems(block_cost_details, grid) == []
    assert "as many bytes as full AttnRes" in block_saving_sentence(93, 7168, 1)


def test_block_read_bytes_is_the_cost_model_and_rounds_moved_sizes():
    assert block_read_bytes(24, 7168, 2.0, 93) == attnres_cost(93, 7168, "block", 24).read_bytes
    assert block_read_bytes(24 * 1.2, 7168) == attnres_cost(93, 7168, "block", 29).read_bytes
    assert block_read_bytes(24, 7168, 1.0) == attnres_cost(93, 7168, "block", 24).read_bytes / 2
