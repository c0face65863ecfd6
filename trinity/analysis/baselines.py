"""Baselines a router must beat: always-model-X for every pool model, and random routing.

Cached mode costs nothing: each system's per-question *expected* correctness is read off the
outcome matrix (the mean of the k recorded single-turn Worker answers of the chosen model — the
same reward the cached fitness and the competition's cached score use). Random routing draws one
model per question, uniformly, with its own `np.random.default_rng([seed, s])` for each of the
`seeds` seeds, and is reported as the mean over seeds and the central 95% of the seeds.

Live mode goes through `trinity.analysis.live` (the session runner, the response cache and the
ledger); random routing there is computed from the live always-model answers, which is what a
single-turn random router would get at temperature 0 through the response cache.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

from trinity.analysis.oracle import validate_solves
from trinity.analysis.stats import CI, accuracy_ci, seed_interval
from trinity.data.matrix import OutcomeMatrix
from trinity.errors import InputError

Progress = Callable[[int, int, str], None]

MIN_RANDOM_SEEDS = 100


@dataclass
class SystemResult:
    """One system on the selected questions."""

    name: str
    accuracy: CI
    n_questions: int
    avg_turns: float
    cost_usd: float
    cost_source: str

    @property
    def cost_per_correct(self) -> float | None:
        """USD per correct answer (expected correct answers in cached mode); None if none correct."""
        n_correct = self.accuracy.point * self.n_questions
        return self.cost_usd / n_correct if n_correct > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "accuracy": self.accuracy.to_json(),
            "n_questions": self.n_questions,
            "avg_turns": self.avg_turns,
            "cost_usd": self.cost_usd,
            "cost_per_correct": self.cost_per_correct,
            "cost_source": self.cost_source,
        }


@dataclass
class BaselineReport:
    benchmark: str
    split: str
    source: str  # where the questions came from, in words
    mode: str  # cached | live
    n_questions: int
    models: list[str]
    always: list[SystemResult]
    random: CI  # mean and central interval across seeds
    random_expected: float  # the exact expectation of random routing (mean over models)
    random_seeds: int
    best_single: str
    notes: list[str] = field(default_factory=list)
    features: list[SystemResult] = field(default_factory=list)  # kNN / centroid on frozen features (CV)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["always"] = [s.to_json() for s in self.always]
        d["features"] = [s.to_json() for s in self.features]
        d["random"] = self.random.to_json()
        return d


def random_routing(
    per_q_model: np.ndarray, seeds: int = MIN_RANDOM_SEEDS, seed: int = 0, progress: Progress | None = None
) -> np.ndarray:
    """(seeds,) accuracy of uniform random model choice; `per_q_model` is (Q, M) correctness."""
    if seeds < 1:
        raise InputError(f"random routing needs at least 1 seed, got {seeds}")
    q, m = per_q_model.shape
    rows = np.arange(q)
    out = np.empty(seeds)
    for s in range(seeds):
        rng = np.random.default_rng([seed, s])  # each seed its own generator
        out[s] = per_q_model[rows, rng.integers(0, m, size=q)].mean()
        if progress and (s + 1) % 25 == 0:
            progress(s + 1, seeds, "random-routing seeds")
    return out


def baselines_from_outcomes(
    per_q_model: np.ndarray,
    models: list[str],
    *,
    benchmark: str,
    split: str,
    source: str,
    mode: str = "cached",
    turns: np.ndarray | None = None,
    costs: np.ndarray | None = None,
    cost_source: str = "cached: no API calls",
    seeds: int = MIN_RANDOM_SEEDS,
    seed: int = 0,
    bootstrap: int = 2000,
    progress: Progress | None = None,
) -> BaselineReport:
    """Baselines from a (Q, M) table of per-question correctness of each single model
    (expected correctness in cached mode, graded answers in live mode)."""
    per_q_model = np.asarray(per_q_model, dtype=np.float64)
    if per_q_model.ndim != 2 or 0 in per_q_model.shape:
        raise InputError(f"baselines need a (questions, models) table; got shape {per_q_model.shape}")
    q, m = per_q_model.shape
    if len(models) != m:
        raise InputError(f"{len(models)} model names for {m} columns")
    notes = []
    if seeds < MIN_RANDOM_SEEDS:
        notes.append(f"random routing over {seeds} seeds (< {MIN_RANDOM_SEEDS}): its interval is rough")
    always = []
    for j, name in enumerate(models):
        always.append(
            SystemResult(
                f"always {name}",
                accuracy_ci(per_q_model[:, j], bootstrap, seed),
                q,
                float(turns[:, j].mean()) if turns is not None else 1.0,
                float(costs[:, j].sum()) if costs is not None else 0.0,
                cost_source,
            )
        )
    rand = random_routing(per_q_model, seeds, seed, progress)
    best = int(np.argmax(per_q_model.mean(axis=0)))
    return BaselineReport(
        benchmark,
        split,
        source,
        mode,
        q,
        list(models),
        always,
        seed_interval(rand),
        float(per_q_model.mean()),
        seeds,
        models[best],
        notes,
    )


def cached_baselines(
    matrix: OutcomeMatrix,
    ids: list[str] | None = None,
    *,
    split: str = "all",
    source: str = "",
    seeds: int = MIN_RANDOM_SEEDS,
    seed: int = 0,
    bootstrap: int = 2000,
    progress: Progress | None = None,
) -> BaselineReport:
    """Cached-mode baselines on `ids` (default: every matrix row)."""
    sub = matrix.subset(ids) if ids is not None else matrix
    s = validate_solves(sub.solves, f"matrix {matrix.benchmark!r}")
    rep = baselines_from_outcomes(
        s.mean(axis=2),
        sub.models,
        benchmark=sub.benchmark,
        split=split,
        source=source or "all matrix rows",
        seeds=seeds,
        seed=seed,
        bootstrap=bootstrap,
        progress=progress,
    )
    rep.notes = list(sub.notes) + rep.notes
    if s.shape[2] > 1:
        rep.notes.append(f"accuracy = mean of the k={s.shape[2]} recorded single-turn Worker answers per question")
    return rep


# `baselines(...)` is the name the app calls.
baselines = cached_baselines
