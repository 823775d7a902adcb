"""A page's scenario as a file: its inputs and its outputs, each number with its unit and evidence class.

`Quantity(name, value, unit, evidence)`; `to_json(title, inputs, outputs, link)` and `to_csv(...)` give what a
page's download buttons send, so a reader can keep a scenario, diff two, or rebuild it from the link it carries.
"""
from __future__ import annotations

import csv
import io
import json
import math
from typing import NamedTuple

from k3lite.base.evidence import Evidence


class Quantity(NamedTuple):
    name: str
    value: float | int | str
    unit: str
    evidence: Evidence


def _plain(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None  # JSON has no NaN or infinity: an absent value
    return v


def _check(items: list[Quantity]) -> None:
    names = [q.name for q in items]
    if len(set(names)) != len(names):
        raise ValueError(f"quantity names must be unique, got {sorted(n for n in names if names.count(n) > 1)}")
    for q in items:
        if not isinstance(q.evidence, Evidence):
            raise ValueError(f"{q.name!r} carries no evidence class")


def to_json(title: str, inputs: list[Quantity], outputs: list[Quantity], link: str = "") -> str:
    """The scenario as indented JSON: {"title", "link", "inputs": [...], "outputs": [...]}, each quantity with its
    value, unit, evidence class and source."""
    _check(inputs + outputs)

    def rows(items):
        return [{"name": q.name, "value": _plain(q.value), "unit": q.unit, "evidence": q.evidence.kind,
                 "source": q.evidence.source} for q in items]

    return json.dumps({"title": title, "link": link, "inputs": rows(inputs), "outputs": rows(outputs)}, indent=1)


def to_csv(inputs: list[Quantity], outputs: list[Quantity]) -> str:
    """The scenario as CSV: role, name, value, unit, evidence, source (one row per quantity)."""
    _check(inputs + outputs)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["role", "name", "value", "unit", "evidence", "source"])
    for role, items in (("input", inputs), ("output", outputs)):
        for q in items:
            writer.writerow([role, q.name, "" if _plain(q.value) is None else q.value, q.unit, q.evidence.kind,
                             q.evidence.source])
    return out.getvalue()
