"""Shipped precomputed results (k3lite/experiments/precomputed.py): they are what the live code computes, a stale or
tampered asset is never used, and the MoE page at its defaults uses them (its cold first render is the goal)."""
from __future__ import annotations

import json

import pytest
import torch
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.experiments import precomputed
from k3lite.model.moe import RoutingStats


def sample_tree():
    stats = RoutingStats(topk_idx=torch.arange(6).reshape(1, 3, 2), topk_weight=torch.rand(1, 3, 2),
                         scores=torch.rand(1, 3, 4), load=torch.tensor([1, 2, 3, 0]), max_violation=0.5, cv=0.25,
                         dropped=0, entropy=1.2, dispatch_dim=16)
    return {"labels": ["a", "\n"], 4: (1, 2.5, None), "stats": {"quantile": stats}, "nan": float("nan")}


def test_a_tree_of_namedtuples_dicts_and_tensors_round_trips():
    tensors: dict = {}
    node = json.loads(json.dumps(precomputed._encode(sample_tree(), tensors)))
    back = precomputed._decode(node, tensors)
    want = sample_tree()
    assert back["labels"] == want["labels"] and back[4] == (1, 2.5, None) and back["nan"] != back["nan"]
    got, ref = back["stats"]["quantile"], want["stats"]["quantile"]
    assert type(got) is RoutingStats and got.max_violation == 0.5 and got.dispatch_dim == 16
    assert torch.equal(got.topk_idx, ref.topk_idx) and got.topk_idx.dtype == torch.long


def test_only_k3lite_namedtuples_are_rebuilt():
    node = {"__namedtuple__": "os:stat_result", "fields": {}}
    with pytest.raises(ValueError, match="only k3lite types"):
        precomputed._decode(node, {})


@pytest.fixture
def tiny_asset(tmp_path, monkeypatch):
    """A cheap asset in a temporary tree: its result depends on the bytes of src.txt."""
    (tmp_path / "src.txt").write_text("version 1")
    monkeypatch.setattr(precomputed, "ROOT", tmp_path)
    monkeypatch.setattr(precomputed, "DIR", tmp_path / "assets")
    monkeypatch.setattr(precomputed, "ASSETS", {"tiny": precomputed.Asset(lambda: {"x": torch.ones(3)}, {"n": 3},
                                                                          ("src.txt",))})
    monkeypatch.setattr(precomputed, "_loaded", {})
    precomputed.make("tiny")
    return tmp_path


def test_a_fresh_asset_is_used(tiny_asset):
    assert torch.equal(precomputed.shipped("tiny")["x"], torch.ones(3))


def test_an_asset_whose_inputs_changed_is_stale(tiny_asset):
    (tiny_asset / "src.txt").write_text("version 2")
    assert precomputed.shipped("tiny") is None  # the caller computes live


def test_a_tampered_asset_is_not_used(tiny_asset):
    meta = json.loads((tiny_asset / "assets" / "tiny.json").read_text())
    meta["value"]["__dict__"][0][0] = "y"  # the tree edited by hand, the recorded hash left alone
    (tiny_asset / "assets" / "tiny.json").write_text(json.dumps(meta))
    assert precomputed.shipped("tiny") is None
    precomputed.make("tiny")
    tensors = tiny_asset / "assets" / "tiny.safetensors"
    tensors.write_bytes(tensors.read_bytes()[:-4] + b"\x00\x00\x00\x40")  # the last 1.0 becomes 2.0
    precomputed._loaded.clear()
    assert precomputed.shipped("tiny") is None


@pytest.mark.parametrize("name", sorted(precomputed.ASSETS))
def test_shipped_assets_are_fresh(name):
    assert precomputed.shipped(name) is not None, (
        f"assets/precomputed/{name} is missing or stale (its inputs changed): the page computes it live until "
        "`python -m k3lite.experiments.precomputed` makes it again")


def test_shipped_results_are_what_the_live_code_computes():
    stream = precomputed.ASSETS["moe_stream_layer4"].compute()
    torch.testing.assert_close(precomputed.shipped("moe_stream_layer4"), stream)
    live, ship = precomputed.ASSETS["moe_demo_default"].compute(), precomputed.shipped("moe_demo_default")
    assert live.labels == ship.labels and live.eval_tokens == ship.eval_tokens
    for method, stats in live.stats.items():
        assert torch.equal(stats.topk_idx, ship.stats[method].topk_idx), method
        assert stats.max_violation == pytest.approx(ship.stats[method].max_violation)
        assert live.eval_violation[method] == pytest.approx(ship.eval_violation[method])
    runs = precomputed.ASSETS["moe_balance_runs"].compute()
    for method, run in runs.items():
        assert run.max_violation == pytest.approx(precomputed.shipped("moe_balance_runs")[method].max_violation)


def test_the_moe_page_at_its_defaults_uses_the_shipped_results():
    at = AppTest.from_file(str(ROOT / "views" / "moe.py"), default_timeout=300).run()
    assert not at.exception, [e.message for e in at.exception]
    captions = " ".join(c.value for c in at.caption)
    assert "shipped, computed by this same code" in captions and "Shipped (made by" in captions
    at.slider(key="moe_experts").set_value(65).run()  # any change: computed live, and it says so
    captions = " ".join(c.value for c in at.caption)
    assert "shipped, computed by this same code" not in captions and "Computed on this page." in captions
