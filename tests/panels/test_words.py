"""k3lite/panels/words/: every equation a paper level displays, written out as it reads, equals the library function
the page's number comes from, at the pages' defaults and at other settings; first look carries no formula; the
levels are validated."""
from __future__ import annotations

import numpy as np
import pytest

from k3lite.panels import moe as moe_panels
from k3lite.panels.words import LEVELS, attnres, hybrid, kda, moe, pick

SETTINGS = {
    "moe": [dict(E=896, k=16, shared=2, ratio=0.5, batch=16), dict(E=64, k=4, shared=0, ratio=1.0, batch=1),
            dict(E=256, k=8, shared=1, ratio=0.125, batch=1024)],
    "kda": [dict(T=47, K=32), dict(T=1, K=8), dict(T=200, K=64)],
    "hybrid": [dict(ratio=3, batch=1, hw="H200", eff=1.0), dict(ratio=0, batch=16, hw="B200", eff=0.5),
               dict(ratio=7, batch=256, hw="H100 SXM", eff=0.05)],
    "attnres": [dict(n=5, d=128, reader=16, block=4), dict(n=1, d=64, reader=0, block=1),
                dict(n=17, d=256, reader=37, block=16)],
}


def formulas_of(page: str, s: dict):
    if page == "moe":
        return moe.formulas(moe_panels.k3_width_moe(s["E"], s["k"], s["shared"], s["ratio"]), s["batch"])
    if page == "kda":
        return kda.formulas(s["T"], s["K"])
    if page == "attnres":
        return attnres.formulas(s["n"], s["d"], s["reader"], s["block"])
    return hybrid.formulas(s["ratio"], s["batch"], s["hw"], s["eff"])


@pytest.mark.parametrize("page,setting", [(p, s) for p, ss in SETTINGS.items() for s in ss])
def test_each_equation_as_written_is_what_the_code_computes(page, setting):
    for f in formulas_of(page, setting):
        written, computed = f.evaluate(**f.inputs), f.value
        assert np.allclose(np.asarray(written, dtype=float), np.asarray(computed, dtype=float), rtol=1e-6,
                           atol=1e-5), f"{page} {setting}: {f.latex} gives {written}, the code {computed}"
        assert f.text.strip() and f.evidence.kind and all(symbol for symbol, _ in f.symbols)


@pytest.mark.parametrize("stage", [0, 9, -1])
def test_forward_pass_equations_at_stages(stage):
    import torch

    from k3lite.base.tokenizer import encode
    from k3lite.model.checkpoint import load_lite_model
    from k3lite.panels.words import forward
    from k3lite.viz.model import stages

    model, _ = load_lite_model()
    with torch.inference_mode():
        trace = model(torch.tensor([encode("def f(x):\n    return x")]), trace=True).trace
    for f in forward.formulas(model.cfg, trace, stages(trace)[stage]):
        assert np.isclose(f.evaluate(**f.inputs), f.value), f.latex


def test_every_stage_has_words_at_every_level():
    from k3lite.panels.words import forward
    from k3lite.viz.model import WHAT

    for kind in WHAT:
        texts = [forward.what(lv, kind) for lv in LEVELS]
        assert len(set(texts)) == 3 and texts[1] == WHAT[kind] and len(texts[0].split()) <= 30


def test_a_wrong_formula_is_caught():
    """The check has teeth: the touched-experts formula with k/E squared no longer matches the code."""
    f = moe.formulas(moe_panels.k3_width_moe(896, 16, 2, 0.5), 16)[-1]
    wrong = f.inputs["E"] * (1 - (1 - (f.inputs["k"] / f.inputs["E"]) ** 2) ** f.inputs["B"])
    assert not np.isclose(wrong, f.value)


def test_pick_refuses_an_unknown_level():
    assert [pick(lv, 1, 2, 3) for lv in LEVELS] == [1, 2, 3] and pick("paper", 1, 2) == 2
    with pytest.raises(ValueError, match="first, engineer, paper"):
        pick("eli5", 1, 2)


def test_first_look_questions_carry_no_formula():
    for text in (moe.question("first"), kda.question("first"), hybrid.question("first"), attnres.question("first"),
                 moe.how("first"), kda.rule("first", "engineer's"), attnres.HOW["first"]):  # behind a click too
        assert "$" not in text and "\\" not in text and "`" not in text and "=" not in text, text
