import csv
import io
import json

import pytest

from k3lite.base.evidence import assumed, derived
from k3lite.base.scenario import Quantity, to_csv, to_json

INPUTS = [Quantity("GPU", "B300", "", assumed("the page's default")), Quantity("price", 4.5, "$/GPU-hour", assumed("list"))]
OUTPUTS = [Quantity("cost", 1.25, "$/M output", derived("k3lite.analytic.serving.target.solve")),
           Quantity("speed", float("nan"), "tokens/s", derived("k3lite.x.f"))]


def test_json_round_trips_every_quantity_with_its_class():
    data = json.loads(to_json("K3 on B300", INPUTS, OUTPUTS, link="/serving?sv_gpu=B300"))
    assert data["link"] == "/serving?sv_gpu=B300" and [r["name"] for r in data["inputs"]] == ["GPU", "price"]
    cost = data["outputs"][0]
    assert cost == {"name": "cost", "value": 1.25, "unit": "$/M output", "evidence": "derived",
                    "source": "k3lite.analytic.serving.target.solve"}
    assert data["outputs"][1]["value"] is None  # NaN is not JSON


def test_csv_has_one_row_per_quantity():
    rows = list(csv.reader(io.StringIO(to_csv(INPUTS, OUTPUTS))))
    assert rows[0] == ["role", "name", "value", "unit", "evidence", "source"]
    assert rows[1][:5] == ["input", "GPU", "B300", "", "assumed"] and rows[3][:5] == ["output", "cost", "1.25",
                                                                                      "$/M output", "derived"]
    assert len(rows) == 5


def test_bad_scenarios_are_refused():
    with pytest.raises(ValueError, match="unique"):
        to_csv(INPUTS + INPUTS[:1], [])
    with pytest.raises(ValueError, match="no evidence"):
        to_json("x", [Quantity("a", 1, "", None)], [])
