"""`trinity oracle | baselines | eval | score` — where a router stands (issue 5).

No heavy imports here: numpy-level work happens inside the commands, torch only when a run's
router has to be loaded.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from trinity.competition import m1
from trinity.competition.cliargs import competition_arg
from trinity.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    from rich.console import RenderableType

    from trinity.analysis.baselines import BaselineReport
    from trinity.analysis.oracle import OracleReport
    from trinity.data.matrix import OutcomeMatrix


class _Report(Protocol):
    def to_json(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=_Report)
Progress = Callable[[int, int, str], None]

SPLITS = ("train", "val", "test", "all")


def _common(p: argparse.ArgumentParser, plot: bool = True) -> None:
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of tables")
    p.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    p.add_argument("--bootstrap", type=int, default=2000, metavar="N", help="bootstrap resamples (default 2000)")
    if plot:
        p.add_argument("--plot", metavar="FILE.png", help="also draw the report as a PNG")


def _positive(name: str, value: int, least: int = 1) -> None:
    if value < least:
        raise InputError(f"{name} must be >= {least}, got {value}")


def _emit(
    args: argparse.Namespace, report: R, view_fn: Callable[[R], RenderableType], plot_fn: str | None = None
) -> None:
    # lazy: kept off the CLI start (measured: +0.18 s self time under load)
    from trinity.analysis import plots

    if getattr(args, "plot", None) and plot_fn is not None:
        getattr(plots, plot_fn)(report, args.plot)
    if args.json:
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=False, allow_nan=False))
    else:
        # lazy: pydantic + PyYAML kept off the CLI start
        from trinity.analysis.render import print_view

        print_view(view_fn(report))
        if getattr(args, "plot", None):
            print(f"plot: {args.plot}")


def _progress_printer(args: argparse.Namespace) -> Progress | None:
    if args.json:
        return None

    def progress(done: int, total: int, what: str) -> None:
        if sys.stderr.isatty():
            print(f"\r{what}: {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    return progress


# ---- oracle ---------------------------------------------------------------------------------


def cmd_oracle(args: argparse.Namespace) -> int:
    from trinity.analysis.inputs import resolve_matrix, select_ids  # lazy: pydantic + PyYAML kept off the CLI start
    from trinity.analysis.oracle import oracle_ceiling  # lazy: PyYAML kept off the CLI start

    # lazy: pydantic + PyYAML kept off the CLI start
    from trinity.analysis.render import oracle_view

    _positive("--splits", args.splits)
    _positive("--bootstrap", args.bootstrap)
    matrix = resolve_matrix(args.matrix)
    progress = _progress_printer(args)
    if args.run:
        # lazy: pydantic + PyYAML kept off the CLI start
        from trinity.analysis.evaluate import oracle_for_run

        report = oracle_for_run(
            args.run,
            args.split,
            matrix,
            args.benchmark,
            seed=args.seed,
            splits=args.splits,
            bootstrap=args.bootstrap,
            progress=progress,
        )
    else:
        if args.split != "all" or args.benchmark:
            sel = select_ids(matrix, args.split, args.benchmark)
            matrix = matrix.subset(sel.ids)
            matrix.notes.append(f"questions: {sel.source}")
        report = oracle_ceiling(matrix, seed=args.seed, splits=args.splits, bootstrap=args.bootstrap, progress=progress)
    if args.learnable:
        _learnable(args, report, matrix)
    _emit(args, report, oracle_view, "plot_oracle")
    return 0


def _feature_inputs(args: argparse.Namespace, matrix: OutcomeMatrix) -> tuple[np.ndarray, np.ndarray]:
    """(X, acc) for the matrix's rows: frozen features of their questions and recorded correctness."""
    # lazy: pydantic + PyYAML kept off the CLI start
    from trinity.analysis.learnable import encoder_router, matrix_questions, question_features

    run = getattr(args, "run", None)
    questions = matrix_questions(matrix, args.questions, None if args.questions else run)
    if run and not args.encoder:
        # lazy: pydantic + PyYAML kept off the CLI start
        from trinity.optim.routing import load_trained

        router = load_trained(run).router
    else:
        router = encoder_router(args.encoder or "Qwen/Qwen3-0.6B", args.device)
    if len(questions) < 2:
        raise InputError("feature routers need at least 2 questions")
    return question_features(router, questions), matrix.solves.mean(axis=2)


def _learnable(args: argparse.Namespace, report: OracleReport, matrix: OutcomeMatrix) -> None:
    """oracle --learnable: cross-validated kNN / centroid gains beside the cross-fit ceiling."""
    # lazy: pydantic + PyYAML kept off the CLI start
    from trinity.analysis.learnable import KNN_K, METHODS, learnable_gain, learnable_verdict

    X, acc = _feature_inputs(args, matrix)
    gains = [
        learnable_gain(X, acc, matrix.models, m, seed=args.seed, bootstrap=args.bootstrap, k=KNN_K) for m in METHODS
    ]
    best = max(gains, key=lambda g: g.gain.lo)
    label, reason = learnable_verdict(report.verdict, report.headroom_ci, best)
    report.learnable = {
        "gains": [g.to_json() for g in gains],
        "verdict": label,
        "reason": reason,
        "encoder": args.encoder or (f"the run's ({args.run})" if args.run else "Qwen/Qwen3-0.6B"),
    }


# ---- baselines --------------------------------------------------------------------------------


def cmd_baselines(args: argparse.Namespace) -> int:
    # lazy: pydantic + PyYAML kept off the CLI start
    from trinity.analysis.render import baselines_view

    _positive("--seeds", args.seeds)
    _positive("--samples", args.samples)
    if bool(args.matrix) == bool(args.pool):
        raise InputError("give exactly one of --matrix FILE.json (cached, free) or --pool NAME (live)")
    if args.matrix:
        # lazy: PyYAML kept off the CLI start
        from trinity.analysis.baselines import cached_baselines
        from trinity.analysis.inputs import resolve_matrix, select_ids  # lazy: pydantic + PyYAML kept off the CLI start

        matrix = resolve_matrix(args.matrix)
        sel = select_ids(
            matrix, args.split, args.benchmark, run=args.run, questions=args.questions, split_seed=args.split_seed
        )
        report = cached_baselines(
            matrix,
            sel.ids,
            split=args.split,
            source=sel.source,
            seeds=args.seeds,
            seed=args.seed,
            bootstrap=args.bootstrap,
            progress=_progress_printer(args),
        )
        if args.features:
            _feature_baselines(args, report, matrix.subset(sel.ids))
    else:
        # lazy: pydantic + PyYAML kept off the CLI start
        from trinity.analysis.inputs import resolve_questions

        # lazy: pydantic + PyYAML kept off the CLI start
        from trinity.analysis.live import live_baselines
        from trinity.benchmarks import split_questions  # lazy: PyYAML kept off the CLI start

        if not args.questions or not args.run:
            raise InputError(
                "live baselines need --questions FILE (or practice) and --run DIR (its ledger, call "
                "journal and response cache record the calls; a new folder is fine)"
            )
        questions = resolve_questions(args.questions)
        if args.benchmark:
            questions = [q for q in questions if q.benchmark == args.benchmark]
        if args.split != "all":
            keep = set(split_questions(questions, args.split_seed)[args.split])
            questions = [q for q in questions if q.id in keep]
        if not questions:
            raise InputError("no questions left after the benchmark/split filter")
        report = live_baselines(
            questions,
            run_dir=args.run,
            pool=args.pool,
            base_url=args.base_url,
            split=args.split,
            source=f"the {args.split} split of {args.questions}",
            repeats=args.samples,
            seeds=args.seeds,
            seed=args.seed,
            bootstrap=args.bootstrap,
            budget_usd=args.budget_usd,
            progress=_progress_printer(args),
        )
    _emit(args, report, baselines_view, "plot_baselines")
    return 0


def _feature_baselines(args: argparse.Namespace, report: BaselineReport, matrix: OutcomeMatrix) -> None:
    """baselines --features: kNN and nearest centroid on the frozen features, cross-validated."""
    from trinity.analysis.baselines import SystemResult  # lazy: PyYAML kept off the CLI start

    # lazy: pydantic + PyYAML kept off the CLI start
    from trinity.analysis.learnable import FOLDS, KNN_K, feature_systems

    # lazy: kept off the CLI start (measured: +0.05 s self time under load)
    from trinity.analysis.stats import accuracy_ci

    X, acc = _feature_inputs(args, matrix)
    names = {
        "knn": f"kNN on frozen features (k={KNN_K}, {FOLDS}-fold CV)",
        "centroid": f"nearest centroid on frozen features ({FOLDS}-fold CV)",
    }
    for m, q in feature_systems(X, acc, seed=args.seed).items():
        report.features.append(
            SystemResult(names[m], accuracy_ci(q, args.bootstrap, args.seed), len(q), 1.0, 0.0, "cached: no API calls")
        )
    report.notes.append(
        "feature routers: each question routed by a router fitted on the other folds' frozen "
        "features and recorded correctness"
    )


# ---- eval -----------------------------------------------------------------------------------


def cmd_eval(args: argparse.Namespace) -> int:
    # lazy: pydantic + PyYAML kept off the CLI start
    from trinity.analysis.evaluate import evaluate_run
    from trinity.analysis.render import eval_view  # lazy: pydantic + PyYAML kept off the CLI start

    m1.refuse_m1(args.run_dir, "eval")
    _positive("--samples", args.samples)
    _positive("--seeds", args.seeds)
    report = evaluate_run(
        args.run_dir,
        split=args.split,
        mode=args.mode,
        samples=args.samples,
        seed=args.seed,
        seeds=args.seeds,
        bootstrap=args.bootstrap,
        pool=args.pool,
        base_url=args.base_url,
        budget_usd=args.budget_usd,
        write=not args.no_write,
        progress=_progress_printer(args),
        feature_baselines=not args.no_feature_baselines,
    )
    _emit(args, report, eval_view, "plot_eval")
    return 0


# ---- score ----------------------------------------------------------------------------------


def cmd_score(args: argparse.Namespace) -> int:
    # lazy: pydantic + PyYAML kept off the CLI start
    from trinity.analysis.render import score_view

    # lazy: pydantic + PyYAML kept off the CLI start
    from trinity.analysis.score import score_estimate

    m1.refuse_m1(args.run_dir, "score")
    report = score_estimate(
        args.run_dir,
        king=args.king,
        eval_split=args.eval_split,
        competition=args.competition,
        audit_split=args.audit_split,
        progress=_progress_printer(args),
        matrix=args.matrix,
    )
    _emit(args, report, score_view)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "oracle",
        help="oracle ceiling of a pool from an outcome matrix",
        description="Best single model, naive and split-half cross-fitted oracle, headroom "
        "with a bootstrap CI, McNemar, and a verdict (POOL_BOUND / ROUTER_BOUND / "
        "NEAR_CEILING / INCONCLUSIVE).",
    )
    p.add_argument("matrix", metavar="MATRIX.json", help="TinyRouter oracle-matrix JSON (or 'practice')")
    p.add_argument("--splits", type=int, default=200, metavar="B", help="random split-half partitions (default 200)")
    p.add_argument(
        "--run",
        metavar="DIR",
        help="a trained run: also report its router's accuracy and the headroom it captured (on --split, default test)",
    )
    p.add_argument("--split", choices=SPLITS, default=None, help="questions to use (default: all; test with --run)")
    p.add_argument("--benchmark", help="only this benchmark's questions")
    _feature_flags(
        p,
        "--learnable",
        "also report the cross-validated gain of kNN / nearest-centroid routers on "
        "the frozen features (an achievable bound) and a verdict that uses both",
    )
    _common(p)
    p.set_defaults(func=_oracle_defaults)

    p = subparsers.add_parser(
        "baselines",
        help="always-model-X and random-routing baselines",
        description="Each single model and random routing (many seeds) on the same questions; "
        "cached from a matrix (free) or live against a pool.",
    )
    src = p.add_argument_group("source (one of)")
    src.add_argument("--matrix", metavar="M.json", help="outcome matrix (or 'practice'): cached mode, no calls")
    src.add_argument("--pool", metavar="NAME", help="pool of configs/models.yaml: live mode (paid, cached, ledgered)")
    p.add_argument("--benchmark", help="only this benchmark's questions")
    p.add_argument("--split", choices=SPLITS, default="test", help="question split (default test)")
    p.add_argument("--run", metavar="DIR", help="take the split from this run (live: its ledger/cache)")
    p.add_argument("--questions", metavar="FILE", help="questions JSONL (or 'practice') that define the split")
    p.add_argument("--split-seed", type=int, default=0, help="seed of the split when no --run (default 0)")
    p.add_argument("--seeds", type=int, default=100, metavar="N", help="random-routing seeds (default 100)")
    p.add_argument(
        "--samples", type=int, default=1, metavar="R", help="live: answers per question and model (default 1)"
    )
    p.add_argument("--base-url", help="live: the pool's endpoint (e.g. the practice server's URL)")
    p.add_argument("--budget-usd", type=float, help="live: stop before spending more than this (USD)")
    _feature_flags(
        p,
        "--features",
        "cached: also kNN / nearest-centroid routers on the frozen features, "
        "cross-validated over the selected questions (needs --questions or --run)",
        questions=False,
    )
    _common(p)
    p.set_defaults(func=cmd_baselines)

    p = subparsers.add_parser(
        "eval",
        help="evaluate a trained run against the baselines",
        description="Router accuracy with a 95% CI, each single model and random routing on "
        "the same questions, paired CIs and McNemar; writes eval.json.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by trinity train")
    p.add_argument(
        "--split",
        choices=("train", "val", "test"),
        default="test",
        help="questions of the run's split to evaluate on (default test)",
    )
    p.add_argument(
        "--mode",
        choices=("cached", "live"),
        default="cached",
        help="cached: replay the run's outcome matrix (free); live: real sessions against the pool (default cached)",
    )
    p.add_argument("--samples", type=int, default=1, metavar="R", help="live: sessions per question (default 1)")
    p.add_argument("--seeds", type=int, default=100, metavar="N", help="random-routing seeds (default 100)")
    p.add_argument(
        "--pool", metavar="NAME", help="live: pool name (default: the run's pool; a cached run has none, so give one)"
    )
    p.add_argument("--base-url", help="live: the pool's endpoint (e.g. the practice server's URL)")
    p.add_argument(
        "--budget-usd",
        type=float,
        help="live: cap on the run's total spend, training included (default: the run's own cap)",
    )
    p.add_argument("--no-write", action="store_true", help="do not write eval.json")
    p.add_argument(
        "--no-feature-baselines",
        action="store_true",
        help="cached: skip the kNN / nearest-centroid routers on the frozen features",
    )
    _common(p)
    p.set_defaults(func=cmd_eval)

    p = subparsers.add_parser(
        "score",
        help="local estimate of the competition score",
        description="(0.70 cached + 0.15 live + 0.10 efficiency + 0.05 novelty) × overfit "
        "penalty per benchmark, the composite, and the margin over a king.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (live numbers come from its eval.json)")
    p.add_argument(
        "--king",
        metavar="THETA_OR_BUNDLE",
        help="the king: a theta .npy, a TinyRouter bundle dir "
        "(head_weights.npy + svf_scales.npy) or a folder with "
        "best_theta.npy",
    )
    p.add_argument(
        "--eval-split",
        default=None,
        choices=("train", "val", "test", "audit"),
        help="split standing in for the competition's eval set (with --audit-split; default: the "
        "run's audit split when it has one, else the gap is unknown)",
    )
    p.add_argument(
        "--audit-split",
        default=None,
        choices=("train", "val", "test", "audit"),
        help="split standing in for the audit set (default test when --eval-split is given)",
    )
    p.add_argument(
        "--matrix",
        metavar="M.json",
        help="outcome matrix for the cached part when the run has none (a live run): `trinity collect` "
        "on the run's questions",
    )

    competition_arg(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of tables")
    p.set_defaults(func=cmd_score)


def _feature_flags(p: argparse.ArgumentParser, flag: str, text: str, questions: bool = True) -> None:
    p.add_argument(flag, action="store_true", help=text)
    if questions:
        p.add_argument("--questions", metavar="FILE", help="questions JSONL (or 'practice') of the matrix's rows")
    p.add_argument(
        "--encoder", help="encoder of the features (default: the --run's, else Qwen/Qwen3-0.6B; tiny-qwen3 for tests)"
    )
    p.add_argument("--device", help="encoder device (default: cuda when available)")


def _oracle_defaults(args: argparse.Namespace) -> int:
    if args.split is None:
        args.split = "test" if args.run else "all"
    return cmd_oracle(args)
