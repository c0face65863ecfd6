"""Route questions with a trained run: `load_trained(run_dir).route(questions, turns)`.

Used by `trinity eval` / `trinity score` and the app. The router is the run's own: the encoder
named in run.json (with its seed), the run's model order, and `best_theta.npy`. Routing is
always argmax per group, as in evaluation.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from trinity.competition.text import router_text, run_competition
from trinity.config import validate_config
from trinity.data.questions import Question
from trinity.errors import InputError
from trinity.model import policy
from trinity.model.arrays import Float64Array, IndexArray
from trinity.model.theta import load_theta
from trinity.optim.fitness import build_router
from trinity.runs.rundir import RunDir

if TYPE_CHECKING:
    from trinity.optim.fitness import RouterLike

Turns = Sequence[tuple[str, str, str]]  # [(role, model, output)] of earlier turns


@dataclass
class Routing:
    model_idx: IndexArray  # (N,) int
    role_idx: IndexArray  # (N,) int
    model_probs: Float64Array  # (N, M) softmax of the model logits
    role_probs: Float64Array  # (N, 3) softmax of the role logits

    def model_names(self, models: Sequence[str]) -> list[str]:
        return [models[i] for i in self.model_idx]


class TrainedRouter:
    def __init__(
        self,
        router: RouterLike,
        theta: Float64Array,
        models: list[str],
        run_id: str | None = None,
        text_fn: Callable[[Question, Turns], str] | None = None,
        competition: str | None = None,
    ) -> None:
        if theta.ndim != 1 or theta.shape[0] != router.n_params:
            raise InputError(
                f"θ has shape {theta.shape}, the router needs ({router.n_params},); "
                "is best_theta.npy from a run with this encoder and pool?"
            )
        self.router = router
        self.theta = theta
        self.models = list(models)
        self.run_id = run_id
        self._text_fn = text_fn

        self.text = router_text(competition)  # the text format the head was trained on
        self.competition = self.text.name

    def texts(self, questions: Sequence[Question], turns: Sequence[Turns] | None = None) -> list[str]:
        if self._text_fn is not None:
            return [self._text_fn(q, turns[i] if turns else ()) for i, q in enumerate(questions)]
        return [self.text.question_input(q, tuple(turns[i]) if turns else ()) for i, q in enumerate(questions)]

    def logits(self, questions: Sequence[Question], turns: Sequence[Turns] | None = None) -> Float64Array:
        """(N, M + 3) head logits for each question (with its earlier turns, if given)."""
        if turns is not None and len(turns) != len(questions):
            raise InputError(f"got {len(turns)} transcripts for {len(questions)} questions")
        out = self.router.population_logits(self.theta[None, :], self.texts(questions, turns))
        logits: Float64Array = np.asarray(out, dtype=np.float64)[0]
        return logits

    def route(self, questions: Sequence[Question], turns: Sequence[Turns] | None = None) -> Routing:
        if not questions:
            m = len(self.models)
            return Routing(np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros((0, m)), np.zeros((0, 3)))
        lg = self.logits(questions, turns)
        model_idx, role_idx = policy.choose(lg, len(self.models))
        mp, rp = policy.group_probs(lg, len(self.models))
        return Routing(model_idx, role_idx, mp, rp)


def load_trained(
    run_dir: str | os.PathLike[str] | RunDir,
    theta_path: str | os.PathLike[str] | None = None,
    device: str | None = None,
) -> TrainedRouter:
    """The run's router with its best θ (or `theta_path`), on `device` (default: the run's)."""
    run = run_dir if isinstance(run_dir, RunDir) else RunDir(Path(run_dir))
    meta = run.meta()
    data = meta.config.to_json()
    if device is not None:
        data["device"] = device
    cfg = validate_config(data, where=f"{run.run_json} config")
    models = meta.models
    if not models:
        raise InputError(f"{run.run_json} names no models; was the run started?")
    path = Path(theta_path) if theta_path else run.best_theta
    if not path.exists():
        raise InputError(f"{path} not found; the run has no trained θ yet (wait for its first generation)")
    theta = load_theta(path, meta.n_params)
    router = build_router(cfg, len(models))

    return TrainedRouter(router, theta, list(models), meta.id, competition=run_competition(meta.to_json()))
