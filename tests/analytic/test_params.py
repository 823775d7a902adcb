"""Parameter counts from the real modules (meta device) vs the published totals."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT
from k3lite.model.presets import (KIMI_K3_CHECKPOINT_BYTES, KIMI_K3_STATED_ACTIVE, KIMI_K3_STATED_TOTAL, PRESETS,
                                  get_preset, kimi_k3_vision_params)
from k3lite.analytic.memory import RELEASED_K3_FORMATS, checkpoint_bytes
from k3lite.analytic.params import COMPONENTS, count_params


def rel(a, b):
    return abs(a / b - 1)


@pytest.fixture(scope="module")
def reports():
    return {n: count_params(get_preset(n)) for n in ("deepseek-v3", "kimi-k2", "kimi-linear-48b-a3b", "kimi-k3", "lite")}


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


def _k3_count_from_released_code() -> tuple[int, int]:
    """(total, active) of K3's text model counted by hand from config.json and the module list of the released
    modeling_kimi_linear.py (KimiDeltaAttention, KimiMLAAttention, KimiSparseMoeBlock, KimiMLP, the AttnRes
    norms/projections), independently of k3lite's modules. Includes what k3lite builds differently: the gate's
    e_score_correction_bias (a Parameter there, a buffer here) and A_log of [num_heads]."""
    d, V, L, H, K = 7168, 163840, 93, 96, 128
    HK = H * K
    kda = 3 * d * HK + 3 * HK * 4 + H + d * K + K * HK + HK + d * H + d * HK + K + HK * d
    mla = d * 1536 + 1536 + 1536 * H * 192 + d * (512 + 64) + 512 + 512 * H * 256 + H * 128 * d + d * H * 128
    experts = 896 * 3 * 3584 * 3072
    moe_rest = 896 * d + 896 + 3 * d * 2 * 3072 + d * 3584 + 3584 * d + 3584
    dense = 3 * d * 33792
    per_layer = 2 * d + 4 * d  # input/post-attention norms; two AttnRes norms + two projections
    outside = 2 * V * d + d + 2 * d  # embed, lm_head, final norm, output AttnRes norm + projection
    n_kda, n_mla, n_moe = 69, 24, 92
    total = n_kda * kda + n_mla * mla + n_moe * (experts + moe_rest) + dense + L * per_layer + outside
    active = total - n_moe * experts + round(n_moe * experts * 16 / 896) - V * d  # embedding lookup not active
    return total, active


def test_kimi_k3_matches_the_released_model(reports):
    """kimi-k3 is the released config: its count equals a hand count from the released code (to the few
    parameters k3lite holds differently) and the headline 2.78T / 104B (text + vision tower) to 0.1%."""
    r = reports["kimi-k3"]
    total, active = _k3_count_from_released_code()
    assert rel(r.total, total) < 1e-6 and rel(r.active, active) < 1e-6, (r.total, total, r.active, active)
    assert rel(r.total + kimi_k3_vision_params(), KIMI_K3_STATED_TOTAL) < 1e-3, r.total
    assert rel(r.active, 104.2e9) < 1e-3 and round(r.active / 1e9) == KIMI_K3_STATED_ACTIVE / 1e9, r.active
    assert r.by_component["routed_experts"] == 92 * 896 * 3 * 3584 * 3072


def test_kimi_k3_checkpoint_bytes_match_the_released_index():
    """MXFP4 routed experts (4.25 bits / weight with the group-32 scales), bf16 everything else, the vision tower a
    stated constant: the released index's total_size to 0.1%. Storing the experts at 4 bits without scales, or in
    NVFP4 (4.5 bits), misses by 3% or more."""
    cfg = get_preset("kimi-k3")
    vision = kimi_k3_vision_params()
    assert rel(vision, 447e6) < 2e-3  # PipeNetwork/kimi-k3-mlx README: 447 M
    predicted = checkpoint_bytes(cfg, RELEASED_K3_FORMATS, vision)
    assert rel(predicted, KIMI_K3_CHECKPOINT_BYTES) < 1e-3, predicted
    assert rel(checkpoint_bytes(cfg, {**RELEASED_K3_FORMATS, "routed_experts": "nvfp4"}, vision),
               KIMI_K3_CHECKPOINT_BYTES) > 0.03


def test_kimi_k3_layer_lists_are_the_released_ones():
    """config.json linear_attn_config (1-based): full_attn_layers 4, 8, ..., 92 and 93; kda_layers the rest."""
    full = [*range(4, 93, 4), 93]
    types = get_preset("kimi-k3").layer_types()
    assert [i + 1 for i, t in enumerate(types) if t == "mla"] == full
    assert types.count("kda") == 69


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
    out = subprocess.run([sys.executable, "-m", "k3lite.analytic.params", "--preset", "deepseek-v3", "--json"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120, check=True)
    data = json.loads(out.stdout)
    assert isinstance(data["total"], int) and isinstance(data["active"], int)
    assert rel(data["total"], 671e9) < 0.01
    assert set(data["by_component"]) == set(COMPONENTS)


def test_cli_bad_preset():
    out = subprocess.run([sys.executable, "-m", "k3lite.analytic.params", "--preset", "nope"],
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
