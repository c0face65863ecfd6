"""Racing within a generation (successive halving): every candidate meets a small batch of the
generation's questions; the better half goes on to the next batch, and so on, so the questions a
generation pays for are spent on candidates that can still be best.

`race_plan(P, m)`: the stages as (candidates still racing, questions seen by the end of the stage).
The first batch is a quarter of m (at least 1); each stage doubles the questions seen and halves
the candidates (never below 2), the last stage ends at m. At P 32 × m 16: 32 on 4, 16 on 8,
8 on 16 = 128 + 64 + 128 = 320 sessions instead of 512.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypedDict

import numpy as np

from trinity.config import TrainConfig
from trinity.data.questions import Question
from trinity.model import ROLES
from trinity.session.evaluation import Evaluation, GenerationHooks, GenerationStats
from trinity.session.loop import trace_record
from trinity.session.transcript import Trajectory

if TYPE_CHECKING:
    from trinity.pool.client import PoolClient


def race_plan(popsize: int, m: int) -> list[tuple[int, int]]:
    if m <= 1 or popsize <= 2:
        return [(popsize, m)]
    seen = max(1, math.ceil(m / 4))
    n = popsize
    plan = [(n, seen)]
    while seen < m:
        seen = min(m, seen * 2)
        n = max(2, math.ceil(n / 2))
        plan.append((n, seen))
    return plan


def race_sessions(popsize: int, m: int) -> int:
    """Sessions one raced generation runs."""
    total, before = 0, 0
    for n, seen in race_plan(popsize, m):
        total += n * (seen - before)
        before = seen
    return total


def _ranking(rewards: np.ndarray, level: np.ndarray) -> np.ndarray:
    """One value per candidate whose order is the race's: a candidate that reached a later stage
    above every one that did not; within a stage, by mean reward over the questions all of them
    met (those of the stages up to it)."""
    seen = np.isfinite(rewards)
    mean = np.where(seen, rewards, 0).sum(axis=1) / np.maximum(seen.sum(axis=1), 1)
    ranking: np.ndarray = level.astype(np.float64) * RANK_STEP + mean
    return ranking


RANK_STEP = 1000.0  # far above any reward's range: the stage reached decides first


class Incumbent(TypedDict):
    """The best candidate so far (kept by the fitness, in its checkpointed state as this mapping)."""

    theta: np.ndarray  # (D,) float64
    gen: int  # the generation it won
    sum: float  # its rewards summed over every evaluation
    n: int  # how many rewards that sum holds


class RaceFitness(Protocol):
    """What a race needs of its fitness, `trinity.session.fitness.LiveFitness` (a protocol: that
    module imports this one)."""

    @property
    def cfg(self) -> TrainConfig: ...

    @property
    def client(self) -> PoolClient: ...

    @property
    def models(self) -> list[str]: ...

    @property
    def objective(self) -> str: ...

    @property
    def incumbent(self) -> Incumbent | None: ...

    def run_sessions(
        self,
        thetas: np.ndarray,
        pairs: list[tuple[int, Question]],
        key_prefix: str,
        purpose: str = "train",
        on_step: Callable[[int, int], None] | None = None,
    ) -> list[Trajectory]: ...

    def _report_spend_risks(self) -> None: ...

    def _reward(self, traj: Trajectory) -> float: ...

    def competition_rewards(
        self, trajs: list[Trajectory], questions: list[Question], P: int, m: int
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]: ...

    def update_incumbent(
        self, gen: int, theta: np.ndarray, winner: np.ndarray, again: np.ndarray | None
    ) -> dict[str, float]: ...


def race_evaluate(
    fit: RaceFitness, gen: int, thetas: np.ndarray, questions: list[Question], hooks: GenerationHooks
) -> Evaluation:
    """One raced live generation (`fit`: a `trinity.session.fitness.LiveFitness`).

    Every candidate meets the generation's questions in the same order with the same sampling
    draws (common random numbers: the route sampling seed leaves the candidate out); stage by
    stage the better half goes on (`race_plan`). The incumbent — the best candidate so far, kept
    by the fitness — is evaluated again on all the generation's questions beside them; the
    generation's winner takes its place only when it beats the incumbent on those same questions.
    Returns rewards (P, m) with NaN where a candidate was eliminated before a question, and the
    race's ranking for the ES."""
    P, m = thetas.shape[0], len(questions)
    plan = race_plan(P, m)
    inc = fit.incumbent
    rows = thetas if inc is None else np.vstack([thetas, np.asarray(inc["theta"], dtype=np.float64)[None, :]])
    rewards = np.full((P, m), np.nan)
    inc_rewards = np.full(m, np.nan)
    level = np.zeros(P, dtype=np.int64)
    cand_turns, cand_n = np.zeros(P), np.zeros(P)  # turns of each candidate's own sessions
    first_model: list[int] = []
    first_role: list[int] = []
    trajs_all: list[Trajectory] = []
    met: dict[int, dict[int, Trajectory]] = {}  # row -> question index -> its session (rows: candidates, P = incumbent)
    competition = fit.objective == "competition"
    parts_of: dict[int, dict[str, float]] = {}  # --objective competition: each row's score parts so far
    total = sum(n * (s - b) for (n, s), b in zip(plan, [0] + [s for _, s in plan[:-1]])) + (m if inc else 0)
    done_before = 0
    alive = list(range(P))
    before = 0
    fit.client.start_window()
    for k, (n, seen_to) in enumerate(plan):
        if k:
            mean = np.nanmean(rewards[alive][:, :before], axis=1)
            order = sorted(range(len(alive)), key=lambda j: (-mean[j], alive[j]))
            alive = sorted(alive[j] for j in order[:n])
            level[alive] = k
        cands = alive + ([P] if inc is not None else [])
        batch = list(range(before, seen_to))
        pairs = [(c, questions[j]) for c in cands for j in batch]
        n_pairs = len(pairs)

        def on_step(turn: int, done: int, _n: int = n_pairs, _b: int = done_before) -> None:
            T = fit.cfg.max_turns
            hooks.progress(_b + int((done * T + (_n - done) * turn) / T), total)

        trajs = fit.run_sessions(rows, pairs, f"g{gen}", on_step=on_step)
        done_before += n_pairs
        fit._report_spend_risks()
        failing = fit.client.failing(fit.cfg.fail_threshold)
        if failing is not None:
            raise failing
        for (c, q), t, j in zip(pairs, trajs, [j for _ in cands for j in batch]):
            met.setdefault(c, {})[j] = t
            if c != P:
                cand_turns[c] += len(t.turns)
                cand_n[c] += 1
                first_model.append(fit.models.index(t.turns[0].model) if t.turns else 0)
                first_role.append(ROLES.index(t.turns[0].role) if t.turns else 0)
            rec = trace_record(t, q, gen, mode="live")
            if c == P:
                rec["incumbent"] = True
            hooks.trace(rec)
            trajs_all.append(t)
        # each row's rewards over every question it has met: under the competition's score a
        # row's efficiency term is its own sessions' mean turns, so it is recomputed as they grow
        for c in cands:
            js = sorted(met[c])
            if competition:
                row, parts = fit.competition_rewards([met[c][j] for j in js], [questions[j] for j in js], 1, len(js))
                values = row[0]
                parts_of[c] = {k: float(v[0]) for k, v in parts.items()}
            else:
                values = np.array([fit._reward(met[c][j]) for j in js], dtype=np.float64)
            if c == P:
                inc_rewards[js] = values
            else:
                rewards[c, js] = values
        before = seen_to
    hooks.progress(total, total)
    hooks.choices(np.array(first_model), np.array(first_role))
    ranking = _ranking(rewards, level)
    winner = int(np.argmax(ranking))
    extra = fit.update_incumbent(gen, thetas[winner], rewards[winner], inc_rewards if inc is not None else None)
    extra["race_sessions"] = float(len(trajs_all))
    n_correct = sum(bool(t.correct) for t in trajs_all)
    cost = float(sum(t.cost_usd for t in trajs_all))
    stats = GenerationStats(
        avg_turns=float(np.mean([len(t.turns) for t in trajs_all])),
        candidate_turns=cand_turns / np.maximum(cand_n, 1),
        accuracy=n_correct / len(trajs_all) if trajs_all else None,
        cost_per_correct=cost / n_correct if n_correct else None,
        extra=extra,
        score_parts=(
            {k: np.array([parts_of[c][k] for c in range(P)]) for k in parts_of[0]} if competition and parts_of else None
        ),
    )
    dead = fit.client.unreachable()
    if dead is not None:
        raise dead
    return Evaluation(rewards, stats, ranking=ranking)
