import importlib
import subprocess
import sys
from pathlib import Path

from k3lite.bench import APP_BENCHES, BENCHES

ROOT = Path(__file__).resolve().parents[2]  # the repository root: tools/ and views/ import from here


def module_of(name: str) -> str:
    """The module that runs bench NAME: a dash in the command is an underscore in the file name."""
    return f"k3lite.bench.{name.replace('-', '_')}"


def usage() -> str:
    """The bench list with each module's first docstring line (`python -m k3lite.bench NAME --help` for its flags)."""
    lines = [f"usage: python -m k3lite.bench {{{','.join((*BENCHES, *APP_BENCHES))}}} [options]", "",
             "Benchmarks that print ratios measured in one run. NAME --help lists a bench's options.", ""]
    for name in BENCHES:
        doc = (importlib.import_module(module_of(name)).__doc__ or "").strip().splitlines()
        lines.append(f"  {name:<8} {doc[0] if doc else ''}")
    for name, module in APP_BENCHES.items():
        lines.append(f"  {name:<8} the app itself ({module.replace('.', '/')}.py, run in a child process)")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    names = (*BENCHES, *APP_BENCHES)
    if argv[:1] in (["-h"], ["--help"]):
        print(usage())
        return 0
    if not argv or argv[0] not in names:
        if argv:  # a name typed wrong: say so before the list (the list alone read as help, not as a refusal)
            print(f"unknown bench {argv[0]!r}; choose one of {', '.join(names)}", file=sys.stderr)
        print(usage(), file=sys.stderr)
        return 2
    if argv[0] in APP_BENCHES:  # a child process: k3lite itself never imports Streamlit
        return subprocess.call([sys.executable, "-m", APP_BENCHES[argv[0]], *argv[1:]], cwd=ROOT)
    module = importlib.import_module(module_of(argv[0]))
    return module.main(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
