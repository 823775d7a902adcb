"""The hybrid stack: incremental decoding == full pass, Trace completeness, AttnRes limits, tokenizer
policy, and the shipped checkpoint (loads; far better than random init; bad files fall back)."""
from pathlib import Path

import pytest
import torch

from k3lite.model.checkpoint import DEFAULT_PATH, checkpoint_meta, load_lite_model, save_checkpoint
from k3lite.model.config import K3Config, KDAConfig, MLAConfig, MoEConfig
from k3lite.model.presets import get_preset
from k3lite.model.stack import K3Model, loss_fn, n_params
from k3lite.experiments.moe_demo import calibration_stream
from k3lite.analytic.params import count_params, dense_baseline_for
from k3lite.base.tokenizer import decode, encode, token_label
from k3lite.model.trace import KDA_FIELDS, MLA_FIELDS, MOE_FIELDS

TOL = dict(atol=2e-5, rtol=1e-4)  # fp32, 8 sublayers deep


def tiny(**changes) -> K3Config:
    cfg = K3Config(
        name="tiny", vocab_size=256, d_model=32, n_layers=4,
        mla=MLAConfig(n_heads=2, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8,
                      use_rope=False, output_gate=True),
        kda=KDAConfig(n_heads=2, head_dim=8, conv_size=4),
        moe=MoEConfig(n_routed_experts=8, top_k=2, expert_ffn_dim=16, n_shared_experts=1, latent_dim=16,
                      latent_norm=True, balancing="quantile"),
        first_k_dense=1, dense_ffn_dim=48, attn_res="block", attn_res_block_size=2, tie_embeddings=True,
        max_seq_len=64,
    )
    return cfg.with_(**changes) if changes else cfg


def build(cfg, seed=0, random_queries=True):
    torch.manual_seed(seed)
    model = K3Model(cfg).eval()
    if random_queries:  # zero-init pseudo-queries give uniform depth weights; make them non-trivial
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith(".query"):
                    p.normal_(0, 0.5)
    return model


@pytest.mark.parametrize("mode", ["standard", "full", "block"])
def test_incremental_decoding_equals_full_pass(mode):
    model = build(tiny(attn_res=mode, kda_ratio=(1, 1)))  # kda, mla, kda, mla: both cache kinds
    assert model.cfg.layer_types() == ["kda", "mla", "kda", "mla"]
    tokens = torch.randint(0, 256, (2, 13))
    with torch.no_grad():
        full = model(tokens).logits
        res = model(tokens[:, :5], use_cache=True)
        outs = [res.logits]
        for t in range(5, 13):
            res = model(tokens[:, t : t + 1], cache=res.cache, use_cache=True)
            outs.append(res.logits)
    torch.testing.assert_close(torch.cat(outs, 1), full, **TOL)
    assert res.cache.length == 13
    kinds = [type(c).__name__ for c in res.cache.layers]
    assert kinds == ["KDACache", "MLACache", "KDACache", "MLACache"]


def test_generate_greedy_matches_full_pass_argmax():
    model = build(tiny())
    prompt = encode("def f(x):")
    out = model.generate(prompt, max_new_tokens=6)
    seq = list(prompt)
    with torch.no_grad():
        for _ in range(6):
            seq.append(int(model(torch.tensor([seq])).logits[0, -1].argmax()))
    assert out == seq[len(prompt):]
    assert model.generate(prompt, 5, temperature=1.0, seed=3) == model.generate(prompt, 5, temperature=1.0, seed=3)


def test_trace_has_every_field_for_every_layer():
    cfg = tiny()
    model = build(cfg)
    tokens = torch.tensor([encode("hello, world")])
    T = tokens.shape[1]
    with torch.no_grad():
        tr = model(tokens, trace=True).trace
    assert tr.n_layers == cfg.n_layers and tr.missing() == {}
    for lt, mixer, ffn in zip(tr.layers, cfg.layer_types(), cfg.ffn_types()):
        assert (lt.mixer_type, lt.ffn_type) == (mixer, ffn)
        for name in KDA_FIELDS + MLA_FIELDS + MOE_FIELDS:  # filled exactly when the layer has that part
            should = (name in KDA_FIELDS and mixer == "kda") or (name in MLA_FIELDS and mixer == "mla") \
                or (name in MOE_FIELDS and ffn == "moe")
            assert (getattr(lt, name) is not None) == should, (lt.index, name)
        if mixer == "kda":
            assert lt.kda_decay.shape == (1, T, 2, 8) and (lt.kda_decay <= 0).all()
            assert lt.kda_beta.shape == (1, T, 2) and ((lt.kda_beta > 0) & (lt.kda_beta < 1)).all()
            assert lt.kda_state_norm.shape == (1, T, 2)
        else:
            assert lt.mla_attention.shape == (1, 2, T, T)
        if ffn == "moe":
            assert lt.router_topk_idx.shape == (1, T, 2) and int(lt.expert_load.sum()) == 2 * T
            assert lt.dispatch_dim == 16
        for w in (lt.depth_weights_mixer, lt.depth_weights_ffn):
            torch.testing.assert_close(w.sum(-1), torch.ones(1, T))  # depth weights sum to 1
    torch.testing.assert_close(tr.final_depth_weights.sum(-1), torch.ones(1, T))
    n_moe = sum(lt.ffn_type == "moe" for lt in tr.layers)
    assert tr.bytes_per_token(100.0) == 100.0 * n_moe == 300.0  # the bytes of one MoE layer x the MoE layers
    cum = tr.bytes_cumulative(100.0)
    assert [b - a for a, b in zip([0.0] + cum, cum)] == [100.0 * (lt.ffn_type == "moe") for lt in tr.layers]


def test_block_size_one_equals_full_in_the_model():
    full = build(tiny(attn_res="full"), seed=2)
    block = K3Model(tiny(attn_res="block", attn_res_block_size=1)).eval()
    block.load_state_dict(full.state_dict())
    tokens = torch.randint(0, 256, (1, 10))
    with torch.no_grad():
        a, b = full(tokens, trace=True), block(tokens, trace=True)
    torch.testing.assert_close(a.logits, b.logits, **TOL)
    torch.testing.assert_close(a.trace.layers[-1].depth_weights_ffn, b.trace.layers[-1].depth_weights_ffn)
    assert a.trace.layers[-1].depth_weights_ffn.shape[-1] == 2 * 4  # embedding + 7 earlier sublayers


def test_one_block_with_zero_queries_equals_standard_residual():
    """sources = [embedding, sum of outputs], weights 1/2 each; every consumer RMS-normalises first.

    RMSNorm is scale-invariant up to its eps (1e-6 against rms^2); embeddings of std 1 make that negligible."""
    std = build(tiny(attn_res="standard"), seed=4, random_queries=False)
    with torch.no_grad():
        std.embed.weight.normal_(0, 1.0)
    one = K3Model(tiny(attn_res="block", attn_res_block_size=8)).eval()  # 8 = all sublayers in one block
    missing, unexpected = one.load_state_dict(std.state_dict(), strict=False)
    assert not unexpected and all(".query" in k or "key_norm" in k or "res_" in k for k in missing)
    tokens = torch.randint(0, 256, (1, 9))
    with torch.no_grad():
        torch.testing.assert_close(one(tokens).logits, std(tokens).logits, atol=1e-4, rtol=1e-4)
        with_queries = build(tiny(attn_res="block", attn_res_block_size=8), seed=4)
        with_queries.load_state_dict({**one.state_dict(), **{k: v for k, v in with_queries.state_dict().items()
                                                               if k.endswith(".query")}})
        assert not torch.allclose(with_queries(tokens).logits, std(tokens).logits, atol=1e-3)


def test_bad_tokens_raise_clear_errors():
    model = build(tiny())
    with pytest.raises(ValueError, match="max_seq_len"):
        model(torch.zeros(1, 65, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\[0, 256\)"):
        model(torch.tensor([[1, 300]]))
    with pytest.raises(ValueError, match="shape"):
        model(torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="max_seq_len"):
        model.generate([1, 2, 3], max_new_tokens=62)


@pytest.mark.parametrize("bad, match", [
    ("", "empty"), ("   \n ", "empty"), ("x" * 100_000, "too long"), ("ab\x00c", "NUL"),
    ("ok\x1b[31m", "U\\+001B"), ("bell\x07", "control"), ("a\ud800b", "surrogate"), ("é" * 2001, "too long"),
    ("😀" * 1001, "bytes"),
])
def test_bad_prompts_give_clear_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        encode(bad)


def test_any_unicode_round_trips():
    for text in ("héllo wörld", "数学 ≠ 𝔪𝔞𝔱𝔥", "tab\tnew\nline\r", "👩‍💻 emoji"):
        ids = encode(text)
        assert all(0 <= i < 256 for i in ids) and len(ids) == len(text.encode())
        assert decode(ids) == text


def test_one_token_label_everywhere():
    """One display per byte on every page: escapes for tab/newline/CR, ␣ for space, hex for the rest."""
    assert [token_label(b) for b in b"a \n\t\r~"] == ["a", "␣", "\\n", "\\t", "\\r", "~"]
    assert [token_label(b) for b in "é".encode()] == ["xc3", "xa9"]
    assert token_label(0) == "x00" and token_label(127) == "x7f"
    with pytest.raises(ValueError, match="byte token"):
        token_label(256)
    # no page or figure module defines its own label function (the MoE and KDA pages used to show x0a)
    root = Path(__file__).resolve().parents[2]
    own = [str(f.relative_to(root)) for d in ("k3lite", "views") for f in (root / d).rglob("*.py")
           if "def token_label" in f.read_text() and f.name != "tokenizer.py"]
    assert own == []


def test_dense_baseline_matches_active_params():
    cfg = get_preset("lite")
    dense = dense_baseline_for(cfg)
    active = count_params(cfg).active
    assert abs(n_params(dense) - active) / active < 0.01
    assert dense(torch.randint(0, 256, (1, 8))).logits.shape == (1, 8, 256)


# ------------------------------------------------------------------------------------- checkpoint
def _val_batch():
    from k3lite.experiments.lm_train import val_batches

    sets = val_batches(seed=123, n_batches=1, batch_size=4, seq_len=96)
    return sets["stdlib"] + sets["synthetic"]


def test_checkpoint_loads_and_beats_random_init_by_a_wide_margin():
    model, warning = load_lite_model()
    assert warning is None, warning
    assert DEFAULT_PATH.stat().st_size <= 20 * 2**20
    torch.manual_seed(0)
    random_model = K3Model(get_preset("lite")).eval()
    with torch.no_grad():
        trained = sum(loss_fn(model(b[:, :-1]).logits, b[:, 1:]).item() for b in _val_batch()) / 2
        rand = sum(loss_fn(random_model(b[:, :-1]).logits, b[:, 1:]).item() for b in _val_batch()) / 2
    assert rand > 5.0  # ~ ln 256 = 5.55 nats/byte
    assert trained < rand - 2.0, (trained, rand)  # nats/byte


def test_missing_or_corrupt_checkpoint_falls_back_with_a_warning(tmp_path: Path):
    model, warning = load_lite_model(tmp_path / "nope.safetensors")
    assert isinstance(model, K3Model) and "not found" in warning
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x00garbage" * 100)
    model, warning = load_lite_model(bad)
    assert isinstance(model, K3Model) and "random" in warning
    assert checkpoint_meta(bad) == {} and checkpoint_meta(tmp_path / "nope.safetensors") == {}
    assert model(torch.tensor([[1, 2, 3]])).logits.shape == (1, 3, 256)


def test_save_load_round_trip(tmp_path: Path):
    model = build(tiny(), seed=5)
    path = tmp_path / "t.safetensors"
    save_checkpoint(model, path, {"note": "x"})
    again, warning = load_lite_model(path)
    assert warning is None and again.cfg == model.cfg and checkpoint_meta(path) == {"note": "x"}
    assert not hasattr(again, "meta")  # training facts live in the file, not on the nn.Module
    tokens = torch.randint(0, 256, (1, 7))
    with torch.no_grad():  # bf16 storage of the big matrices: close, not equal
        torch.testing.assert_close(again(tokens).logits, model(tokens).logits, atol=0.05, rtol=0.05)


# ------------------------------------------------------------------------------- figures and pages
def test_every_stage_has_a_figure():
    from k3lite.viz.model import WHAT, stage_figure, stages

    model = build(tiny())
    with torch.no_grad():
        out = model(torch.tensor([encode("ab ç")]), trace=True)
    probs = out.logits[0, -1].softmax(-1).topk(5)
    all_stages = stages(out.trace)
    kinds = [s.kind for s in all_stages]
    assert kinds[:2] == ["tokenize", "embed"] and kinds[-2:] == ["logits", "next"]
    assert kinds.count("depth") == 4 and kinds.count("router") == 3 and kinds.count("dense") == 1
    for s in all_stages:
        fig = stage_figure(out.trace, s, (probs.indices.tolist(), probs.values.tolist()), wire_per_layer=1000.0)
        assert fig.data, s
        assert s.kind in WHAT


def test_stepper_next_and_prev_walk_through_all_stages(root):
    from streamlit.testing.v1 import AppTest

    from k3lite.model.presets import get_preset as preset
    from k3lite.viz.model import stages

    cfg = preset("lite")
    n = len(stages(list(zip(cfg.layer_types(), cfg.ffn_types()))))
    at = AppTest.from_file(str(root / "views" / "forward_pass.py"), default_timeout=120).run()
    assert not at.exception
    seen = [at.subheader[0].value]
    while not at.button(key="fp_next").disabled:
        at.button(key="fp_next").click().run()
        assert not at.exception, at.exception
        seen.append(at.subheader[0].value)
    assert len(seen) == n and len(set(seen)) == n and seen[-1].endswith("Next token")
    assert at.table  # the top-5 table on the last stage
    at.button(key="fp_generate").click().run()
    assert not at.exception and at.code
    for _ in range(3):
        at.button(key="fp_prev").click().run()
    assert at.session_state.fp_stage == n - 4
    at.text_area(key="fp_prompt").set_value("x" * 150 + "é" * 50).run()  # within chars, within bytes
    assert not at.error
    at.text_area(key="fp_prompt").set_value("nul\x00").run()
    assert at.error and "NUL" in at.error[0].value


def test_attention_residuals_page_modes(root):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(root / "views" / "attention_residuals.py"), default_timeout=120).run()
    assert not at.exception
    for mode in ("full", "standard", "block"):
        at.radio(key="ar_mode").set_value(mode).run()
        assert not at.exception, mode
    at.slider(key="ar_block").set_value(1).run()
    assert not at.exception and at.get("plotly_chart")


def test_rmsnorm_gives_the_bits_of_its_formula():
    """RMSNorm runs the fused F.rms_norm; it must equal x * rsqrt(mean(x^2) + eps) * w computed in fp32."""
    from k3lite.model.nn import RMSNorm
    torch.manual_seed(0)
    norm = RMSNorm(48, eps=1e-6)
    with torch.no_grad():
        norm.weight.normal_()
    for dtype in (torch.float32, torch.bfloat16):
        x = (torch.randn(3, 5, 48) * 3).to(dtype)
        xf = x.float()
        want = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * norm.weight).to(dtype)
        assert norm(x).dtype == dtype and torch.equal(norm(x), want)


def test_inference_paths_compute_what_the_autograd_path_computes():
    """Without autograd the forward takes its fast paths (experts batched by a cost model, depth-mix sources in
    one buffer with cached norms, shorter KDA chunks); with autograd the plain ones. On the shipped model and
    text (its steep decays, its skewed routing) both give the same logits and the same expert choices."""
    model, warning = load_lite_model()
    assert warning is None
    tokens = torch.tensor([list(calibration_stream()[:300])])
    with torch.inference_mode():
        fast = model(tokens, trace=True)
    slow = model(tokens, trace=True)  # parameters require grad: the autograd paths
    torch.testing.assert_close(fast.logits, slow.logits.detach())
    for a, b in zip(fast.trace.layers, slow.trace.layers):
        if a.router_topk_idx is not None:
            assert torch.equal(a.router_topk_idx, b.router_topk_idx), a.index
