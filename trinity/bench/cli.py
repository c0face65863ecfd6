"""`trinity bench <name>`: each benchmark module exposes `register(subparsers)`."""

from __future__ import annotations

import importlib

BENCH_MODULES = [
    "trinity.bench.candidates",  # fast vs reference candidate evaluation
    "trinity.bench.pool",        # client throughput/latency, live generation wall time
    "trinity.bench.grading",     # sandbox overhead, math grader throughput
    "trinity.bench.app",         # TUI first frame, refresh cost, memory
]


def register(sub) -> None:
    p = sub.add_parser("bench", help="run a benchmark (not a test): candidates, pool, grading, app")
    bench_sub = p.add_subparsers(dest="bench", metavar="BENCH")
    bench_sub.required = True
    for name in BENCH_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue
            raise
        mod.register(bench_sub)
