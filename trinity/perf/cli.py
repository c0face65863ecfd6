"""`trinity bench <name>`: each benchmark module exposes `register(subparsers)`."""

from __future__ import annotations

from trinity.perf import app, candidates, grading, learning, pool
from trinity.perf import serve as serve_bench
from trinity.sweep import bench as sweep_bench

BENCH_MODULES = [
    candidates,  # fast vs reference candidate evaluation
    pool,  # client throughput/latency, live generation wall time
    grading,  # sandbox overhead, math grader throughput
    app,  # a pointer to `minertui bench`
    sweep_bench,  # sweep on Ray vs one after another; --workers N vs 1
    learning,  # default recipe vs warm start vs ES vs kNN on generated tasks
    serve_bench,  # routing overhead per turn of `trinity serve`, loopback load test
]


def register(sub) -> None:
    p = sub.add_parser(
        "bench",
        help="run a benchmark (not a test): candidates, pool, grading, learning, sweep (the app: minertui bench)",
    )
    bench_sub = p.add_subparsers(dest="bench", metavar="BENCH")
    bench_sub.required = True
    for module in BENCH_MODULES:
        module.register(bench_sub)
