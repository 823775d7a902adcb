"""The Attention Residuals page's panels (k3lite.panels.attnres): the comparison draws K3 and the compared model's
residual state on one axis for every choice (a standard residual where the model has no AttnRes), its sentences'
words follow their numbers, its numbers are the figure's, the pipeline's and the ledger's; the variants count right."""
import re

import pytest

from k3lite.analytic.ledger import ledger_of
from k3lite.base.units import fmt_bytes
from k3lite.interconnect.pipeline import pipeline_bytes
from k3lite.model.attnres import attnres_cost
from k3lite.model.presets import get_preset
from k3lite.model.variants import COMPARISONS, comparison_config
from k3lite.panels.attnres import compare_panel, cost_panels, forward_reads, held_after, state_bytes
from k3lite.panels.core import pair_of
from panel_checks import assert_draws_both
from wording_check import wording_problems

K3 = get_preset("kimi-k3")


def _line(fig, name: str) -> dict:
    trace = next(t for t in fig.data if t.name == name)
    return dict(zip(trace.x, trace.y))


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_the_comparison_draws_both_models(key):
    pair = pair_of(key)
    panel = compare_panel(pair)
    assert_draws_both(panel, pair)
    assert len(_line(panel.figure, pair.label)) == pair.other.n_layers  # each model over its own depth


def test_the_comparison_words_follow_their_numbers():
    grid = [{"pair": pair_of(k, base)} for k in COMPARISONS
            for base in (K3, get_preset("kimi-k2"), get_preset("kimi-linear-48b-a3b"), K3.with_(attn_res="full"),
                         K3.with_(attn_res_block_size=8))]
    assert wording_problems(compare_panel, grid) == []


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_the_numbers_said_are_the_figures(key):
    pair = pair_of(key)
    panel = compare_panel(pair)
    k3_last = _line(panel.figure, "Kimi K3")[K3.n_layers]
    other_last = _line(panel.figure, pair.label)[pair.other.n_layers]
    assert (k3_last, other_last) == (panel.values["k3_last"], panel.values["other_last"])
    if pair.other.attn_res == K3.attn_res:  # the residual is K3's: one sentence says so, with the numbers
        assert "(the lines match)" in panel.text and k3_last == other_last
        vectors, held = re.search(r"The same (\d+) vectors of d = [\d,]+, ([\d.]+ [kMG]?B) per token", panel.text).groups()
        assert int(vectors) == panel.values["k3_vectors"] and held == fmt_bytes(k3_last)
        return
    held = re.search(r"Kimi K3 holds (\d+) vectors .*?\(([\d.]+ [kMG]?B)\) and .*? (\d+) of d = [\d,]+ \(([\d.]+ [kMG]?B)\)",
                     panel.text).groups()
    assert held == (str(panel.values["k3_vectors"]), fmt_bytes(k3_last), str(panel.values["other_vectors"]),
                    fmt_bytes(other_last))
    factor = float(re.search(r"\): ([\d.]+)x more: what a pipeline", panel.text).group(1))
    assert factor == round(k3_last / other_last, 1)
    reads = re.search(r"read ([\d.]+ [kMG]?B) per token for Kimi K3 .*? and ([\d.]+ [kMG]?B) for", panel.text).groups()
    assert reads == (fmt_bytes(panel.values["k3_reads"]), fmt_bytes(panel.values["other_reads"]))


@pytest.mark.parametrize("key", ["deepseek-v3", "kimi-k2", "kimi-linear-48b-a3b"])
def test_a_model_without_attnres_is_compared_through_its_standard_residual(key):
    pair = pair_of(key)
    assert pair.other.attn_res == "standard"
    panel = compare_panel(pair)
    assert f"{pair.label} has no Attention Residuals: it uses a standard residual" in panel.text
    assert set(_line(panel.figure, pair.label).values()) == {pair.other.d_model * 2}  # one vector of d, bf16


def test_the_state_is_what_a_pipeline_boundary_carries_and_the_reads_are_the_ledgers():
    for cfg in (K3, comparison_config("standard-residual"), get_preset("deepseek-v3")):
        layers, held = state_bytes(cfg)
        line = dict(zip(layers, held))
        for b in pipeline_bytes(cfg, 4).boundaries:  # the same bytes cross a stage boundary after that layer
            assert line[b.after_layer] == b.forward_bytes
        assert forward_reads(cfg) == ledger_of(cfg, 1).attnres == attnres_cost(
            cfg.n_layers, cfg.d_model, cfg.attn_res, cfg.attn_res_block_size).read_bytes
    # K3: the embedding, 7 finished blocks of 24 sublayers and the partial 8th after 93 layers
    assert held_after(K3, K3.n_layers) == 1 + (2 * K3.n_layers) // 24 + 1 == 9


def test_variants_count_right_where_the_page_relies_on_it():
    std = comparison_config("standard-residual")
    assert std.attn_res == "standard" and (std.n_layers, std.d_model) == (K3.n_layers, K3.d_model)
    assert K3.attn_res == "block" and K3.attn_res_block_size == 24
    for key in ("no-latent", "all-mla", "aux-loss", "bias", "swiglu"):  # the residual is K3's
        other = comparison_config(key)
        assert (other.attn_res, other.attn_res_block_size, other.n_layers, other.d_model) == \
               (K3.attn_res, K3.attn_res_block_size, K3.n_layers, K3.d_model)


def test_cost_panels_say_the_saving_at_k3s_depth():
    read, live, saving, details = cost_panels(K3.d_model, K3.attn_res_block_size)
    assert read.figure.data and live.figure.data and "fewer bytes" in saving and "attnres_cost" in details
