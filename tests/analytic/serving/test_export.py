"""The serving scenario as a file: every input and output with its evidence class, and the link."""
import json

from k3lite.analytic.serving import Serving, check_fits, decode_step
from k3lite.analytic.serving.export import scenario_link, serving_scenario
from k3lite.analytic.serving.fit import FITTED
from k3lite.analytic.serving.predict import as_step, terms
from k3lite.analytic.serving.target import solve
from k3lite.base.evidence import assumed
from k3lite.base.scenario import to_csv, to_json


def test_scenario_carries_inputs_outputs_and_their_classes():
    s = Serving(gpu="GB300 NVL72")
    batch = check_fits(s).max_batch_per_gpu
    tgt = solve(s, 30.0, 100)
    ins, outs = serving_scenario(s, assumed("a price"), 50.0, None, batch, as_step(terms(s), FITTED.efficiency, batch),
                                 decode_step(s, batch), tgt, {"speed": 30.0, "users": 100})
    data = json.loads(to_json("t", ins, outs, "http://x/serving?sv_gpu=B200"))
    by_name = {q["name"]: q for q in data["inputs"] + data["outputs"]}
    assert by_name["deployment: gpu"]["value"] == "GB300 NVL72" and by_name["deployment: gpu"]["evidence"] == "assumed"
    assert by_name["deployment: $ per GPU-hour"]["source"] == "a price"
    assert by_name["target: GPUs"]["value"] == tgt.gpus and by_name["target: GPUs"]["evidence"] == "derived"
    assert by_name["deployment: bound $ per M output tokens"]["value"] == decode_step(s, batch).usd_per_m_output_tokens
    assert data["link"].endswith("sv_gpu=B200")
    assert to_csv(ins, outs).splitlines()[0] == "role,name,value,unit,evidence,source"


def test_a_deployment_that_does_not_run_exports_its_error():
    ins, outs = serving_scenario(None, assumed("a price"), 50.0, error="does not fit")
    assert [q.value for q in outs] == ["does not fit"]


def test_the_link_carries_the_settings():
    assert scenario_link("http://h:8501/serving?old=1", {"sv_tp": 2, "sv_gpu": "H100 SXM"}) == \
        "http://h:8501/serving?sv_gpu=H100+SXM&sv_tp=2"
