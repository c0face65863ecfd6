"""`trinity bench learning`: does the trainer find what simple routers find on the same features?

Over generated tasks (`trinity.data.learningtask`: topics, models, k, edge size; deterministic by
seed), each split train/val/test as a run splits it (seed 0, 0.6/0.2/0.2), per task, on the
*test* split (the outcome matrix's mean of k samples):

- best single: the model with the best training accuracy;
- kNN / centroid: `trinity.analysis.learnable` routers fitted on the training split's frozen features;
- warm start only: the label-fitted head (`trinity.optim.warmstart`) before any ES generation;
- ES only: `trinity train --warm-start none` for `--generations`;
- default recipe: `trinity train` (label warm start, then ES; best θ by validation);
- gens-to-plateau: the first generation whose best validation accuracy is within 0.01 of the
  run's final best (the warm start is generation 0).

Real runs through `start_run` (the engine `trinity train` uses), in a temporary folder.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from trinity.benchmarks.practice import practice_questions
from trinity.data.learningtask import TaskSpec, generate_task
from trinity.data.matrix import save_matrix
from trinity.data.questions import save_questions
from trinity.errors import InputError
from trinity.perf import learning_live
from trinity.runs.records import GenerationEvent, WarmStartEvent, read_summary
from trinity.runs.rundir import RunDir

TASKS = {
    "t3-easy": TaskSpec("t3-easy", topics=3, models=3, k=4, edge=0.35, n_per_topic=40, seed=0),
    "t8-k3": TaskSpec("t8-k3", topics=8, models=6, k=3, edge=0.3, n_per_topic=70, seed=0, base_lo=0.5, base_hi=0.6),
    "t8-small-edge": TaskSpec(
        "t8-small-edge", topics=8, models=6, k=3, edge=0.15, n_per_topic=70, seed=1, base_lo=0.5, base_hi=0.6
    ),
    "t5-k1": TaskSpec("t5-k1", topics=5, models=4, k=1, edge=0.3, n_per_topic=60, seed=2),
}
PLATEAU_TOL = 0.01


def register(sub) -> None:
    p = sub.add_parser("learning", help="default recipe vs warm start only vs ES only vs kNN on generated tasks")
    p.add_argument("--tasks", default=",".join(TASKS), help=f"comma-separated tasks (default all: {', '.join(TASKS)})")
    p.add_argument("--encoder", default="tiny-qwen3", help="encoder (default tiny-qwen3)")
    p.add_argument("--generations", type=int, default=None, help="ES generations per run (default 30; --live 4)")
    p.add_argument("--popsize", type=int, default=None, help="ES population (default 16; --live 6)")
    p.add_argument("--m", type=int, default=None, help="questions per candidate per generation (default 32; --live 6)")
    p.add_argument("--device", default="cpu", help="encoder device (default cpu)")
    p.add_argument(
        "--live",
        action="store_true",
        help="instead: the old and the new live recipe side by side against a skilled stand-in pool over "
        "loopback (held-out accuracy against the $ the server billed; small sizes unless given)",
    )
    p.add_argument(
        "--live-lambdas",
        default=None,
        metavar="LAMBDAS",
        help="instead: live training on the practice pool with always-right Verifiers, one run per "
        "comma-separated lambda_turns (e.g. 0,0.1,0.3), scored by live eval on the test split",
    )
    p.add_argument("--budget-usd", type=float, default=20.0, help="live: the cap of each run (default 20)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    learning_live.register_args(p)
    p.set_defaults(func=run)


def plateau_gen(run_dir: Path) -> int | None:
    points: list[tuple[int, float]] = []
    for ev in RunDir(run_dir).read_typed_events():
        if isinstance(ev, WarmStartEvent) and ev.val_acc is not None:
            points.append((0, ev.val_acc))
        elif isinstance(ev, GenerationEvent) and ev.best_val_acc is not None:
            points.append((ev.gen, ev.best_val_acc))
    if not points:
        return None
    final = max(v for _, v in points)
    return next(g for g, v in points if v >= final - PLATEAU_TOL)


def task_figures(spec: TaskSpec, args, work: Path) -> dict:
    from trinity.analysis.learnable import centroid_route, knn_route  # lazy: kept off the CLI start (adds PyYAML here)
    from trinity.config import load_config  # lazy: kept off the CLI start (adds PyYAML here)
    from trinity.optim.engine import start_run  # lazy: kept off the CLI start (adds PyYAML here)
    from trinity.optim.fitness import build_router  # lazy: brings the session and pool modules, kept off the CLI start
    from trinity.optim.runinputs import inputs_from_config  # lazy: kept off the CLI start (adds PyYAML here)

    # lazy: kept off the CLI start
    from trinity.optim.warmstart import frozen_features, routed_accuracy, warm_start_theta

    qs, mat, _ = generate_task(spec)
    qf, mf = work / f"{spec.name}.jsonl", work / f"{spec.name}.json"
    save_questions(qf, qs)
    save_matrix(mf, mat)
    over = {
        "mode": "cached",
        "questions": str(qf),
        "matrix": str(mf),
        "encoder": args.encoder,
        "generations": args.generations,
        "popsize": args.popsize,
        "m": args.m,
        "device": args.device,
        "seed": 0,
        "traces": "none",
    }
    cfg = load_config(None, over)
    inputs = inputs_from_config(cfg)
    by = {q.id: q for q in inputs.questions}
    acc = mat.accuracy()

    def part(name):
        # lazy: brings the session and pool modules, kept off the CLI start
        from trinity.optim.fitness import default_text

        ids = inputs.splits[name]
        return [default_text(by[i]) for i in ids], acc[[mat.row(i) for i in ids]]

    (tt, at), (te, ae) = part("train"), part("test")
    router = build_router(cfg, mat.n_models)
    t0 = time.monotonic()
    Xt, Xe = frozen_features(router, tt), frozen_features(router, te)
    rows = np.arange(len(ae))
    out: dict = {
        "task": spec.name,
        "topics": spec.topics,
        "models": spec.models,
        "k": spec.k,
        "edge": spec.edge,
        "questions": len(qs),
        "n_train": len(tt),
        "n_test": len(te),
    }
    out["best_single"] = float(ae[:, int(np.argmax(at.mean(axis=0)))].mean())
    out["knn"] = float(ae[rows, knn_route(Xt, at, Xe)].mean())
    out["centroid"] = float(ae[rows, centroid_route(Xt, at, Xe)].mean())
    theta, info = warm_start_theta(router, router.initial_mean(), mat.n_models, tt, at, seed=0)
    W = theta[: mat.n_models * router.hidden].reshape(mat.n_models, router.hidden)
    out["warm_only"] = float(routed_accuracy(W, Xe, ae))
    out["warm_lambda"] = info["lambda"]
    out["baseline_secs"] = round(time.monotonic() - t0, 2)
    for name, ws in (("es_only", "none"), ("default", "auto")):
        rd = work / f"{spec.name}-{name}"
        t1 = time.monotonic()
        res = start_run(load_config(None, {**over, "warm_start": ws}), run_dir=rd)
        summary = read_summary(RunDir(rd).summary)
        out[name] = summary.test_acc
        out[f"{name}_plateau_gen"] = plateau_gen(rd)
        out[f"{name}_best_from"] = summary.best_theta.which if summary.best_theta else None
        out[f"{name}_secs"] = round(time.monotonic() - t1, 1)
        if res.status != "finished":
            out[f"{name}_status"] = res.message
    out["default_minus_knn"] = out["default"] - out["knn"]
    out["knn_gain"] = out["knn"] - out["best_single"]
    out["default_gain"] = out["default"] - out["best_single"]
    return out


def live_figures(lambdas: list[float], args, work: Path) -> list[dict]:
    """Live runs on the SIMULATED practice pool (math + multiple choice) whose Verifiers are always
    right, one per lambda_turns; held-out accuracy and turns from a live eval of the test split."""
    import yaml  # lazy: kept off the CLI start (adds PyYAML here)

    from trinity.analysis.evaluate import evaluate_run  # lazy: kept off the CLI start (adds PyYAML here)
    from trinity.config import load_config  # lazy: kept off the CLI start (adds PyYAML here)
    from trinity.optim.engine import start_run  # lazy: kept off the CLI start (adds PyYAML here)
    from trinity.practice.simulation import REPO_CONFIG  # lazy: kept off the CLI start (adds PyYAML here)

    doc = yaml.safe_load(Path(REPO_CONFIG).read_text(encoding="utf-8"))
    for prof in doc["practice"]["models"].values():
        prof["verifier_accuracy"] = 1.0
    pc = work / "practice-reliable.yaml"
    pc.write_text(yaml.safe_dump(doc), encoding="utf-8")
    qf = work / "practice-mathmc.jsonl"
    qf.write_text(
        "".join(json.dumps(q.to_json()) + "\n" for q in practice_questions() if q.kind != "code"), encoding="utf-8"
    )
    old = os.environ.get("MINERTUI_PRACTICE_CONFIG")
    os.environ["MINERTUI_PRACTICE_CONFIG"] = str(pc)
    rows = []
    try:
        for lam in lambdas:
            rd = work / f"live-{lam:g}"
            t0 = time.monotonic()
            cfg = load_config(
                None,
                {
                    "mode": "live",
                    "pool": "practice",
                    "questions": str(qf),
                    "encoder": args.encoder,
                    "generations": args.generations,
                    "popsize": args.popsize,
                    "m": args.m,
                    "device": args.device,
                    "seed": 0,
                    "lambda_turns": lam,
                    "cache_path": str(work / f"cache-{lam:g}.sqlite"),
                },
            )
            start_run(cfg, run_dir=rd)
            rep = evaluate_run(rd, split="test", mode="live", seeds=100, bootstrap=500, write=False)
            summary = read_summary(RunDir(rd).summary)
            rows.append(
                {
                    "lambda_turns": lam,
                    "test_acc": rep.router.accuracy.point,
                    "test_avg_turns": rep.router.avg_turns,
                    "test_n": rep.n_questions,
                    "best_single": rep.best_single,
                    "best_single_acc": max(x.accuracy.point for x in rep.singles),
                    "train_avg_turns": summary.avg_turns,
                    "secs": round(time.monotonic() - t0, 1),
                }
            )
            if not args.json:
                r = rows[-1]
                print(
                    f"lambda_turns {lam:<5g} test acc {r['test_acc']:.3f}  turns {r['test_avg_turns']:.2f}  "
                    f"(best single {r['best_single_acc']:.3f}; n={r['test_n']})",
                    flush=True,
                )
    finally:
        if old is None:
            os.environ.pop("MINERTUI_PRACTICE_CONFIG", None)
        else:
            os.environ["MINERTUI_PRACTICE_CONFIG"] = old
    return rows


def run(args) -> int:
    small = args.live
    for key, cached, live in (("generations", 30, 4), ("popsize", 16, 6), ("m", 32, 6)):
        if getattr(args, key) is None:
            setattr(args, key, live if small else cached)
    if args.live:
        return learning_live.run_live(args)
    if args.live_lambdas is not None:
        try:
            lambdas = [float(x) for x in args.live_lambdas.split(",") if x.strip()]
        except ValueError:
            raise InputError(
                f"--live-lambdas {args.live_lambdas!r}: give comma-separated numbers, e.g. 0,0.1,0.3"
            ) from None
        with tempfile.TemporaryDirectory(prefix="trinity-bench-learning-live-") as tmp:
            rows = live_figures(lambdas, args, Path(tmp))
        if args.json:
            print(
                json.dumps(
                    {
                        "encoder": args.encoder,
                        "generations": args.generations,
                        "popsize": args.popsize,
                        "m": args.m,
                        "pool": "practice (SIMULATED), verifier_accuracy 1.0",
                        "runs": rows,
                    },
                    indent=2,
                )
            )
        return 0

    names = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in names if t not in TASKS]
    if unknown or not names:
        raise InputError(f"unknown task(s) {', '.join(unknown) or '(none)'}; use some of {', '.join(TASKS)}")
    if args.generations < 1 or args.popsize < 2 or args.m < 1:
        raise InputError("--generations >= 1, --popsize >= 2, --m >= 1")
    rows = []
    with tempfile.TemporaryDirectory(prefix="trinity-bench-learning-") as tmp:
        for name in names:
            rows.append(task_figures(TASKS[name], args, Path(tmp)))
            if not args.json:
                r = rows[-1]
                print(
                    f"{r['task']:<14} single {r['best_single']:.3f}  knn {r['knn']:.3f}  centroid {r['centroid']:.3f}  "
                    f"warm {r['warm_only']:.3f}  es {r['es_only']:.3f}  default {r['default']:.3f}  "
                    f"plateau es {r['es_only_plateau_gen']} / default {r['default_plateau_gen']}",
                    flush=True,
                )
    result = {
        "encoder": args.encoder,
        "generations": args.generations,
        "popsize": args.popsize,
        "m": args.m,
        "split": "test (0.2 of each task, seed 0)",
        "tasks": rows,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    return 0
