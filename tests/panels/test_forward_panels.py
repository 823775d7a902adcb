"""The forward-pass page's panels (k3lite.panels.forward, forward_compare): the full-scale comparison draws both
models on one axis for every choice, its sentences' words follow their numbers and its numbers are the bars'; the
stage panel's running wire bytes count as the page counted them."""
import re

import pytest

from k3lite.base.units import fmt_bytes
from k3lite.model.presets import get_preset
from k3lite.model.variants import COMPARISONS, comparison_config
from k3lite.panels.core import pair_of
from k3lite.panels.forward import wire_assumptions
from k3lite.panels.forward_compare import STAGES, WIRE, bytes_by_part_panel, stage_bytes
from panel_checks import assert_draws_both
from wording_check import wording_problems

K3 = get_preset("kimi-k3")


def _bars(fig, name: str) -> dict:
    trace = next(t for t in fig.data if t.name == name)
    return {y: (x or 0.0) for y, x in zip(trace.y, trace.x)}


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_the_comparison_draws_both_models(key):
    pair = pair_of(key)
    panel = bytes_by_part_panel(pair)
    assert_draws_both(panel, pair)


def test_the_comparison_words_follow_their_numbers():
    grid = [{"pair": pair_of(k), "context": c} for k in COMPARISONS for c in (1024, 131_072, 2 ** 20)]
    assert wording_problems(bytes_by_part_panel, grid) == []


@pytest.mark.parametrize("key", list(COMPARISONS))
def test_the_numbers_said_are_the_bars(key):
    pair = pair_of(key)
    panel = bytes_by_part_panel(pair)
    k3, other = _bars(panel.figure, "Kimi K3"), _bars(panel.figure, pair.label)
    assert k3 == {s: panel.values[f"k3|{s}"] for s in k3}
    hbm = sum(v for s, v in k3.items() if s != WIRE)
    assert hbm == pytest.approx(panel.values["k3_hbm"])
    if k3 == other:  # nothing differs: one sentence says so, with the totals
        said = re.search(r"\(([\d.]+ [kMGT]?B) of HBM and ([\d.]+ [kMGT]?B) between GPUs", panel.text).groups()
        assert said == (fmt_bytes(hbm), fmt_bytes(k3[WIRE]))
        assert "changes no bytes here" in panel.text
        return
    big, said_k3, said_other = re.search(
        r"The biggest difference is (.+?): Kimi K3 (?:reads|sends) ([\d.]+ [kMGT]?B) per decoded token, .*?'s "
        r"([\d.]+ [kMGT]?B)\.", panel.text).groups()
    assert (said_k3, said_other) == (fmt_bytes(k3[big]), fmt_bytes(other[big]))
    assert abs(k3[big] - other[big]) == max(abs(k3[s] - other[s]) for s in k3)
    assert f"In all, Kimi K3 reads {fmt_bytes(hbm)} of HBM" in panel.text


def test_the_bars_follow_the_configs():
    """A model without KDA reads no KDA state; MLA everywhere keeps K3's experts (the same routed bytes) and drops
    the fixed states; the balancing variants read exactly K3's bytes; without the latent there is no latent
    projection; a standard residual reads what the ledger says it reads."""
    k3 = stage_bytes(K3)
    mla = stage_bytes(comparison_config("all-mla"))
    assert mla["routed experts"] == k3["routed experts"] and mla[WIRE] == k3[WIRE]
    assert mla["attention cache and state"] > k3["attention cache and state"]  # 93 growing caches at 128K
    assert stage_bytes(comparison_config("aux-loss")) == k3 == stage_bytes(comparison_config("bias"))
    assert stage_bytes(comparison_config("no-latent"))["latent down/up projections"] == 0
    # a standard residual still reads its running sum: the count the ledger and the Attention Residuals page show
    # (it was 0 here, 2.68 MB there)
    from k3lite.analytic.ledger import ledger_of  # here: only this check reads the ledger
    std = comparison_config("standard-residual")
    assert stage_bytes(std)["depth mix (AttnRes)"] == ledger_of(std, 131_072).attnres > 0
    assert set(k3) == set(STAGES)


def test_the_headline_assumptions_are_the_wire_formats():
    numbers, also = wire_assumptions()
    assert [a.key for a in numbers] == ["dispatch_elem_bytes", "combine_elem_bytes", "copies_scale", "metadata_scale"]
    assert dict(also)["deployment"]
