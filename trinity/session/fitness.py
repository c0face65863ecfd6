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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import numpy.typing as npt

from trinity.benchmarks.prompts import cached_messages
from trinity.competition.profiles import get_profile
from trinity.competition.protocol import get_protocol
from trinity.competition.text import resolve_competition, router_text
from trinity.config import TrainConfig
from trinity.data.questions import Question
from trinity.grading import grade_question
from trinity.model import ROLES
from trinity.session.evaluation import Evaluation, GenerationHooks, GenerationStats, LogFn
from trinity.session.live import open_live_run
from trinity.session.loop import SessionRunner, SessionSpec, trace_record
from trinity.session.racing import Incumbent, race_evaluate
from trinity.session.shards import LogitsFn, ShardedLogits, has_session_encoder, shards_of_pairs
from trinity.session.transcript import Trajectory

if TYPE_CHECKING:
    from trinity.runs.rundir import RunDir


class LiveRouter(Protocol):
    """What live sessions need of a router: `trinity.model.router.Router` (whose
    `session_encoder` they use when it has one, `trinity.session.shards`), or a fixed-policy
    stand-in with only `paired_logits` (`trinity.analysis.live.FixedPolicy`)."""

    def paired_logits(
        self, thetas: npt.ArrayLike, texts: list[str], candidate_of_text: npt.ArrayLike
    ) -> np.ndarray: ...


def live_reward(correct: float, turns: int, cost_usd: float, lambda_turns: float, lambda_cost: float) -> float:
    """correct − λ_turns·(turns − 1)/4 − λ_cost·cost (issue 14). With the default
    λ_turns = 0.1 a 5-turn session must be right 0.1 more often than a 1-turn one to pay: the
    weight TinyRouter gives efficiency, 0.10·(5 − avg_turns)/4·live_acc, against the ~0.85 that
    accuracy carries (cached + live)."""
    span = 4  # = MAX_TURNS - 1: TinyRouter's efficiency term divides by 4 whatever the session length
    return float(correct) - lambda_turns * max(0, turns - 1) / span - lambda_cost * float(cost_usd)


class LiveFitness:
    """The `trinity.optim.fitness.Fitness` protocol over live sessions. Owns one `LiveRun`
    (client, ledger, journal, cache, budget, event loop, practice server) until `close()`."""

    mode = "live"

    def __init__(self, cfg: TrainConfig, run: RunDir, router: LiveRouter, models: list[str]) -> None:
        self.cfg, self.run, self.router = cfg, run, router
        self.models = list(models)
        # the run's competition (trinity.optim.engine sets it in the config; old runs: by the pool)
        self.competition = resolve_competition(cfg.competition, cfg.pool)
        self._text = router_text(self.competition).question_input

        self.protocol = get_protocol(cfg.protocol)
        # what a candidate is scored by: the competition's own score, or our reward
        self.objective = cfg.objective or "reward"
        self.scoring = get_profile(self.competition).scoring
        self._cached: dict[tuple[str, str], bool] = {}  # (qid, model) -> its cached answer is right
        self.live = open_live_run(cfg, run, models)  # the pool's model order checked first
        self.pool = self.live.pool
        self.ledger, self.journal, self.cache = self.live.ledger, self.live.journal, self.live.cache
        self.budget, self.client = self.live.budget, self.live.client
        if self.live.in_flight_at_open:
            n = len(self.live.in_flight_at_open)
            run.log(
                f"{n} paid call(s) were in flight when this run was last stopped (sent, never recorded): the "
                f"provider may have billed them; they are made again now",
                "warning",
            )
        self._reported = (0, 0)  # (lost mid-body, billed above reservation) already logged
        # the race recipe's best candidate so far, re-evaluated every generation (trinity.session.racing)
        self.incumbent: Incumbent | None = None

    # The run's spend is what its ledger says: journal replays after a resume cost nothing new.
    @property
    def cost_usd(self) -> float:
        return self.ledger.total_usd

    @property
    def calls(self) -> int:
        return self.ledger.n_records

    def _reward(self, traj: Trajectory) -> float:
        r = 1.0 if traj.correct else 0.0
        # turn- and cost-aware reward (issue 14): trinity.session.fitness.live_reward
        r = live_reward(r, len(traj.turns), traj.cost_usd, self.cfg.lambda_turns, self.cfg.lambda_cost)
        if self.cfg.shaping:  # off by default; recorded in the run's config when on
            r += self.cfg.format_bonus * (traj.answer is not None)
            r -= self.cfg.turn_penalty * max(0, len(traj.turns) - 1)
        return r

    def _logits_fn(self, thetas: np.ndarray, pairs: list[tuple[int, Question]]) -> LogitsFn:
        """The router's incremental session encoder for this population (a turn reads only its new
        tokens), shard by shard as `--workers N` cuts them (`trinity.session.shards`), or its
        paired path when it has none (a fixed-policy stand-in)."""
        router = self.router
        if has_session_encoder(router):
            shard_of, n = shards_of_pairs(pairs)
            return ShardedLogits(router, thetas, shard_of, n)
        return lambda texts, cands, streams: router.paired_logits(thetas, texts, cands)

    def run_sessions(
        self,
        thetas: np.ndarray,
        pairs: list[tuple[int, Question]],
        key_prefix: str,
        purpose: str = "train",
        on_step: Callable[[int, int], None] | None = None,
    ) -> list[Trajectory]:
        spec = SessionSpec(
            self.models,
            purpose=purpose,
            max_turns=self.cfg.max_turns,
            policy=self.cfg.policy,
            temperature=self.cfg.temperature,
            seed=self.cfg.seed,
            key_prefix=key_prefix,
            competition=self.competition,
            protocol=self.cfg.protocol,
            schedule=self.cfg.live_schedule,
            # common random numbers across a generation's candidates; never across an evaluation's
            # repeats (`trinity eval --samples K`), which must be independent draws
            crn=self.cfg.live_recipe == "race" and purpose == "train",
        )
        runner = SessionRunner(self.client, self._logits_fn(thetas, pairs), spec, on_step=on_step)
        return self.live.run(runner.run(pairs))

    def warm_up(self, questions: list[Question], log: LogFn) -> None:
        pass  # sessions encode their transcripts incrementally, turn by turn (SessionEncoder)

    def texts(self, questions: list[Question]) -> list[str]:
        """Turn-1 encoder inputs in the run's competition format (the label warm start fits on them)."""
        return [self._text(q) for q in questions]

    def evaluate(self, gen: int, thetas: np.ndarray, questions: list[Question], hooks: GenerationHooks) -> Evaluation:
        if self.cfg.live_recipe == "race":
            return race_evaluate(self, gen, thetas, questions, hooks)
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
        failing = self.client.failing(self.cfg.fail_threshold)
        if failing is not None:
            raise failing  # most calls failed: this generation's rewards are not answers
        hooks.progress(total, total)
        score_parts = None
        if self.objective == "competition":
            rewards, score_parts = self.competition_rewards(trajs, questions, P, m)
        else:
            rewards = np.array([self._reward(t) for t in trajs], dtype=np.float64).reshape(P, m)
        first_model = np.array([self.models.index(t.turns[0].model) if t.turns else 0 for t in trajs]).reshape(P, m)
        first_role = np.array([ROLES.index(t.turns[0].role) if t.turns else 0 for t in trajs]).reshape(P, m)
        hooks.choices(first_model, first_role)
        n_correct = sum(bool(t.correct) for t in trajs)
        gen_cost = float(sum(t.cost_usd for t in trajs))  # cache hits and journal replays cost 0
        stats = GenerationStats(
            avg_turns=float(np.mean([len(t.turns) for t in trajs])),
            candidate_turns=np.array([len(t.turns) for t in trajs], dtype=np.float64).reshape(P, m).mean(axis=1),
            accuracy=n_correct / len(trajs) if trajs else None,  # graded correctness, before penalties
            cost_per_correct=gen_cost / n_correct if n_correct else None,
            score_parts=score_parts,
        )
        for (_c, q), t in zip(pairs, trajs):
            hooks.trace(trace_record(t, q, gen, mode="live"))
        dead = self.client.unreachable()
        if dead is not None:
            # rewards of calls that reached no model are not answers: the trainer keeps nothing
            # of this generation (the last checkpoint stands) and stops; a resume redoes it
            raise dead
        return Evaluation(rewards, stats)

    # ---- --objective competition ----------------------------------------------------------------

    def cached_correct(self, items: list[tuple[Question, str]]) -> dict[tuple[str, str], bool]:
        """Whether `model`'s cached answer to each question is right: one Worker turn on an empty
        transcript under the run's protocol (for TinyRouter: how `build_benchmark` caches the
        answers its 70% part scores), asked once per (question, model) and kept (the call
        journal keeps it over a resume). A failed call counts as an empty answer, as theirs does."""
        need = {(q.id, model): (q, model) for q, model in items if (q.id, model) not in self._cached}

        async def ask(q: Question, model: str) -> tuple[str, str, bool, bool]:
            res = await self.client.chat(
                model,
                cached_messages(self.protocol, q),
                purpose="train",
                journal_key=f"cached/{self.protocol.name}/{q.id}/{model}",
                **self.protocol.cached_kwargs(),
            )
            if not res.ok:
                return q.id, model, False, False
            v = await asyncio.to_thread(grade_question, q, res.text or "")
            return q.id, model, bool(v.correct), True

        async def ask_all() -> list[tuple[str, str, bool, bool]]:
            return await asyncio.gather(*(ask(q, mdl) for q, mdl in need.values()))

        for qid, model, correct, ok in self.live.run(ask_all()) if need else []:
            if ok:
                self._cached[(qid, model)] = correct
        return {(q.id, model): self._cached.get((q.id, model), False) for q, model in items}

    def competition_rewards(
        self, trajs: list[Trajectory], questions: list[Question], P: int, m: int
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(P, m) rewards whose row means are each candidate's competition score on the minibatch,
        and the score's parts per candidate. TinyRouter (pr_eval): 0.70 × the cached accuracy of
        the model each session picked at turn 1 + 0.15 × live accuracy + 0.10 × efficiency (a
        failed session counts `max_turns` turns) + 0.05 × novelty (neutral: no king here); a
        question's reward carries its own cached and live terms and the candidate's efficiency.
        MiniRouter (promotion): the pass rate."""
        sc = self.scoring
        live = np.array([1.0 if t.correct else 0.0 for t in trajs]).reshape(P, m)
        turns = np.array(
            [float(self.cfg.max_turns if t.failed else len(t.turns)) for t in trajs], dtype=np.float64
        ).reshape(P, m)
        live_acc, avg_turns = live.mean(axis=1), turns.mean(axis=1)
        if sc.rule != "pr_eval":
            parts = [sc.parts(None, float(live_acc[c]), float(avg_turns[c])) for c in range(P)]
            return live, {k: np.array([p[k] for p in parts]) for k in parts[0]}
        qs = [q for _c in range(P) for q in questions]
        first = [(q, t.turns[0].model) for q, t in zip(qs, trajs) if t.turns]
        known = self.cached_correct(first)
        cached = np.array(
            [float(known.get((q.id, t.turns[0].model), False)) if t.turns else 0.0 for q, t in zip(qs, trajs)]
        ).reshape(P, m)
        parts = [sc.parts(float(cached[c].mean()), float(live_acc[c]), float(avg_turns[c])) for c in range(P)]
        eff = np.array([p["efficiency"] for p in parts])
        nov = np.array([p["novelty"] for p in parts])
        rewards = sc.w_cached * cached + sc.w_live * live + (sc.w_efficiency * eff + sc.w_novelty * nov)[:, None]
        return rewards, {k: np.array([p[k] for p in parts]) for k in parts[0]}

    def _report_spend_risks(self) -> None:
        st = self.client.stats
        lost, excess = st.lost_mid_body, st.excess_calls
        if lost > self._reported[0]:
            self.run.log(
                f"{lost - self._reported[0]} answer(s) lost after the request went out (reset mid-body, "
                "read timeout, body over the cap): the provider may have billed them; worst case so far "
                f"${st.lost_worst_micro_usd / 1e6:.6f} (see journal.sent.jsonl)",
                "warning",
            )
        if excess > self._reported[1]:
            self.run.log(
                f"the provider billed ${st.excess_micro_usd / 1e6:.6f} above the reserved worst case on "
                f"{excess} call(s) so far (the budget cap may be passed by that much)",
                "warning",
            )
        self._reported = (lost, excess)

    def validate(self, thetas: np.ndarray, questions: list[Question]) -> None:
        return None  # validation in live mode costs money: `trinity eval --mode live` does it on request

    def update_incumbent(
        self, gen: int, theta: np.ndarray, winner: np.ndarray, again: np.ndarray | None
    ) -> dict[str, float]:
        """The race's winner (its rewards on all the generation's questions) against the incumbent
        (`again`: its rewards on the same questions this generation): the winner takes its place
        only when its mean is higher on them; the incumbent keeps the mean of all its evaluations.
        Returns the generation record's fields."""
        w = float(np.mean(winner))
        inc = self.incumbent
        if inc is None or again is None or w > float(np.mean(again)):
            self.incumbent = {
                "theta": np.asarray(theta, dtype=np.float64).copy(),
                "gen": gen,
                "sum": w * len(winner),
                "n": len(winner),
            }
            replaced = 1.0
        else:
            inc["sum"] += float(np.sum(again))
            inc["n"] += len(again)
            replaced = 0.0
        cur = self.incumbent
        assert cur is not None
        return {
            "incumbent_gen": float(cur["gen"]),
            "incumbent_reward": float(cur["sum"] / max(cur["n"], 1)),
            "incumbent_evals": float(cur["n"]),
            "incumbent_replaced": replaced,
        }

    def state_dict(self) -> dict[str, Any]:
        # the call journal on disk is the live state that must survive a resume; and the incumbent
        return {} if self.incumbent is None else {"incumbent": dict(self.incumbent)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        inc = state.get("incumbent") if isinstance(state, dict) else None
        self.incumbent = cast(Incumbent, dict(inc)) if inc else None

    def close(self) -> None:
        self.live.close()


def make_live_fitness(
    cfg: TrainConfig, run: RunDir, router: LiveRouter, inputs: object, models: list[str]
) -> LiveFitness:
    """The live fitness of a run (`inputs`, the run's `trinity.optim.inputs.RunInputs`, is not
    read: live sessions take their questions from the trainer)."""
    return LiveFitness(cfg, run, router, models)
