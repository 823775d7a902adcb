"""The presets: each validates and round-trips, the released layer patterns, and the kimi-k3 docstring's numbers
are the preset's."""
import math
import re

import pytest

from k3lite.model.config import K3Config
from k3lite.model.presets import PRESETS, get_preset, kimi_k3


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_validate_and_roundtrip(name):
    cfg = get_preset(name)
    assert K3Config.from_dict(cfg.to_dict()) == cfg
    assert len(cfg.layer_types()) == cfg.n_layers


def test_kimi_linear_pattern_is_every_4th_and_last():
    types = get_preset("kimi-linear-48b-a3b").layer_types()
    mla = [i + 1 for i, t in enumerate(types) if t == "mla"]  # 1-indexed, as in its config.json
    assert mla == [4, 8, 12, 16, 20, 24, 27]


def test_k3_pattern_is_3_to_1():
    types = get_preset("kimi-k3").layer_types()
    assert types[:8] == ["kda", "kda", "kda", "mla"] * 2
    assert types[-1] == "mla"
    assert types.count("kda") == 69 and types.count("mla") == 24


def test_all_mla_presets():
    assert set(get_preset("deepseek-v3").layer_types()) == {"mla"}
    assert get_preset("deepseek-v3").ffn_types()[:4] == ["dense"] * 3 + ["moe"]


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown preset 'gpt-5'"):
        get_preset("gpt-5")


def test_k3_docstring_block_count_matches_the_preset():
    """The kimi-k3 docstring's attention-residual numbers are the preset's: blocks of 12 layers (config.json
    `attn_res_block_size` 12) = 24 sublayers, 186 sublayers -> 7 full blocks + a partial, at most 9 sources."""
    cfg = get_preset("kimi-k3")
    doc = " ".join(kimi_k3.__doc__.split())
    m = re.search(r"every (\d+) layers \((\d+) sublayers: (\d+) sublayers -> (\d+) full blocks \+ a partial, at most (\d+)", doc)
    assert m, "docstring no longer states the block size"
    layers, size, subs, full, sources = map(int, m.groups())
    assert (layers, size, subs) == (cfg.attn_res_block_layers, cfg.attn_res_block_size, cfg.n_sublayers)
    assert full == cfg.n_sublayers // cfg.attn_res_block_size
    assert sources == 1 + math.ceil(cfg.n_sublayers / cfg.attn_res_block_size)
