"""Section 3b on a Hopper deployment: the prefill pool had a fixed layout (TP 1 over EP 32) that no
Hopper GPU holds, its error stopped the page (st.stop), and sections 4, 5 and the tornado were gone. Now the pool
takes a layout of the reader's GPU that fits and says by name why it is not the one asked for, and a section's
error never stops the page."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.analytic.serving import Serving
from k3lite.analytic.serving.compare import prefill_pool

H200 = {"sv_gpu": "H200", "sv_gpus": "144", "sv_ep": "144", "sv_tp": "1"}  # a deployment that fits on H200


def test_the_pool_fits_the_readers_gpu_or_says_why_by_name():
    s = Serving(gpu="H200", n_gpus=144, ep=144, tp=1)
    pp = prefill_pool(s, 32, 16384)
    assert pp.prefill is not None and (pp.serving.ep, pp.serving.tp) == (32, 2)
    assert pp.note.startswith("The pool asked for, 32 x H200, EP 32, TP 1, does not fit") and "EP 32, TP 2" in pp.note
    same = prefill_pool(s.with_(n_gpus=64, ep=64, tp=8), 32, 16384)  # the deployment's TP where it divides the pool
    assert same.note == "" and same.serving.tp == 8
    none = prefill_pool(s, 1024, 16384)  # wider than K3's 896 experts: no EP of that size exists
    assert none.prefill is None and none.note.startswith("No prefill pool of H200 fits Kimi K3: 1024 x H200, EP 1024")
    assert "896 routed experts" in none.note


def test_3b_on_h200_leaves_sections_4_5_and_the_tornado_on_the_page():
    at = AppTest.from_file(str(ROOT / "views" / "serving.py"), default_timeout=240)
    for k, v in H200.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]  # no section stopped the page with an error
    captions = [c.value for c in at.caption]
    assert any("The pool shown is the smallest searched layout of this GPU that does, 32 x H200, EP 32, TP 2"
               in c for c in captions)
    labels = [e.label for e in at.expander]
    for section in ("3b. Prefill and decode as separate pools", "4. What each choice buys",
                    "5. Checked against published serving figures"):
        assert section in labels, section
    assert any("The biggest step is" in c for c in captions)  # section 4's sentence
    assert any("moves most with" in m.value for m in at.markdown)  # the tornado's sentence
