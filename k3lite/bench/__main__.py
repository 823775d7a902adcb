import importlib
import sys

from k3lite.bench import BENCHES


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in BENCHES:
        print(f"usage: python -m k3lite.bench {{{','.join(BENCHES)}}} [options]", file=sys.stderr)
        return 2
    module = importlib.import_module(f"k3lite.bench.{argv[0]}")
    return module.main(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
