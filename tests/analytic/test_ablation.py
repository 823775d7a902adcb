import math

import pytest
from wording_check import wording_problems

from k3lite.analytic import memory
from k3lite.analytic.ablation import SERVE, SPEED, ablation, sentences
from k3lite.analytic.ledger import Deploy, ledger_of
from k3lite.analytic.serving.deployment import Serving
from k3lite.analytic.serving.target import solve
from k3lite.model.variants import K3_MINUS, comparison_config


@pytest.fixture(scope="module")
def rows():
    return ablation(131_072)


def test_rows_are_the_library_computations(rows):
    assert [r.key for r in rows] == ["k3", *K3_MINUS]
    mla = next(r for r in rows if r.key == "all-mla")
    cfg = comparison_config("all-mla")
    assert mla.bytes_per_token == ledger_of(cfg, 131_072, Deploy()).total
    assert mla.cache_per_sequence == memory.sequence_cache_bytes(cfg, 131_072).total
    assert mla.usd_per_m == solve(Serving(preset=cfg, **SERVE), SPEED, 1).usd_per_m


def test_signs_are_as_computed_not_as_hoped(rows):
    k3, by = rows[0], {r.key: r for r in rows}
    assert by["all-mla"].cache_per_sequence > 3 * k3.cache_per_sequence  # the hybrid saves cache at 131K
    assert by["no-latent"].bytes_per_token < k3.bytes_per_token  # the latent's projections cost bytes at batch 64
    text = " ".join(sentences(rows))
    assert "82.4 MB more" in text and "makes K3 dearer to serve" in text  # said, not hidden
    assert "the same on all three axes" in text  # balancing and SiTU buy nothing on these axes
    assert all(not math.isnan(r.usd_per_m) for r in rows)


def test_comparison_words_follow_the_numbers_over_contexts():
    def generate(context):
        return sentences(ablation(context))

    assert wording_problems(generate, [{"context": c} for c in (4_096, 131_072, 1_048_576)]) == []
