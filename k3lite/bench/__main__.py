import importlib
import subprocess
import sys
from pathlib import Path

from k3lite.bench import APP_BENCHES, BENCHES

ROOT = Path(__file__).resolve().parents[2]  # the repository root: tools/ and views/ import from here


def main(argv: list[str]) -> int:
    names = (*BENCHES, *APP_BENCHES)
    if not argv or argv[0] not in names:
        print(f"usage: python -m k3lite.bench {{{','.join(names)}}} [options]", file=sys.stderr)
        return 2
    if argv[0] in APP_BENCHES:  # a child process: k3lite itself never imports Streamlit
        return subprocess.call([sys.executable, "-m", APP_BENCHES[argv[0]], *argv[1:]], cwd=ROOT)
    module = importlib.import_module(f"k3lite.bench.{argv[0]}")
    return module.main(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
