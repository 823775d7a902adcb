"""The serving scenario as a file: every input and output with its evidence class, and the link."""
import json

from k3lite.analytic.serving import Serving, check_fits
from k3lite.analytic.serving.export import scenario_link, serving_scenario
from k3lite.analytic.serving.price import DEFAULT_SHAPE, request_price
from k3lite.analytic.serving.target import solve
from k3lite.base.evidence import assumed
from k3lite.base.scenario import to_csv, to_json


def test_scenario_carries_inputs_outputs_and_their_classes():
    s = Serving(gpu="GB300 NVL72")
    batch = check_fits(s).max_batch_per_gpu
    tgt = solve(s, 30.0, 100)
    c = batch * s.n_gpus
    bound = request_price(s, DEFAULT_SHAPE, c, "bound")
    ins, outs = serving_scenario(s, assumed("a price"), 50.0, None, batch, request_price(s, DEFAULT_SHAPE, c),
                                 bound, tgt, {"speed": 30.0, "users": 100})
    data = json.loads(to_json("t", ins, outs, "http://x/serving?sv_gpu=B200"))
    by_name = {q["name"]: q for q in data["inputs"] + data["outputs"]}
    assert by_name["deployment: gpu"]["value"] == "GB300 NVL72" and by_name["deployment: gpu"]["evidence"] == "assumed"
    assert by_name["deployment: $ per GPU-hour"]["source"] == "a price"
    assert by_name["target: GPUs"]["value"] == tgt.gpus and by_name["target: GPUs"]["evidence"] == "derived"
    # one request of the page's shape, three ways to quote it, and the solver's the same function
    assert by_name["deployment: bound $ per M output tokens"]["value"] == bound.usd_per_m_output
    assert by_name["deployment: bound $ per M tokens at 8,192 in / 1,024 out (input + output)"]["value"] == bound.usd_per_m
    assert by_name["target: $ per M tokens at 8,192 in / 1,024 out (input + output)"]["value"] == tgt.usd_per_m
    assert by_name["target: $ per M input tokens"]["value"] == tgt.price.usd_per_m_input
    assert data["link"].endswith("sv_gpu=B200")
    assert to_csv(ins, outs).splitlines()[0] == "role,name,value,unit,evidence,source"


def test_a_deployment_that_does_not_run_exports_its_error():
    ins, outs = serving_scenario(None, assumed("a price"), 50.0, error="does not fit")
    assert [q.value for q in outs] == ["does not fit"]


def test_the_link_carries_the_settings():
    assert scenario_link("http://h:8501/serving?old=1", {"sv_tp": 2, "sv_gpu": "H100 SXM"}) == \
        "http://h:8501/serving?sv_gpu=H100+SXM&sv_tp=2"
