"""`trinity` — the headless CLI. Each concern registers its own subcommands.

Every module in COMMAND_MODULES exposes `register(subparsers)`; it adds its subcommands and
sets `func(args) -> int` on each. Modules must not import torch / transformers / datasets at
import time (the CLI and the app start fast); import them inside the command.

Errors a user can fix are `TrinityError`s: printed as one line `error: …`, exit code != 0.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from trinity import __version__
from trinity.errors import TrinityError

COMMAND_MODULES = [
    "trinity.optim.cli",        # train, resume
    "trinity.analysis.cli",     # eval, oracle, baselines, score
    "trinity.pool.cli",         # pool serve-practice, ledger verify/report
    "trinity.session.cli",      # collect
    "trinity.grading.cli",      # grade, doctor
    "trinity.benchmarks.cli",   # benchmarks list/export
    "trinity.submission.cli",   # pack, check, submit
    "trinity.bench.cli",        # bench candidates|pool|grading|app
    "trinity.sweep.cli",        # sweep SPEC | resume DIR | status DIR
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trinity",
        description="Train, evaluate and submit tiny LLM routers (TinyRouter / MiniRouter).",
    )
    parser.add_argument("--version", action="version", version=f"trinity {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    register_modules(sub, COMMAND_MODULES)
    return parser


def register_modules(sub, names: list[str]) -> None:
    """Let each module add its subcommands; a module that is not there adds none."""
    for name in names:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue
            raise
        mod.register(sub)


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
