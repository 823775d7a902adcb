"""The lab's mixers: the conv, causality, the shared kernels, KDA the library's layer; the lab's initialisation
(small write strength, slow decays) lets the delta-rule and decaying mixers learn MQAR."""
import pytest
import torch
import torch.nn.functional as F

import k3lite.model.kda as kda
from k3lite.model.config import K3_DECAY_LOWER_BOUND
from k3lite.model.kda.layer import KimiDeltaAttention
from k3lite.experiments.lab import MIXERS, LabConfig, LabModel, train
from k3lite.experiments.lab_mixers import INITS, RECURRENT_MIXERS, causal_conv
from k3lite.experiments.lab_sweep_jobs import SEQ_LENS
from test_lab import TINY


def test_causal_conv_equals_conv1d():
    x, w = torch.randn(3, 11, 6), torch.randn(6, 1, 4)
    ref = F.conv1d(F.pad(x.transpose(1, 2), (3, 0)), w, groups=6).transpose(1, 2)  # (B, T, C)
    torch.testing.assert_close(causal_conv(x, w), ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mixer", MIXERS)
def test_mixers_are_causal(mixer):
    cfg = LabConfig(mixer=mixer, **TINY)
    model = LabModel(cfg).eval()
    tokens = torch.randint(0, 32, (2, 16))
    changed = tokens.clone()
    changed[:, 10:] = (changed[:, 10:] + 1) % 32
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    torch.testing.assert_close(a[:, :10], b[:, :10], atol=1e-5, rtol=1e-5)
    assert (a[:, 10:] - b[:, 10:]).abs().max() > 1e-4, "later positions must see the changed tokens"


@pytest.mark.parametrize("mixer", [m for m in RECURRENT_MIXERS if m != "kda"])
def test_recurrent_mixers_call_the_shared_kernels(mixer, monkeypatch):
    """No private copies: the lab runs k3lite.model.kda.MIXER_KERNELS[name], with the gate shapes it expects."""
    calls = []
    real = kda.MIXER_KERNELS[mixer]

    def spy(q, k, v, g, beta, **kw):
        calls.append((None if g is None else g.dim(), beta is not None))
        return real(q, k, v, g, beta, **kw)

    monkeypatch.setitem(kda.MIXER_KERNELS, mixer, spy)
    LabModel(LabConfig(mixer=mixer, **TINY))(torch.randint(0, 32, (1, 16)))
    g_kind, uses_beta = kda.MIXER_INPUTS[mixer]
    expected_dim = {None: None, "head": 3, "channel": 4}[g_kind]
    assert calls == [(expected_dim, uses_beta)] * 2, calls


@pytest.mark.parametrize("init", INITS)
def test_the_labs_kda_is_the_librarys_layer_in_k3s_form(init):
    """One KDA: the lab trains `k3lite.model.kda.KimiDeltaAttention` (the layer of the other pages), with K3's released
    decay bound and full-rank output gate; a standalone library layer with the same weights gives the same output."""
    cfg = LabConfig(mixer="kda", init=init, **TINY)
    model = LabModel(cfg)
    layer = model.mixers[0].layer
    assert type(layer) is KimiDeltaAttention
    assert layer.cfg.decay_lower_bound == K3_DECAY_LOWER_BOUND and layer.cfg.output_gate_full_rank
    twin = KimiDeltaAttention(cfg.d_model, layer.cfg)
    twin.load_state_dict(layer.state_dict())
    x = torch.randn(2, 16, cfg.d_model)
    torch.testing.assert_close(model.mixers[0](x), twin(x, chunk_size=cfg.chunk_size).out)
    g, beta = model.mixers[0].gates(x)
    assert float(g.min()) > K3_DECAY_LOWER_BOUND and float(g.max()) <= 0, "K3's decay lies in (e^-5, 1] per token"
    if init == "lab":
        assert float(beta.mean()) < 0.1, "the lab's small write strength"
    else:
        assert 0.3 < float(beta.mean()) < 0.7, "fla's default: beta ~ sigmoid(W_b x) ~ 0.5"


def test_the_labs_kda_runs_the_library_chunk_kernel(monkeypatch):
    import k3lite.model.kda.layer as layer_mod

    calls = []
    real = layer_mod.chunk_kda

    def spy(*args, **kw):
        calls.append(kw.get("chunk_size"))
        return real(*args, **kw)

    monkeypatch.setattr(layer_mod, "chunk_kda", spy)
    LabModel(LabConfig(mixer="kda", **TINY))(torch.randint(0, 32, (1, 16)))
    assert calls == [TINY["chunk_size"]] * 2


# ------------------------------------------------------------------------------------------ initialisation
def test_delta_rule_starts_with_a_small_write_strength():
    model = LabModel(LabConfig(mixer="deltanet", d_model=32, n_heads=2))
    x = torch.randn(2, 8, 32)
    _, beta = model.mixers[0].gates(x)
    assert float(beta.detach().mean()) < 0.1, "beta ~ 0.5 at init: overlapping initial keys erase each other"


@pytest.mark.parametrize("mixer", ["mamba2", "gdn", "kda"])
def test_decaying_mixers_start_close_to_their_non_decaying_parents(mixer):
    """Regression: with fla's A ~ U(1, 16) the median channel kept ~1e-10 of a write over 256 tokens, and GDN and
    KDA sat at chance on MQAR T=256 while DeltaNet (no decay) reached 95%. At init the median channel must keep
    most of a write over the sweep's longest sequence."""
    torch.manual_seed(0)
    model = LabModel(LabConfig(mixer=mixer, d_model=64, n_heads=2))
    g, _ = model.mixers[0].gates(torch.nn.functional.rms_norm(torch.randn(4, 64, 64), (64,)))
    kept = torch.exp(g.detach() * max(SEQ_LENS["mqar"]))  # per-step log-decay times 256 steps
    assert float(kept.median()) > 0.5


def test_delta_rule_learns_mqar():
    """Regression: with beta ~ 0.5 at init, DeltaNet stayed at chance (1.6% after 150 steps here; 1% after 600
    steps in an earlier pilot run) while linear attention learned. Now it must clearly leave chance (1/256)."""
    torch.manual_seed(0)
    cfg = LabConfig(task="mqar", mixer="deltanet", seq_len=64, num_pairs=16, vocab_size=256, d_model=64, n_heads=2,
                    batch_size=32, steps=150, lr=1e-2, eval_every=150, eval_examples=64)
    assert train(cfg).final_eval_acc > 0.15
