"""`trinity bench app`: a pointer. The app's benchmark belongs to the app: `minertui bench`
(the engine never starts the app; tests/test_boundaries.py and the import contract)."""

from __future__ import annotations

import sys

MOVED = "trinity bench app moved: run `minertui bench [--json] [--keep DIR]` (the app benchmarks itself)"


def register(bench_sub) -> None:
    p = bench_sub.add_parser("app", help="moved: use `minertui bench`")
    p.add_argument("rest", nargs="*", help="ignored")
    p.set_defaults(func=run)


def run(args) -> int:
    print(MOVED, file=sys.stderr)
    return 2
