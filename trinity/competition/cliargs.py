"""The `--competition` flag that pack, check, submit and score share."""

from __future__ import annotations

import argparse

from trinity.competition.profiles import PROFILES


def competition_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--competition",
        choices=tuple(PROFILES),
        help="the competition's profile (default: run.json's `competition`, else the bundle's, "
        "else the run's pool: openrouter → tinyrouter, chutes/minibridge → minirouter)",
    )
