"""`trinity eval`: the trained router against every baseline, on the same questions.

Reports the router's accuracy with a 95% CI, each single model and random routing on the same
questions, and a paired comparison with each baseline: the paired bootstrap CI of the accuracy
difference and an exact McNemar p (a question counts as solved by a system when its expected
correctness there is ≥ 0.5; with one sample per question that is just right/wrong). "Beats the
best single model" is claimed only when the paired CI excludes 0.

Cached mode reads the chosen model's recorded answers off the outcome matrix (turn 1, no calls);
live mode runs full sessions through `trinity.analysis.live`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from trinity.analysis.baselines import MIN_RANDOM_SEEDS, SystemResult, baselines_from_outcomes
from trinity.analysis.inputs import select_ids
from trinity.analysis.learnable import KNN_K, run_feature_routes
from trinity.analysis.live import evaluate_live
from trinity.analysis.oracle import oracle_ceiling, validate_solves
from trinity.analysis.stats import CI, McNemar, accuracy_ci, is_binary, mcnemar_exact, paired_bootstrap_ci, solved
from trinity.errors import InputError
from trinity.io import atomic_write_json
from trinity.model import ROLES
from trinity.optim.routing import load_trained
from trinity.optim.runinputs import load_run_inputs
from trinity.runs.records import EVAL_FORMAT, EvalEntry, EvalFile, parse_eval_entry, read_eval_file
from trinity.runs.rundir import RunDir

if TYPE_CHECKING:
    from trinity.analysis.oracle import OracleReport
    from trinity.data.matrix import OutcomeMatrix
    from trinity.data.questions import Question
    from trinity.optim.routing import Routing
    from trinity.optim.runinputs import RunInputs

Progress = Callable[[int, int, str], None]


@dataclass
class Comparison:
    """Router minus one baseline on the same questions."""

    baseline: str
    baseline_accuracy: float
    diff: CI
    mcnemar: McNemar

    @property
    def outcome(self) -> str:
        """ "better" / "worse" only when the paired interval excludes 0 and McNemar's exact test
        agrees (p < 0.05); otherwise the difference is not significant."""
        significant = self.mcnemar.p_value < 0.05
        if self.diff.lo > 0 and significant:
            return "better"
        if self.diff.hi < 0 and significant:
            return "worse"
        return "within noise" if self.diff.lo <= 0 <= self.diff.hi else "not significant"

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "baseline_accuracy": self.baseline_accuracy,
            "diff": self.diff.to_json(),
            "mcnemar": self.mcnemar.to_json(),
            "outcome": self.outcome,
        }


@dataclass
class EvalReport:
    run: str | None
    split: str
    source: str
    mode: str
    n_questions: int
    models: list[str]
    router: SystemResult
    model_mix: dict[str, int]
    role_mix: dict[str, int]
    singles: list[SystemResult]
    random: CI
    random_seeds: int
    best_single: str
    comparisons: list[Comparison]
    claim: str
    per_benchmark: dict[str, dict[str, Any]]
    per_question: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    samples: int = 1

    def comparison(self, baseline: str) -> Comparison:
        return next(c for c in self.comparisons if c.baseline == baseline)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["router"] = self.router.to_json()
        d["singles"] = [s.to_json() for s in self.singles]
        d["random"] = self.random.to_json()
        d["comparisons"] = [c.to_json() for c in self.comparisons]
        return d


def _claim(best: Comparison) -> str:
    d = best.diff
    span = f"{d.point:+.3f} [{d.lo:+.3f}, {d.hi:+.3f}]"
    name = best.baseline.removeprefix("always ")
    if best.outcome == "not significant":
        return (
            f"difference vs the best single model ({name}) is not significant: {span} (paired 95% CI "
            f"excludes 0, McNemar's exact p = {best.mcnemar.p_value:.3g})"
        )
    if d.lo > 0:
        return f"beats the best single model ({name}) by {span} (paired 95% CI excludes 0)"
    if d.hi < 0:
        return f"is below the best single model ({name}) by {span} (paired 95% CI excludes 0)"
    return f"difference vs the best single model ({name}) is within noise: {span} (paired 95% CI contains 0)"


def compare_router(
    router_q: np.ndarray,
    per_q_model: np.ndarray,
    models: list[str],
    *,
    model_idx: np.ndarray,
    role_idx: np.ndarray | None = None,
    ids: list[str],
    benchmarks: list[str],
    split: str,
    source: str,
    mode: str = "cached",
    run: str | None = None,
    router_turns: np.ndarray | None = None,
    router_costs: np.ndarray | None = None,
    baseline_turns: np.ndarray | None = None,
    baseline_costs: np.ndarray | None = None,
    cost_source: str = "cached: no API calls",
    samples: int = 1,
    seeds: int = MIN_RANDOM_SEEDS,
    seed: int = 0,
    bootstrap: int = 2000,
    progress: Progress | None = None,
) -> EvalReport:
    """The statistics of `trinity eval` from per-question outcomes.

    router_q (Q,) — the router's correctness per question (expected, or mean over samples);
    per_q_model (Q, M) — each single model's correctness on the same questions;
    model_idx / role_idx (Q,) — the router's turn-1 choices (for the mix and per-question log).
    """
    router_q = np.asarray(router_q, dtype=np.float64)
    per_q_model = np.asarray(per_q_model, dtype=np.float64)
    q, m = per_q_model.shape
    if router_q.shape != (q,) or len(ids) != q or len(benchmarks) != q or np.shape(model_idx) != (q,):
        raise InputError(
            f"router outcomes for {router_q.shape[0]} questions, baselines for {q}: they must cover the same questions"
        )
    base = baselines_from_outcomes(
        per_q_model,
        models,
        benchmark=benchmarks[0] if q else "",
        split=split,
        source=source,
        mode=mode,
        turns=baseline_turns,
        costs=baseline_costs,
        cost_source=cost_source,
        seeds=seeds,
        seed=seed,
        bootstrap=bootstrap,
        progress=progress,
    )
    router = SystemResult(
        "router",
        accuracy_ci(router_q, bootstrap, seed),
        q,
        float(router_turns.mean()) if router_turns is not None else 1.0,
        float(router_costs.sum()) if router_costs is not None else 0.0,
        cost_source,
    )
    comparisons = [
        Comparison(
            s.name,
            s.accuracy.point,
            paired_bootstrap_ci(router_q, per_q_model[:, j], bootstrap, seed),
            mcnemar_exact(solved(router_q), solved(per_q_model[:, j])),
        )
        for j, s in enumerate(base.always)
    ]
    rand_q = per_q_model.mean(axis=1)  # exact per-question expectation of uniform random routing
    comparisons.append(
        Comparison(
            "random routing",
            float(rand_q.mean()),
            paired_bootstrap_ci(router_q, rand_q, bootstrap, seed),
            mcnemar_exact(solved(router_q), solved(rand_q)),
        )
    )
    best_j = int(np.argmax(per_q_model.mean(axis=0)))
    model_idx = np.asarray(model_idx, dtype=np.int64)
    model_mix = {models[j]: int(c) for j, c in sorted(Counter(model_idx.tolist()).items())}
    role_mix = (
        {ROLES[r]: int(c) for r, c in sorted(Counter(np.asarray(role_idx).tolist()).items())}
        if role_idx is not None
        else {}
    )
    per_bench: dict[str, dict[str, Any]] = {}
    for b in sorted(set(benchmarks)):
        rows = np.array([x == b for x in benchmarks])
        per_bench[b] = {
            "n": int(rows.sum()),
            "accuracy": float(router_q[rows].mean()),
            "avg_turns": float(router_turns[rows].mean()) if router_turns is not None else 1.0,
            "best_single_accuracy": float(per_q_model[rows].mean(axis=0).max()),
        }
    per_question = [
        {
            "id": ids[i],
            "benchmark": benchmarks[i],
            "model": models[int(model_idx[i])],
            "role": ROLES[int(role_idx[i])] if role_idx is not None else None,
            "correct": float(router_q[i]),
        }
        for i in range(q)
    ]
    notes = list(base.notes)
    if not (is_binary(router_q) and is_binary(per_q_model)):
        notes.append(
            "McNemar counts a question as solved by a system when its expected correctness there is "
            "≥ 0.5; the paired CIs use the expected correctness itself"
        )
    if q < 30:
        notes.append(f"only {q} questions: intervals are wide")
    return EvalReport(
        run,
        split,
        source,
        mode,
        q,
        list(models),
        router,
        model_mix,
        role_mix,
        base.always,
        base.random,
        seeds,
        models[best_j],
        comparisons,
        _claim(comparisons[best_j]),
        per_bench,
        per_question,
        notes,
        samples,
    )


# ---- run-based evaluation ---------------------------------------------------------------------


def cached_run_outcomes(
    run_dir: str | Path, split: str, progress: Progress | None = None
) -> tuple[RunInputs, list[Question], OutcomeMatrix, Routing]:
    """(inputs, test questions, matrix subset, Routing) for a run's `split` in cached mode."""
    inputs = load_run_inputs(run_dir)
    if inputs.matrix is None:
        raise InputError(f"{run_dir}: the run has no outcome matrix; use --mode live")
    if split not in inputs.splits:
        raise InputError(f"{run_dir}: unknown split {split!r}; use one of {', '.join(inputs.splits)}")
    ids = list(inputs.splits[split])
    if not ids:
        raise InputError(f"{run_dir}: the {split} split is empty; pick another split")
    if any(i not in inputs.matrix for i in ids):  # a live run's matrix may cover train + val only
        raise InputError(
            f"{run_dir}: the run's outcome matrix has no rows for the {split} split (it was collected for "
            "training only); use --mode live"
        )
    by_id = {qq.id: qq for qq in inputs.questions}
    questions = [by_id[i] for i in ids]
    if progress:
        progress(0, 1, f"routing {len(questions)} {split} questions")

    routing = load_trained(run_dir).route(questions)
    if progress:
        progress(1, 1, f"routed {len(questions)} {split} questions")
    return inputs, questions, inputs.matrix.subset(ids), routing


def evaluate_run(
    run_dir: str | Path,
    split: str = "test",
    mode: str = "cached",
    samples: int = 1,
    seed: int = 0,
    seeds: int = MIN_RANDOM_SEEDS,
    bootstrap: int = 2000,
    pool: str | None = None,
    base_url: str | None = None,
    budget_usd: float | None = None,
    write: bool = True,
    progress: Progress | None = None,
    feature_baselines: bool = True,
) -> EvalReport:
    """Evaluate a trained run on one of its splits; writes `eval.json` into the run when `write`.
    Cached mode also compares the router with kNN / nearest-centroid routers on the same frozen
    features, fitted on the run's training split (`feature_baselines`, issue 14)."""
    run = RunDir(run_dir)
    run.meta()  # a clear error when it is not a run directory (or not a run.json)
    if samples < 1:
        raise InputError(f"--samples must be >= 1, got {samples}")
    if mode == "live":
        live = evaluate_live(
            run, split=split, samples=samples, pool=pool, base_url=base_url, budget_usd=budget_usd, progress=progress
        )
        report = compare_router(
            live.router_q,
            live.per_q_model,
            live.models,
            model_idx=live.model_idx,
            role_idx=live.role_idx,
            ids=[qq.id for qq in live.questions],
            benchmarks=[qq.benchmark for qq in live.questions],
            split=split,
            source=f"the {split} split recorded in {run.run_json}",
            mode="live",
            run=str(run.path),
            router_turns=live.router_turns,
            router_costs=live.router_costs,
            baseline_turns=live.baseline_turns,
            baseline_costs=live.baseline_costs,
            cost_source=live.cost_source,
            samples=samples,
            seeds=seeds,
            seed=seed,
            bootstrap=bootstrap,
            progress=progress,
        )
        report.notes += live.notes
    elif mode == "cached":
        _, questions, sub, routing = cached_run_outcomes(run.path, split, progress)
        s = validate_solves(sub.solves, f"{run.path} matrix")
        p = s.mean(axis=2)  # (Q, M)
        model_idx = np.asarray(routing.model_idx, dtype=np.int64)
        router_q = p[np.arange(len(questions)), model_idx]
        report = compare_router(
            router_q,
            p,
            sub.models,
            model_idx=model_idx,
            role_idx=routing.role_idx,
            ids=sub.ids,
            benchmarks=[qq.benchmark for qq in questions],
            split=split,
            source=f"the {split} split recorded in {run.run_json}",
            mode="cached",
            run=str(run.path),
            seeds=seeds,
            seed=seed,
            bootstrap=bootstrap,
            progress=progress,
        )
        report.notes.append(
            "cached mode: turn 1 only; the router's chosen model is scored on its recorded "
            "Worker answers whatever role it picked (as the competition's cached score does)"
        )
        if feature_baselines:
            _add_feature_baselines(report, run.path, split, router_q, p, seed, bootstrap)
        if samples > 1:
            report.notes.append(
                f"--samples {samples} ignored in cached mode: all k={s.shape[2]} recorded samples are already averaged"
            )
    else:
        raise InputError(f"unknown --mode {mode!r}; use cached or live")
    if write:
        evals: dict[str, EvalEntry] = {}
        if run.eval_json.exists():
            try:  # earlier results of other modes/splits are kept; an unreadable file is replaced
                evals = dict(read_eval_file(run.eval_json).evaluations)
            except InputError:
                evals = {}
        evals[f"{mode}/{split}"] = parse_eval_entry(report.to_json(), f"{run.eval_json} {mode}/{split}")
        atomic_write_json(run.eval_json, EvalFile(format=EVAL_FORMAT, run=run.id, evaluations=evals).to_json())
    return report


def _add_feature_baselines(
    report: EvalReport, run_dir: Path, split: str, router_q: np.ndarray, p: np.ndarray, seed: int, bootstrap: int
) -> None:
    """Comparisons router − {kNN, centroid} on the frozen features (paired, same questions)."""
    names = {
        "knn": f"kNN on frozen features (k={KNN_K}, fit on train)",
        "centroid": "nearest centroid on frozen features (fit on train)",
    }
    rows = np.arange(len(router_q))
    for method, choice in run_feature_routes(run_dir, split).items():
        base_q = p[rows, choice]
        report.comparisons.append(
            Comparison(
                names[method],
                float(base_q.mean()),
                paired_bootstrap_ci(router_q, base_q, bootstrap, seed),
                mcnemar_exact(solved(router_q), solved(base_q)),
            )
        )
    report.notes.append(
        "feature baselines: kNN / nearest-centroid routers read the same frozen "
        "encoder features as the head (SVF 1.0) and the training split's recorded correctness; "
        "a trained head should be at least as good"
    )


def read_eval(run_dir: str | Path, mode: str, split: str) -> EvalEntry | None:
    """A stored evaluation from `eval.json` (`trinity.runs.records.EvalFile`), or None."""
    path = RunDir(run_dir).eval_json
    if not path.exists():
        return None
    doc = read_eval_file(path)  # RecordError: one line naming the file and field
    return doc.evaluations.get(f"{mode}/{split}")


def router_correctness(run_dir: str | Path, matrix: OutcomeMatrix, progress: Progress | None = None) -> np.ndarray:
    """(Q,) expected correctness of the run's router on the rows of `matrix` (turn 1, cached):
    each question is routed by the trained router and scored on the chosen model's recorded answers."""
    inputs = load_run_inputs(run_dir)
    by_id = {q.id: q for q in inputs.questions}
    missing = [i for i in matrix.ids if i not in by_id]
    if missing:
        raise InputError(
            f"{len(missing)} matrix question(s) are not among the run's questions "
            f"(e.g. {', '.join(missing[:5])}); use the run's matrix"
        )
    run_models = inputs.matrix.models if inputs.matrix is not None else matrix.models
    if list(run_models) != list(matrix.models):
        raise InputError(f"the matrix's models {matrix.models} differ from the run's {run_models}")
    if progress:
        progress(0, 1, f"routing {len(matrix.ids)} questions with the trained router")

    routing = load_trained(run_dir).route([by_id[i] for i in matrix.ids])
    p = validate_solves(matrix.solves).mean(axis=2)  # (Q, M)
    correct: np.ndarray = p[np.arange(len(matrix.ids)), np.asarray(routing.model_idx, dtype=np.int64)]
    return correct


def oracle_for_run(
    run_dir: str | Path,
    split: str = "test",
    matrix: OutcomeMatrix | None = None,
    benchmark: str | None = None,
    seed: int = 0,
    splits: int = 200,
    bootstrap: int = 2000,
    progress: Progress | None = None,
) -> OracleReport:
    """The oracle ceiling on a run's `split` (its own matrix unless `matrix` is given), with the
    trained router's accuracy and the share of the headroom it captures."""
    if matrix is None:
        matrix = load_run_inputs(run_dir).matrix
        if matrix is None:
            raise InputError(f"{run_dir}: the run has no outcome matrix; pass one (trinity oracle MATRIX --run)")
    sel = select_ids(matrix, split, benchmark, run=run_dir)
    sub = matrix.subset(sel.ids)
    sub.notes.append(f"questions: {sel.source}")
    router_correct = router_correctness(run_dir, sub, progress)
    if progress:
        progress(0, 1, "computing the cross-fit oracle ceiling")
    return oracle_ceiling(
        sub, seed=seed, splits=splits, bootstrap=bootstrap, router_correct=router_correct, progress=progress
    )
