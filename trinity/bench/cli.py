"""`trinity bench <name>`: each benchmark module exposes `register(subparsers)`."""

from __future__ import annotations

BENCH_MODULES = [
    "trinity.bench.candidates",  # fast vs reference candidate evaluation
    "trinity.bench.pool",        # client throughput/latency, live generation wall time
    "trinity.bench.grading",     # sandbox overhead, math grader throughput
    "trinity.bench.app",         # TUI first frame, refresh cost, memory
    "trinity.bench.learning",    # default recipe vs warm start vs ES vs kNN on generated tasks
]


def register(sub) -> None:
    p = sub.add_parser("bench", help="run a benchmark (not a test): candidates, pool, grading, app, learning")
    bench_sub = p.add_subparsers(dest="bench", metavar="BENCH")
    bench_sub.required = True
    from trinity.cli import register_modules

    register_modules(bench_sub, BENCH_MODULES)
