"""`trinity train` and `trinity resume` (no torch import at module level: the CLI starts fast)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

from trinity.config import LABEL_TARGETS, WARM_STARTS
from trinity.optim.plan import add_pilot_flag, register_plan

TRAIN_FLAGS = (
    "mode",
    "encoder",
    "questions",
    "matrix",
    "pool",
    "competition",
    "protocol",
    "objective",
    "base_url",
    "models_yaml",
    "pool_models",
    "generations",
    "patience",
    "popsize",
    "m",
    "sigma0",
    "es_mirrors",
    "seed",
    "budget_usd",
    "max_batch_tokens",
    "device",
    "dtype",
    "policy",
    "temperature",
    "price_in",
    "price_out",
    "read_timeout_s",
    "fail_threshold",
    "workers",
    "ray_address",
    "warm_start",
    "label_targets",
    "lambda_turns",
    "lambda_cost",
    "live_schedule",
    "live_recipe",
)


def _printer(as_json: bool) -> Callable[[dict[str, Any]], None]:
    """Event sink for the terminal: a progress line per generation, or every event as JSON."""
    # here, not at the top: pydantic would slow every CLI start (the engine has it loaded by now)
    from trinity.runs.records import GenerationEvent, LogEvent, StatusEvent, WarmStartEvent, try_event

    def num(x: float | None, spec: str) -> str:
        return "—" if x is None else format(x, spec)

    def on_event(line: dict[str, Any]) -> None:
        if as_json:
            print(json.dumps(line, ensure_ascii=False), flush=True)
            return
        ev = try_event(line)  # the line as written, read through its record (None: not one we print)
        if isinstance(ev, GenerationEvent):
            val = f"  val {ev.val_acc:.3f}" if ev.val_acc is not None else ""
            cost = f"  ${ev.cost_usd:.4f}" if ev.cost_usd else ""
            print(
                f"gen {ev.gen:>4}  best {ev.best:.3f}  mean {ev.mean:.3f}  max {ev.max:.3f}  "
                f"sigma {num(ev.sigma, '.4f')}{val}{cost}  {num(ev.secs, '.2f')}s",
                flush=True,
            )
        elif isinstance(ev, WarmStartEvent) and ev.method == "roles":
            print(
                f"warm start (generation 0, role rows: Worker, then Verifier once turns exist)  "
                f"fit acc {ev.role_train_acc or 0.0:.3f}",
                flush=True,
            )
        elif isinstance(ev, WarmStartEvent):
            val = f"  val {ev.val_acc:.3f}" if ev.val_acc is not None else ""
            print(
                f"warm start (generation 0, labels, {ev.label_targets or 'question'} targets, "
                f"lambda {num(ev.lambda_, 'g')})  train {num(ev.train_acc, '.3f')}{val}",
                flush=True,
            )
        elif isinstance(ev, StatusEvent) and ev.status in ("finished", "stopped"):
            print(ev.message or ev.status, flush=True)
        elif isinstance(ev, LogEvent):
            print(("" if ev.level == "info" else f"{ev.level}: ") + ev.message, flush=True)

    return on_event


def _overrides(args: argparse.Namespace, keys: tuple[str, ...]) -> dict[str, Any]:
    # comma-separated flags (--benchmarks, --pool-models) are split by TrainConfig's validator
    return {k: getattr(args, k, None) for k in (*keys, "benchmarks")}


def cmd_train(args: argparse.Namespace) -> int:
    from trinity.config import load_config  # lazy: kept off the CLI start (adds pydantic + PyYAML here)
    from trinity.optim.engine import start_run  # lazy: kept off the CLI start (adds numpy + pydantic here)

    cfg = load_config(args.config, _overrides(args, TRAIN_FLAGS))
    if getattr(args, "seeds", None):
        # lazy: kept off the CLI start (adds numpy + pydantic here)
        from trinity.optim.seeds import parse_seeds, train_seeds
        from trinity.runs.rundir import new_run_id  # lazy: kept off the CLI start (adds pydantic here)

        seeds = parse_seeds(args.seeds)
        base = Path(args.run_dir) if args.run_dir else Path(args.runs_root) / new_run_id()
        line = (lambda s: None) if args.json else (lambda s: print(s, flush=True))  # --json: events only
        code, summary = train_seeds(
            cfg,
            seeds,
            base,
            start_run,
            on_line=line,
            runs_root=args.runs_root,
            on_event=_printer(args.json),
            argv=sys.argv[1:],
        )
        if args.json:
            print(json.dumps({"type": "seeds", **summary}, ensure_ascii=False), flush=True)
        return code
    res = start_run(
        cfg,
        run_dir=args.run_dir,
        runs_root=args.runs_root,
        on_event=_printer(args.json),
        argv=sys.argv[1:],
        pilot=getattr(args, "pilot", None),
    )
    if res.exit_code and not args.json:
        print(res.message, file=sys.stderr)
    return res.exit_code


def cmd_resume(args: argparse.Namespace) -> int:
    # lazy: kept off the CLI start (adds pydantic + PyYAML here)
    from trinity.config import RESUMABLE_KEYS  # here, not at the top: pydantic would slow every CLI start
    from trinity.optim.engine import resume_run  # lazy: kept off the CLI start (adds numpy + pydantic here)

    res = resume_run(
        args.run_dir,
        _overrides(args, RESUMABLE_KEYS),  # a key without a resume flag reads as None: unchanged
        on_event=_printer(args.json),
    )
    if res.exit_code and not args.json:
        print(res.message, file=sys.stderr)
    return res.exit_code


def _pool_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--models-yaml",
        dest="models_yaml",
        metavar="FILE",
        help="live mode: the providers file the pool is read from (default configs/models.yaml)",
    )
    p.add_argument(
        "--price-in",
        type=float,
        dest="price_in",
        metavar="USD",
        help="live mode: USD per 1M prompt tokens of every model without a price (0 for a free local server)",
    )
    p.add_argument(
        "--price-out",
        type=float,
        dest="price_out",
        metavar="USD",
        help="live mode: USD per 1M completion tokens of every model without a price",
    )
    p.add_argument(
        "--read-timeout",
        type=float,
        dest="read_timeout_s",
        metavar="S",
        help="live mode: the pool's read timeout per attempt, seconds (local: 900)",
    )
    p.add_argument(
        "--fail-threshold",
        type=float,
        dest="fail_threshold",
        metavar="F",
        help="live mode: stop when more than this share of a generation's calls failed (default 0.5)",
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "train",
        help="train a router with sep-CMA-ES (writes a run directory)",
        description="Train a router. Flags override --config, which overrides configs/trinity.yaml.",
    )
    p.add_argument("--config", help="YAML config (keys of TrainConfig; e.g. configs/practice.yaml)")
    p.add_argument(
        "--mode",
        choices=["cached", "live"],
        help="cached: replay the outcome matrix (free); live: multi-turn sessions against --pool",
    )
    p.add_argument("--questions", help="questions JSONL, or 'practice'")
    p.add_argument("--matrix", help="outcome matrix JSON (TinyRouter oracle-matrix), or 'practice'")
    p.add_argument("--benchmarks", help="comma-separated benchmarks to keep (default: all)")
    p.add_argument("--encoder", help="HF id or path of the encoder; tiny-qwen3 for tests")
    p.add_argument("--pool", help="pool name (live mode)")
    p.add_argument(
        "--competition",
        choices=["tinyrouter", "minirouter"],
        help="train on this competition's router text (default from the pool: openrouter -> "
        "tinyrouter, chutes -> minirouter, others -> tinyrouter)",
    )
    p.add_argument(
        "--protocol",
        choices=["tinyrouter", "minirouter", "open"],
        help="the session protocol the pool sees (default: the competition's with --competition or a "
        "competition's pool, else open)",
    )
    p.add_argument(
        "--objective",
        choices=["competition", "reward"],
        help="live mode: score candidates by the competition's own score (default under a competition's "
        "protocol) or by the turn/cost-aware reward",
    )
    p.add_argument("--base-url", dest="base_url", help="live mode: the pool's base URL (overrides configs/models.yaml)")
    p.add_argument(
        "--pool-models",
        dest="pool_models",
        help="live mode: comma-separated model ids in θ order (overrides the pool's list in "
        "configs/models.yaml; e.g. what a local server serves)",
    )
    p.add_argument("--generations", type=int, help="ES generations (default 60)")
    p.add_argument(
        "--patience",
        type=int,
        metavar="N",
        help="stop once the chosen θ (by validation, or a live race's incumbent) has stood unbeaten for N "
        "generations (default: run them all)",
    )
    p.add_argument("--popsize", type=int, help="candidates per generation (default 32)")
    p.add_argument("--m", type=int, help="questions per candidate per generation")
    p.add_argument("--sigma0", type=float, help="initial ES step size (default 0.1)")
    p.add_argument(
        "--es-mirrors",
        type=float,
        dest="es_mirrors",
        metavar="FRACTION",
        help="mirrored sampling: this fraction (0..0.5) of each generation's candidates mirror others "
        "(default 0: pycma's own choice)",
    )
    p.add_argument("--seed", type=int, help="seed of the splits, the ES and the minibatches (default 0)")
    p.add_argument(
        "--budget-usd",
        type=float,
        dest="budget_usd",
        help="live mode: stop (with a checkpoint) before spending more than this",
    )
    _pool_flags(p)
    p.add_argument(
        "--max-batch-tokens",
        type=int,
        dest="max_batch_tokens",
        help="tokens per encoder batch: bounds memory (default 8192)",
    )
    p.add_argument("--device", help="cpu, cuda, cuda:N (default: cuda when available)")
    p.add_argument(
        "--dtype",
        choices=["float32", "bfloat16", "float16"],
        help="encoder dtype (default: bfloat16 on GPU, float32 on CPU)",
    )
    p.add_argument(
        "--policy", choices=["argmax", "sample"], help="argmax per group (default) or sample from the softmax"
    )
    p.add_argument("--temperature", type=float, help="softmax temperature of --policy sample")
    p.add_argument(
        "--workers",
        type=int,
        help="Ray actors that evaluate each generation's candidates (live mode: "
        "its sessions' encoder work) (default 1: this process; the [ray] extra)",
    )
    p.add_argument(
        "--ray-address", dest="ray_address", help="HOST:PORT of a Ray cluster for --workers (default: local)"
    )
    p.add_argument(
        "--warm-start",
        dest="warm_start",
        choices=WARM_STARTS,
        help="labels: fit the head's model rows on the training split's correctness before ES; roles: "
        "only the role rows' default (Worker first, Verifier once a turn exists); default auto: labels "
        "whenever there is a matrix, cached or live, else roles in live mode and none in cached mode",
    )
    p.add_argument(
        "--label-targets",
        dest="label_targets",
        choices=LABEL_TARGETS,
        help="label warm start: best (default) = the one-hot of its benchmark/kind group's best model "
        "(each topic routed as a whole); group = each question's correctness shrunk towards its group's "
        "mean (one answer per cell: the mean); question = its own labels (the first fit)",
    )
    p.add_argument(
        "--lambda-turns",
        type=float,
        dest="lambda_turns",
        help="live reward: minus lambda_turns x (turns - 1) / 4 (default 0.1)",
    )
    p.add_argument(
        "--lambda-cost",
        type=float,
        dest="lambda_cost",
        help="live reward: minus lambda_cost x session cost in USD (default 0)",
    )
    p.add_argument(
        "--live-recipe",
        dest="live_recipe",
        choices=["race", "plain"],
        help="live mode: race (default) = same questions and sampling draws for every candidate, the "
        "better half goes on to more questions, the best so far re-evaluated; plain = all on all",
    )
    p.add_argument(
        "--live-schedule",
        dest="live_schedule",
        choices=["pipelined", "barrier"],
        help="live mode: pipelined (default) sends a session's next turn as soon as its call returns; "
        "barrier waits each turn step for the slowest call",
    )
    p.add_argument(
        "--seeds",
        help="comma-separated seeds: one run per seed into sibling dirs RUN_DIR-s<seed>, "
        "sharing one split, and RUN_DIR-seeds.json picking the best by validation",
    )
    p.add_argument("--run-dir", help="run directory (default: RUNS_ROOT/<auto id>)")
    p.add_argument("--runs-root", default="runs", help="where auto-named runs go (default ./runs)")
    p.add_argument("--json", action="store_true", help="print every event as one JSON object a line")
    p.set_defaults(func=cmd_train)

    register_plan(sub, p, lambda a: _overrides(a, TRAIN_FLAGS))  # `trinity plan`: the train flags, forecast only
    add_pilot_flag(p)

    r = sub.add_parser("resume", help="continue a stopped or killed run from its last checkpoint")
    r.add_argument("run_dir", metavar="RUN_DIR", help="the run directory to continue")
    r.add_argument("--generations", type=int, help="extend the run to N generations in all")
    r.add_argument(
        "--patience", type=int, metavar="N", help="stop once the chosen θ has stood unbeaten for N generations"
    )
    r.add_argument("--budget-usd", type=float, dest="budget_usd", help="raise or set the budget cap")
    r.add_argument("--device", help="cpu, cuda, cuda:N (default: as the run was started)")
    r.add_argument("--base-url", dest="base_url", help="live mode: a new base URL for the pool")
    r.add_argument("--cache", dest="cache_path", help="live mode: the response cache file to use from now on")
    r.add_argument("--max-batch-tokens", type=int, dest="max_batch_tokens", help="tokens per encoder batch")
    _pool_flags(r)
    r.add_argument("--workers", type=int, help="Ray actors for the candidates (results are the same)")
    r.add_argument("--ray-address", dest="ray_address", help="HOST:PORT of a Ray cluster for --workers")
    r.add_argument("--json", action="store_true", help="print every event as one JSON object a line")
    r.set_defaults(func=cmd_resume)
