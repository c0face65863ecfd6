"""Population evaluation on Ray actors (`trinity train --workers N [--ray-address HOST:PORT]`).

The ES stays in this process (the driver): it asks, tells, validates the choice of best θ and
writes the run directory. Each actor holds the encoder (one per GPU, or N on the CPU) and its
layer-input cache, warmed with the same texts in the same batches as a single-process run. A
generation's candidates are cut into the same chunks as in a single process
(`CachedFitness.chunk_bounds`: 4 chunks, or one per worker when there are more) and the chunks
are spread over the actors; their logits come back and the driver scores them. Every chunk is
computed by the same code on the same inputs with the same torch thread count as in one
process, so the same seed gives the same `best_theta.npy` and history bit for bit.

An actor that dies mid-generation (killed, out of memory, node lost) is replaced (a new actor,
warmed the same way) and the whole generation is evaluated again — the ES state is the
driver's, so nothing of it is lost — and the run's log says so. Cached mode costs nothing, so
nothing is paid twice.

Fault injection (tests, benches): TRINITY_FAULT_KILL_WORKER="GEN:WORKER" makes that worker's
process exit (os._exit) at the start of its first chunk of generation GEN, once.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from trinity.config import TrainConfig
from trinity.errors import ConfigError, TrinityError
from trinity.optim.fitness import CachedFitness, Evaluation, GenerationHooks, RouterLike

FAULT_ENV = "TRINITY_FAULT_KILL_WORKER"
MAX_RECOVERIES = 3  # per generation: a worker that dies again and again is a real problem
GATHER_TIMEOUT_S = 3600.0


class PopulationWorker:
    """One actor: the encoder and its layer-input cache (a plain class; Ray wraps it)."""

    def __init__(self, config: dict[str, Any], n_models: int, threads: int | None):
        import torch

        from trinity.config import validate_config
        from trinity.optim.fitness import build_router

        if threads:
            torch.set_num_threads(int(threads))
        self.router = build_router(validate_config(config, where="worker config"), n_models)

    def warm(self, texts: list[str]) -> int:
        from trinity.optim.fitness import WARM_CHUNK  # the same warm-up batches as one process

        for a in range(0, len(texts), WARM_CHUNK):
            self.router.layer_inputs(texts[a:a + WARM_CHUNK])
        return len(texts)

    busy_s = 0.0  # seconds spent computing logits (what the Ray path adds is the rest of the wall time)

    def logits(self, thetas: np.ndarray, texts: list[str], die: bool = False) -> np.ndarray:
        if die:
            os._exit(17)  # fault injection: the process is gone, as if killed
        t0 = time.perf_counter()
        out = np.asarray(self.router.population_logits(thetas, texts), dtype=np.float64)
        self.busy_s += time.perf_counter() - t0
        return out

    def take_busy(self) -> float:
        b, self.busy_s = self.busy_s, 0.0
        return b

    def pid(self) -> int:
        return os.getpid()


def _fault() -> tuple[int, int] | None:
    v = os.environ.get(FAULT_ENV)
    if not v:
        return None
    try:
        g, w = (int(x) for x in v.split(":"))
    except ValueError:
        raise ConfigError(f"{FAULT_ENV}={v!r}: expected GEN:WORKER, e.g. 2:1") from None
    return g, w


class PopulationFitness(CachedFitness):
    """`CachedFitness` whose population logits are computed by Ray actors."""


    def __init__(self, cfg: TrainConfig, run: Any, router: RouterLike, matrix: Any, models: list[str],
                 warm_texts: list[str]):
        from trinity.optim.raysupport import connect

        super().__init__(router, matrix, models, policy=cfg.policy, temperature=cfg.temperature, seed=cfg.seed,
                         traces=cfg.traces, chunks=max(4, cfg.workers))
        self.run = run
        self.n_workers = cfg.workers
        self.ray, self._started = connect(cfg.ray_address)
        import torch

        self._threads = int(torch.get_num_threads())
        gpus = float(self.ray.cluster_resources().get("GPU", 0))
        on_gpu = gpus >= 1 and (cfg.device or "cuda").startswith("cuda")
        config = cfg.resolved()
        if not on_gpu:
            config["device"] = "cpu"
        self._config = config
        self._options = {"num_gpus": 1, "num_cpus": 0} if on_gpu else {"num_cpus": 1}
        self._warm_texts = warm_texts
        self._fault = _fault()
        self.recoveries: list[dict[str, Any]] = []
        self.gen = 0
        self.actors = [self._new_actor() for _ in range(self.n_workers)]
        t0 = time.monotonic()
        self._ready(self.actors)
        self._log(f"{self.n_workers} Ray workers ({'1 GPU' if on_gpu else '1 CPU'} and {self._threads} torch threads "
                  f"each) hold the encoder and its cache of {len(warm_texts)} train+val questions "
                  f"(ready in {time.monotonic() - t0:.1f}s)")

    def _log(self, msg: str, level: str = "info") -> None:
        if self.run is not None:
            self.run.log(msg, level=level)

    def _new_actor(self) -> Any:
        cls = self.ray.remote(PopulationWorker).options(max_restarts=0, max_concurrency=1, **self._options)
        return cls.remote(self._config, len(self.models), self._threads)

    def _ready(self, actors: list[Any]) -> None:
        refs = [a.warm.remote(self._warm_texts) for a in actors]
        try:
            self.ray.get(refs, timeout=GATHER_TIMEOUT_S)
        except self.ray.exceptions.RayActorError as e:
            raise TrinityError(f"a Ray worker died while loading the encoder: {str(e).splitlines()[0]}") from None

    def _gather(self, thetas: np.ndarray, texts: list[str], hooks: GenerationHooks) -> list[np.ndarray]:
        P, total = thetas.shape[0], thetas.shape[0] * len(texts)
        bounds = self.chunk_bounds(P)
        texts_ref = self.ray.put(texts)
        refs = []
        for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
            w = i % len(self.actors)
            die = False
            if self._fault is not None and self._fault == (self.gen, w) and i == w:
                die, self._fault = True, None
            refs.append(self.actors[w].logits.remote(thetas[a:b], texts_ref, die))
        out: list[np.ndarray | None] = [None] * len(refs)
        lost: Exception | None = None
        for i, ref in enumerate(refs):  # in order: progress counts whole chunks
            try:
                out[i] = self.ray.get(ref, timeout=GATHER_TIMEOUT_S)
            except self.ray.exceptions.RayActorError as e:
                lost = lost or e
                continue
            if lost is None:
                hooks.progress(int(bounds[i + 1]) * len(texts), total)
        if lost is not None:
            raise _Lost(lost)
        return out  # type: ignore[return-value]

    def population_logits(self, thetas: np.ndarray, texts: list[str], hooks: GenerationHooks) -> np.ndarray:
        for attempt in range(MAX_RECOVERIES + 1):
            try:
                return np.concatenate(self._gather(thetas, texts, hooks), axis=0)
            except _Lost as e:
                if attempt == MAX_RECOVERIES:
                    raise TrinityError(f"Ray workers died {attempt + 1} times in generation {self.gen}; "
                                       f"last: {str(e.cause).splitlines()[0]}; resume the run when the "
                                       "cluster is healthy") from None
                self._recover(e.cause)
        raise AssertionError("unreachable")

    def _recover(self, cause: Exception) -> None:
        t0 = time.monotonic()
        dead = []
        for i, a in enumerate(self.actors):
            try:
                self.ray.get(a.pid.remote(), timeout=60)
            except (self.ray.exceptions.RayActorError, self.ray.exceptions.GetTimeoutError):
                dead.append(i)
        for i in dead:
            try:
                self.ray.kill(self.actors[i])
            except Exception:  # noqa: BLE001 - already gone
                pass
            self.actors[i] = self._new_actor()
        self._ready([self.actors[i] for i in dead])
        rec = {"gen": self.gen, "workers_replaced": dead, "secs": round(time.monotonic() - t0, 3),
               "cause": str(cause).splitlines()[0][:200] if str(cause) else type(cause).__name__}
        self.recoveries.append(rec)
        self._log(f"generation {self.gen}: Ray worker(s) {dead} lost ({rec['cause']}); replaced in "
                  f"{rec['secs']:.1f}s and the generation is evaluated again (the ES state is the driver's)",
                  level="warning")

    def evaluate(self, gen: int, thetas: np.ndarray, questions: list, hooks: GenerationHooks) -> Evaluation:
        self.gen = gen
        return super().evaluate(gen, thetas, questions, hooks)

    def validate(self, thetas: np.ndarray, questions: list) -> np.ndarray:
        from trinity.model import policy

        lg = self.population_logits_one(thetas, self.texts(questions))
        model_idx, _ = policy.choose(lg, len(self.models))
        return self.rewards_for(questions, model_idx)

    def population_logits_one(self, thetas: np.ndarray, texts: list[str]) -> np.ndarray:
        """All of `thetas` in one call on one worker (as the single-process validation does)."""
        for attempt in range(MAX_RECOVERIES + 1):
            try:
                return self.ray.get(self.actors[0].logits.remote(thetas, texts), timeout=GATHER_TIMEOUT_S)
            except self.ray.exceptions.RayActorError as e:
                if attempt == MAX_RECOVERIES:
                    raise TrinityError(f"Ray worker 0 died {attempt + 1} times during validation") from None
                self._recover(e)
        raise AssertionError("unreachable")

    def close(self) -> None:
        for a in self.actors:
            try:
                self.ray.kill(a)
            except Exception:  # noqa: BLE001
                pass
        self.actors = []
        if self._started:
            self.ray.shutdown()
            self._started = False


class _Lost(Exception):
    def __init__(self, cause: Exception):
        super().__init__(str(cause))
        self.cause = cause


def injected_fault() -> tuple[int, int] | None:
    """(generation, worker) of TRINITY_FAULT_KILL_WORKER, or None (the live workers read it too)."""
    return _fault()


def check_population(cfg: TrainConfig) -> None:
    """What --workers needs, checked before a run directory is created."""
    from trinity.optim.raysupport import require_ray

    require_ray()  # live mode too: trinity.optim.livepopulation


def make_population_fitness(cfg: TrainConfig, run: Any, router: RouterLike, inputs: Any, models: list[str]) -> PopulationFitness:
    check_population(cfg)
    by_id = {q.id: q for q in inputs.questions}
    qs = [by_id[i] for i in inputs.splits["train"]] + [by_id[i] for i in inputs.splits["val"]]
    # the same texts, in the same order, as the single-process warm-up (CachedFitness.warm_up)
    probe = CachedFitness(router, inputs.matrix, models)
    return PopulationFitness(cfg, run, router, inputs.matrix, models, probe.texts(qs))
