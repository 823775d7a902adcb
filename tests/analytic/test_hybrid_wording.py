"""The hybrid page's and the KDA page's computed sentences (k3lite.analytic.hybrid, k3lite.analytic.memory): every
comparison word comes from the numbers it compares (k3lite.base.wording), over presets x GPUs x contexts x settings."""
import itertools

import pytest

from k3lite.analytic import memory
from k3lite.analytic.hardware import GPUS
from k3lite.analytic.hybrid import (
    REPORTED, batch_limited_speedup, capacity_sentence, headline_sentence, method_text, reference_gpu,
    throughput_gain,
)
from k3lite.base.units import GIB, ONE_M_CONTEXT
from k3lite.model.presets import get_preset
from wording_check import wording_problems

BASES = ("kimi-linear-48b-a3b", "kimi-k3")
CONTEXTS = (4096, 131072, ONE_M_CONTEXT)
# the report's own words, quoted as it states them ("up to 75% smaller KV cache", "2.3x faster decoding")
QUOTED = tuple(text for _, text in REPORTED.values())


def test_headline_and_capacity_sentences_word_every_comparison_from_its_numbers():
    grid = [dict(kda_per_mla=r, batch=b, hardware=g, context=n, base=base)
            for base, g, n, r, b in itertools.product(BASES, GPUS, CONTEXTS, (0, 1, 3, 7), (1, 64))]
    assert wording_problems(headline_sentence, grid) == []
    assert wording_problems(capacity_sentence, grid) == []


def test_method_text_words_every_comparison_from_its_numbers():
    grid = [dict(kda_per_mla=r, batch=b, hardware=g, attention_efficiency=e, base=base)
            for base, g, r, b, e in itertools.product(BASES, GPUS, (0, 3, 7), (1, 16), (0.3, 1.0))]
    assert wording_problems(method_text, grid, allowed=QUOTED) == []


def test_kda_memory_sentence_words_every_comparison_from_its_numbers():
    grid = [dict(cfg=get_preset(p), context=n)
            for p, n in itertools.product(("kimi-linear-48b-a3b", "kimi-k3", "lite"), (1, 100, 4096, ONE_M_CONTEXT,
                                                                                       10_000_000))]
    assert wording_problems(memory.kda_memory_sentence, grid) == []
    short = memory.kda_memory_sentence(get_preset("kimi-linear-48b-a3b"), 100)
    assert "more" in short.split(":")[1], short  # at 100 tokens the hybrid's fixed states cost more than a cache


def test_the_hybrid_headline_is_the_page_model_and_moves_with_its_assumptions():
    """throughput_gain at its defaults is batch_limited_speedup on the page's opening GPU (the capacity read from the
    GPU table, whatever unit it is stored in); a smaller cache number or more HBM gains, a slower kernel loses."""
    gpu = reference_gpu()
    base = throughput_gain()
    assert base == pytest.approx(batch_limited_speedup(3, ONE_M_CONTEXT, gpu))
    assert throughput_gain(hbm_gib=GPUS[gpu].hbm_bytes / GIB) == pytest.approx(base)
    assert throughput_gain(attention_efficiency=1.2) == pytest.approx(base)  # capped at the bandwidth peak
    assert throughput_gain(attention_efficiency=0.5) != pytest.approx(base)
    assert throughput_gain(hbm_gib=2 * GPUS[gpu].hbm_bytes / GIB) > base  # more room, more 3:1 sequences
    with pytest.raises(ValueError, match="bytes per stored number"):
        throughput_gain(latent_bytes=0)


def test_the_kda_headline_is_the_hybrid_cache_at_one_m():
    cfg = get_preset("kimi-linear-48b-a3b")
    assert memory.hybrid_cache_at() == memory.sequence_cache_bytes(cfg, ONE_M_CONTEXT).total
    assert memory.hybrid_cache_at(latent_bytes=1) == pytest.approx(
        memory.sequence_cache_bytes(cfg, ONE_M_CONTEXT).mla / 2 + memory.sequence_cache_bytes(cfg, 0).kda)
    assert memory.hybrid_cache_at(state_bytes=2) < memory.hybrid_cache_at()
