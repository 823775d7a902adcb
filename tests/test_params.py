"""Parameter counts from the real modules (meta device) vs the published totals."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT
from k3lite.config import PRESETS, get_preset
from k3lite.params import COMPONENTS, count_params


def rel(a, b):
    return abs(a / b - 1)


@pytest.fixture(scope="module")
def reports():
    return {n: count_params(get_preset(n)) for n in ("deepseek-v3", "kimi-k2", "kimi-linear-48b-a3b", "k3-estimated", "lite")}


def test_deepseek_v3_matches_published(reports):
    r = reports["deepseek-v3"]
    assert rel(r.total, 671e9) < 0.01, r.total
    assert rel(r.active, 37e9) < 0.03, r.active


def test_kimi_k2_matches_published(reports):
    r = reports["kimi-k2"]
    assert rel(r.total, 1.04e12) < 0.02, r.total
    assert rel(r.total, 1.026e12) < 0.002, r.total  # what its config.json counts to
    assert rel(r.active, 32e9) < 0.03, r.active


def test_kimi_linear_matches_published(reports):
    r = reports["kimi-linear-48b-a3b"]
    assert rel(r.total, 48e9) < 0.05, r.total
    assert rel(r.active, 3e9) < 0.05, r.active


def test_k3_estimated_lands_near_stated_total(reports):
    r = reports["k3-estimated"]
    assert rel(r.total, 2.8e12) < 0.03, r.total
    assert r.by_component["attention_kda"] > 0 and r.by_component["latent_proj"] > 0


def test_components_add_up_and_routed_scaling(reports):
    for name, r in reports.items():
        assert sum(r.by_component.values()) == r.total
        assert sum(r.active_by_component.values()) == r.active
        cfg = get_preset(name)
        routed = r.by_component["routed_experts"]
        assert r.active_by_component["routed_experts"] == pytest.approx(routed * cfg.moe.top_k / cfg.moe.n_routed_experts, rel=1e-6)


def test_input_embedding_not_active_unless_tied(reports):
    assert reports["deepseek-v3"].active_by_component["embedding"] == 0
    lite = reports["lite"]  # tied: the table is the LM head too
    assert lite.active_by_component["embedding"] == lite.by_component["embedding"] > 0


def test_count_tracks_config_changes():
    base = count_params(get_preset("lite"))
    more = count_params(get_preset("lite").with_(moe={"n_routed_experts": 64}))
    per_expert = 3 * 64 * 128  # latent 64, ffn 128, SwiGLU has 3 matrices
    n_moe_layers = get_preset("lite").ffn_types().count("moe")
    router = 32 * 128 * n_moe_layers  # 32 more router rows of d_model
    assert more.total - base.total == 32 * per_expert * n_moe_layers + router


def test_cli_json(tmp_path):
    out = subprocess.run([sys.executable, "-m", "k3lite.params", "--preset", "deepseek-v3", "--json"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120, check=True)
    data = json.loads(out.stdout)
    assert isinstance(data["total"], int) and isinstance(data["active"], int)
    assert rel(data["total"], 671e9) < 0.01
    assert set(data["by_component"]) == set(COMPONENTS)


def test_cli_bad_preset():
    out = subprocess.run([sys.executable, "-m", "k3lite.params", "--preset", "nope"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 2 and "unknown preset" in out.stderr


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_one_layer_per_kind_counts_the_same_as_the_whole_model(name):
    """count_params builds one layer of each (mixer, ffn) kind; the reference builds every layer."""
    base = get_preset(name)
    variants = [base, base.with_(moe={"n_routed_experts": 2 * base.moe.n_routed_experts}),
                base.with_(moe={"latent_dim": 0}), base.with_(n_layers=base.n_layers + base.n_layers % 4 + 4)]
    for mode in ("standard", "full", "block"):
        variants.append(base.with_(attn_res=mode))
    for cfg in variants:
        assert count_params(cfg) == count_params(cfg, whole_model=True), cfg
