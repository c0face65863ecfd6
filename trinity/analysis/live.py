"""Live-mode evaluation and baselines: full sessions against a pool, through the session runner.

Every call goes through the pool client, so the response cache, the budget and the ledger apply
(purpose "eval"). This module only decides *what* to run and turns trajectories into numbers;
running sessions is `trinity.session.live.run_sessions`, with this contract:

    run_sessions(questions, logits_fn, *, models, run_dir, pool, purpose="eval", max_turns,
                 repeats=1, key_prefix, progress=None) -> list[Trajectory]

`pool` is a `trinity.pool.providers.PoolConfig` (resolved here with `load_pool(name, base_url=…)`);
`logits_fn(texts, candidates) -> (N, n_models + 3)` as for `SessionRunner`; the result holds
`len(questions) * repeats` trajectories, question-major (q0 r0, q0 r1, …), each with `.correct`,
`.turns` and `.cost_usd`. Where that function is absent, live mode fails with one clear line.

Baselines are single-turn Worker sessions of one fixed model with the router's token budget;
random routing is computed from them (at temperature 0 a single-turn random router asks exactly
those requests, which the response cache answers for free).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from trinity.data.questions import Question
from trinity.errors import InputError, TrinityError
from trinity.runs.rundir import RunDir

Progress = Callable[[int, int, str], None]
WORKER = 1  # role index of Worker in (Thinker, Worker, Verifier)


def session_api():
    try:
        from trinity.session.live import run_sessions
    except ImportError as e:
        raise TrinityError("live mode needs trinity.session.live.run_sessions (the live session runner), "
                           f"which this install lacks ({e}); use --mode cached / --matrix for now") from None
    return run_sessions


def fixed_logits(model: int, n_models: int, role: int = WORKER) -> Callable:
    """A logits function that always picks `model` as `role` (an always-model-X baseline)."""
    row = np.full(n_models + 3, -1.0)
    row[model] = 1.0
    row[n_models + role] = 1.0

    def logits_fn(texts, candidates=None):  # (N, n_models + 3)
        return np.tile(row, (len(texts), 1))

    return logits_fn


def outcomes(trajs: list, n_questions: int, repeats: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Trajectories (question-major) → per-question mean correctness, mean turns, total cost, each (Q,)."""
    if len(trajs) != n_questions * repeats:
        raise TrinityError(f"the session runner returned {len(trajs)} sessions for {n_questions} questions "
                           f"× {repeats} repeats")
    correct = np.array([1.0 if t.correct else 0.0 for t in trajs]).reshape(n_questions, repeats)
    turns = np.array([len(t.turns) for t in trajs], dtype=np.float64).reshape(n_questions, repeats)
    cost = np.array([float(t.cost_usd) for t in trajs]).reshape(n_questions, repeats)
    return correct.mean(axis=1), turns.mean(axis=1), cost.sum(axis=1)


def resolve_pool(name: str | None, base_url: str | None = None):
    """The pool's config (models, endpoint, prices) by name; `base_url` overrides the endpoint."""
    if not name:
        raise InputError("live mode needs a pool: pass --pool NAME (see configs/models.yaml)")
    from trinity.pool.providers import load_pool

    return load_pool(name, base_url=base_url)


def always_model_live(questions: list[Question], models: list[str], *, run_dir: RunDir, pool,
                      repeats: int = 1, progress: Progress | None = None):
    """(Q, M) correctness, turns and costs of each single model answering as a one-turn Worker."""
    run_sessions = session_api()
    q, m = len(questions), len(models)
    correct, turns, costs = np.zeros((q, m)), np.zeros((q, m)), np.zeros((q, m))
    for j, name in enumerate(models):
        if progress:
            progress(j, m, f"always {name}: {q} questions × {repeats}")
        trajs = run_sessions(questions, fixed_logits(j, m), models=list(models), run_dir=run_dir, pool=pool,
                             purpose="eval", max_turns=1, repeats=repeats, key_prefix=f"eval/always-{j}")
        correct[:, j], turns[:, j], costs[:, j] = outcomes(trajs, q, repeats)
    if progress:
        progress(m, m, "baselines done")
    return correct, turns, costs


def live_baselines(questions: list[Question], models: list[str], *, run_dir: RunDir, pool,
                   split: str, source: str, repeats: int = 1, seeds: int = 100, seed: int = 0,
                   bootstrap: int = 2000, progress: Progress | None = None):
    from trinity.analysis.baselines import baselines_from_outcomes

    correct, turns, costs = always_model_live(questions, models, run_dir=run_dir, pool=pool, repeats=repeats,
                                              progress=progress)
    rep = baselines_from_outcomes(correct, models, benchmark=questions[0].benchmark, split=split, source=source,
                                  mode="live", turns=turns, costs=costs,
                                  cost_source=f"live: the ledger of {run_dir.path} (cache hits cost $0)",
                                  seeds=seeds, seed=seed, bootstrap=bootstrap, progress=progress)
    rep.notes.append("random routing = a uniformly random single-turn Worker per question, computed from the "
                     "live always-model answers (what the response cache serves a temperature-0 random router)")
    return rep


def evaluate_live(run: RunDir, *, split: str, samples: int, seed: int, seeds: int, bootstrap: int,
                  pool: str | None, base_url: str | None = None, progress: Progress | None = None):
    """Router sessions (up to the run's max_turns) and single-model baselines, `samples` each."""
    from trinity.analysis.evaluate import compare_router, load_router
    from trinity.optim.runinputs import load_run_inputs

    run_sessions = session_api()
    meta = run.read_meta()
    inputs = load_run_inputs(run)
    if split not in inputs.splits or not inputs.splits[split]:
        raise InputError(f"{run.path}: the {split} split is missing or empty")
    by_id = {qq.id: qq for qq in inputs.questions}
    questions = [by_id[i] for i in inputs.splits[split]]
    models = list(meta.get("models") or (inputs.matrix.models if inputs.matrix else []))
    if not models:
        raise InputError(f"{run.run_json} lists no models; it is not a trained run")
    pool_name = pool or meta.get("pool")
    if isinstance(pool_name, dict):  # run.json may hold the pool's description
        pool_name = pool_name.get("name")
    pool = resolve_pool(pool_name, base_url)
    max_turns = int((meta.get("config") or {}).get("max_turns", 5))
    router = load_router(run.path)
    if progress:
        progress(0, 1, f"router sessions: {len(questions)} questions × {samples}")
    def router_logits(texts, candidates=None):  # (N, M + 3): the run's θ on the encoder
        return np.asarray(router.router.population_logits(router.theta[None, :], list(texts)))[0]

    trajs = run_sessions(questions, router_logits, models=models, run_dir=run, pool=pool, purpose="eval",
                         max_turns=max_turns, repeats=samples, key_prefix="eval/router")
    router_q, router_turns, router_costs = outcomes(trajs, len(questions), samples)
    first = [t.turns[0] if t.turns else None for t in trajs[::samples]]
    model_idx = np.array([models.index(t.model) if t else 0 for t in first])
    role_idx = np.array([("Thinker", "Worker", "Verifier").index(t.role) if t else WORKER for t in first])
    correct, turns, costs = always_model_live(questions, models, run_dir=run, pool=pool, repeats=samples,
                                              progress=progress)
    return compare_router(router_q, correct, models, model_idx=model_idx, role_idx=role_idx,
                          ids=[qq.id for qq in questions], benchmarks=[qq.benchmark for qq in questions],
                          split=split, source=f"the {split} split recorded in {run.run_json}", mode="live",
                          run=str(run.path), router_turns=router_turns, router_costs=router_costs,
                          baseline_turns=turns, baseline_costs=costs,
                          cost_source=f"live: the ledger of {run.path} (cache hits cost $0)", samples=samples,
                          seeds=seeds, seed=seed, bootstrap=bootstrap, progress=progress)
