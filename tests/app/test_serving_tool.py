"""The serving page as an engineer's tool: a deployment that does not run keeps its error in its own panel (the
frontier and the verdict still render)."""
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from test_serving_claims import _page, _text  # the serving page opened from a link, and its captions' text


def test_an_invalid_deployment_keeps_its_error_local():
    at = _page(sv_gpu="H100 SXM")  # 64 x H100 at TP 1: the replicated bf16 non-expert weights overflow 80 GiB
    assert not at.exception, [e.message for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "TP >= 2" in errors[0] and "raise ep" not in errors[0], errors
    assert "no EP can fix it" in errors[0]
    assert len(at.get("plotly_chart")) >= 2  # the published-runs check and the frontier
    assert "is served cheapest on" in _text(at)  # the verdict


def test_solve_for_a_target_shows_the_concurrency_replicas_and_dollars():
    """The page's solve panel shows k3lite.analytic.serving.target.solve's numbers for the deployment and target."""
    from k3lite.analytic.serving import Serving  # here: only this test builds the deployment by hand
    from k3lite.analytic.serving.target import solve  # (the reason above)

    at = _page(sv_t_speed="30", sv_t_users="5000", sv_t_in="8192", sv_t_out="1024")
    assert not at.exception, [e.message for e in at.exception]
    want = solve(Serving(gpu="GB300 NVL72"), 30.0, 5000, 8192, 1024)
    shown = {m.label.split(" :gray")[0]: m.value for m in at.metric}
    assert shown["requests per replica"] == f"{want.concurrency:,}"
    assert shown["replicas"] == f"{want.replicas:,}" and shown["GPUs"] == f"{want.gpus:,}"
    assert shown["$ per month"] == f"${want.usd_per_month:,.0f}"
    assert want.sentence.split(" at $")[0] in _text(at)


def test_the_scenario_downloads_as_json_and_csv_with_the_link():
    at = _page(sv_tp="2", sv_gpu="H100 SXM")
    assert not at.exception, [e.message for e in at.exception]
    buttons = at.get("download_button")
    assert len(buttons) == 2
    text = " ".join(c.value for c in at.caption)
    assert "sv_gpu=H100+SXM" in text and "sv_tp=2" in text  # the link reproduces the scenario
    assert [b.proto.label for b in buttons] == ["scenario as JSON", "scenario as CSV"]


def test_one_price_table_drives_frontier_deployment_and_labels_a_typed_price_yours():
    """A GPU-hour price set in the one table moves the frontier and the deployment alike, and is labelled 'yours'
    (it had been 'cited' in the caption, and the deployment had its own price box that ignored the table)."""
    from k3lite.analytic.serving import Serving, check_fits  # here: only this test prices by hand
    from k3lite.analytic.serving.price import DEFAULT_SHAPE, request_price  # (the reason above)

    at = _page(sv_usd_GB300_NVL72="2.5")
    assert not at.exception, [e.message for e in at.exception]
    s = Serving(gpu="GB300 NVL72", usd_per_gpu_hour=2.5)
    bound = request_price(s, DEFAULT_SHAPE, check_fits(s).max_batch_per_gpu * s.n_gpus, "bound")  # one request
    text = _text(at)
    assert f"bound {bound.tokens_per_s_per_user:.1f}, ${bound.usd_per_m:.3f} per M tokens." in text
    assert "GB300 NVL72 yours" in text and "B200 assumed" in text and "H200 cited" in text
    assert "sv_price" not in [w.key for w in at.number_input]


def test_the_cost_page_prices_its_serving_physics_row_from_the_same_table():
    from k3lite.analytic.serving.compare import frontier_prices  # here: only this test needs the cost points

    at = AppTest.from_file(str(ROOT / "views" / "cost_per_task.py"), default_timeout=300)
    at.query_params.update({"sv_usd_B200": "9.0", "sv_usd_GB300_NVL72": "9.0", "sv_usd_B300": "9.0",
                            "cost_planner_at": "slow"})
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    slow = frontier_prices(prices={"B200": 9.0, "GB300 NVL72": 9.0, "B300": 9.0})[20.0]
    text = " ".join(c.value for c in at.caption).replace("\\$", "$")
    assert f"${slow.output_per_m:.3g}" in text or f"${slow.output_per_m:.3f}" in text, slow


def test_your_own_gpu_from_a_link_is_searched_placed_and_priced():
    """A GPU typed by the reader (HBM, bandwidth, FLOPs, links, $/hour) travels in the link, joins the frontier's
    per-GPU table and can hold the deployment; a value out of range says which and leaves the rest of the page."""
    import json  # here: only this test reads a chart's traces

    at = _page(sv_my_on="true", sv_my_hbm_tb_s="16", sv_my_usd_per_hour="3",
               sv_gpu="custom:179:16:2250:4500:9000:900:50:8:3")
    assert not at.exception, [e.message for e in at.exception]
    names = [t.get("name") for c in at.get("plotly_chart") for t in json.loads(c.proto.spec)["data"]]
    assert "custom GPU (179 GiB, 16 TB/s)" in names
    text = _text(at)
    assert "Your deployment (64 × custom GPU (179 GiB, 16 TB/s), EP 64" in text
    assert "custom GPU (179 GiB, 16 TB/s) yours" in text  # its price is the reader's
    bad = _page(sv_my_on="true", sv_my_hbm_tb_s="0.05")
    assert not bad.exception
    assert any("sv_my_hbm_tb_s" in w.value for w in bad.warning)  # out of the input's range: the default, said


def test_your_gpu_follows_to_the_hybrid_page():
    """Typed once (here from a link), your GPU is a choice on the 3:1 hybrid page too, named in its sentences."""
    at = AppTest.from_file(str(ROOT / "views" / "hybrid_attention.py"), default_timeout=300)
    at.query_params.update(sv_my_on="true", sv_my_hbm_gib="512", hy_hw="custom:512:8:2250:4500:9000:900:50:8:3.5")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.selectbox(key="hy_hw").value.startswith("custom:512:")
    shown = " ".join(e.value for kind in ("caption", "markdown", "info", "warning", "success")
                     for e in at.get(kind) if isinstance(getattr(e, "value", None), str))
    assert "custom GPU (512 GiB, 8 TB/s)" in shown and "custom:512" not in shown
    assert at.query_params["sv_my_hbm_gib"] == "512.0"


def test_providers_prices_are_drawn_against_the_frontier_and_price_the_cost_page():
    """The serving page draws the cited providers' K3 prices against the self-hosted frontier; the cost page takes
    a reseller's price list as K3's price basis from its link."""
    import json  # here: only these tests read a chart's traces

    from k3lite.analytic.serving.providers import PROVIDERS  # (the reason above)

    at = _page()
    assert not at.exception, [e.message for e in at.exception]
    names = [t.get("name") for c in at.get("plotly_chart") for t in json.loads(c.proto.spec)["data"]]
    assert "self-hosted: cheapest" in names and any(n and n.startswith("Moonshot AI, OpenRouter") for n in names)
    listed = (8192 * 3.00 + 1024 * 15.00) / 9216  # their list at the page's request shape, input and output
    assert f"the 3 providers we can cite sell K3 at ${listed:.3f} per M tokens, input and output" in _text(at)
    cost = AppTest.from_file(str(ROOT / "views" / "cost_per_task.py"), default_timeout=300)
    cost.query_params["cost_k3_price"] = "OpenRouter"
    cost.run()
    assert not cost.exception, [e.message for e in cost.exception]
    shown = " ".join(c.value for c in cost.caption)
    assert f"**Kimi K3 at OpenRouter**: OpenRouter's listed price ({PROVIDERS[1].dated})" in shown
