"""Live-mode evaluation and baselines: full sessions against a pool, through the session package.

Sessions run on `trinity.session.fitness.LiveFitness` — the same pool client, call journal,
response cache, budget and hash-chained ledger that live training uses — with ledger purpose
"eval". Journal keys are `eval/<split>/<system>/c<repeat>/<qid>/t<turn>/<model>/<role>`, so a
re-run of the same evaluation replays what it already paid for. The practice pool needs no URL:
the session package starts the simulated server in-process.

Baselines are single-turn Worker sessions of one fixed model (the pool's decoding settings, so
the same token budget as the router); random routing is computed from them — at temperature 0
a single-turn random router asks exactly those requests, which the response cache serves free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np
import numpy.typing as npt

from trinity.analysis.baselines import baselines_from_outcomes
from trinity.competition.protocol import run_protocol
from trinity.competition.text import run_competition
from trinity.config import TrainConfig, validate_config
from trinity.data.questions import Question
from trinity.errors import InputError, TrinityError
from trinity.model import ROLES
from trinity.optim.routing import load_trained
from trinity.optim.runinputs import load_run_inputs
from trinity.runs.records import RunConfig
from trinity.runs.rundir import RunDir
from trinity.session.fitness import LiveFitness
from trinity.session.live import resolve_pool

if TYPE_CHECKING:
    from trinity.analysis.baselines import BaselineReport
    from trinity.session.fitness import LiveRouter
    from trinity.session.transcript import Trajectory

Progress = Callable[[int, int, str], None]
WORKER = ROLES.index("Worker")


class FixedPolicy:
    """A stand-in router that always picks (model, role): an always-model-X baseline."""

    def __init__(self, model: int, n_models: int, role: int = WORKER):
        self.row = np.full(n_models + 3, -1.0)
        self.row[model] = 1.0
        self.row[n_models + role] = 1.0

    def paired_logits(
        self, thetas: npt.ArrayLike, texts: list[str], candidate_of_text: npt.ArrayLike
    ) -> np.ndarray:  # (N, n_models + 3)
        return np.tile(self.row, (len(texts), 1))


def session_config(
    base: RunConfig | None,
    *,
    pool: str | None,
    base_url: str | None,
    max_turns: int | None = None,
    budget_usd: float | None = None,
) -> TrainConfig:
    """The run's resolved config (`base`, run.json's; None: no run; TrainConfig's defaults for what
    it lacks) made live, with these overrides; `policy` is always argmax (evaluation is argmax per
    group)."""
    if not (pool or (base is not None and base.pool)):
        raise InputError(
            "live mode needs a pool and the run's config names none (a cached run trains on a matrix): "
            "pass --pool NAME (see `trinity pool list`)"
        )
    cfg = base.to_json() if base is not None else {}  # the overrides `validate_config` resolves
    cfg["mode"] = "live"
    if pool:
        cfg["pool"] = pool
    if max_turns is not None:
        cfg["max_turns"] = max_turns
    if budget_usd is not None:
        cfg["budget_usd"] = budget_usd
    cfg["policy"] = "argmax"
    cfg["base_url"] = base_url
    return validate_config(cfg, where="the run's config")


def _outcomes(trajs: list[Trajectory], n_questions: int, repeats: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Trajectories in (repeat, question) order → per-question mean correctness, turns, summed cost."""
    if len(trajs) != n_questions * repeats:
        raise TrinityError(
            f"the session runner returned {len(trajs)} sessions for {n_questions} questions × {repeats} repeats"
        )
    correct = np.array([1.0 if t.correct else 0.0 for t in trajs]).reshape(repeats, n_questions)
    turns = np.array([len(t.turns) for t in trajs], dtype=np.float64).reshape(repeats, n_questions)
    cost = np.array([float(t.cost_usd) for t in trajs]).reshape(repeats, n_questions)
    return correct.mean(axis=0), turns.mean(axis=0), cost.sum(axis=0)


def run_system(
    cfg: TrainConfig,
    run: RunDir,
    policy: LiveRouter,
    theta: np.ndarray,
    models: list[str],
    questions: list[Question],
    repeats: int,
    key_prefix: str,
    progress: Progress | None = None,
    what: str = "sessions",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Trajectory]]:
    """Run `repeats` sessions per question for one system; returns (correct, turns, cost, trajectories)."""
    fit = LiveFitness(cfg, run, policy, list(models))
    try:
        thetas = np.tile(np.asarray(theta, dtype=np.float64), (repeats, 1))  # (R, D): one row per repeat
        pairs = [(r, q) for r in range(repeats) for q in questions]
        total = len(pairs)

        def on_step(turn: int, done: int) -> None:
            if progress:
                progress(done, total, what)

        trajs = fit.run_sessions(thetas, pairs, key_prefix, purpose="eval", on_step=on_step)
    finally:
        fit.close()
    failed = [t for t in trajs if getattr(t, "failed", False)]
    if trajs and len(failed) == len(trajs):  # all zeros would read as a measured accuracy of 0
        raise TrinityError(
            f"{what}: every one of {len(trajs)} live session(s) failed, so nothing was measured "
            f"(first: {failed[0].reason}); check the pool (--base-url, the key) and run again "
            "(calls already paid are reused from the journal)"
        )
    correct, turns, cost = _outcomes(trajs, len(questions), repeats)
    return correct, turns, cost, trajs


def failure_note(what: str, trajs: list[Trajectory]) -> list[str]:
    """A note when sessions had failed calls (they count as wrong answers, so say so)."""
    failed = [t for t in trajs if getattr(t, "failed", False)]
    if not failed:
        return []
    return [
        f"{what}: {len(failed)} of {len(trajs)} session(s) had a failed call and count as wrong "
        f"(first: {failed[0].reason})"
    ]


def cache_note(systems: list[tuple[str, list[Trajectory]]]) -> list[str]:
    """One note when response-cache hits ($0) make the cost column smaller than a cold run's."""
    parts = []
    for what, trajs in systems:
        turns = [u for t in trajs for u in getattr(t, "turns", [])]
        hits = sum(bool(getattr(u, "cache_hit", False)) for u in turns)
        if hits:
            parts.append(f"{what} {hits}/{len(turns)}")
    if not parts:
        return []
    return [
        f"response-cache hits cost $0 ({', '.join(parts)} calls): the cost shown is what was paid now, "
        "not what a cold run would pay"
    ]


def always_model_live(
    cfg: TrainConfig,
    run: RunDir,
    questions: list[Question],
    models: list[str],
    *,
    key_prefix: str,
    repeats: int = 1,
    progress: Progress | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(Q, M) correctness, turns and costs of each single model answering as a one-turn Worker,
    and notes on failed calls."""
    one_turn = cfg.model_copy(update={"max_turns": 1})
    q, m = len(questions), len(models)
    correct, turns, costs = np.zeros((q, m)), np.zeros((q, m)), np.zeros((q, m))
    notes: list[str] = []
    cached: list[tuple[str, list[Trajectory]]] = []
    for j, name in enumerate(models):
        correct[:, j], turns[:, j], costs[:, j], trajs = run_system(
            one_turn,
            run,
            FixedPolicy(j, m),
            np.zeros(1),
            models,
            questions,
            repeats,
            f"{key_prefix}/always-{j}",
            progress,
            f"always {name}",
        )
        notes += failure_note(f"always {name}", trajs)
        cached.append((f"always {name}", trajs))
    return correct, turns, costs, notes + cache_note(cached)


def live_baselines(
    questions: list[Question],
    *,
    run_dir: str,
    pool: str,
    base_url: str | None = None,
    split: str,
    source: str,
    repeats: int = 1,
    seeds: int = 100,
    seed: int = 0,
    bootstrap: int = 2000,
    budget_usd: float | None = None,
    progress: Progress | None = None,
) -> BaselineReport:
    """Live always-model-X and random routing on `questions`; calls are recorded in `run_dir`
    (its ledger, journal and the response cache) — an existing run or a new folder."""
    run = RunDir(run_dir)
    run.path.mkdir(parents=True, exist_ok=True)
    base = run.meta().config if run.exists() else None
    cfg = session_config(base, pool=pool, base_url=base_url, budget_usd=budget_usd)
    models = _pool_models(cfg)
    correct, turns, costs, failures = always_model_live(
        cfg, run, questions, models, key_prefix=f"eval/{split}", repeats=repeats, progress=progress
    )
    rep = baselines_from_outcomes(
        correct,
        models,
        benchmark=questions[0].benchmark,
        split=split,
        source=source,
        mode="live",
        turns=turns,
        costs=costs,
        cost_source=f"live: ledger of {run.path} (cache hits cost $0)",
        seeds=seeds,
        seed=seed,
        bootstrap=bootstrap,
        progress=progress,
    )
    rep.notes.append(
        "random routing = a uniformly random single-turn Worker per question, computed from the "
        "live always-model answers (what the response cache serves a temperature-0 random router)"
    )
    rep.notes += failures
    return rep


def _pool_models(cfg: TrainConfig) -> list[str]:
    """The pool's model ids in θ order (the session package resolves the pool, starting the
    simulated practice server when needed; it is stopped again here)."""
    pool, server = resolve_pool(cfg)
    if server is not None:
        server.stop()
    return list(pool.models)


@dataclass
class LiveEval:
    """What `evaluate_live` measured on a run's split, for `trinity.analysis.evaluate.compare_router`."""

    router_q: np.ndarray  # (Q,) the router's mean correctness per question
    per_q_model: np.ndarray  # (Q, M) each model's, as a one-turn Worker
    models: list[str]
    model_idx: np.ndarray  # (Q,) the router's first-turn model
    role_idx: np.ndarray  # (Q,) and role
    questions: list[Question]
    router_turns: np.ndarray
    router_costs: np.ndarray
    baseline_turns: np.ndarray
    baseline_costs: np.ndarray
    cost_source: str
    notes: list[str] = field(default_factory=list)


def evaluate_live(
    run: RunDir,
    *,
    split: str,
    samples: int,
    pool: str | None,
    base_url: str | None = None,
    budget_usd: float | None = None,
    progress: Progress | None = None,
) -> LiveEval:
    """Router sessions (up to the run's max_turns) and single-model baselines, `samples` each.
    The run's budget cap (or `budget_usd`) covers the run's whole ledger, training included."""
    meta = run.meta()
    inputs = load_run_inputs(run)
    if split not in inputs.splits or not inputs.splits[split]:
        raise InputError(f"{run.path}: the {split} split is missing or empty")
    by_id = {qq.id: qq for qq in inputs.questions}
    questions = [by_id[i] for i in inputs.splits[split]]
    models = list(meta.models)
    if not models:
        raise InputError(f"{run.run_json} lists no models; it is not a trained run")
    cfg = session_config(meta.config, pool=pool, base_url=base_url, budget_usd=budget_usd)

    proto = run_protocol(
        meta.to_json()
    ).name  # the competition layer reads run.json's JSON  # the protocol its sessions ran under (older runs: open)
    cfg = cfg.model_copy(
        update={"competition": run_competition(meta.to_json()), "protocol": None if proto == "open" else proto}
    )  # the text the head was trained on, whatever --pool says
    router = load_trained(run.path)
    correct_r, turns_r, cost_r, trajs = run_system(
        cfg,
        run,
        router.router,
        router.theta,
        models,
        questions,
        samples,
        f"eval/{split}/router",
        progress,
        "router sessions",
    )
    first = [t.turns[0] if t.turns else None for t in trajs[: len(questions)]]  # repeat 0, turn 1
    model_idx = np.array([models.index(t.model) if t else 0 for t in first])
    role_idx = np.array([ROLES.index(t.role) if t else WORKER for t in first])
    correct, turns, costs, failures = always_model_live(
        cfg, run, questions, models, key_prefix=f"eval/{split}", repeats=samples, progress=progress
    )
    notes = [
        f"live: {samples} session(s) per question and system, pool {cfg.pool}; baselines are "
        "single-turn Worker sessions"
    ]
    notes += failure_note("router", trajs) + cache_note([("router", trajs)]) + failures
    if samples > 1:
        notes.append(
            "repeats at temperature 0 are answered by the response cache (the same answer, $0); "
            "they add information only when the pool samples (temperature > 0)"
        )
    return LiveEval(
        correct_r,
        correct,
        models,
        model_idx,
        role_idx,
        questions,
        turns_r,
        cost_r,
        turns,
        costs,
        f"live: ledger of {run.path} (cache hits cost $0)",
        notes,
    )
