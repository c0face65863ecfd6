"""`trinity` — the headless CLI. Each concern registers its own subcommands.

Every module in COMMAND_MODULES exposes `register(subparsers)`; it adds its subcommands and
sets `func(args) -> int` on each. They are imported here by name (not through importlib), so the
import contract in pyproject.toml sees that this module sits above them all. Modules must not import torch / transformers / datasets at
import time (the CLI and the app start fast); import them inside the command.

Errors a user can fix are `TrinityError`s: printed as one line `error: …`, exit code != 0.
"""

from __future__ import annotations

import argparse
import sys

from trinity import __version__
from trinity.analysis import cli as analysis_cli
from trinity.benchmarks import cli as benchmarks_cli
from trinity.errors import TrinityError
from trinity.grading import cli as grading_cli
from trinity.m1 import cli as m1_cli
from trinity.optim import cli as optim_cli
from trinity.perf import cli as bench_cli
from trinity.pool import cli as pool_cli
from trinity.practice import cli as practice_cli
from trinity.runs import cli as runs_cli
from trinity.serve import cli as serve_cli
from trinity.session import cli as session_cli
from trinity.submission import cli as submission_cli
from trinity.sweep import cli as sweep_cli

COMMAND_MODULES = [
    optim_cli,  # train, resume
    analysis_cli,  # eval, oracle, baselines, score
    pool_cli,  # pool serve-practice, ledger verify/report
    session_cli,  # collect
    grading_cli,  # grade, doctor
    benchmarks_cli,  # benchmarks list/export
    submission_cli,  # pack, check, submit
    bench_cli,  # bench candidates|pool|grading|app
    sweep_cli,  # sweep SPEC | resume DIR | status DIR
    m1_cli,  # m1 train|resume|eval|score|pack|check|submit (Milestone 1)
    runs_cli,  # status [RUNS_DIR], watch RUN_DIR
    serve_cli,  # serve RUN_DIR, serve-keys add
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trinity",
        description="Train, evaluate and submit tiny LLM routers (TinyRouter / MiniRouter).",
    )
    parser.add_argument("--version", action="version", version=f"trinity {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in COMMAND_MODULES:
        if module is pool_cli:  # + `pool serve-practice`: the simulator sits above the pool it serves
            pool_cli.register(sub, pool_commands=[practice_cli.register])
        else:
            module.register(sub)
    sweep_cli.route_trial_resume(sub)  # a sweep's trial resumes under the sweep's budget
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        rc = args.func(args)
    except TrinityError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    return int(rc or 0)


if __name__ == "__main__":
    raise SystemExit(main())
