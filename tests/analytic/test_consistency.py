"""Numbers shown in two places agree, and "what to notice" sentences say what the page's own numbers show.

Each page is rendered with AppTest at its defaults (as a visitor first sees it); figures are read back from
the page (plotly JSON), tables from its dataframes, and compared with each other and with the one library
function that computes them. Other helpers' cross-page checks (bytes on the wire, state bytes) live beside
their pages' tests.
"""
import base64
import re

import numpy as np
import plotly.io as pio
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from k3lite.model.config import routed_fraction
from k3lite.model.presets import get_preset
from k3lite.analytic.cost import PRICES, ModelPrice, TaskProfile, split_what_ifs
from k3lite.model.kda import probe_claims, recall_probe
from k3lite.analytic.params import active_with_embedding, count_params, fmt
from k3lite.viz.model import WHAT
from k3lite.model.cards import CARDS
from views.registry import PAGES, SHIPPED_INPUTS


def render(page: str, query: dict | None = None, state: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "views" / page), default_timeout=300)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    for k, v in (state or {}).items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def figures(at: AppTest) -> list:
    return [pio.from_json(e.proto.spec) for e in at.get("plotly_chart")]


def array(value) -> np.ndarray:
    """A plotly data field as numpy: plain lists, or the typed-array form ({dtype, bdata, shape}) plotly writes."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        return flat.reshape([int(n) for n in str(shape).split(",")]) if shape else flat
    return np.asarray(value)


def percent(text: str) -> float:
    return float(re.search(r"-?[\d.]+", text).group())


MARKER = re.compile(r"\s*(:gray\[)?[ʳᵐᵉᵈᵃ]\]?$")  # an evidence marker after a label or a column name


def unmarked(text: str) -> str:
    return MARKER.sub("", text)


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if unmarked(m.label) == label)


def frame(at: AppTest, i: int | None = None, has: str | None = None):
    """A table with its columns' evidence markers taken off: the i-th, or the first with a column named `has`."""
    frames = [d.value.rename(columns=unmarked) for d in at.dataframe]
    return frames[i] if has is None else next(f for f in frames if has in f.columns)


@pytest.fixture(scope="module")
def moe_page() -> AppTest:
    return render("moe.py")


# ------------------------------------------------------------------------------------------ activation ratio
@pytest.mark.parametrize("preset, row", [("kimi-k2", "Kimi K2"), ("kimi-k3", "Kimi K3")])
def test_home_and_moe_table_show_the_same_activation_ratio(moe_page, preset, row):
    home = render("home.py", query={"home_preset": preset})
    on_home = percent(metric(home, "experts used per token (top-k / E)"))
    table = frame(moe_page, has="activation")
    on_moe = percent(table.loc[table["model"] == row, "activation"].iloc[0])
    moe = get_preset(preset).moe
    assert on_home == on_moe == round(100 * routed_fraction(moe.top_k, moe.n_routed_experts), 2)


def test_moe_table_has_the_seed_rows_and_k2_exact(moe_page):
    table = frame(moe_page, has="activation").set_index("model")["activation"]
    assert table["Kimi K2"] == "2.08%"  # 8 / 384, not the rounded ~2.0%
    assert table["Inkling"] == "~3.1%" and table["Nemotron 3 Ultra"] == "4.30%"


# ------------------------------------------------------------------------------------------ balancing panel
@pytest.fixture(scope="module")
def moe_page_64() -> AppTest:
    """At 64 experts, top-8 the page draws one bar per expert (at K3's 896 a histogram of the loads)."""
    return render("moe.py", query={"moe_experts": "64", "moe_top_k": "8"})


def test_moe_bars_are_the_curve_at_the_shared_budget_and_the_claim_uses_them(moe_page_64):
    moe_page = moe_page_64
    figs = figures(moe_page)
    bars = next(f for f in figs if any("max-violation" in (a.text or "") for a in f.layout.annotations))
    curve = next(f for f in figs if f.layout.xaxis.title.text == "balancing updates (batches seen)")
    budget = int(re.search(r"Every method got (\d+) updates", " ".join(c.value for c in moe_page.caption)).group(1))
    titles = [a.text for a in bars.layout.annotations if "max-violation" in (a.text or "")]
    from_bars = [float(re.search(r"max-violation ([\d.]+)", t).group(1)) for t in titles]
    from_curve = [float(array(tr.y)[list(array(tr.x)).index(budget)]) for tr in curve.data]
    assert [f"{v:.2f}" for v in from_bars] == [f"{v:.2f}" for v in from_curve]
    claim = next(c.value for c in moe_page.caption if "Updates needed to get below" in c.value)
    low, high = map(float, re.search(r"stay between ([\d.]+) and ([\d.]+)", claim).groups())
    late = [float(y) for tr in curve.data[1:] for x, y in zip(array(tr.x), array(tr.y)) if x >= budget]  # [0]: none
    assert (low, high) == (round(min(late), 2), round(max(late), 2))
    captions = " ".join(c.value for c in moe_page.caption)
    tokens = int(re.search(r"([\d,]+) held-out bytes x top-", captions).group(1).replace(",", ""))
    k = int(re.search(r"held-out bytes x top-(\d+)", captions).group(1))
    per_expert = int(re.search(r"give every expert exactly (\d+)", captions).group(1))
    assert per_expert == tokens * k // moe_page.session_state.moe_experts  # expert choice: N k / E each, exactly
    notice = " ".join(m.value for m in moe_page.markdown)
    assert "comes closest to the dashed line" not in notice  # the old fixed claim (quantile was 4th of 4)
    assert f"{1 + from_bars[0]:.1f}x the ideal load" in notice  # none's bar, in the what-to-notice text


# ------------------------------------------------------------------------------------------ home
def test_home_compares_deepseek_active_like_for_like_and_drops_the_mtp_guess():
    home = render("home.py")
    table = frame(home, has="config").set_index("config")  # published vs ours
    ds = count_params(get_preset("deepseek-v3"))
    stated, with_embedding, _ = CARDS["deepseek-v3"].stated.convention
    assert with_embedding and table.loc["deepseek-v3", "stated active"] == fmt(stated)
    assert table.loc["deepseek-v3", "our active, same convention"] == fmt(active_with_embedding(ds))
    assert table.loc["deepseek-v3", "active diff"] == f"{100 * (active_with_embedding(ds) / stated - 1):+.1f} %"
    captions = " ".join(c.value for c in home.caption)
    assert "includes the multi-token-prediction" not in captions and "num_nextn_predict_layers: 0" in captions


def test_every_page_that_reads_shipped_files_is_listed_as_shipped():
    reads_assets = {p.stem for p in PAGES
                    if re.search(r"load_lite_model|ASSETS|assets/", (ROOT / p.file).read_text())
                    and p.stem != "home"}
    assert reads_assets <= set(SHIPPED_INPUTS), reads_assets - set(SHIPPED_INPUTS)
    home = render("home.py")
    text = " ".join(m.value for m in home.markdown)
    assert "every chart comes from code that just executed" not in text
    for spec in PAGES:
        if spec.stem in SHIPPED_INPUTS:
            assert f"**{spec.short}**: {SHIPPED_INPUTS[spec.stem]}" in text


# ------------------------------------------------------------------------------------------ other pages' claims
def test_cost_page_what_if_sentence_is_the_computed_one():
    at = render("cost_per_task.py")
    text = " ".join(c.value for c in at.caption)
    assert "most of the saving is gone" not in text
    ss = at.session_state
    profile = TaskProfile(turns=float(ss.cost_turns), input_tokens_per_turn=1000.0 * ss.cost_in_k,
                          output_tokens_per_turn=float(ss.cost_out), success_rate=ss.cost_success / 100,
                          turn_retry_rate=ss.cost_retry / 100, cache_hit_rate=ss.cost_cache / 100,
                          max_attempts=ss.cost_attempts)
    worker = ModelPrice("small worker", float(ss.cost_worker_in), float(ss.cost_worker_out),
                        PRICES["small-worker"].cache_discount)
    factor, what_ifs = split_what_ifs(PRICES["kimi-k3"], worker, profile, ss.cost_share / 100, 0.98,
                                      ss.cost_worker_success / 100)
    assert metric(at, "split is cheaper by") == f"{factor:.1f}x"
    for w in what_ifs:
        assert f"{w.factor:.1f}x cheaper ({100 * w.kept:.0f}% of the dollar saving" in text
    assert "4.6x cheaper (88% of the dollar saving" in text  # the hand-checked default (tests/analytic/test_cost.py)


def test_kda_probe_text_is_the_probes_own_claims():
    at = render("kda.py", state={"kda_probe": True})
    text = " ".join(c.value for c in at.caption)
    ss = at.session_state
    probe = recall_probe(ss.kda_probe_n, fast_decay=ss.kda_probe_decay, keys=ss.kda_probe_keys, leak=ss.kda_probe_leak)
    for sentence in probe_claims(probe, min(8, ss.kda_probe_n)):
        assert sentence in text
    assert "equally badly" not in text
    table = frame(at, 0).set_index("mechanism")
    assert f"linear attention {table.loc['linear attention', 'recall of pair 0 (the oldest)']:.2f}" in text


def test_attention_residuals_standard_heatmap_has_a_label_per_coefficient():
    at = render("attention_residuals.py", state={"ar_mode": "standard"})
    heat = next(f.data[0] for f in figures(at) if f.data and f.data[0].type == "heatmap")  # the drawn reads come first
    z = array(heat.z)
    assert len(heat.x) == z.shape[1] == 2 * get_preset("lite").n_layers + 1
    assert not any(str(x).startswith("B") for x in heat.x)


def test_forward_pass_dense_text_matches_the_presets():
    for name, preset in (("DeepSeek-V3", "deepseek-v3"), ("Kimi K2", "kimi-k2")):
        assert f"{name}: {get_preset(preset).first_k_dense}" in WHAT["dense"]
    assert get_preset("deepseek-v3").first_k_dense == 3  # DeepSeek-V3 config.json: first_k_dense_replace 3
    assert "as DeepSeek-V3 / Kimi do" not in WHAT["dense"]
