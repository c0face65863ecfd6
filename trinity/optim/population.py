"""Population evaluation on Ray actors (`trinity train --workers N [--ray-address HOST:PORT]`).

The ES stays in this process (the driver): it asks, tells, validates the choice of best θ and
writes the run directory. Each actor holds the encoder (one per GPU, or N on the CPU) and its
share of the layer-input cache, and the work is split by questions as well as candidates:

- **Shares.** The single-process warm-up (`CachedFitness.warm_up`) computes the train+val
  questions' SVF-layer inputs in fixed batches (`fitness.warm_batches`); a batch's composition
  fixes its texts' last bits, so the batches are the unit of sharing: each is given to one actor
  (least cached tokens first), which computes it exactly as one process does. Each text is thus
  cached once in the cluster, by its owner, with one process's bits. A lost actor is replaced
  and re-warms only its own batches.
- **Blocks.** A generation's candidates are cut into the same chunks as in one process
  (`CachedFitness.chunk_bounds`) and its questions into the fast path's groups
  (`Router.text_groups`: a group passed alone, in order, is computed with the same shapes as
  inside the whole batch, hence the same bits). Each (candidate chunk × group) block goes to one
  actor (longest blocks first, to the least loaded, preferring the owner of most of the group's
  tokens); the layer inputs of the group's texts held by other actors travel to it through the
  object store (`export`: owner → block, never through the driver). Blocks return features;
  the driver reassembles each chunk's (P_chunk, m, hidden) features and applies the heads
  (`Router.head_logits`, the single-process einsum on the same array). Validation (all θ at once
  in one process) is spread the same way, as one candidate chunk × its groups.

Every block is computed by the same code on the same inputs with the same shapes and torch
thread count as inside one process, so the same seed gives the same `best_theta.npy` and history
bit for bit (tests/optim/test_population.py; per-question subsets in other shapes would not:
the last bits of a text's layer inputs and features depend on its batch's shape).

An actor that dies mid-generation (killed, out of memory, node lost) is replaced (a new actor,
warmed with its predecessor's share) and the whole generation is evaluated again — the ES state
is the driver's, so nothing of it is lost — and the run's log says so. Cached mode costs
nothing, so nothing is paid twice.

Fault injection (tests, benches): TRINITY_FAULT_KILL_WORKER="GEN:WORKER" makes that worker's
process exit (os._exit) at the start of its first block of generation GEN, once.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from trinity.competition.text import resolve_competition
from trinity.config import TrainConfig, validate_config
from trinity.errors import ConfigError, TrinityError
from trinity.model import policy
from trinity.model.batching import token_key
from trinity.optim.fitness import (
    CachedFitness,
    Evaluation,
    GenerationHooks,
    RouterLike,
    build_router,
    question_text,
    warm_batches,
)
from trinity.optim.raysupport import cause_line, connect, replace_dead_actors, require_ray, worker_placement

FAULT_ENV = "TRINITY_FAULT_KILL_WORKER"
MAX_RECOVERIES = 3  # per generation: a worker that dies again and again is a real problem
GATHER_TIMEOUT_S = 3600.0
OWNER_PREFERENCE = 0.25  # a block's cost is discounted by this share of the group's tokens its actor holds


class PopulationWorker:
    """One actor: the encoder and its share of the layer-input cache (a plain class; Ray wraps it)."""

    def __init__(self, config: dict[str, Any], n_models: int, threads: int | None):
        import torch  # lazy: torch loaded only when used

        if threads:
            torch.set_num_threads(int(threads))
        self.router = build_router(validate_config(config, where="worker config"), n_models)

    def warm(self, batches: list[list[str]]) -> dict[str, float]:
        """Compute this actor's share: each batch by one `layer_inputs` call, as one process does."""
        t0 = time.perf_counter()
        for batch in batches:
            self.router.layer_inputs(batch)
        return {**self.cache_stats(), "secs": time.perf_counter() - t0}

    def cache_stats(self) -> dict[str, float]:
        return {"entries": len(self.router.cache), "bytes": self.router.cache.bytes}

    def export(self, keys: list[str], texts: list[str]) -> dict[str, Any]:
        """The cached layer inputs of `keys` (this actor's own), on the CPU, for another actor."""
        return {k: x.detach().cpu() for k, x in zip(keys, self._inputs(keys, texts, {}))}

    def _inputs(self, keys: list[str], texts: list[str], borrowed: dict[str, Any]) -> list[Any]:
        out = []
        for k, t in zip(keys, texts):
            x = borrowed.get(k)
            if x is None:
                x = self.router.cache.get(k)
            if x is None:  # evicted from a full cache: recomputed (the warm-up warned about it)
                x = self.router.layer_inputs([t])[0]
            out.append(x)
        return out

    busy_s = 0.0  # seconds spent computing features (what the Ray path adds is the rest of the wall time)

    def features(
        self, thetas: np.ndarray, keys: list[str], texts: list[str], die: bool, *borrowed: dict[str, Any]
    ) -> np.ndarray:
        """One block: `thetas` on one group of texts (in the group's order) → (P, B, hidden) float32."""
        if die:
            os._exit(17)  # fault injection: the process is gone, as if killed
        t0 = time.perf_counter()
        lent = {k: x for d in borrowed for k, x in d.items()}
        out: np.ndarray = self.router.features_of_inputs(thetas, self._inputs(keys, texts, lent))
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
    """`CachedFitness` whose population logits are computed by Ray actors, each holding its share."""

    def __init__(
        self,
        cfg: TrainConfig,
        run: Any,
        router: RouterLike,
        matrix: Any,
        models: list[str],
        warm_texts: list[str],
        text: Any = None,
    ):
        extra = {"text": text} if text is not None else {}
        super().__init__(
            router,
            matrix,
            models,
            policy=cfg.policy,
            temperature=cfg.temperature,
            seed=cfg.seed,
            traces=cfg.traces,
            chunks=max(4, cfg.workers),
            **extra,
        )
        self.run = run
        self.n_workers = cfg.workers
        self.ray, self._started = connect(cfg.ray_address)
        import torch  # lazy: torch loaded only when used

        self._threads = int(torch.get_num_threads())
        try:
            on_gpu, self._options = worker_placement(self.ray, self.n_workers, cfg.device)
        except ConfigError:
            if self._started:  # refused before any actor exists: leave no Ray instance behind
                self.ray.shutdown()
            raise
        config = cfg.resolved()
        if not on_gpu:
            config["device"] = "cpu"
        self._config = config
        self._fault = _fault()
        self.recoveries: list[dict[str, Any]] = []
        self.gen = 0
        self._plan_shares(warm_texts)
        self.actors = [self._new_actor() for _ in range(self.n_workers)]
        t0 = time.monotonic()
        self.warm_stats: list[dict[str, float]] = self._ready(list(range(self.n_workers)))
        mb = ", ".join(f"{s['entries']:.0f} ({s['bytes'] / 2**20:.1f} MiB)" for s in self.warm_stats)
        self._log(
            f"{self.n_workers} Ray workers ({'1 GPU' if on_gpu else '1 CPU'} and {self._threads} torch threads "
            f"each) hold the encoder and their shares of the layer-input cache of {len(self._key)} "
            f"train+val texts: {mb} (ready in {time.monotonic() - t0:.1f}s)"
        )

    def _log(self, msg: str, level: str = "info") -> None:
        if self.run is not None:
            self.run.log(msg, level=level)

    # ---- shares: which actor holds which texts' layer inputs ----

    def _plan_shares(self, texts: list[str]) -> None:
        r: Any = self.router
        ids = r.token_ids(texts) if texts else []
        self._key: dict[str, tuple[str, int]] = {t: (token_key(i), len(i) - 1) for t, i in zip(texts, ids)}
        self._owner: dict[str, int] = {}
        self._share: list[list[list[str]]] = [[] for _ in range(self.n_workers)]
        self.share_tokens = [0] * self.n_workers
        for batch in warm_batches(r, texts) if texts else []:
            w = min(range(self.n_workers), key=lambda i: (self.share_tokens[i], i))
            self._share[w].append([texts[j] for j in batch])
            for j in batch:
                self._owner[self._key[texts[j]][0]] = w
                self.share_tokens[w] += self._key[texts[j]][1]

    def _keys(self, texts: list[str]) -> list[tuple[str, int]]:
        new = [t for t in dict.fromkeys(texts) if t not in self._key]
        if new:  # not a train/val text (not expected): keyed here, computed by whichever actor gets it
            r: Any = self.router
            self._key.update({t: (token_key(i), len(i) - 1) for t, i in zip(new, r.token_ids(new))})
        return [self._key[t] for t in texts]

    def _new_actor(self) -> Any:
        cls = self.ray.remote(PopulationWorker).options(max_restarts=0, max_concurrency=1, **self._options)
        return cls.remote(self._config, len(self.models), self._threads)

    def _ready(self, which: list[int]) -> list[dict[str, float]]:
        refs = [self.actors[w].warm.remote(self._share[w]) for w in which]
        try:
            return list(self.ray.get(refs, timeout=GATHER_TIMEOUT_S))
        except self.ray.exceptions.RayActorError as e:
            raise TrinityError(f"a Ray worker died while loading the encoder: {str(e).splitlines()[0]}") from None

    def cache_stats(self) -> list[dict[str, float]]:
        """Each actor's layer-input cache now: entries and bytes."""
        return list(self.ray.get([a.cache_stats.remote() for a in self.actors], timeout=GATHER_TIMEOUT_S))

    # ---- blocks: (candidate chunk × group of questions), each on one actor ----

    def _blocks(
        self, thetas: np.ndarray, texts: list[str], bounds: np.ndarray, hooks: GenerationHooks | None, fault: bool
    ) -> list[np.ndarray]:
        """Logits (float64) of each candidate chunk `bounds[i]:bounds[i+1]` on all `texts`."""
        r: Any = self.router
        n_w, N = len(self.actors), len(texts)
        kl = self._keys(texts)
        keys, lengths = [k for k, _ in kl], [n for _, n in kl]
        groups = r.text_groups(lengths)
        owners = [self._owner.get(k, -1) for k in keys]
        chunks = list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))
        # longest block first, to the actor that finishes it first (its own tokens count less)
        todo = sorted(
            ((ci, gi) for ci in range(len(chunks)) for gi in range(len(groups))),
            key=lambda b: (-(chunks[b[0]][1] - chunks[b[0]][0]) * sum(lengths[i] for i in groups[b[1]]), b),
        )
        load = [0.0] * n_w
        where: dict[tuple[int, int], int] = {}
        for ci, gi in todo:
            g = groups[gi]
            tok = sum(lengths[i] for i in g)
            cost = float(chunks[ci][1] - chunks[ci][0]) * tok
            own = [sum(lengths[i] for i in g if owners[i] == w) / max(tok, 1) for w in range(n_w)]
            w = min(range(n_w), key=lambda w: (load[w] + cost * (1 - OWNER_PREFERENCE * own[w]), w))
            where[ci, gi] = w
            load[w] += cost
        # the layer inputs each group needs from each owner, exported once, sent owner → block
        exports: dict[tuple[int, int], Any] = {}
        for (_ci, gi), w in where.items():
            for k_own in {owners[i] for i in groups[gi]} - {w, -1}:
                if (k_own, gi) not in exports:
                    mine = [i for i in groups[gi] if owners[i] == k_own]
                    exports[k_own, gi] = self.actors[k_own].export.remote(
                        [keys[i] for i in mine], [texts[i] for i in mine]
                    )
        th_refs = [self.ray.put(np.ascontiguousarray(thetas[a:b])) for a, b in chunks]
        refs: dict[tuple[int, int], Any] = {}
        started: set[int] = set()
        for ci in range(len(chunks)):  # submitted chunk by chunk: progress counts whole chunks
            for gi, g in enumerate(groups):
                w = where[ci, gi]
                die = False
                if fault and self._fault is not None and self._fault == (self.gen, w) and w not in started:
                    die, self._fault = True, None
                started.add(w)
                lent = [exports[k, gi] for k in sorted({owners[i] for i in g} - {w, -1})]
                refs[ci, gi] = self.actors[w].features.remote(
                    th_refs[ci], [keys[i] for i in g], [texts[i] for i in g], die, *lent
                )
        out: list[np.ndarray] = []
        lost: Exception | None = None
        total = int(bounds[-1]) * N
        for ci, (a, b) in enumerate(chunks):
            feats = np.empty((b - a, N, r.hidden), dtype=np.float32)
            for gi, g in enumerate(groups):
                try:
                    feats[:, g] = self.ray.get(refs[ci, gi], timeout=GATHER_TIMEOUT_S)
                except (self.ray.exceptions.RayActorError, self.ray.exceptions.ObjectLostError) as e:
                    lost = lost or e
            if lost is None:
                out.append(np.asarray(r.head_logits(thetas[a:b], feats), dtype=np.float64))
                if hooks is not None:
                    hooks.progress(int(b) * N, total)
        if lost is not None:
            raise _Lost(lost)
        return out

    def _with_recovery(
        self, thetas: np.ndarray, texts: list[str], bounds: np.ndarray, hooks: GenerationHooks | None, what: str
    ) -> np.ndarray:
        for attempt in range(MAX_RECOVERIES + 1):
            try:
                return np.concatenate(self._blocks(thetas, texts, bounds, hooks, fault=hooks is not None), axis=0)
            except _Lost as e:
                if attempt == MAX_RECOVERIES:
                    raise TrinityError(
                        f"Ray workers died {attempt + 1} times in {what}; "
                        f"last: {str(e.cause).splitlines()[0]}; resume the run when the "
                        "cluster is healthy"
                    ) from None
                self._recover(e.cause, what)
        raise AssertionError("unreachable")

    def population_logits(self, thetas: np.ndarray, texts: list[str], hooks: GenerationHooks) -> np.ndarray:
        return self._with_recovery(thetas, texts, self.chunk_bounds(thetas.shape[0]), hooks, f"generation {self.gen}")

    def _recover(self, cause: Exception, what: str = "") -> None:
        t0 = time.monotonic()

        dead = replace_dead_actors(self.ray, self.actors, self._new_actor)
        stats = self._ready(dead)
        rec = {
            "gen": self.gen,
            "workers_replaced": dead,
            "secs": round(time.monotonic() - t0, 3),
            "rewarmed_texts": int(sum(s["entries"] for s in stats)),
            "cause": cause_line(cause),
        }
        self.recoveries.append(rec)
        self._log(
            f"{what or f'generation {self.gen}'}: Ray worker(s) {dead} lost ({rec['cause']}); replaced "
            f"and their share ({rec['rewarmed_texts']} texts) re-encoded in {rec['secs']:.1f}s; "
            f"{what or 'the generation'} is evaluated again (the ES state is the driver's)",
            level="warning",
        )

    def evaluate(self, gen: int, thetas: np.ndarray, questions: list[Any], hooks: GenerationHooks) -> Evaluation:
        self.gen = gen
        return super().evaluate(gen, thetas, questions, hooks)

    def validate(self, thetas: np.ndarray, questions: list[Any]) -> np.ndarray:
        lg = self.population_logits_one(thetas, self.texts(questions))
        model_idx, _ = policy.choose(lg, len(self.models))
        return self.rewards_for(questions, model_idx)

    def population_logits_one(self, thetas: np.ndarray, texts: list[str]) -> np.ndarray:
        """All of `thetas` as one candidate chunk (as the single-process validation computes them),
        its question groups spread over the actors."""
        thetas = np.asarray(thetas, dtype=np.float64)
        if thetas.ndim == 1:
            thetas = thetas[None, :]
        return self._with_recovery(
            thetas, texts, np.array([0, thetas.shape[0]]), None, f"validation after generation {self.gen}"
        )

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
    require_ray()  # live mode too: trinity.optim.livepopulation


def make_population_fitness(
    cfg: TrainConfig, run: Any, router: RouterLike, inputs: Any, models: list[str]
) -> PopulationFitness:
    check_population(cfg)
    by_id = {q.id: q for q in inputs.questions}
    qs = [by_id[i] for i in inputs.splits["train"]] + [by_id[i] for i in inputs.splits["val"]]
    # the same texts (the competition's router text), in the same order, as the single-process
    # warm-up (CachedFitness.warm_up)

    text = question_text(resolve_competition(cfg.competition, cfg.pool))
    probe = CachedFitness(router, inputs.matrix, models, text=text)
    return PopulationFitness(cfg, run, router, inputs.matrix, models, probe.texts(qs), text=text)
