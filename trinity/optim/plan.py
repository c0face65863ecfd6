"""`trinity plan`: the forecast of a live run's cost and wall time, before it spends anything
(`trinity.optim.forecast`). Takes the flags of `trinity train` (the run it forecasts), plus
`--pilot` (a live run directory or a collected matrix whose measured tokens, turns and times
replace the priors)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Callable

SKIP = {"help", "seeds", "run_dir", "json"}


def register_plan(
    sub: Any, train: argparse.ArgumentParser, overrides: Callable[[argparse.Namespace], dict[str, Any]]
) -> None:
    """`plan` with `train`'s flags; `overrides(args)`: the config overrides `train` reads off them."""
    p = sub.add_parser(
        "plan",
        help="forecast a live run's cost and wall time (90%% interval) before spending",
        description="Forecast what `trinity train` with the same flags would spend and how long it would take.",
    )
    for action in train._actions:
        if action.dest not in SKIP:
            p._add_action(action)
    add_pilot_flag(p)
    p.add_argument("--json", action="store_true", help="print the forecast as JSON")
    p.set_defaults(func=cmd_plan, plan_overrides=overrides)


def add_pilot_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pilot",
        metavar="PATH",
        help="measured tokens, turns and times for the forecast: a live run directory, or a collected "
        "matrix (M.json with M.answers.jsonl); default: the --matrix's answers when they exist",
    )


def default_pilot(cfg: Any) -> str | None:
    """A collected matrix's answers file next to `cfg.matrix`, when there is one."""
    if not cfg.matrix or cfg.matrix == "practice":
        return None
    answers = Path(cfg.matrix).with_name(Path(cfg.matrix).stem + ".answers.jsonl")
    return str(answers) if answers.exists() else None


def run_forecast(
    cfg: Any,
    inputs: Any,
    pilot_path: str | None,
    runs_root: str | Path | None = None,
    exclude: str | Path | None = None,
) -> dict[str, Any]:
    """The forecast; without a pilot named or beside the matrix, the newest earlier live run of
    the same pool under `runs_root` (not `exclude`) stands in for one."""
    # lazy: brings the session and pool modules, kept off the CLI start
    from trinity.optim.forecast import forecast, load_pilot

    t0 = time.perf_counter()
    train = set(inputs.splits["train"])
    questions = [q for q in inputs.questions if q.id in train]
    path = pilot_path or default_pilot(cfg)
    out = forecast(cfg, questions, load_pilot(path) if path else None, runs_root=runs_root, exclude=exclude)
    out["secs"] = round(time.perf_counter() - t0, 3)
    return out


def forecast_for(cfg: Any, pilot_path: str | None = None, runs_root: str | Path | None = None) -> dict[str, Any]:
    """The forecast of a live run of `cfg`: its questions and splits loaded as `trinity train`
    loads them, then `run_forecast`. What `trinity plan` prints and what the app's new-run form
    shows. Arithmetic on files on disk: no encoder, no call."""
    # lazy: brings trinity.config (pydantic models), kept off the CLI start
    from trinity.optim.runinputs import inputs_from_config

    return run_forecast(cfg, inputs_from_config(cfg), pilot_path, runs_root)


def cmd_plan(args: argparse.Namespace) -> int:
    from trinity.config import load_config  # lazy: brings trinity.config (pydantic models), kept off the CLI start
    from trinity.optim.forecast import describe  # lazy: brings the session and pool modules, kept off the CLI start

    over = args.plan_overrides(args)
    over["mode"] = "live"
    cfg = load_config(args.config, over)
    f = forecast_for(cfg, args.pilot, args.runs_root)
    print(json.dumps(f, indent=2) if args.json else describe(f) + f"\n  (forecast in {f['secs']:.2f} s)")
    return 0
