"""`trinity collect`: build an outcome matrix by asking the pool (see trinity/session/collect.py)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from trinity.benchmarks import BENCHMARK_NAMES, get_benchmark
from trinity.competition.text import resolve_competition
from trinity.config import RECIPE_PER_GROUP
from trinity.errors import InputError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "collect",
        help="ask every pool model each question k times; write an oracle matrix",
        description="Ask every model of the pool each question of a benchmark split k times "
        "(single-turn Worker), grade the answers and write the TinyRouter "
        "oracle-matrix JSON, with the raw answers, the cost ledger and the call "
        "journal beside it. Re-running the same command asks only for what is "
        "missing.",
    )

    p.add_argument("--benchmark", required=True, help=" | ".join(BENCHMARK_NAMES))
    p.add_argument("--data", help="local dataset file in the benchmark's own schema (offline)")
    p.add_argument("--split", default="train", help="train | val | test | all (default train)")
    p.add_argument("--n", type=int, default=None, help="first N questions of the split")
    p.add_argument("--k", type=int, default=4, help="samples per (question, model); default 4")
    p.add_argument(
        "--per-group",
        type=int,
        default=None,
        dest="per_group",
        metavar="N",
        help="ask only N questions of each group (benchmark and kind), drawn by --seed: enough for a "
        f"live run's warm start, which gives the other questions their group's mean ({RECIPE_PER_GROUP}: "
        "the live recipe's; default: all)",
    )
    p.add_argument(
        "--max-k",
        type=int,
        default=None,
        dest="max_k",
        metavar="K",
        help="then ask a group's two best models again, one more answer a question a round, while their "
        "labels are within --separate-z standard errors, up to K answers a cell (e.g. 4; default: --k, no "
        "second round); the matrix is then ragged, and a live run's labels average every answer",
    )
    p.add_argument(
        "--separate-z",
        type=float,
        default=None,
        dest="separate_z",
        metavar="Z",
        help="with --max-k: how many standard errors apart two models' labels must be to stop asking (default 0.5)",
    )
    p.add_argument("--pool", required=True, help="pool name in configs/models.yaml")
    p.add_argument("--base-url", help="override the pool's base URL (a local server, the practice server)")
    p.add_argument("--models-yaml", help="providers file (default configs/models.yaml)")
    p.add_argument(
        "--models",
        metavar="A,B,C",
        help="model ids to ask, in router order (default: the pool's list; needed for a pool "
        "without one, such as local)",
    )
    p.add_argument("--out", required=True, type=Path, help="matrix JSON to write")
    p.add_argument("--seed", type=int, default=0, help="split seed (default 0)")
    p.add_argument("--temperature", type=float, default=None, help="sampling temperature (default 0.7 when k > 1)")
    p.add_argument("--budget-usd", type=float, default=None, help="stop before spending more than this")
    p.add_argument(
        "--price-in",
        type=float,
        dest="price_in",
        metavar="USD",
        help="USD per 1M prompt tokens of every model without a price (a budget needs one)",
    )
    p.add_argument(
        "--price-out",
        type=float,
        dest="price_out",
        metavar="USD",
        help="USD per 1M completion tokens of every model without a price",
    )
    p.add_argument("--env-file", help="0600 file with the provider key (KEY=VALUE lines)")
    p.add_argument("--cache", help="response cache path (default: the user cache dir)")
    p.add_argument(
        "--fail-threshold",
        type=float,
        dest="fail_threshold",
        metavar="F",
        default=None,
        help="stop when more than this share of the calls failed (default 0.5, as in training)",
    )
    p.add_argument(
        "--protocol",
        choices=["tinyrouter", "minirouter", "open"],
        default=None,
        help="whose single Worker turn asks (role prompt, question text, decoding): default the "
        "competition of --pool (openrouter -> tinyrouter, chutes -> minirouter), else open",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run_collect)


def collect_protocol(name: str | None, pool: str) -> str:
    """`--protocol`, else the protocol of the competition that runs `pool`, else open."""
    from trinity.competition.protocol import default_protocol  # lazy: kept off the CLI start (21 ms under load)

    return name or default_protocol(resolve_competition(None, pool), False, pool)


def run_collect(args: argparse.Namespace) -> int:
    # lazy: kept off the CLI start (adds numpy here)
    from trinity.data.questions import pick_per_group

    # lazy: kept off the CLI start (adds PyYAML here)
    from trinity.pool.providers import load_pool, pool_prices, price_overrides

    # lazy: kept off the CLI start (adds the pool client and httpx here)
    from trinity.session.collect import DEFAULT_SEPARATE_Z, collect, print_progress, select_questions

    if args.k < 1:
        raise InputError("--k must be at least 1")
    if args.max_k is not None and args.max_k < args.k:
        raise InputError(f"--max-k must be at least --k ({args.k})")
    if args.separate_z is not None and not 0 <= args.separate_z < 10:
        raise InputError("--separate-z must be in [0, 10)")
    if args.per_group is not None and args.per_group < 1:
        raise InputError("--per-group must be at least 1")
    if args.fail_threshold is not None and not 0 < args.fail_threshold <= 1:
        raise InputError("--fail-threshold must be in (0, 1]")
    bench = get_benchmark(args.benchmark)
    questions = bench.load(args.data)
    questions = select_questions(questions, args.split, args.n, args.seed)
    if args.per_group is not None:
        questions = pick_per_group(questions, args.per_group, args.seed)
    bench.preflight(questions)  # a grader that cannot run here fails now, before any paid call
    if not questions:
        raise InputError(f"no questions in split {args.split!r} of {args.benchmark}")
    base_url = args.base_url
    if base_url is None and args.pool == "practice":
        base_url = os.environ.get("TRINITY_POOL_BASE_URL")
    server = None
    if base_url is None and args.pool == "practice":
        # lazy: kept off the CLI start (adds numpy + PyYAML here)
        from trinity.practice.server import start_practice_server

        server = start_practice_server(port=0, questions=questions)  # simulated answers to these too
        base_url = server.base_url
    try:
        models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
        table = pool_prices(args.pool, args.models_yaml)
        prices = price_overrides(None, args.price_in, args.price_out, models or list(table), table)
        pool = load_pool(args.pool, args.models_yaml, base_url=base_url, models=models, prices=prices)
        res = collect(
            questions,
            pool,
            args.out,
            args.k,
            temperature=args.temperature,
            budget_usd=args.budget_usd,
            env_file=args.env_file,
            cache_path=args.cache,
            progress=None if args.json else print_progress,
            fail_threshold=args.fail_threshold,
            protocol=collect_protocol(args.protocol, args.pool),
            max_k=args.max_k,
            separate_z=DEFAULT_SEPARATE_Z if args.separate_z is None else args.separate_z,
        )
    finally:
        if server is not None:
            server.stop()
    if args.json:
        print(json.dumps(res.to_json()))
    else:
        where = f"-> {res.matrix_path}" if res.complete_questions else "(no complete question: no matrix written)"
        print(
            f"{res.complete_questions}/{res.n_questions} questions complete "
            f"({res.cells_done}/{res.cells_total} answers, {res.new_calls} new paid calls, "
            f"{res.failed} failed, ${res.cost_usd:.4f}) {where}"
        )
        for group, (pair, upto) in res.asked_again.items():
            print(f"{group}: {pair[0]} and {pair[1]} were close; asked again up to {upto} answers a question")
        if res.failed and res.last_error:
            print(f"last failure: {res.last_error}")
        if pool.simulated:
            print("note: SIMULATED practice pool — these are not real model answers")
    if res.stopped:
        print(res.stopped)
        return 4
    if res.complete_questions < res.n_questions:
        print(
            f"{res.n_questions - res.complete_questions} question(s) incomplete: re-run the same command "
            "to ask only for the missing answers"
        )
        return 3
    return 0
