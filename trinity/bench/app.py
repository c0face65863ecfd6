"""`trinity bench app [--json]`: the TUI's first frame, refresh cost with 10,000 generations and
100,000 traces, and memory. The engine package never imports the UI (tests/test_boundaries.py),
so the measurement runs in its own process: `python -m minertui.bench`."""

from __future__ import annotations

import subprocess
import sys


def register(bench_sub) -> None:
    p = bench_sub.add_parser("app", help="minertui: time to first frame, refresh cost, memory")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.add_argument("--keep", metavar="DIR", help="write the synthetic run here and keep it")
    p.set_defaults(func=run)


def run(args) -> int:
    argv = [sys.executable, "-m", "minertui.bench"]
    if args.json:
        argv.append("--json")
    if args.keep:
        argv += ["--keep", args.keep]
    return subprocess.call(argv)
