"""Fitness: how the trainer scores a population. The trainer does not care which mode it is.

Protocol (`Fitness`), for cached mode (`CachedFitness`, here) and live mode (the session
package's multi-turn fitness):

    warm_up(questions, log): once per process before the first generation (cached mode: encode
        the train+val questions into the encoder's feature cache in fixed batches; Ray and live
        fitness: nothing). `log(level, message)` writes a `log` event.
    texts(questions) -> [str]: the turn-1 encoder inputs (the label warm start fits on them).
    evaluate(gen, thetas (P, D) float64, questions [m], hooks) -> Evaluation
        `.rewards` (P, m) float64: every candidate on the same m questions; `.stats`
        (`GenerationStats`): what the generation measured besides rewards (live mode: turns per
        session, per candidate, graded accuracy, USD per right answer; cached mode: nothing).
        Call hooks.progress(done, total) as work completes (it raises StopRequested when the run
        must stop), hooks.choices(model_idx, role_idx) once with the turn-1 choices (P, m),
        hooks.trace(record) per trajectory. May raise trinity.errors.OutOfCredit /
        BudgetExceeded / PoolStop (unreachable, failing, an absurd charge: the fitness checks its
        pool itself); the trainer then stops cleanly at the last completed generation.
    validate(thetas (T, D), questions [n]) -> correctness (T, n) float64, or None when
        validation is not free (the trainer then skips val_acc).
    cost_usd, calls: cumulative spend of this run (0 in cached mode).
    state_dict() / load_state_dict(d): whatever must survive a resume (RNG states, counters).
    close(): release what the fitness holds (pool client, ledger, Ray actors); idempotent.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Protocol

import numpy as np
import numpy.typing as npt

from trinity.competition.text import router_text
from trinity.data.matrix import OutcomeMatrix
from trinity.data.questions import Question
from trinity.errors import StopRequested
from trinity.model import ROLES, policy
from trinity.model.arrays import Float64Array, FloatArray, IndexArray
from trinity.model.batching import token_key
from trinity.session.evaluation import Evaluation, GenerationHooks, GenerationStats, LogFn

if TYPE_CHECKING:
    from trinity.config import TrainConfig
    from trinity.model.router import Router

__all__ = [
    "CachedFitness",
    "Evaluation",
    "Fitness",
    "GenerationHooks",
    "GenerationStats",
    "LogFn",
    "RouterLike",
    "StopRequested",
    "WARM_CHUNK",
    "build_router",
    "warm_batches",
    "default_text",
    "question_text",
]

WARM_CHUNK = 64  # questions per feature-cache warm-up call (fixed: the batches must not vary)


def build_router(cfg: TrainConfig, n_models: int) -> Router:
    """The run's router: its encoder (`cfg`: a TrainConfig) and a head for `n_models`."""
    from trinity.model.encoder import load_encoder  # lazy: torch + transformers loaded only when used
    from trinity.model.router import Router  # lazy: torch + transformers loaded only when used

    enc = load_encoder(cfg.encoder, device=cfg.device, dtype=cfg.dtype, seed=cfg.encoder_seed)
    return Router(enc, n_models, max_batch_tokens=cfg.max_batch_tokens)


def warm_batches(router: Any, texts: list[str]) -> list[list[int]]:
    """The layer-input batches `CachedFitness.warm_up` computes for `texts` (train + val, in
    order) from an empty cache: each batch as the indices of its texts (a text's first
    occurrence). A process that computes only some of them, each by one `router.layer_inputs`
    call on its texts in this order, holds for those texts exactly the bits one process's warm-up
    holds (the shares of the Ray workers, trinity.optim.population)."""
    ids = router.token_ids(texts)
    keys = [token_key(i) for i in ids]
    seen: set[str] = set()
    out: list[list[int]] = []
    for a in range(0, len(texts), WARM_CHUNK):  # warm_up's chunks: each one layer_inputs call
        missing: dict[str, list[int]] = {}
        first: dict[str, int] = {}
        for j in range(a, min(a + WARM_CHUNK, len(texts))):
            if keys[j] not in seen and keys[j] not in missing:
                missing[keys[j]], first[keys[j]] = ids[j][:-1], j
        seen.update(missing)
        out.extend([first[k] for k in batch] for batch in router.prefix_batches(missing))
    return out


class RouterLike(Protocol):
    """What the trainer and the cached fitness need of a router (trinity.model.router.Router).
    The tests' stand-in routers implement what their tests reach (`features` in place of
    `population_features`: `trinity.optim.warmstart.frozen_features` takes either)."""

    n_params: int

    def initial_mean(self) -> Float64Array: ...

    def population_logits(self, thetas: Float64Array, texts: list[str]) -> FloatArray: ...

    # (P, N, hidden) features under each θ; the label warm start fits the head on them
    def population_features(self, thetas: Float64Array, texts: list[str]) -> FloatArray: ...

    def layer_inputs(self, texts: list[str]) -> object: ...  # fills the encoder's feature cache

    # (N, n_models + 3) logits of texts each under its candidate's θ (live sessions' fallback path)
    def paired_logits(
        self, thetas: npt.ArrayLike, texts: list[str], candidate_of_text: npt.ArrayLike
    ) -> FloatArray: ...


class Fitness(Protocol):
    mode: str

    @property
    def cost_usd(self) -> float: ...

    @property
    def calls(self) -> int: ...

    def warm_up(self, questions: list[Question], log: LogFn) -> None: ...

    def texts(self, questions: list[Question]) -> list[str]: ...

    def evaluate(
        self, gen: int, thetas: Float64Array, questions: list[Question], hooks: GenerationHooks
    ) -> Evaluation: ...

    def validate(self, thetas: Float64Array, questions: list[Question]) -> Float64Array | None: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


def question_text(competition: str | None) -> Callable[[Question], str]:
    """Turn-1 encoder input of a question in `competition`'s format (trinity.competition.text): the query as
    its validator renders it (e.g. MMLU with lettered choices), with or without the marker."""
    return router_text(competition).question_input


def default_text(q: Question) -> str:
    """Turn-1 encoder input of a question, TinyRouter's format."""
    return question_text(None)(q)


class CachedFitness:
    """Turn 1 only: the chosen model's recorded correctness (mean of its k samples).

    `router` is anything with `population_logits(thetas (P, D), texts [N]) -> (P, N, M + 3)`.
    Candidates are evaluated in `chunks` groups so progress can be reported within a generation.
    """

    mode = "cached"

    def __init__(
        self,
        router: RouterLike,
        matrix: OutcomeMatrix,
        models: list[str],
        *,
        policy: str = "argmax",
        temperature: float = 1.0,
        seed: int = 0,
        traces: str = "all",
        chunks: int = 4,
        text: Callable[[Question], str] = default_text,
        fill: dict[str, Float64Array] | None = None,
    ) -> None:
        self.router = router
        self.matrix = matrix
        # {id: (M,) accuracy} of questions the matrix has no row for (a live run's validation
        # questions outside a per-group collect): their group's mean, scored like a row
        self.fill = dict(fill or {})
        self.models = list(models)
        self.acc = matrix.accuracy()  # (Q, M): the cached reward of choosing model j for question i
        self.policy = policy
        self.temperature = temperature
        self.rng = np.random.RandomState(seed + 7919)  # only the `sample` policy draws from it
        self.traces = traces
        self.chunks = max(1, chunks)
        self.text = text
        self._texts: dict[str, str] = {}
        self.cost_usd = 0.0
        self.calls = 0

    def warm_up(self, questions: list[Question], log: LogFn) -> None:
        """Encode `questions` (train + val) once, in fixed batches of WARM_CHUNK, into the
        router's feature cache (the same batches in every process: resumes equal bit for bit)."""
        t0 = time.monotonic()
        log("info", f"encoding {len(questions)} train+val questions once (feature cache)")
        for a in range(0, len(questions), WARM_CHUNK):
            self.router.layer_inputs(self.texts(questions[a : a + WARM_CHUNK]))
        log("info", f"encoded {len(questions)} questions in {time.monotonic() - t0:.1f}s")
        cache = getattr(self.router, "cache", None)
        if cache is not None and len(cache) < len({self.texts([q])[0] for q in questions}):
            # evicted entries are recomputed in other batches later: numbers may then differ in
            # the last bits from an uninterrupted run, so exact resume equality is not guaranteed
            log(
                "warning",
                f"the encoder feature cache holds {len(cache)} of {len(questions)} questions; "
                "later generations re-encode the rest (slower, and a resumed run may differ in the last bits)",
            )

    def texts(self, questions: list[Question]) -> list[str]:
        out = []
        for q in questions:
            if q.id not in self._texts:
                self._texts[q.id] = self.text(q)
            out.append(self._texts[q.id])
        return out

    def rewards_for(self, questions: list[Question], model_idx: IndexArray) -> Float64Array:
        """(P, N) recorded correctness of the chosen models."""
        if self.fill and any(q.id not in self.matrix for q in questions):
            table = np.stack(
                [self.fill[q.id] if q.id not in self.matrix else self.acc[self.matrix.row(q.id)] for q in questions]
            )
            return np.asarray(table[np.arange(len(questions))[None, :], model_idx], dtype=np.float64)
        rows = np.array([self.matrix.row(q.id) for q in questions])  # (N,)
        rewards: Float64Array = self.acc[rows[None, :], model_idx]
        return rewards

    def evaluate(self, gen: int, thetas: Float64Array, questions: list[Question], hooks: GenerationHooks) -> Evaluation:
        n_m = len(self.models)
        lg = self.population_logits(thetas, self.texts(questions), hooks)  # (P, m, M + 3)
        if self.policy == "sample":
            model_idx, role_idx = policy.sample(lg, n_m, self.rng, self.temperature)
        else:
            model_idx, role_idx = policy.choose(lg, n_m)
        rewards = self.rewards_for(questions, model_idx)  # (P, m)
        hooks.choices(model_idx, role_idx)
        if self.traces != "none":
            self._trace(gen, lg, model_idx, role_idx, rewards, questions, hooks)
        return Evaluation(rewards)

    def chunk_bounds(self, P: int) -> npt.NDArray[np.int_]:
        """Where the population is cut into the groups that are evaluated (and reported) together."""
        return np.linspace(0, P, min(self.chunks, P) + 1).astype(int)

    def population_logits(self, thetas: Float64Array, texts: list[str], hooks: GenerationHooks) -> Float64Array:
        """(P, N, M + 3) float64, chunk by chunk (a subclass may spread the chunks over workers)."""
        P, total = thetas.shape[0], thetas.shape[0] * len(texts)
        bounds = self.chunk_bounds(P)
        logits = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            logits.append(np.asarray(self.router.population_logits(thetas[a:b], texts), dtype=np.float64))
            hooks.progress(int(b) * len(texts), total)
        return np.concatenate(logits, axis=0)

    def _trace(
        self,
        gen: int,
        lg: Float64Array,
        model_idx: IndexArray,
        role_idx: IndexArray,
        rewards: Float64Array,
        questions: list[Question],
        hooks: GenerationHooks,
    ) -> None:
        mp, rp = policy.group_probs(lg, len(self.models), self.temperature if self.policy == "sample" else 1.0)
        cands = range(lg.shape[0]) if self.traces == "all" else [int(np.argmax(rewards.mean(axis=1)))]
        now = round(time.time(), 3)
        for c in cands:
            for i, q in enumerate(questions):
                r = float(rewards[c, i])
                hooks.trace(
                    {
                        "gen": gen,
                        "candidate": int(c),
                        "qid": q.id,
                        "benchmark": q.benchmark,
                        "mode": "cached",
                        "turns": [
                            {
                                "model": self.models[model_idx[c, i]],
                                "role": ROLES[role_idx[c, i]],
                                "model_probs": [round(float(p), 4) for p in mp[c, i]],
                                "role_probs": [round(float(p), 4) for p in rp[c, i]],
                                # scored from the outcome matrix, not answered: no call, no response cache
                                "output": "",
                                "verdict": None,
                                "cost_usd": 0.0,
                                "cache_hit": False,
                            }
                        ],
                        "answer": None,
                        "gold": q.answer if q.kind != "code" else None,
                        "correct": r >= 0.5,
                        "reward": r,
                        "cost_usd": 0.0,
                        "time": now,
                    }
                )

    def validate(self, thetas: Float64Array, questions: list[Question]) -> Float64Array:
        """(T, n) recorded correctness of argmax choices: held-out evaluation never samples."""
        lg = np.asarray(self.router.population_logits(thetas, self.texts(questions)), dtype=np.float64)
        model_idx, _ = policy.choose(lg, len(self.models))
        return self.rewards_for(questions, model_idx)

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.set_state(state["rng"])

    def close(self) -> None:
        pass  # holds nothing but the router
