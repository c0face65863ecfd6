"""Live fitness: every candidate of a generation runs real multi-turn sessions against a pool.

The trainer calls `evaluate(gen, thetas, questions, hooks)`; here that becomes P × m sessions run
together by `SessionRunner` (one batched router call per turn step, all chat calls of the step in
flight at once, bounded by the pool's concurrency). Every paid call goes through the run's call
journal keyed by (generation, candidate, question, turn, model, role), so a resumed run replays
what it already paid for instead of buying it again; the ledger and the response cache sit
behind the same client.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import numpy as np

from trinity.data.questions import Question
from trinity.errors import ConfigError
from trinity.model import ROLES
from trinity.session.loop import SessionRunner, SessionSpec, trace_record

BASE_URL_ENV = "TRINITY_POOL_BASE_URL"


def resolve_pool(cfg: Any, run: Any | None = None):
    """The run's pool config; for the practice pool with no base URL, start a simulated server
    in this process (returned as the second value so the caller can stop it)."""
    from trinity.pool.providers import load_pool

    if not cfg.pool:
        raise ConfigError("live mode needs a pool: pass --pool practice|openrouter|chutes|<name>")
    base_url = getattr(cfg, "base_url", None) or os.environ.get(BASE_URL_ENV) or None
    server = None
    namespace = None
    if base_url is None and cfg.pool == "practice":
        import hashlib

        from trinity.pool.practice_server import start_practice_server

        server = start_practice_server(port=0)
        base_url = server.base_url
        # The in-process server gets a new port each time; its answers depend only on the practice
        # setup. Key the response cache on that setup, not the port: otherwise an answer that was a
        # cache hit the first time (so never journaled) is bought again by every later evaluation.
        setup = server.server.responder.setup
        namespace = "practice@simulated/" + hashlib.sha256(repr(
            (setup.seed, setup.question_spread, setup.models)).encode()).hexdigest()[:16]
        if run is not None:
            run.log(f"started the SIMULATED practice pool in the engine process at {base_url}")
    from trinity.pool.providers import config_prices

    return load_pool(cfg.pool, base_url=base_url, models=getattr(cfg, "pool_models", None),
                     cache_namespace=namespace, prices=config_prices(cfg),
                     read_timeout_s=getattr(cfg, "read_timeout_s", None)), server


def live_reward(correct: float, turns: int, cost_usd: float, lambda_turns: float, lambda_cost: float) -> float:
    """correct − λ_turns·(turns − 1)/4 − λ_cost·cost (issue 14). With the default
    λ_turns = 0.1 a 5-turn session must be right 0.1 more often than a 1-turn one to pay: the
    weight TinyRouter gives efficiency, 0.10·(5 − avg_turns)/4·live_acc, against the ~0.85 that
    accuracy carries (cached + live)."""
    span = 4  # = MAX_TURNS - 1: TinyRouter's efficiency term divides by 4 whatever the session length
    return float(correct) - lambda_turns * max(0, turns - 1) / span - lambda_cost * float(cost_usd)


class LiveFitness:
    mode = "live"

    def __init__(self, cfg: Any, run: Any, router: Any, models: list[str]):
        from trinity.pool.budget import run_budget
        from trinity.pool.cache import ResponseCache
        from trinity.pool.client import PoolClient
        from trinity.pool.journal import CallJournal
        from trinity.pool.ledger import Ledger

        self.cfg, self.run, self.router = cfg, run, router
        self.pool, self._server = resolve_pool(cfg, run)
        self.pool.require_prices()  # no call whose worst case cannot be reserved
        if list(self.pool.models) != list(models):
            raise ConfigError(f"pool {self.pool.name!r} models {list(self.pool.models)} differ from the run's "
                              f"model order {list(models)}; θ rows follow the matrix/pool order")
        self.models = list(models)
        from trinity.competition.text import resolve_competition

        # the run's competition (trinity.optim.engine sets it in the config; old runs: by the pool)
        self.competition = resolve_competition(getattr(cfg, "competition", None), getattr(cfg, "pool", None))
        self.ledger = Ledger(run.ledger, run.id)
        self.journal = CallJournal(run.journal)
        self.cache = ResponseCache(getattr(cfg, "cache_path", None) or None)
        self.budget = run_budget(cfg.budget_usd, spent_usd=self.ledger.total_usd)
        self.loop = asyncio.new_event_loop()
        self.client = PoolClient(self.pool, run_id=run.id, ledger=self.ledger, cache=self.cache,
                                 budget=self.budget, journal=self.journal, seed=cfg.seed)
        self.loop.run_until_complete(self.client.__aenter__())
        self.avg_turns: float | None = None
        if self.journal.in_flight_at_open:
            n = len(self.journal.in_flight_at_open)
            run.log(f"{n} paid call(s) were in flight when this run was last stopped (sent, never recorded): the "
                    f"provider may have billed them; they are made again now", "warning")
        self._reported = (0, 0)  # (lost mid-body, billed above reservation) already logged
        self.accuracy: float | None = None
        self.cost_per_correct: float | None = None
        self.candidate_turns: np.ndarray | None = None  # (P,) mean turns of each candidate, last generation

    # The run's spend is what its ledger says: journal replays after a resume cost nothing new.
    @property
    def cost_usd(self) -> float:
        return self.ledger.total_usd

    @property
    def calls(self) -> int:
        return self.ledger.n_records

    def _reward(self, traj) -> float:
        r = 1.0 if traj.correct else 0.0
        # turn- and cost-aware reward (issue 14): trinity.session.fitness.live_reward
        r = live_reward(r, len(traj.turns), traj.cost_usd, getattr(self.cfg, "lambda_turns", 0.0),
                        getattr(self.cfg, "lambda_cost", 0.0))
        if self.cfg.shaping:  # off by default; recorded in the run's config when on
            r += self.cfg.format_bonus * (traj.answer is not None)
            r -= self.cfg.turn_penalty * max(0, len(traj.turns) - 1)
        return r

    def _logits_fn(self, thetas: np.ndarray):
        """The router's incremental session encoder for this population (a turn reads only its new
        tokens), or its paired path when it has none (a fixed-policy stand-in)."""
        make = getattr(self.router, "session_encoder", None)
        if make is not None:
            return make(thetas).logits
        return lambda texts, cands, streams: self.router.paired_logits(thetas, texts, cands)

    def run_sessions(self, thetas: np.ndarray, pairs: list[tuple[int, Question]], key_prefix: str,
                     purpose: str = "train", on_step=None):
        spec = SessionSpec(self.models, purpose=purpose, max_turns=self.cfg.max_turns,
                           policy=self.cfg.policy, temperature=self.cfg.temperature, seed=self.cfg.seed,
                           key_prefix=key_prefix, competition=self.competition)
        runner = SessionRunner(self.client, self._logits_fn(thetas), spec, on_step=on_step)
        return self.loop.run_until_complete(runner.run(pairs))

    def evaluate(self, gen: int, thetas: np.ndarray, questions: list[Question], hooks) -> np.ndarray:
        P, m = thetas.shape[0], len(questions)
        pairs = [(c, q) for c in range(P) for q in questions]
        total = len(pairs)
        T = self.cfg.max_turns

        def on_step(turn: int, done: int) -> None:
            # Progress in session-turns: a finished session counts whole, an active one by the
            # turns it has had; so the bar moves every turn step, not only when sessions end.
            hooks.progress(int((done * T + (total - done) * turn) * total / (total * T)), total)

        self.client.start_window()
        trajs = self.run_sessions(thetas, pairs, f"g{gen}", on_step=on_step)
        self._report_spend_risks()
        failing = self.client.failing(getattr(self.cfg, "fail_threshold", 0.5))
        if failing is not None:
            raise failing  # most calls failed: this generation's rewards are not answers
        hooks.progress(total, total)
        rewards = np.array([self._reward(t) for t in trajs], dtype=np.float64).reshape(P, m)
        first_model = np.array([self.models.index(t.turns[0].model) if t.turns else 0 for t in trajs]).reshape(P, m)
        first_role = np.array([ROLES.index(t.turns[0].role) if t.turns else 0 for t in trajs]).reshape(P, m)
        hooks.choices(first_model, first_role)
        self.avg_turns = float(np.mean([len(t.turns) for t in trajs]))
        self.candidate_turns = np.array([len(t.turns) for t in trajs], dtype=np.float64).reshape(P, m).mean(axis=1)
        n_correct = sum(bool(t.correct) for t in trajs)
        self.accuracy = n_correct / len(trajs) if trajs else None  # graded correctness, before penalties
        gen_cost = float(sum(t.cost_usd for t in trajs))  # cache hits and journal replays cost 0
        self.cost_per_correct = gen_cost / n_correct if n_correct else None
        for (_c, q), t in zip(pairs, trajs):
            hooks.trace(trace_record(t, q, gen, mode="live"))
        return rewards

    def _report_spend_risks(self) -> None:
        st = self.client.stats
        lost, excess = st.lost_mid_body, st.excess_calls
        if lost > self._reported[0]:
            self.run.log(f"{lost - self._reported[0]} answer(s) lost after the request went out (reset mid-body, "
                         "read timeout, body over the cap): the provider may have billed them; worst case so far "
                         f"${st.lost_worst_micro_usd / 1e6:.6f} (see journal.sent.jsonl)", "warning")
        if excess > self._reported[1]:
            self.run.log(f"the provider billed ${st.excess_micro_usd / 1e6:.6f} above the reserved worst case on "
                         f"{excess} call(s) so far (the budget cap may be passed by that much)", "warning")
        self._reported = (lost, excess)

    def validate(self, thetas: np.ndarray, questions: list[Question]) -> None:
        return None  # validation in live mode costs money: `trinity eval --mode live` does it on request

    def state_dict(self) -> dict[str, Any]:
        return {}  # the call journal on disk is the live state that must survive a resume

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.client.aclose())
        finally:
            self.loop.close()
            self.ledger.close()
            self.journal.close()
            self.cache.close()
            if self._server is not None:
                self._server.stop()


def make_live_fitness(cfg: Any, run: Any, router: Any, inputs: Any, models: list[str]) -> LiveFitness:
    return LiveFitness(cfg, run, router, models)
