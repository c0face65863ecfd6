"""Live training over Ray actors (`trinity train --mode live --workers N [--ray-address HOST:PORT]`).

The driver keeps everything that touches money: the pool client, the run's hash-chained ledger,
the call journal, the response cache and the budget (the run's, inside the sweep's shared one
when the run is a sweep trial) stay in `LiveRun`, one writer per run, and every chat call is
made there, asynchronously, bounded by the pool's rate limits. What is spread is the encoder's
work: the generation's sessions are cut into shards by question (`trinity.session.shards`, the
same cut the single process makes), shard s lives on actor s % N, and each actor holds the
encoder and its shards' incremental `SessionEncoder` states. Each turn step the driver splits
the batch of transcripts by shard, asks every actor for its shards' logits at once, and puts
them back in order. Same inputs, same groups, same torch thread count: the same seed gives the
same `best_theta.npy`, history and calls as `--workers 1` (up to `LIVE_SHARDS` workers; with
more, each worker is one shard and the cut differs from one process's, as in cached mode).

An actor lost mid-generation (killed, out of memory, node lost) raises out of the turn step —
between two turn steps no chat call is in flight — so the driver replaces it and runs the whole
generation again: the ES state is the driver's, every call already made is in the run's call
journal and is replayed at no cost, and the run's log says how many calls were replayed and how
many paid.

Fault injection (tests, benches): TRINITY_FAULT_KILL_WORKER="GEN:WORKER" (as in cached mode)
makes that worker's process exit at its second turn step of generation GEN, once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from trinity.config import TrainConfig, validate_config
from trinity.data.questions import Question
from trinity.errors import TrinityError
from trinity.optim.fitness import build_router
from trinity.optim.population import GATHER_TIMEOUT_S, MAX_RECOVERIES, check_population, injected_fault
from trinity.optim.raysupport import cause_line, connect, replace_dead_actors, worker_placement
from trinity.session.evaluation import Evaluation, GenerationHooks
from trinity.session.fitness import LiveFitness
from trinity.session.shards import LogitsFn, shard_budget_mb, shards_of_pairs, split_by_shard

FAULT_TURN = 2  # the turn step at which an injected fault kills the worker (calls are already paid)
Part = tuple[int, list[str], np.ndarray, list[int]]  # (shard, texts, candidates, streams)


class LiveWorker:
    """One actor: the encoder and the session-encoder states of its shards (plain class; Ray wraps it)."""

    def __init__(self, config: dict[str, Any], n_models: int, threads: int | None):
        import torch  # lazy: torch loaded only when used

        if threads:
            torch.set_num_threads(int(threads))
        self.router = build_router(validate_config(config, where="worker config"), n_models)
        self.key: str | None = None
        self.thetas: np.ndarray | None = None
        self.budget_mb = 0.0
        self.encoders: dict[int, Any] = {}

    def begin(self, key: str, thetas: np.ndarray, n_shards: int) -> str:
        """A new population (one evaluation attempt of a generation): drop every state."""
        self.key, self.thetas, self.encoders = key, np.asarray(thetas), {}
        self.budget_mb = shard_budget_mb(self.router, n_shards)
        return key

    def logits(self, key: str, parts: list[Part], die: bool = False) -> tuple[list[np.ndarray], float]:
        """Logits of this turn step's texts of each of this actor's shards (a shard of its own
        that is not in `parts` has no session left: its states are freed), and the seconds the
        actor spent on them."""
        if die:
            os._exit(17)  # fault injection: the process is gone, as if killed
        if key != self.key or self.thetas is None:
            raise TrinityError(f"live worker: turn step for {key!r} but the population is {self.key!r}")
        t0 = time.perf_counter()
        asked = {p[0] for p in parts}
        for ended in [s for s in self.encoders if s not in asked]:
            del self.encoders[ended]
        out = []
        for shard, texts, cands, streams in parts:
            enc = self.encoders.get(shard)
            if enc is None:
                enc = self.encoders[shard] = self.router.session_encoder(self.thetas, self.budget_mb)
            out.append(np.asarray(enc.logits(texts, np.asarray(cands), streams)))
        return out, time.perf_counter() - t0

    def pid(self) -> int:
        return os.getpid()


def actor_parts(
    shard_of_stream: list[int], texts: list[str], cands: np.ndarray, streams: list[int], n_actors: int
) -> list[tuple[list[Part], list[list[int]]]]:
    """Per actor (shard s on actor s % n_actors): its shards' parts of this turn step, and each
    part's positions in the step's batch."""
    out: list[tuple[list[Part], list[list[int]]]] = [([], []) for _ in range(n_actors)]
    for shard, pos in split_by_shard(shard_of_stream, streams).items():
        parts, where = out[shard % n_actors]
        parts.append((shard, [texts[k] for k in pos], np.asarray(cands)[pos], [streams[k] for k in pos]))
        where.append(pos)
    return out


def assemble(n: int, positions: list[list[list[int]]], results: list[list[np.ndarray]]) -> np.ndarray:
    """The actors' logits put back in the batch's order."""
    out: np.ndarray | None = None
    for where, res in zip(positions, results):
        for pos, lg in zip(where, res):
            if out is None:
                out = np.empty((n, lg.shape[1]), dtype=lg.dtype)
            out[pos] = lg
    assert out is not None, "a turn step with no texts"
    return out


class _Lost(Exception):
    def __init__(self, cause: Exception):
        super().__init__(str(cause))
        self.cause = cause


class LivePopulationFitness(LiveFitness):
    """`LiveFitness` whose session encoder runs on Ray actors; the pool stack stays here."""

    def __init__(self, cfg: TrainConfig, run: Any, router: Any, models: list[str]):
        self.ray, self._started = connect(cfg.ray_address)
        try:
            super().__init__(cfg, run, router, models)
            self._start_actors(cfg, router)
        except BaseException:
            self.close()
            raise

    def _start_actors(self, cfg: TrainConfig, router: Any) -> None:
        import torch  # lazy: torch loaded only when used

        self.n_workers = int(cfg.workers)
        self._threads = int(torch.get_num_threads())
        on_gpu, self._options = worker_placement(self.ray, self.n_workers, cfg.device)
        config = cfg.resolved()
        if not on_gpu:
            config["device"] = "cpu"
        self._config = config
        self._fault = injected_fault()
        self.gen = 0
        self.recoveries: list[dict[str, Any]] = []
        self.turn_steps: list[dict[str, float]] = []  # per turn step: wall, texts, slowest / all actors' compute
        self._attempt = 0
        t0 = time.monotonic()
        self.actors = [self._new_actor() for _ in range(self.n_workers)]
        self._ready(self.actors)
        self._log(
            f"{self.n_workers} Ray workers ({'1 GPU' if on_gpu else '1 CPU'} and {self._threads} torch threads "
            f"each) hold the encoder and the live sessions' encoder states; the pool client, ledger, "
            f"journal and budget stay in this process (ready in {time.monotonic() - t0:.1f}s)"
        )

    def _log(self, msg: str, level: str = "info") -> None:
        if self.run is not None:
            self.run.log(msg, level=level)

    def _new_actor(self) -> Any:
        cls = self.ray.remote(LiveWorker).options(max_restarts=0, max_concurrency=1, **self._options)
        return cls.remote(self._config, len(self.models), self._threads)

    def _ready(self, actors: list[Any]) -> None:
        try:
            self.ray.get([a.pid.remote() for a in actors], timeout=GATHER_TIMEOUT_S)
        except self.ray.exceptions.RayActorError as e:
            raise TrinityError(f"a Ray worker died while loading the encoder: {str(e).splitlines()[0]}") from None

    # ---- the logits function of one evaluation attempt ---------------------------------------
    def _logits_fn(self, thetas: np.ndarray, pairs: list[tuple[int, Question]]) -> LogitsFn:
        if getattr(self.router, "session_encoder", None) is None:
            plain: LogitsFn = super()._logits_fn(thetas, pairs)
            return plain
        shard_of, n_shards = shards_of_pairs(pairs, self.n_workers)
        self._attempt += 1
        key = f"g{self.gen}/a{self._attempt}"
        thetas_ref = self.ray.put(np.asarray(thetas))
        self._call([a.begin.remote(key, thetas_ref, n_shards) for a in self.actors])
        step = 0

        def logits(texts: list[str], cands: np.ndarray, streams: list[int]) -> np.ndarray:
            nonlocal step
            step += 1
            t0 = time.perf_counter()
            per_actor = actor_parts(shard_of, texts, cands, streams, len(self.actors))
            refs = []
            for w, (parts, _) in enumerate(per_actor):
                die = False
                if self._fault is not None and self._fault == (self.gen, w) and step == FAULT_TURN:
                    die, self._fault = True, None
                refs.append(self.actors[w].logits.remote(key, parts, die))  # every actor: frees ended shards
            results = self._call(refs)
            out = assemble(len(texts), [pos for _, pos in per_actor], [res for res, _ in results])
            self.turn_steps.append(
                {
                    "wall_s": time.perf_counter() - t0,
                    "texts": float(len(texts)),
                    "busy_s": max(b for _, b in results),
                    "busy_sum_s": sum(b for _, b in results),
                }
            )
            return out

        return logits

    def _call(self, refs: list[Any]) -> list[Any]:
        try:
            return list(self.ray.get(refs, timeout=GATHER_TIMEOUT_S))
        except self.ray.exceptions.RayActorError as e:
            raise _Lost(e) from None

    # ---- a generation, again when an actor is lost -------------------------------------------
    def evaluate(self, gen: int, thetas: np.ndarray, questions: list[Question], hooks: GenerationHooks) -> Evaluation:
        self.gen = gen
        return super().evaluate(gen, thetas, questions, hooks)

    def run_sessions(
        self,
        thetas: np.ndarray,
        pairs: list[tuple[int, Question]],
        key_prefix: str,
        purpose: str = "train",
        on_step: Callable[[int, int], None] | None = None,
    ) -> list[Any]:
        st = self.client.stats
        for attempt in range(MAX_RECOVERIES + 1):
            before = (st.journal_hits, st.calls)
            try:
                trajs: list[Any] = super().run_sessions(thetas, pairs, key_prefix, purpose=purpose, on_step=on_step)
            except _Lost as e:
                if attempt == MAX_RECOVERIES:
                    raise TrinityError(
                        f"Ray workers died {attempt + 1} times in generation {self.gen}; "
                        f"last: {str(e.cause).splitlines()[0]}; resume the run when the "
                        "cluster is healthy"
                    ) from None
                self._recover(e.cause, paid=st.calls - before[1])
                continue
            if attempt:
                rec = self.recoveries[-1]
                rec["replayed"], rec["paid"] = st.journal_hits - before[0], st.calls - before[1]
                self._log(
                    f"generation {self.gen} evaluated again: {rec['replayed']} call(s) replayed from the "
                    f"run's journal at no cost, {rec['paid']} paid (the lost attempt had paid "
                    f"{rec['paid_before_loss']}); no call was in flight when the worker was lost"
                )
            return trajs
        raise AssertionError("unreachable")

    def _recover(self, cause: Exception, paid: int) -> None:
        t0 = time.monotonic()

        dead = replace_dead_actors(self.ray, self.actors, self._new_actor)
        self._ready([self.actors[i] for i in dead])
        rec: dict[str, Any] = {
            "gen": self.gen,
            "workers_replaced": dead,
            "secs": round(time.monotonic() - t0, 3),
            "cause": cause_line(cause),
            "paid_before_loss": paid,
        }
        self.recoveries.append(rec)
        self._log(
            f"generation {self.gen}: Ray worker(s) {dead} lost ({rec['cause']}); replaced in "
            f"{rec['secs']:.1f}s and the generation is evaluated again (the ES state is the driver's; "
            f"the {paid} call(s) it had paid are in the run's journal)",
            level="warning",
        )

    def close(self) -> None:
        try:
            if getattr(self, "live", None) is not None:
                super().close()
        finally:
            for a in getattr(self, "actors", []):
                try:
                    self.ray.kill(a)
                except Exception:  # noqa: BLE001
                    pass
            self.actors = []
            if self._started:
                self.ray.shutdown()
                self._started = False


def make_live_population_fitness(
    cfg: TrainConfig, run: Any, router: Any, inputs: Any, models: list[str]
) -> LivePopulationFitness:
    check_population(cfg)
    return LivePopulationFitness(cfg, run, router, models)
