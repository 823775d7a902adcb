"""One setup, one price: one deployment, one request shape and one speed go through every path
that shows a price (the frontier's point and verdict, the per-GPU table, "your deployment", the solver, the
providers sentence, the export, the CLI's three verbs, the cost page's serving-physics row) and every path prints the
same $ per M tokens, blended over the shape's input and output (k3lite/analytic/serving/price.py). A path that priced
the decode alone would print the decode-only figure, which sits far from it: the test checks that too."""
import json

import pytest

from k3lite.analytic.serving import K3_PRESET
from k3lite.analytic.serving.__main__ import main
from k3lite.analytic.serving.compare import physics_price
from k3lite.analytic.serving.fit import FITTED
from k3lite.analytic.serving.frontier import RELEASED, cheapest_at, frontier, verdict
from k3lite.analytic.serving.predict import as_step
from k3lite.analytic.serving.price import Shape, request_price
from k3lite.panels import serving as P
from k3lite.panels import serving_sections as S

GPU, N, TP, BATCH = "H200", 64, 8, 3  # 64 H200, EP 64, attention TP 8: the audit's setup; 3 sequences per GPU
SHAPE = Shape(8192, 1024, 0.25)  # a quarter of the input from a prefix cache: the cached share travels too


@pytest.fixture(scope="module")
def setup():
    """The frontier searched at exactly this setup, and the speed its point at BATCH gives: the largest batch that
    keeps that speed is BATCH on every path that searches (per-user speed falls with batch)."""
    fr = frontier(K3_PRESET, SHAPE, [GPU], [RELEASED], (N,), model="predicted", tps=(TP,))
    (u,) = fr.setups
    speed = u.price(BATCH).tokens_per_s_per_user
    d = P.deployment(K3_PRESET, GPU, N, N, TP, "mxfp4", "bf16", 32768, True, {}, None, BATCH, SHAPE)
    return fr, speed, d


def _money(x: float) -> str:
    return f"${x:.3f}"


def test_every_path_prints_one_price(setup, capsys):
    fr, speed, d = setup
    w = cheapest_at(fr.setups, speed)
    assert w.batch_per_gpu == BATCH
    one = w.price  # the frontier point's request price: the number every path must print
    assert one == request_price(d.serving, SHAPE, BATCH * N)  # the one function, called directly
    usd = _money(one.usd_per_m)

    # the verdict and the frontier's panel values
    v = verdict(fr, speed)
    assert v.winner == w and f"{usd} per M tokens at {SHAPE.label}" in v.sentence
    # the per-GPU table
    search = ((RELEASED,), (TP,), ("bf16",), (GPU,))
    (table,) = [i for i in P.per_gpu(fr, search, speed, None, K3_PRESET) if isinstance(i, P.Table)]
    (row,) = table.rows
    assert (row["$ / M tokens (in + out)"], row["$ / M input"], row["$ / M output"]) == tuple(
        round(x, 3) for x in (one.usd_per_m, one.usd_per_m_input, one.usd_per_m_output))
    # your deployment
    panel = P.deployment_panel(d)
    assert panel.values["predicted_usd"] == one.usd_per_m and usd in panel.sentences[0].text
    # the solver, at the same speed and shape
    t, err = S.target(d, speed, 1000, SHAPE.input_len, SHAPE.output_len, SHAPE.cached)
    assert not err and t.concurrency == BATCH * N and t.usd_per_m == one.usd_per_m and usd in t.sentence
    # the providers sentence: input against input, output against output, blended at the same shape
    said = [s.text for i in S.providers(fr, w, speed) if isinstance(i, P.Panel) for s in i.sentences]
    assert any(f"{usd} per M tokens: {_money(one.usd_per_m_input)} per M input, "
               f"{_money(one.usd_per_m_output)} per M output" in s for s in said), said
    # the export
    as_json, _ = S.scenario(d, speed, w, t, S.target_inputs(speed, 1000, SHAPE), K3_PRESET, 32768, "")
    out = {q["name"]: q["value"] for q in json.loads(as_json)["outputs"]}
    blended = f"$ per M tokens at {SHAPE.label} (input + output)"
    for what in ("frontier:", "deployment: predicted", "target:"):
        assert out[f"{what} {blended}"] == one.usd_per_m, what
        assert out[f"{what} $ per M input tokens"] == one.usd_per_m_input, what
    # the cost page's serving-physics row: input and output as the request splits them
    phys = physics_price(d.serving, shape=SHAPE, speed=speed, model="predicted")
    assert (phys.input_per_m, phys.output_per_m) == (one.usd_per_m_input, one.usd_per_m_output)

    # the CLI's three verbs, at the page's defaults for everything not named here
    shape = ["--input-len", str(SHAPE.input_len), "--output-len", str(SHAPE.output_len), "--cached", str(SHAPE.cached)]
    assert main(["frontier", "--gpus", GPU, "--eps", str(N), "--tps", str(TP), "--speed", repr(speed), *shape,
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["winner"]["usd_per_m"] == one.usd_per_m
    layout = ["--gpu", GPU, "--gpus", str(N), "--ep", str(N), "--tp", str(TP)]
    assert main(["predict", *layout, "--concurrency", str(BATCH * N), *shape, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["request_price"]["usd_per_m"] == one.usd_per_m
    assert main([*layout, "--batch", str(BATCH), *shape, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["request_price"]["predicted"]["usd_per_m"] == one.usd_per_m
    assert main([*layout, "--batch", str(BATCH), *shape]) == 0
    assert usd in capsys.readouterr().out


def test_the_one_price_is_not_the_decode_alone(setup):
    """What every path used to print (the frontier, the verdict, your deployment, the CLI): decode GPU-seconds over
    output tokens. At 8k in / 1k out the prefill is a large share of the GPU time, so that figure is far from the
    request's price: a path that went back to it fails the test above."""
    fr, speed, d = setup
    one = cheapest_at(fr.setups, speed).price
    k = fr.setups[0].predicted[0]
    decode_only = as_step(k, FITTED.efficiency, BATCH).usd_per_m_output_tokens
    assert one.prefill_share > 0.3
    assert abs(decode_only / one.usd_per_m - 1) > 0.1  # (it is the request's output part: decode GPU-seconds)
    assert one.usd_per_m_output == pytest.approx(decode_only, rel=1e-2) and one.usd_per_m_input > 0
    # the three quotes are one price: blended = (input x $in + output x $out) / (input + output)
    blend = (SHAPE.input_len * one.usd_per_m_input + SHAPE.output_len * one.usd_per_m_output) / (
        SHAPE.input_len + SHAPE.output_len)
    assert blend == pytest.approx(one.usd_per_m, rel=1e-12)
    # cached input is not prefilled: the same request with no cache costs more to prefill
    fresh = request_price(d.serving, SHAPE._replace(cached=0.0), BATCH * N)
    assert fresh.prefill_gpu_s > one.prefill_gpu_s and fresh.decode_gpu_s == pytest.approx(one.decode_gpu_s, rel=0.05)


def test_the_page_says_the_same_price():
    """The serving page at this deployment and shape prints the deployment's price as the library computes it."""
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT
    at = AppTest.from_file(str(ROOT / "views" / "serving.py"), default_timeout=240)
    for k, v in {"sv_gpu": GPU, "sv_gpus": N, "sv_ep": N, "sv_tp": TP, "sv_batch": BATCH,
                 "sv_t_in": SHAPE.input_len, "sv_t_out": SHAPE.output_len, "sv_cached": SHAPE.cached}.items():
        at.query_params[k] = str(v)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    d = P.deployment(K3_PRESET, GPU, N, N, TP, "mxfp4", "bf16", 32768, True, {}, None, BATCH, SHAPE)
    text = P.deployment_panel(d).sentences[0].text.replace("$", "\\$")
    assert any(c.value == text for c in at.caption), [c.value[:80] for c in at.caption]


def test_the_frontier_and_the_solver_read_one_price_at_any_speed():
    """The reported case (64 H200 at $3.50 an hour, >= 30 tokens/s per user): the frontier said $2.84-3.50 and the
    solver $12.4-13.3. Both now walk one concurrency grid (whole requests per TP group, price.concurrency_step) and
    price the same request: one number, at this speed and at others."""
    from k3lite.analytic.serving import Serving
    from k3lite.analytic.serving.target import solve

    fr = frontier(K3_PRESET, SHAPE, [GPU], [RELEASED], (N,), prices={GPU: 3.5}, model="predicted", tps=(TP,))
    s = Serving(gpu=GPU, n_gpus=N, ep=N, tp=TP, usd_per_gpu_hour=3.5)
    for speed in (20.0, 30.0, 45.0):
        w, t = cheapest_at(fr.setups, speed), solve(s, speed, 1000, SHAPE.input_len, SHAPE.output_len,
                                                    cached=SHAPE.cached)
        assert round(w.batch_per_gpu * N) == t.concurrency and w.price == t.price, speed
