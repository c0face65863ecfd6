"""Accuracy against money: a run's validation accuracy per validated generation against what it
had spent by then, with bootstrap intervals; the Pareto front across runs; and the odds that a
bundle's true score clears the king by the competition's margin.

The bootstrap resamples the n validation questions with replacement. A generation event records
the accuracy k/n (not which questions were right), and resampling n right/wrong outcomes of which
k are right draws k* ~ Binomial(n, k/n): so each replicate is one binomial draw, vectorised over
the generations. n is the run's validation split (run.json "splits"."val"). Seeded: the same run
gives the same intervals on every redraw. No textual here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from minertui.runmodel import RunSnapshot

BOOTSTRAP = 2000
LEVEL = 0.95
MAX_POINTS = 400  # generations bootstrapped per curve (the newest; a plot has fewer columns)


@dataclass(frozen=True)
class AccCost:
    run_id: str
    spend: np.ndarray  # (G,) cumulative USD when each validated generation ended
    acc: np.ndarray  # (G,) validation accuracy
    lo: np.ndarray  # (G,) bootstrap interval
    hi: np.ndarray
    n_val: int  # 0: unknown (no interval)
    source: str = "validation"  # or "training": a live run without validation, its graded sessions

    def __len__(self) -> int:
        return len(self.acc)


def n_val_of(s: RunSnapshot) -> int:
    return len(s.record.splits.get("val") or []) if s.record else 0


def bootstrap_acc(acc: np.ndarray, n: int, b: int = BOOTSTRAP, seed: int = 0) -> np.ndarray:
    """(len(acc), b) replicate accuracies: n questions resampled, k = round(acc·n) right."""
    acc = np.clip(np.asarray(acc, dtype=np.float64), 0.0, 1.0)
    rng = np.random.default_rng(seed)
    return rng.binomial(n, acc[:, None], size=(len(acc), b)) / n


def interval(acc: np.ndarray, n: int, b: int = BOOTSTRAP, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    if n <= 0 or not len(acc):
        return np.full(len(acc), np.nan), np.full(len(acc), np.nan)
    reps = bootstrap_acc(acc, n, b, seed)
    a = (1 - LEVEL) / 2
    lo, hi = np.quantile(reps, [a, 1 - a], axis=1)
    return lo, hi


def acc_cost(s: RunSnapshot, b: int = BOOTSTRAP) -> AccCost:
    """Validation accuracy against spend; a live run that validates nothing (no outcome matrix)
    falls back to the graded accuracy of each generation's own sessions (source "training"), its
    interval over the sessions that generation graded."""
    g = s.gens
    ok = np.isfinite(g.val_acc) & np.isfinite(g.cost_usd)
    if ok.any() or not (np.isfinite(g.accuracy) & np.isfinite(g.cost_usd)).any():
        spend, acc = g.cost_usd[ok][-MAX_POINTS:], g.val_acc[ok][-MAX_POINTS:]
        n = n_val_of(s)
        lo, hi = interval(acc, n, b)
        return AccCost(s.id, spend, acc, lo, hi, n)
    ok = np.isfinite(g.accuracy) & np.isfinite(g.cost_usd)
    sessions = np.diff(np.concatenate([[0.0], np.nan_to_num(g.evals)]))[ok][-MAX_POINTS:]
    spend, acc = g.cost_usd[ok][-MAX_POINTS:], g.accuracy[ok][-MAX_POINTS:]
    n = int(sessions.min()) if len(sessions) and sessions.min() > 0 else 0
    lo, hi = interval(acc, n, b)
    return AccCost(s.id, spend, acc, lo, hi, n, "training")


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats: as accurate or more for as little or less,
    strictly better in one. Sorted by spend."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = [], -np.inf
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


@dataclass(frozen=True)
class KingOdds:
    estimate: float  # the bundle's score estimate (its best validation accuracy)
    lo: float
    hi: float
    need: float  # king + margin
    p_clear: float  # P(true score ≥ need), over the bootstrap replicates
    n_val: int


def king_odds(
    estimate: float, n: int, king: float, margin: float, strict: bool = False, b: int = BOOTSTRAP, seed: int = 0
) -> KingOdds:
    """P(score ≥ king + margin) (TinyRouter's rule), or P(score > king) with `strict` (MiniRouter's
    promotion), over bootstrap replicates of the estimate from n questions."""
    reps = bootstrap_acc(np.array([estimate]), n, b, seed)[0]
    a = (1 - LEVEL) / 2
    lo, hi = np.quantile(reps, [a, 1 - a])
    need = king + margin
    # a hair of tolerance: an accuracy k/n equal to the need in exact terms is equal, not below
    clears = reps > need + 1e-12 if strict else reps >= need - 1e-12
    return KingOdds(estimate, float(lo), float(hi), need, float(np.mean(clears)), n)


def best_val(s: RunSnapshot) -> float | None:
    v = s.gens.val_acc
    v = v[np.isfinite(v)]
    warm = s.record.warm_start if s.record else None  # what the warm start fitted (generation 0)
    cands = [float(v.max())] if len(v) else []
    if warm is not None and warm.val_acc is not None:
        cands.append(warm.val_acc)
    return max(cands) if cands else None
