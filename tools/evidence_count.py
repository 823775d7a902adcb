"""How many numbers of each evidence class every page shows at its defaults, every section open (AppTest).

    python -m tools.evidence_count              # a table: page x class (metrics, table columns, figure traces)
    python -m tools.evidence_count --json       # the same as JSON
    python -m tools.evidence_count --assumptions   # each page's most sensitive assumption (its computed sentence)

A metric counts once, a table column once, a figure trace once (its hover names one class). Numbers without a class
are counted under "none" (tests/app/test_evidence.py fails on any).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["K3LITE_EXPANDERS"] = "open"  # every section's body, as the tests read it

from k3lite.base.evidence import KINDS, kind_of  # noqa: E402
from views.registry import PAGES  # noqa: E402


def render(page_file: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / page_file), default_timeout=300).run()
    if at.exception:
        raise RuntimeError(f"{page_file}: {[e.message for e in at.exception]}")
    return at


def most_sensitive(page_file: str) -> list[str]:
    """The computed 'moves most with' sentences of a page's assumptions blocks."""
    return [m.value for m in render(page_file).markdown if "moves most with" in m.value]


def count(page_file: str) -> Counter:
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    from k3lite.base.evidence import looks_numeric
    from k3lite.viz.evidence import is_hoverable_json

    at = render(page_file)
    found: Counter = Counter()
    for m in at.metric:
        found[kind_of(m.label) or "none"] += 1
    for df in at.dataframe:
        frame = df.value
        for col in frame.columns:
            if (is_numeric_dtype(frame[col]) and not is_bool_dtype(frame[col])) or looks_numeric(frame[col]) \
                    or kind_of(str(col)):
                found[kind_of(str(col)) or "none"] += 1
    for chart in at.get("plotly_chart"):
        for trace in json.loads(chart.proto.spec).get("data", []):
            if is_hoverable_json(trace):
                template = trace.get("hovertemplate") or ""
                found[kind_of(template if isinstance(template, str) else " ".join(template)) or "none"] += 1
    return found


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--assumptions", action="store_true", help="print each page's most sensitive assumption")
    args = parser.parse_args(argv)
    if args.assumptions:
        for p in PAGES:
            for text in most_sensitive(p.file):
                print(f"{p.url_path}: {text}")
        return
    rows = {p.url_path: count(p.file) for p in PAGES}
    if args.json:
        print(json.dumps({k: dict(v) for k, v in rows.items()}, indent=1))
        return
    cols = list(KINDS) + ["none"]
    print(f"{'page':<22}" + "".join(f"{c:>20}" for c in cols))
    for page, c in rows.items():
        print(f"{page:<22}" + "".join(f"{c.get(k, 0):>20}" for k in cols))


if __name__ == "__main__":
    main()
