"""Oracle ceiling: how much could a perfect per-question router gain over the best single model?

From a solves tensor S[q, m, k] (0/1: did model m solve question q on recorded sample k):

- per-model accuracy, best single model (full data);
- naive oracle `mean_q max_m p̂[q, m]` — biased upward (the max of noisy estimates), labelled so;
- split-half cross-fitted oracle: for each of B random splits of the k samples (one shuffle per
  question, shared by all models so identical models stay tied), pick each question's best model
  on half A — ties go to the best fixed model on A — and score it on half B; the best fixed model
  is chosen on A and scored on B in the same way. Both are honest held-out numbers;
- headroom = cross-fit oracle − cross-fit best single, per question, so its bootstrap CI over
  questions is a paired one (the per-question contributions are resampled, not recomputed);
- exact McNemar between the cross-fit oracle and the best single model (a question counts as
  solved when its held-out correctness averaged over the splits is ≥ 0.5);
- a verdict read off the headroom CI (never off the point estimate).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

from trinity.analysis.stats import CI, bootstrap_ci, mcnemar_exact, solved
from trinity.data.matrix import OutcomeMatrix
from trinity.errors import InputError

Progress = Callable[[int, int, str], None]  # (done, total, what)

POOL_BOUND_MAX_UPPER = 0.02  # headroom CI upper bound at or below this (and CI ∋ 0): pool-bound
NEAR_CEILING_GAP = 0.5  # router closes at least this fraction of the headroom: near ceiling
VERDICTS = ("POOL_BOUND", "ROUTER_BOUND", "NEAR_CEILING", "INCONCLUSIVE")


def validate_solves(solves: np.ndarray, what: str = "solves tensor") -> np.ndarray:
    s = np.asarray(solves, dtype=np.float64)
    if s.ndim != 3:
        raise InputError(f"{what}: expected shape (questions, models, samples), got {s.shape}")
    if 0 in s.shape:
        raise InputError(f"{what} is empty (shape {s.shape}); it needs questions, models and samples")
    if not np.all(np.isfinite(s)):
        raise InputError(f"{what} contains NaN or infinite entries; entries must be 0 or 1")
    if not np.all((s == 0) | (s == 1)):
        raise InputError(f"{what} has entries other than 0 and 1; re-collect or fix the matrix")
    return s


@dataclass
class CrossFit:
    """Per-question held-out results averaged over the B splits."""

    oracle_q: np.ndarray  # (Q,) held-out correctness of the per-question choice
    best_q: np.ndarray  # (Q,) held-out correctness of the best fixed model (chosen on A)
    choice_counts: np.ndarray  # (Q, M) how often each model was the per-question choice
    best_counts: np.ndarray  # (M,) how often each model was the best fixed model
    splits: int
    half: int  # samples in the selection half A


def _tie_break_bonus(sel_mean_by_model: np.ndarray, n_a: int) -> np.ndarray:
    """(..., M) bonus < 1/(2 n_a) that orders models by their A-half overall accuracy, so a
    per-question tie on A goes to the best fixed model (then the next best, …) but a real
    difference (≥ 1/n_a) always wins."""
    m = sel_mean_by_model.shape[-1]
    # rank 0 = best overall on A; stable argsort keeps lower index first among equals
    order = np.argsort(-sel_mean_by_model, axis=-1, kind="stable")
    rank = np.argsort(order, axis=-1, kind="stable")
    bonus: np.ndarray = (m - 1 - rank) / (2.0 * m * n_a)
    return bonus


def cross_fit(solves: np.ndarray, splits: int = 200, seed: int = 0, progress: Progress | None = None) -> CrossFit:
    s = validate_solves(solves)
    q, m, k = s.shape
    if k < 2:
        raise InputError(f"cross-fit needs at least 2 samples per (question, model); the matrix has k={k}")
    if splits < 1:
        raise InputError(f"cross-fit splits must be >= 1, got {splits}")
    rng = np.random.default_rng(seed)
    n_a = k // 2
    oracle_sum = np.zeros(q)
    best_sum = np.zeros(q)
    choice_counts = np.zeros((q, m), dtype=np.int64)
    best_counts = np.zeros(m, dtype=np.int64)
    rows = np.arange(q)
    block = max(1, 2_000_000 // (q * m * k))
    done = 0
    while done < splits:
        b = min(block, splits - done)
        perm = rng.random((b, q, k)).argsort(axis=2)  # (b, Q, K): one shuffle per question
        onehot_a = np.zeros((b, q, k))
        np.put_along_axis(onehot_a, perm[:, :, :n_a], 1.0, axis=2)  # 1 where the sample is in A
        sel = np.einsum("qmk,bqk->bqm", s, onehot_a) / n_a  # (b, Q, M) accuracy on A
        evl = np.einsum("qmk,bqk->bqm", s, 1.0 - onehot_a) / (k - n_a)  # (b, Q, M) on B
        overall_a = sel.mean(axis=1)  # (b, M)
        best_m = np.argmax(overall_a, axis=1)  # (b,) ties → lowest index
        bonus = _tie_break_bonus(overall_a, n_a)  # (b, M)
        chosen = np.argmax(sel + bonus[:, None, :], axis=2)  # (b, Q)
        oracle_sum += np.take_along_axis(evl, chosen[:, :, None], axis=2)[:, :, 0].sum(axis=0)
        best_sum += evl[np.arange(b)[:, None], rows[None, :], best_m[:, None]].sum(axis=0)
        for j in range(m):
            choice_counts[:, j] += (chosen == j).sum(axis=0)
        best_counts += np.bincount(best_m, minlength=m)
        done += b
        if progress:
            progress(done, splits, "cross-fit splits")
    return CrossFit(oracle_sum / splits, best_sum / splits, choice_counts, best_counts, splits, n_a)


def verdict(headroom_ci: CI | None, gap_closed: float | None) -> tuple[str, str]:
    """(label, reason) from the headroom CI and, when a router is given, the fraction it captured."""
    if headroom_ci is None:
        return "INCONCLUSIVE", "no headroom interval could be computed"
    lo, hi = headroom_ci.lo, headroom_ci.hi
    if hi <= POOL_BOUND_MAX_UPPER and lo <= 0.0 <= hi:
        return "POOL_BOUND", (
            f"headroom CI [{lo:+.3f}, {hi:+.3f}] contains 0 and tops out at "
            f"≤ {POOL_BOUND_MAX_UPPER}: routing cannot beat the best single model here; "
            "the lever is the pool"
        )
    if lo > 0.0:
        if gap_closed is None:
            return "ROUTER_BOUND", (
                f"real headroom (CI lower bound {lo:+.3f} > 0); no router given, so "
                "the router's share is unknown — routing can help"
            )
        if gap_closed < 0:
            return "ROUTER_BOUND", (
                f"real headroom (CI lower bound {lo:+.3f} > 0) and the router is below the "
                f"best single model (captured {gap_closed:.0%}): improve the router"
            )
        if gap_closed < NEAR_CEILING_GAP:
            return "ROUTER_BOUND", (
                f"real headroom (CI lower bound {lo:+.3f} > 0) and the router captures "
                f"only {gap_closed:.0%} of it: improve the router"
            )
        if gap_closed > 1.0:  # above the per-question estimate: "captures 206%" would mislead
            return "NEAR_CEILING", (
                f"real headroom (CI lower bound {lo:+.3f} > 0) and the router scores "
                "above the cross-fit oracle estimate: the per-question oracle "
                "underestimates the ceiling here (few samples per question); "
                "treat the router as at the ceiling — gains now need a better pool"
            )
        return "NEAR_CEILING", (
            f"real headroom (CI lower bound {lo:+.3f} > 0) and the router already "
            f"captures {gap_closed:.0%} of it: gains now need a better pool"
        )
    return "INCONCLUSIVE", (
        f"headroom CI [{lo:+.3f}, {hi:+.3f}] neither excludes 0 nor stays below "
        f"{POOL_BOUND_MAX_UPPER}: collect more questions or samples"
    )


@dataclass
class OracleReport:
    benchmark: str
    models: list[str]
    n_questions: int
    k: int
    per_model: list[CI]  # accuracy of each model over the questions (all k samples)
    best_single: str
    best_single_acc: float
    naive_oracle: float  # mean_q max_m p̂ — biased upward
    disagreement_rate: float  # questions where the models' majority verdicts differ
    crossfit: dict[str, Any] | None = None  # oracle, best_single, headroom (+ CI), splits, half, McNemar
    router: dict[str, Any] | None = None  # accuracy, headroom captured
    verdict: str = "INCONCLUSIVE"
    verdict_reason: str = ""
    notes: list[str] = field(default_factory=list)
    seed: int = 0
    bootstrap: int = 2000
    per_benchmark: dict[str, dict[str, Any]] = field(default_factory=dict)  # merged matrices: each benchmark alone
    learnable: dict[str, Any] | None = None  # oracle --learnable: cross-validated feature-router gains + verdict

    @property
    def headroom_ci(self) -> CI | None:
        if not self.crossfit or self.crossfit.get("headroom_ci") is None:
            return None
        return CI(**self.crossfit["headroom_ci"])

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["per_model"] = [{"model": m, **ci.to_json()} for m, ci in zip(self.models, self.per_model)]
        d["naive_oracle_label"] = "naive oracle (in-sample max over models; biased upward)"
        return d


def _disagreement_rate(p: np.ndarray) -> float:
    votes = p >= 0.5  # (Q, M) majority verdict per model
    return float(np.mean(votes.min(axis=1) != votes.max(axis=1)))


def oracle_ceiling(
    matrix: OutcomeMatrix,
    seed: int = 0,
    splits: int = 200,
    bootstrap: int = 2000,
    router_correct: npt.ArrayLike | None = None,
    progress: Progress | None = None,
) -> OracleReport:
    """The full oracle-ceiling report. `router_correct` (Q,), aligned with `matrix.ids`, is the
    trained router's expected correctness per question (adds accuracy and headroom captured)."""
    s = validate_solves(matrix.solves, f"matrix {matrix.benchmark!r}")
    q, m, k = s.shape
    p = s.mean(axis=2)  # (Q, M)
    notes = list(matrix.notes)
    per_model = [
        bootstrap_ci(p[:, j], bootstrap, seed)
        if q >= 2
        else CI(float(p[0, j]), float(p[0, j]), float(p[0, j]), "one question: no interval")
        for j in range(m)
    ]
    acc = p.mean(axis=0)
    best = int(np.argmax(acc))
    rep = OracleReport(
        matrix.benchmark,
        list(matrix.models),
        q,
        k,
        per_model,
        matrix.models[best],
        float(acc[best]),
        float(p.max(axis=1).mean()),
        _disagreement_rate(p),
        notes=notes,
        seed=seed,
        bootstrap=bootstrap,
    )
    if m == 1:
        notes.append("one model in the pool: there is nothing to route between (headroom is 0 by definition)")
    if q < 2:
        notes.append("one question: no interval over questions can be computed; collect more questions")
    if q < 30 and q >= 2:
        notes.append(f"only {q} questions: intervals are wide and approximate")
    if k < 2:
        notes.append(
            f"k={k} sample per (question, model): the split-half cross-fit is impossible; only the "
            "per-model accuracies and the (biased) naive oracle are reported — collect k ≥ 2 (ideally ≥ 4)"
        )
    elif k < 4:
        notes.append(
            f"k={k}: each half has {k // 2} sample(s); the per-question choice on half A is noisy, "
            "so the cross-fit oracle is conservative"
        )

    router_q = None
    if router_correct is not None:
        router_q = np.asarray(router_correct, dtype=np.float64)
        if router_q.shape != (q,):
            raise InputError(f"router correctness has shape {router_q.shape}; expected ({q},), one per question")
        if not np.all(np.isfinite(router_q)) or np.any((router_q < 0) | (router_q > 1)):
            raise InputError("router correctness must be finite values in [0, 1]")
        rep.router = {"accuracy": float(router_q.mean()), "headroom_captured": None}

    gap = None
    if k >= 2:
        cf = cross_fit(s, splits, seed, progress)
        head_q = cf.oracle_q - cf.best_q
        oracle_acc, best_acc = float(cf.oracle_q.mean()), float(cf.best_q.mean())
        head_ci = bootstrap_ci(head_q, bootstrap, seed) if q >= 2 else None
        if head_ci is not None:  # say what was resampled: the per-question cross-fit contributions
            head_ci = CI(
                head_ci.point,
                head_ci.lo,
                head_ci.hi,
                f"paired percentile bootstrap of per-question cross-fit headroom, {q} questions, {bootstrap} resamples",
            )
        mc = mcnemar_exact(solved(cf.oracle_q), solved(cf.best_q))
        modal = cf.choice_counts.argmax(axis=1)
        best_fixed = int(cf.best_counts.argmax())
        rep.crossfit = {
            "oracle": oracle_acc,
            "best_single": best_acc,
            "best_single_model": matrix.models[best_fixed],
            "headroom": oracle_acc - best_acc,
            "headroom_ci": head_ci.to_json() if head_ci else None,
            "splits": cf.splits,
            "half": cf.half,
            "mcnemar": mc.to_json(),
            "oracle_switch_rate": float(np.mean(modal != best_fixed)),
            "oracle_choice_share": {
                mm: float(cf.choice_counts[:, j].sum() / (q * cf.splits)) for j, mm in enumerate(matrix.models)
            },
        }
        if router_q is not None and rep.router is not None:  # set together above
            headroom = oracle_acc - best_acc
            if headroom > 1e-12:
                gap = (float(router_q.mean()) - best_acc) / headroom
                rep.router["headroom_captured"] = gap
            else:
                rep.router["headroom_captured_note"] = "no positive headroom: the captured fraction is undefined"
        label, reason = verdict(head_ci, gap)
    else:
        label, reason = "INCONCLUSIVE", f"cross-fit impossible with k={k}"
        if rep.router is not None:
            rep.router["headroom_captured_note"] = "no cross-fit (k < 2): the captured fraction is undefined"
    rep.verdict, rep.verdict_reason = label, reason
    benches = list(dict.fromkeys(matrix.benchmarks))
    if len(benches) > 1:  # the competition scores each benchmark on its own
        rows = np.asarray(matrix.benchmarks)
        for b in benches:
            ids = [qid for qid, bb in zip(matrix.ids, matrix.benchmarks) if bb == b]
            sub = matrix.subset(ids)
            sub.benchmark, sub.notes = b, []
            rc = router_q[rows == b] if router_q is not None else None
            r = oracle_ceiling(sub, seed=seed, splits=splits, bootstrap=bootstrap, router_correct=rc)
            rep.per_benchmark[b] = {
                "n_questions": r.n_questions,
                "best_single": r.best_single,
                "best_single_acc": r.best_single_acc,
                "naive_oracle": r.naive_oracle,
                "crossfit_oracle": r.crossfit["oracle"] if r.crossfit else None,
                "crossfit_best_single": r.crossfit["best_single"] if r.crossfit else None,
                "headroom_ci": r.crossfit["headroom_ci"] if r.crossfit else None,
                "router_accuracy": r.router["accuracy"] if r.router else None,
                "verdict": r.verdict,
            }
        pooled = rep.headroom_ci
        if (
            pooled is not None
            and pooled.lo > 0
            and not any((v["headroom_ci"] or {}).get("lo", 0.0) > 0 for v in rep.per_benchmark.values())
        ):
            notes.append(
                "the pooled headroom is real but no benchmark alone shows any: it comes from picking a "
                "model per benchmark, which the per-benchmark best singles (the competition's "
                "baselines) already do"
            )
    return rep
