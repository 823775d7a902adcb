"""What the app shows and ships, as one JSON, to diff before and after a refactor that must not change behaviour.

    python -m tools.behaviour_snapshot OUT.json            # every page at its defaults + every shipped asset
    python -m tools.behaviour_snapshot OUT.json --pages home.py kda.py

Per page (Streamlit's AppTest at the page's defaults): every shown text (markdown, captions, alerts, metrics,
tables as CSV) and every Plotly figure's full JSON. Per asset: the parsed JSON (or the file's SHA-256 for
binaries), with the two fields that name code rather than results left out (`command`, which spells the module
path, and the precomputed fingerprint, a hash of source files). Two snapshots are compared with
`python -m tools.behaviour_snapshot --diff A.json B.json`, which prints each differing entry.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE_FIELDS = {"command", "fingerprint", "commands", "source_fingerprint"}
TEXT_KINDS = ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success", "code",
              "latex")


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in CODE_FIELDS}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def page_snapshot(page: str) -> dict:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "views" / page), default_timeout=300).run()
    out: dict = {"exception": [e.message for e in at.exception]}
    for kind in TEXT_KINDS:
        out[kind] = [getattr(e, "value", None) if isinstance(getattr(e, "value", None), str) else repr(e.proto)
                     for e in at.get(kind)]
    out["metric"] = [(m.label, m.value, m.delta) for m in at.metric]
    out["dataframe"] = [d.value.to_csv() for d in at.dataframe]
    out["table"] = [t.value.to_csv() for t in at.table]
    out["plotly_chart"] = [json.loads(e.proto.spec) for e in at.get("plotly_chart")]
    return out


def asset_snapshot() -> dict:
    out = {}
    for path in sorted((ROOT / "assets").rglob("*")):
        if not path.is_file():
            continue
        rel = str(path.relative_to(ROOT))
        if path.suffix == ".json":
            out[rel] = _strip(json.loads(path.read_text()))
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    lines = []
    for key in sorted(set(a) | set(b)):
        where = f"{prefix}/{key}"
        if key not in a or key not in b:
            lines.append(f"{where}: only in {'B' if key not in a else 'A'}")
        elif isinstance(a[key], dict) and isinstance(b[key], dict):
            lines += diff(a[key], b[key], where)
        elif isinstance(a[key], list) and isinstance(b[key], list) and len(a[key]) == len(b[key]):
            lines += diff(dict(enumerate(a[key])), dict(enumerate(b[key])), where)
        elif a[key] != b[key]:
            x, y = str(a[key]), str(b[key])
            at = next((i for i, (c, d) in enumerate(zip(x, y)) if c != d), min(len(x), len(y)))
            lo = max(0, at - 60)
            lines.append(f"{where} (from character {at}):\n  A …{x[lo:at + 140]}\n  B …{y[lo:at + 140]}")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", nargs="?", help="where to write the snapshot (JSON)")
    p.add_argument("--pages", nargs="*", help="page files under views/ (default: all)")
    p.add_argument("--diff", nargs=2, metavar=("A", "B"), help="compare two snapshots")
    a = p.parse_args(argv)
    if a.diff:
        lines = diff(*(json.loads(Path(f).read_text()) for f in a.diff))
        print("\n".join(lines) if lines else "identical")
        return 1 if lines else 0
    if not a.out:
        p.error("give OUT.json, or --diff A B")
    sys.path.insert(0, str(ROOT))
    pages = a.pages or sorted(f.name for f in (ROOT / "views").glob("*.py")
                              if f.name not in ("common.py", "registry.py", "__init__.py"))
    snap = {"assets": asset_snapshot(), "pages": {}}
    for page in pages:
        print(f"page {page}", file=sys.stderr, flush=True)
        snap["pages"][page] = page_snapshot(page)
    Path(a.out).write_text(json.dumps(snap, indent=1, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
