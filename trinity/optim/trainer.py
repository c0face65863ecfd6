"""The sep-CMA-ES training loop, writing the run directory (docs/CONTRACTS.md: Trainer, Run directory).

One generation:
  1. draw the minibatch: m training ids, from the run's own RandomState (`batch_rng`);
  2. `es.ask()` → P candidates θ (P, D); the fitness scores all of them on that one minibatch;
  3. `es.tell` (pycma minimises, so it gets −fitness);
  4. validation (every `val_every` gens): argmax accuracy on the val split of the generation's
     best candidate and of the ES mean; the best-θ rule below may take either;
  5. traces of the generation appended, then the checkpoint (atomic), then history.json,
     best_theta.npy and the `generation` event.

Everything random lives in the checkpoint (data only, `trinity.optim.checkpoint`: the minibatch
RNG, the fitness' RNG, the fitness values the ES was told, from which `_replay_es` rebuilds the
ES and its `randn` RandomState bit for bit), so a run killed at any point and resumed continues
exactly as the uninterrupted run. `traces.jsonl` is cut back to the checkpoint's byte offset on resume
(the lines of a half-done generation are written again); events are append-only.

Best-θ rule (written into summary.json): every validated generation's ES mean, then its best
candidate, is compared with the incumbent (the label warm start is generation 0) on the same
val questions; it replaces the incumbent only when the paired difference of their per-question
val accuracies is above `VAL_MARGIN_Z` standard errors (and above 0). One lucky candidate on a
few noisy 0/1 val labels (k = 1) no longer displaces a better incumbent; the incumbent's
per-question val vector lives in the checkpoint, so a resume compares as the uninterrupted run.
Without a validation split: the ES mean after the last generation.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import types
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np

from trinity.competition.text import router_text
from trinity.config import TrainConfig
from trinity.data.questions import Question, question_group
from trinity.errors import BudgetExceeded, CheckpointError, InputError, OutOfCredit, PoolStop, clear_stop, request_stop
from trinity.io import atomic_write_json
from trinity.model import ROLES
from trinity.model.arrays import Float64Array, IndexArray
from trinity.model.theta import save_theta
from trinity.optim import checkpoint as ckpt
from trinity.optim.audit import overfit_report
from trinity.optim.fitness import Fitness, GenerationHooks, RouterLike, StopRequested
from trinity.optim.runinputs import RunInputs
from trinity.optim.warmstart import fit_role_rows, set_role_rows, warm_start_theta
from trinity.pool.ledger import excess_totals
from trinity.runs.records import BestTheta, GenerationEvent, GenerationRecord, StoppedEarly, Summary, parse_trace
from trinity.runs.rundir import RunDir
from trinity.runs.system import engine_sample

VAL_MARGIN_Z = 2.0  # standard errors of the paired val difference a challenger must win by
INCUMBENT_RULE = (
    "live race recipe without a validation split: the incumbent, evaluated again on every generation's "
    "questions; a generation's race winner replaces it only when its mean reward on those same "
    "questions is higher"
)
BEST_RULE = (
    "validation accuracy (argmax routing, cached rewards): each validated generation's ES mean, "
    "then its best candidate, replaces the incumbent only when its paired per-question val "
    f"difference to the incumbent exceeds {VAL_MARGIN_Z:g} standard errors (and 0); the first "
    "validated θ starts as incumbent, a label warm start being validated generation 0; without a "
    "validation split, the ES mean after the last generation"
)
PROGRESS_MIN_INTERVAL = 0.5  # seconds: at most 2 progress events a second


@dataclass
class TrainResult:
    status: str  # finished | stopped
    message: str
    exit_code: int  # 0, or the stop condition's TrinityError exit code
    generations: int


class EvolutionStrategy(Protocol):
    """What the trainer uses of pycma's `CMAEvolutionStrategy` (cma ships no type information)."""

    sigma: float

    @property
    def mean(self) -> Float64Array: ...

    def ask(self) -> list[Float64Array]: ...

    def tell(self, solutions: list[Float64Array], function_values: list[float]) -> None: ...


def import_cma() -> Any:  # pycma has no types
    """pycma, without two imports the engine never uses: matplotlib, for its interactive plots
    (`cma.s`, `cma.plot`; ~0.8 s), and scipy.stats, for the Kendall tau of its surrogate models
    (`cma.fitness_models`, which falls back on its own when scipy is missing; ~0.6 s). Both off
    every `trinity train` start. A module already loaded is not hidden."""
    hidden = [m for m in ("matplotlib", "scipy.stats") if m not in sys.modules]
    if "cma" in sys.modules or not hidden:
        import cma  # lazy: cma loaded only when used

        return cma
    for m in hidden:
        sys.modules[m] = None  # type: ignore[assignment]  # `import m` → ImportError
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # cma.s: "Could not import matplotlib.pyplot ..."
            import cma  # lazy: cma loaded only when used
    finally:
        for m in hidden:
            if m in sys.modules and sys.modules[m] is None:
                del sys.modules[m]
    return cma


def make_es(
    x0: Float64Array, sigma0: float, popsize: int, rng: np.random.RandomState, mirrored: float = 0.0
) -> EvolutionStrategy:
    """Separable CMA-ES that samples from `rng` only and never stops on its own. `mirrored` > 0:
    pycma's mirrored sampling (`CMA_mirrors`, that fraction of the population; selective with
    delay); 0 keeps pycma's default for the population size."""
    cma = import_cma()

    opts = {
        "CMA_diagonal": True,
        "popsize": popsize,
        "randn": rng.randn,
        "seed": np.nan,
        "verbose": -9,
        "verb_log": 0,
        "verb_disp": 0,
        "verb_filenameprefix": "",
        # the trainer decides when to stop (generations, budget, signals), not pycma
        "maxiter": np.inf,
        "maxfevals": np.inf,
        "tolfun": 0,
        "tolfunhist": 0,
        "tolx": 0,
        "tolflatfitness": np.inf,
        "tolstagnation": np.inf,
        "tolfunrel": 0,
    }
    if popsize < 3:
        # pycma's default step-size rule here (two-point adaptation) injects two mirrored
        # solutions a generation, which a population of 2 has no room for ("Found unused injected
        # direction/solutions" at generation 2); cumulative step-size adaptation needs none.
        # Larger populations keep the default, so their runs and resumes are unchanged.
        opts["AdaptSigma"] = cma.sigma_adaptation.CMAAdaptSigmaCSA
    if mirrored > 0:
        opts["CMA_mirrors"] = float(mirrored)
    es: EvolutionStrategy = cma.CMAEvolutionStrategy(x0, sigma0, opts)
    return es


def _mix(names: list[str] | tuple[str, ...], idx: IndexArray) -> dict[str, int]:
    counts = np.bincount(np.asarray(idx, dtype=np.int64).ravel(), minlength=len(names))  # an empty batch is float64
    return {n: int(c) for n, c in zip(names, counts)}


@dataclass
class Incumbent:
    """The best θ so far under the best-θ rule, with what it scored on val."""

    theta: Float64Array
    val_acc: float
    gen: int
    which: str  # warm_start | es_mean | best_candidate
    val_vec: Float64Array | None = None  # per-question val accuracies (None: a checkpoint of a run before the rule)

    def to_checkpoint(self) -> dict[str, Any]:
        out: dict[str, Any] = {"theta": self.theta, "val_acc": self.val_acc, "gen": self.gen, "which": self.which}
        if self.val_vec is not None:
            out["val_vec"] = self.val_vec
        return out

    @classmethod
    def from_checkpoint(cls, d: dict[str, Any]) -> Incumbent:
        vec = d.get("val_vec")
        return cls(
            theta=np.asarray(d["theta"], dtype=np.float64),
            val_acc=float(d["val_acc"]),
            gen=int(d["gen"]),
            which=str(d["which"]),
            val_vec=None if vec is None else np.asarray(vec, dtype=np.float64),
        )


@dataclass
class TrainerState:
    """Everything a resume needs (checkpointed, data only: `trinity.optim.checkpoint`) plus the
    live ES, which is not stored but rebuilt by replaying `es_tells` (`Trainer._replay_es`)."""

    gen: int
    es_rng: np.random.RandomState  # the ES's randn source (its position is checked after a replay)
    es_x0: Float64Array | None  # the ES's starting mean (None: a checkpoint made before it was kept)
    batch_rng: np.random.RandomState  # the minibatch draws
    fitness: dict[str, Any]  # the fitness' own state_dict()
    es_tells: list[Float64Array] = field(default_factory=list)  # per generation, the values given to es.tell
    history: list[GenerationRecord] = field(default_factory=list)
    best: Incumbent | None = None
    traces_bytes: int = 0
    evals: int = 0
    warm_start: dict[str, Any] | None = None  # what warm_start() fitted, set before generation 1
    es: EvolutionStrategy | None = None  # never checkpointed

    @property
    def strategy(self) -> EvolutionStrategy:
        assert self.es is not None, "the ES is built (fresh_state) or replayed (load_state) before it is used"
        return self.es

    def to_checkpoint(self) -> dict[str, Any]:
        """The checkpoint's data (its keys in the order the checkpoint format has always had)."""
        return {
            "gen": self.gen,
            "es_rng": self.es_rng,
            "es_x0": self.es_x0,
            "es_tells": self.es_tells,
            "batch_rng": self.batch_rng,
            "fitness": self.fitness,
            "history": [r.to_json() for r in self.history],
            "best": None if self.best is None else self.best.to_checkpoint(),
            "traces_bytes": self.traces_bytes,
            "evals": self.evals,
            "warm_start": self.warm_start,
        }

    @classmethod
    def from_checkpoint(cls, d: dict[str, Any]) -> TrainerState:
        """From a checkpoint's data that `validate_state` accepted."""
        x0 = d.get("es_x0")
        best = d.get("best")
        return cls(
            gen=int(d["gen"]),
            es_rng=d.get("es_rng") or np.random.RandomState(),
            es_x0=None if x0 is None else np.asarray(x0, dtype=np.float64),
            batch_rng=d["batch_rng"],
            fitness=d["fitness"],
            es_tells=list(d.get("es_tells") or []),
            history=[GenerationRecord.model_validate(h) for h in d["history"]],
            best=None if best is None else Incumbent.from_checkpoint(best),
            traces_bytes=int(d.get("traces_bytes", 0)),
            evals=int(d.get("evals", 0)),
            warm_start=d.get("warm_start"),
        )


@dataclass(frozen=True)
class Validation:
    """A generation's validation: the fields it adds to the generation record."""

    val_acc: float
    val_acc_mean: float
    best_val_acc: float
    val_per_benchmark: dict[str, float] | None = None
    val_benchmark_mean: float | None = None


class Trainer:
    def __init__(
        self,
        run: RunDir,
        cfg: TrainConfig,
        inputs: RunInputs,
        router: RouterLike,
        fitness: Fitness,
        models: list[str],
        *,
        run_id: str,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        validator: Fitness | None = None,
        warm_up: bool = False,
    ) -> None:
        self.run = run
        self.cfg = cfg
        self.inputs = inputs
        self.router = router
        self.fitness = fitness
        # validation when the fitness has none of its own (live mode): the outcome matrix, cached
        self.validator = validator
        # fitness.warm_up(train + val) once before the first generation of this process (the
        # engine asks for it; the in-process tests' stand-in routers have no feature cache)
        self.warm_up_fitness = warm_up
        self.models = list(models)
        self.run_id = run_id
        self.config_hash = cfg.hash()
        self.on_event = on_event or (lambda ev: None)
        by_id = {q.id: q for q in inputs.questions}
        self.train_q = [by_id[i] for i in inputs.splits["train"]]
        self.val_q = [by_id[i] for i in inputs.splits["val"]]
        if not self.train_q:  # every generation's minibatch would be empty: nothing to learn from
            raise InputError(
                f"{run.path}: the run's train split is empty ({len(inputs.questions)} questions, "
                "splits "
                + ", ".join(f"{k} {len(v)}" for k, v in inputs.splits.items())
                + "); give it more questions or other splits"
            )
        self._stop_signal: str | None = None
        self._last_progress = 0.0
        self._state: TrainerState | None = None

    # ---- state --------------------------------------------------------------------------------
    @property
    def state(self) -> TrainerState:
        assert self._state is not None, "the state is set by train() (fresh) or load_state() (a checkpoint)"
        return self._state

    @state.setter
    def state(self, state: TrainerState) -> None:
        self._state = state

    def fresh_state(self) -> TrainerState:
        x0 = np.asarray(self.router.initial_mean(), dtype=np.float64)
        es, es_rng, es_x0 = self._new_es(x0)
        return TrainerState(
            gen=0,
            es=es,
            es_rng=es_rng,
            es_x0=es_x0,
            batch_rng=np.random.RandomState(self.cfg.seed + 1),
            fitness=self.fitness.state_dict(),
        )

    def _new_es(self, x0: Float64Array) -> tuple[EvolutionStrategy, np.random.RandomState, Float64Array]:
        """A fresh ES at mean `x0` with its own randn source seeded by the run, the source, and
        `x0` (kept so that a data-only checkpoint can rebuild the same ES: `_replay_es`)."""
        es_rng = np.random.RandomState(self.cfg.seed)
        es = make_es(x0, self.cfg.sigma0, self.cfg.popsize, es_rng, mirrored=self.cfg.es_mirrors)
        return es, es_rng, np.array(x0, dtype=np.float64)

    def _start_es_at(self, x0: Float64Array) -> None:
        st = self.state
        st.es, st.es_rng, st.es_x0 = self._new_es(x0)

    def load_state(self, data: dict[str, Any]) -> None:
        """The state from a checkpoint's data (`read_checkpoint`): checked, then the ES replayed."""
        ckpt.validate_state(
            data, n_params=int(self.router.n_params), popsize=self.cfg.popsize, where=str(self.run.checkpoint_dir)
        )
        state = TrainerState.from_checkpoint(data)
        self._replay_es(state, data.get("es_rng"))
        self._state = state
        self.fitness.load_state_dict(state.fitness)

    def _replay_es(self, state: TrainerState, saved: object) -> None:
        """A fresh ES from the run's seed told the recorded fitness values, generation by
        generation: the same ES (mean, σ, covariance, RNG position) the checkpoint was cut from."""
        x0 = state.es_x0  # the ES's starting mean (the warm start's fit, or the router's)
        es, rng, es_x0 = self._new_es(
            x0 if x0 is not None else np.asarray(self.router.initial_mean(), dtype=np.float64)
        )
        if len(state.es_tells) != state.gen:
            raise CheckpointError(
                f"checkpoint in {self.run.checkpoint_dir} does not record the ES's "
                "generations; start a new run (trinity train)"
            )
        for told in state.es_tells:
            es.tell(es.ask(), list(np.asarray(told, dtype=np.float64)))
        if not isinstance(saved, np.random.RandomState) or not all(
            np.array_equal(a, b) for a, b in zip(saved.get_state(), rng.get_state())
        ):
            raise CheckpointError(
                f"checkpoint in {self.run.checkpoint_dir} does not replay to the ES it "
                "recorded (another version of cma/numpy?); start a new run (trinity train)"
            )
        state.es, state.es_rng, state.es_x0 = es, rng, es_x0

    # ---- events -------------------------------------------------------------------------------
    def event(self, type_: str, **fields: Any) -> dict[str, Any]:
        ev = self.run.append_event(type_, **fields)
        self.on_event(ev)
        return ev

    def _log(self, level: str, message: str) -> None:
        self.event("log", level=level, message=message)

    def set_status(self, status: str, message: str = "") -> None:
        """RunDir.set_status (run.json, then a `status` event), with the event also sent to on_event."""
        self.run.update_meta(status=status, status_message=message)
        self.event("status", status=status, message=message)

    def _progress(self, gen: int) -> Callable[[int, int], None]:
        def progress(done: int, total: int) -> None:
            if self._stop_signal:
                raise StopRequested(self._stop_signal)
            now = time.monotonic()
            if now - self._last_progress >= PROGRESS_MIN_INTERVAL:
                self._last_progress = now
                self.event("progress", gen=gen, done=int(done), total=int(total))

        return progress

    def _on_signal(self, signum: int, frame: types.FrameType | None) -> None:
        # First signal: finish nothing more, stop at the next progress point (the last completed
        # generation is already checkpointed). A second one: stop right now.
        if self._stop_signal == "done":
            return  # the run is writing its final status; let it finish
        again = self._stop_signal is not None
        self._stop_signal = signal.Signals(signum).name
        request_stop(self._stop_signal)  # every wait and long loop of the engine polls it
        if again:
            raise StopRequested(self._stop_signal)

    # ---- the loop -----------------------------------------------------------------------------
    def train(self, resume: bool = False) -> TrainResult:
        """Run (or continue) until cfg.generations; returns how it ended. The caller holds the lock.

        SIGINT/SIGTERM are ours until the run's final status is written, so a signal that comes
        while the summary is written cannot leave a finished run marked "running"."""
        if self._state is None:
            self._state = self.fresh_state()
        # ours before the outputs are restored too: restoring may write the `generation` events a
        # killed process missed, and a signal sent on seeing one must stop this run, not kill it
        old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        clear_stop()
        try:
            self._restore_outputs()
            return self._train(resume)
        finally:
            clear_stop()
            for s, h in old.items():
                signal.signal(s, h)

    def _train(self, resume: bool) -> TrainResult:
        try:
            self.set_status("running", f"resumed at generation {self.state.gen}" if resume else "")
            fresh = self.state.gen == 0 and self.state.warm_start is None
            if self.warm_up_fitness and (self.state.gen < self.cfg.generations or fresh):
                # before the warm start too: its features come from the same cache either way, so a
                # `generations: 0` run resumed later equals an uninterrupted run bit for bit
                self.fitness.warm_up(self.train_q + self.val_q, self._log)
            if fresh:
                self.warm_start()
                if self.cfg.generations == 0:  # the warm start alone: checkpointed, so a resume continues it
                    ckpt.write_checkpoint(
                        self.run, self.state.to_checkpoint(), run_id=self.run_id, config_hash=self.config_hash
                    )
                    self._write_artifacts()
            while self.state.gen < self.cfg.generations:
                if self._stop_signal:
                    raise StopRequested(self._stop_signal)
                if self.stood_unbeaten() is not None:  # checked before a generation: a resume spends nothing
                    break
                self.generation()
        except StopRequested as e:
            return self._stopped(f"stopped: interrupted by {e}; continue with `trinity resume {self.run.path}`", 0)
        except OutOfCredit as e:
            return self._stopped(f"stopped: out of credit ({e})", e.exit_code)
        except BudgetExceeded as e:
            return self._stopped(f"stopped: budget reached ({e})", e.exit_code)
        except PoolStop as e:  # unreachable, failing (most calls failed), an absurd charge
            return self._stopped(f"stopped: {e}", e.exit_code)
        except BaseException as e:
            self.set_status("failed", f"{type(e).__name__}: {e}"[:500])
            raise
        self._stop_signal = self._stop_signal or "done"  # from here on a signal only sets the flag
        clear_stop()
        self.write_summary()
        msg = f"finished {self.state.gen} generations"
        early = self._stopped_early()
        if early is not None:
            msg += (
                f" of {self.cfg.generations}: the chosen θ (generation {early.best_gen}) stood unbeaten for "
                f"{early.patience} generations"
            )
        self.set_status("finished", msg)
        return TrainResult("finished", msg, 0, self.state.gen)

    def stood_unbeaten(self) -> int | None:
        """With `patience` N: the generation of the chosen θ once it has stood unbeaten for N
        generations, else None. An ES mean chosen for want of any selection is never 'unbeaten'."""
        n = self.cfg.patience
        if not n:
            return None
        _, best = self.best_theta()
        if best.which == "es_mean" or best.gen is None:
            return None
        return best.gen if self.state.gen - best.gen >= n else None

    def warm_start_mode(self) -> str:
        mode: str = self.cfg.warm_start
        if mode == "auto":
            if self.inputs.matrix is not None:  # cached, or live on a collected matrix (the live recipe)
                mode = "labels"
            else:  # live: the role rows' default (stop once a Verifier accepts a Worker answer)
                mode = "roles" if self.cfg.mode != "cached" else "none"
        return mode

    def _role_rows(self) -> tuple[np.ndarray, dict[str, Any]]:
        return fit_role_rows(
            self.router,
            router_text(self.cfg.competition),
            self.train_q,
            self.models,
            log=self._log_info,  # progress on screen while the encoder works
        )

    def _log_info(self, message: str) -> None:
        self.event("log", level="info", message=message)

    def warm_start(self) -> None:
        """Generation 0: start the ES mean at the head fitted on the training labels (see
        trinity.optim.warmstart), record the fit in run.json and a `warm_start` event, and let the
        best-θ rule consider it like any validated generation (gen 0, which "warm_start")."""
        st = self.state
        mode = self.warm_start_mode()
        if mode == "none":
            st.warm_start = {"method": "none"}
            return

        t0 = time.monotonic()
        if mode == "roles":  # live without labels: model rows stay 0, the role rows get their default
            rows, info = self._role_rows()
            theta = set_role_rows(self.router.initial_mean(), len(self.models), rows.shape[1], rows)
            info = {"method": "roles", "fitted": "role rows: " + info.pop("role_rows"), **info}
        else:
            matrix = self.inputs.matrix
            assert matrix is not None, "a label warm start needs the outcome matrix (checked at start)"
            acc = matrix.accuracy()
            # a live run's matrix may hold only some questions of each group (collect --per-group):
            # the others are fitted to their group's mean
            labelled = np.array([q.id in matrix for q in self.train_q], dtype=bool)
            acc_t = np.full((len(self.train_q), acc.shape[1]), np.nan)
            acc_t[labelled] = acc[[matrix.row(q.id) for q, has in zip(self.train_q, labelled) if has]]
            theta, info = warm_start_theta(
                self.router,
                self.router.initial_mean(),
                len(self.models),
                self.fitness.texts(self.train_q),
                acc_t,
                seed=self.cfg.seed,
                roles=self._role_rows(),
                groups=[question_group(q) for q in self.train_q],
                k=matrix.k,
                label_targets=self.cfg.label_targets,
                labelled=labelled,
            )
        self._start_es_at(theta)  # the ES starts at the fit (es_x0: a replay starts it there too)
        if self.val_q and self.cfg.val_every:
            va = self._accuracy(theta[None, :], self.val_q)
            if va is not None:
                info["val_acc"] = float(np.mean(va))
                info["n_val"] = len(self.val_q)
                per = self._per_benchmark(np.asarray(va), self.val_q)
                if per:
                    info["val_per_benchmark"] = {b: v[0] for b, v in per.items()}
                vec = np.asarray(va, dtype=np.float64).reshape(-1)
                st.best = Incumbent(
                    theta=theta.copy(),
                    val_acc=float(self._val_weights() @ vec),
                    gen=0,
                    which="warm_start",
                    val_vec=vec,
                )
        info["secs"] = round(time.monotonic() - t0, 4)
        st.warm_start = info
        self.run.update_meta(warm_start=info)
        self.event("warm_start", gen=0, **info)

    def _stopped(self, message: str, code: int) -> TrainResult:
        clear_stop()  # the stop is being carried out: the summary's own compute must run
        self.write_summary()
        self.set_status("stopped", message)
        return TrainResult("stopped", message, code, self.state.gen)

    def generation(self) -> None:
        st, cfg = self.state, self.cfg
        gen = st.gen + 1
        t0 = time.monotonic()
        n_batch = min(cfg.m, len(self.train_q))
        pick = self._minibatch(st.batch_rng, n_batch)
        batch = [self.train_q[i] for i in pick]
        es = st.strategy
        thetas = np.asarray(es.ask(), dtype=np.float64)  # (P, D)
        mix: dict[str, dict[str, int]] = {}
        traces: list[dict[str, Any]] = []

        def choices(model_idx: IndexArray, role_idx: IndexArray) -> None:
            mix["model"], mix["role"] = _mix(self.models, model_idx), _mix(ROLES, role_idx)

        hooks = GenerationHooks(self._progress(gen), choices, traces.append)
        # a PoolStop raised here (live mode: unreachable, failing) keeps nothing of this
        # generation (the last checkpoint stands) and stops the run; a resume redoes it
        evaluation = self.fitness.evaluate(gen, thetas, batch, hooks)
        rewards = np.asarray(evaluation.rewards, dtype=np.float64)  # (P, m)
        if rewards.shape != (thetas.shape[0], n_batch):
            raise RuntimeError(f"fitness returned shape {rewards.shape}, expected {(thetas.shape[0], n_batch)}")
        seen = np.isfinite(rewards)  # a race leaves the questions an eliminated candidate did not meet NaN
        fit = np.where(seen, rewards, 0).sum(axis=1) / np.maximum(seen.sum(axis=1), 1)  # (P,)
        rank = fit if evaluation.ranking is None else np.asarray(evaluation.ranking, dtype=np.float64)
        es.tell(list(thetas), list(-rank))
        st.es_tells.append(-rank)
        st.evals += int(seen.sum())
        top = int(np.argmax(rank))
        fit_per_benchmark: dict[str, float] | None = None
        benches = sorted({q.benchmark for q in batch})
        if len(benches) > 1:  # composite: the best candidate's minibatch fitness per benchmark
            best_row = rewards[top]
            fit_per_benchmark = {
                b: float(np.mean([r for r, q in zip(best_row, batch) if q.benchmark == b])) for b in benches
            }
        val = self._validate(gen, thetas[top])
        record = GenerationRecord.given(  # the fields in the order history.json has always had
            gen=gen,
            best=float(max(fit[top], st.history[-1].best if st.history else -np.inf)),
            mean=float(fit.mean()),
            max=float(fit[top]),
            min=float(fit.min()),
            sigma=float(es.sigma),
            evals=st.evals,
            cost_usd=float(self.fitness.cost_usd),
            calls=int(self.fitness.calls),
            fitness_per_benchmark=fit_per_benchmark,
            val_acc=val.val_acc if val else None,
            val_acc_mean=val.val_acc_mean if val else None,
            val_per_benchmark=val.val_per_benchmark if val else None,
            val_benchmark_mean=val.val_benchmark_mean if val else None,
            best_val_acc=val.best_val_acc if val else None,
            model_mix=mix.get("model"),
            role_mix=mix.get("role"),
            # live mode: turns per session (all, the best candidate's), graded accuracy, USD per right answer
            **evaluation.stats.record(top),
            secs=round(time.monotonic() - t0, 4),
        )
        st.history.append(record)
        st.gen = gen
        st.fitness = self.fitness.state_dict()
        if traces:
            where = str(self.run.traces)
            st.traces_bytes = _append_lines(self.run.traces, [parse_trace(t, where).to_json() for t in traces])
        ckpt.write_checkpoint(self.run, st.to_checkpoint(), run_id=self.run_id, config_hash=self.config_hash)
        self._write_artifacts()
        # the box's state beside the generation (GPU, CPU, RAM, this process, free disk): events
        # only, never the checkpointed history (a resumed run stays bit-identical)
        self.event("generation", **record.to_json(), system=engine_sample(self.run.path.parent))

    def _validate(self, gen: int, best_cand: Float64Array) -> Validation | None:
        """Validation of the generation's ES mean and best candidate (None when it does not run
        this generation); the best-θ rule may take either as the new incumbent."""
        cfg, st = self.cfg, self.state
        if not self.val_q or not cfg.val_every or gen % cfg.val_every:
            return None
        mean = np.asarray(st.strategy.mean, dtype=np.float64)
        acc = self._accuracy(np.stack([mean, best_cand]), self.val_q)  # (2, n_val)
        if acc is None:
            return None
        val_mean, val_best = (float(a) for a in np.asarray(acc).mean(axis=1))
        plain_mean, plain_best = val_mean, val_best  # the record's val_acc_mean / val_acc
        per = self._per_benchmark(np.asarray(acc), self.val_q)  # {benchmark: (mean θ, best θ)}
        per_best: dict[str, float] | None = None
        bench_mean: float | None = None
        if per:
            per_best = {b: v[1] for b, v in per.items()}
            bench_mean = float(np.mean([v[1] for v in per.values()]))
            if cfg.select_on == "benchmark_mean":  # TinyRouter's composite: each benchmark weighs the same
                val_mean = float(np.mean([v[0] for v in per.values()]))
                val_best = bench_mean
        # the mean first, then the best candidate: each must beat the incumbent by the noise margin
        acc = np.asarray(acc, dtype=np.float64)
        for which, theta, v, vec in (
            ("es_mean", mean, val_mean, acc[0]),
            ("best_candidate", best_cand, val_best, acc[1]),
        ):
            if st.best is None or self._beats(vec):
                st.best = Incumbent(theta=theta.copy(), val_acc=v, gen=gen, which=which, val_vec=vec.copy())
        assert st.best is not None
        return Validation(
            val_acc=plain_best,
            val_acc_mean=plain_mean,
            best_val_acc=st.best.val_acc,
            val_per_benchmark=per_best,
            val_benchmark_mean=bench_mean,
        )

    def _val_weights(self) -> Float64Array:
        """(n_val,) weights of the selection figure: 1/n each, or with `select_on: benchmark_mean`
        1/(B·n_b) per question of benchmark b (each benchmark weighs the same)."""
        benches = np.array([q.benchmark for q in self.val_q])
        names = sorted(set(benches.tolist()))
        if self.cfg.select_on != "benchmark_mean" or len(names) < 2:
            return np.full(len(benches), 1.0 / len(benches))
        w = np.zeros(len(benches))
        for b in names:
            w[benches == b] = 1.0 / (len(names) * int(np.sum(benches == b)))
        return w

    def _beats(self, vec: Float64Array) -> bool:
        """Whether per-question val accuracies `vec` beat the incumbent's by more than
        VAL_MARGIN_Z standard errors of the (weighted, per-benchmark stratified) paired difference."""
        best = self.state.best
        assert best is not None
        inc = best.val_vec
        if inc is None or np.shape(inc) != np.shape(vec):  # a checkpoint of a run made before the rule
            got = self._accuracy(np.asarray(best.theta, dtype=np.float64)[None, :], self.val_q)
            inc = best.val_vec = np.asarray(got, dtype=np.float64).reshape(-1)
        d = np.asarray(vec, dtype=np.float64) - np.asarray(inc, dtype=np.float64)
        w = self._val_weights()
        gain = float(w @ d)
        benches = np.array([q.benchmark for q in self.val_q])
        var = 0.0
        for b in sorted(set(benches.tolist())):
            sel = benches == b
            n_b = int(sel.sum())
            if n_b > 1:
                var += float(w[sel].sum()) ** 2 * float(np.var(d[sel], ddof=1)) / n_b
        return gain > 0 and gain > VAL_MARGIN_Z * var**0.5

    def _minibatch(self, rng: np.random.RandomState, n_batch: int) -> IndexArray:
        """Indices into train_q. Several benchmarks (and cfg.stratify): each gets its share of the
        m questions, at least one, drawn without replacement within it — every generation then
        scores every benchmark. Otherwise one uniform draw (the stream of runs made before)."""
        benches = sorted({q.benchmark for q in self.train_q})
        if not self.cfg.stratify or len(benches) < 2 or n_batch < len(benches):
            return rng.choice(len(self.train_q), size=n_batch, replace=False)
        idx = {b: [i for i, q in enumerate(self.train_q) if q.benchmark == b] for b in benches}
        sizes = np.array([len(idx[b]) for b in benches], dtype=np.float64)
        share = np.maximum(1, np.floor(n_batch * sizes / sizes.sum())).astype(int)
        share = np.minimum(share, sizes.astype(int))
        while share.sum() < n_batch:  # the remainder to the largest fractional parts, capped by size
            room = np.flatnonzero(share < sizes)
            frac = n_batch * sizes / sizes.sum() - share
            share[room[int(np.argmax(frac[room]))]] += 1
        while share.sum() > n_batch:
            share[int(np.argmax(share))] -= 1
        out = [np.asarray(idx[b])[rng.choice(len(idx[b]), size=int(k), replace=False)] for b, k in zip(benches, share)]
        return np.concatenate(out)

    @staticmethod
    def _per_benchmark(acc: Float64Array, questions: list[Question]) -> dict[str, tuple[float, ...]]:
        """{benchmark: per-θ mean accuracy} when the questions span several benchmarks."""
        benches = np.array([q.benchmark for q in questions])
        names = sorted(set(benches.tolist()))
        if len(names) < 2:
            return {}
        return {b: tuple(float(v) for v in acc[:, benches == b].mean(axis=1)) for b in names}

    def _accuracy(self, thetas: Float64Array, questions: list[Question]) -> Float64Array | None:
        """(T, n) held-out correctness (argmax routing), or None when nothing can score it free."""
        acc = self.fitness.validate(thetas, questions)
        if acc is None and self.validator is not None:
            acc = self.validator.validate(thetas, questions)
        return acc

    # ---- outputs ------------------------------------------------------------------------------
    def best_theta(self) -> tuple[Float64Array, BestTheta]:
        """The run's best θ and which it is (summary.json's `best_theta`, without its rule)."""
        st = self.state
        if st.best is not None:
            b = st.best
            return b.theta, BestTheta(gen=b.gen, which=b.which, val_acc=b.val_acc)
        incumbent = getattr(self.fitness, "incumbent", None)  # live racing: the re-evaluated best candidate
        if incumbent is not None:
            theta = np.asarray(incumbent["theta"], dtype=np.float64).copy()
            return theta, BestTheta(gen=int(incumbent["gen"]), which="incumbent", val_acc=None)
        return np.asarray(st.strategy.mean, dtype=np.float64).copy(), BestTheta(
            gen=st.gen, which="es_mean", val_acc=None
        )

    def _write_artifacts(self) -> None:
        theta, _ = self.best_theta()
        save_theta(self.run.best_theta, theta)
        atomic_write_json(self.run.history, [r.to_json() for r in self.state.history])

    def _restore_outputs(self) -> None:
        """Bring the run's files in line with the state: cut traces of a half-done generation,
        rewrite artifacts, and emit `generation` events the killed process did not get to write."""
        st = self.state
        tr = self.run.traces
        if tr.exists() and tr.stat().st_size > st.traces_bytes:
            with open(tr, "r+b") as f:
                f.truncate(st.traces_bytes)
        if not st.history:
            return
        self._write_artifacts()
        seen = {ev.gen for ev in self.run.read_typed_events() if isinstance(ev, GenerationEvent)}
        for rec in st.history:
            if rec.gen not in seen:
                self.event("generation", **rec.to_json())

    def write_summary(self) -> None:
        st = self.state
        theta, info = self.best_theta()
        hist = st.history
        turns = self._measured_turns(info)
        head, n_records = ckpt.ledger_anchor(self.run)
        excess_micro, excess_calls = None, None
        if self.run.ledger.exists():  # what the provider billed above the reserved worst case (issue 12)
            excess_micro, excess_calls = excess_totals(self.run.ledger)
        summary = Summary(  # the fields in the order summary.json has always had
            run_id=self.run_id,
            mode=self.cfg.mode,
            encoder=self.cfg.encoder,
            models=self.models,
            n_params=int(theta.shape[0]),
            generations=st.gen,
            generations_planned=self.cfg.generations,
            popsize=self.cfg.popsize,
            m=self.cfg.m,
            sigma0=self.cfg.sigma0,
            seed=self.cfg.seed,
            final_sigma=float(st.strategy.sigma),
            best_fitness=hist[-1].best if hist else None,
            final_mean_fitness=hist[-1].mean if hist else None,
            best_theta=BestTheta(
                gen=info.gen,
                which=info.which,
                val_acc=info.val_acc,
                rule=INCUMBENT_RULE if info.which == "incumbent" else BEST_RULE,
            ),
            evals=st.evals,
            cost_usd=float(self.fitness.cost_usd),
            calls=int(self.fitness.calls),
            config_hash=self.config_hash,
            held_out_accuracy=(
                "val/test accuracies below: argmax turn-1 routing scored by the outcome "
                "matrix (cached, mean of k samples)"
            ),
            fitness_definition=(
                "cached: turn-1 model choice scored by that model's mean recorded "
                "correctness over its k samples; candidate fitness = mean over the "
                "generation's m-question minibatch; evals = candidate x question "
                "evaluations so far"
                if self.cfg.mode == "cached"
                else "live: graded final answer of the multi-turn session, minus "
                f"lambda_turns x (turns - 1)/4 (lambda_turns={self.cfg.lambda_turns:g}) and "
                f"lambda_cost x cost_usd (lambda_cost={self.cfg.lambda_cost:g})"
            ),
            lambda_turns=self.cfg.lambda_turns,
            lambda_cost=self.cfg.lambda_cost,
            **_given(warm_start=st.warm_start),
            **_given(avg_turns=turns[0] if turns else None, avg_turns_source=turns[1] if turns else None),
            **self._held_out(theta),  # <split>_acc, <split>_single, … for the splits scored
            ledger_head=head,
            ledger_records=n_records,
            **_given(excess_calls=excess_calls, excess_billed_usd=None if excess_micro is None else excess_micro / 1e6),
            **_given(stopped_early=self._stopped_early()),
        )
        atomic_write_json(self.run.summary, summary.to_json())

    def _stopped_early(self) -> StoppedEarly | None:
        """summary.json's `stopped_early` once `patience` ended the run before its generations."""
        best_gen = self.stood_unbeaten()
        if best_gen is None or self.state.gen >= self.cfg.generations or self.cfg.patience is None:
            return None
        return StoppedEarly(at_gen=self.state.gen, best_gen=best_gen, patience=self.cfg.patience)

    def _measured_turns(self, info: BestTheta) -> tuple[float, str] | None:
        """Live mode: the avg turns per session measured in training for the best θ and where it
        comes from (the score estimate reads summary.json's `avg_turns`). Cached mode runs no
        sessions: None."""
        if self.cfg.mode == "cached":
            return None  # no session was run: a live evaluation (trinity eval --mode live) measures turns
        hist = self.state.history
        by_gen = {r.gen: r for r in hist}
        rec = by_gen.get(info.gen) if info.gen is not None else None
        rec = rec or (hist[-1] if hist else None)
        if rec is None or rec.avg_turns is None:
            return None
        if info.which == "best_candidate" and rec.best_avg_turns is not None:
            return rec.best_avg_turns, f"training: the best candidate's sessions in generation {rec.gen}"
        return (
            rec.avg_turns,
            f"training: the population's sessions in generation {rec.gen} "
            "(the best θ is an ES mean, which was not run itself)",
        )

    def _held_out(self, theta: Float64Array) -> dict[str, Any]:
        """Cached accuracy of best θ on val/test and the single-model baselines there."""
        out: dict[str, Any] = {}
        matrix = self.inputs.matrix
        if matrix is None:
            return out
        by_id = {q.id: q for q in self.inputs.questions}
        acc_table = matrix.accuracy()
        per_bench: dict[str, dict[str, float]] = {}
        # a live run's val questions without a row (a per-group collect) are scored by their group's mean
        fill: dict[str, Float64Array] = getattr(self.validator, "fill", None) or {}
        for split in ("val", "test", "audit"):
            ids = self.inputs.splits.get(split) or []
            if not ids or any(i not in matrix and i not in fill for i in ids):  # a live run's matrix may stop at val
                continue
            qs = [by_id[i] for i in ids]
            acc = self._accuracy(theta[None, :], qs)
            if acc is None:
                continue
            singles = np.stack([acc_table[matrix.row(i)] if i in matrix else fill[i] for i in ids]).mean(axis=0)  # (M,)
            j = int(np.argmax(singles))
            out[f"{split}_acc"] = float(np.mean(acc))
            out[f"{split}_single"] = {m: float(v) for m, v in zip(self.models, singles)}
            out[f"{split}_best_single"] = {"model": self.models[j], "acc": float(singles[j])}
            out[f"{split}_n"] = len(ids)
            benches = np.array([q.benchmark for q in qs])
            per_bench[split] = {"all": float(np.mean(acc))}
            per_bench[split].update(
                {b: float(np.mean(np.asarray(acc)[..., benches == b])) for b in sorted(set(benches.tolist()))}
            )
            if len(per_bench[split]) > 2:  # several benchmarks: each alone, and their mean (the composite)
                out[f"{split}_per_benchmark"] = {b: v for b, v in per_bench[split].items() if b != "all"}
                out[f"{split}_composite"] = float(np.mean(list(out[f"{split}_per_benchmark"].values())))
        if "audit" in per_bench:
            out["overfit"] = overfit_report(per_bench)
        return out


def _given(**fields: Any) -> dict[str, Any]:
    """The keyword arguments that are not None: fields a record leaves out rather than writes as null."""
    return {k: v for k, v in fields.items() if v is not None}


def _append_lines(path: str | os.PathLike[str], records: list[dict[str, Any]]) -> int:
    """Append records as JSON lines in one write; returns the file size after it."""
    data = "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in records).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)
