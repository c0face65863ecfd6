"""Simple routers on the frozen features (issue 14): k-nearest-neighbour and nearest-centroid,
cross-validated, and the *learnable* gain they show over the best single model.

Both read the same L2-normalised frozen features the head reads (SVF scales 1.0) and the
training questions' recorded correctness `acc (N, M)` (mean of the k samples):

- **kNN** (cosine, k = `KNN_K`): for a query, the `k` training questions of highest cosine
  similarity (ties: lower training index); route to the model with the highest mean correctness
  among them; ties between models go to the model with the higher overall training accuracy,
  then the lower index.
- **Nearest centroid**: each training question is labelled with the model that is uniquely best
  on it (questions where no single model is strictly best carry no label and are left out); a
  model's centroid is the normalised mean of its questions' features; a query goes to the model
  of the most cosine-similar centroid. With no labelled questions, everything goes to the best
  training model.

Cross-validation: `FOLDS` folds over the questions by a seeded permutation; each question is
routed by a router fitted on the other folds. The learnable gain is the paired difference of
that routed correctness against the best single model (chosen on all questions — the same
baseline the cross-fit oracle uses), with a paired bootstrap CI. It is a lower bound of what a
router on these features can reach, as the cross-fit oracle is an upper bound of sorts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from trinity.analysis.inputs import resolve_questions
from trinity.analysis.stats import CI, paired_bootstrap_ci
from trinity.config import TrainConfig
from trinity.errors import InputError
from trinity.model.text import encoder_input
from trinity.optim.fitness import build_router
from trinity.optim.routing import load_trained
from trinity.optim.runinputs import load_run_inputs
from trinity.optim.warmstart import frozen_features

if TYPE_CHECKING:
    import os

    from trinity.data.matrix import OutcomeMatrix
    from trinity.data.questions import Question
    from trinity.model.router import Router
    from trinity.optim.fitness import RouterLike
    from trinity.optim.warmstart import TextFeatureRouter
    from trinity.runs.rundir import RunDir

KNN_K = 15
FOLDS = 5
METHODS = ("knn", "centroid")


def _normalise(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    out: np.ndarray = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)
    return out


def _model_order(acc_train: np.ndarray) -> np.ndarray:
    """Tie-break score per model: a small bonus for higher overall accuracy, then lower index."""
    m = acc_train.shape[1]
    overall = acc_train.mean(axis=0)
    rank = np.empty(m)
    rank[np.lexsort((np.arange(m), -overall))] = np.arange(m)  # 0 = preferred
    return rank


def _argmax_tiebreak(scores: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Row-wise argmax of scores (N, M); exact ties go to the lower `rank`."""
    best = scores.max(axis=1, keepdims=True)
    tied = np.isclose(scores, best, rtol=0.0, atol=1e-12)
    choice: np.ndarray = np.argmin(np.where(tied, rank[None, :], np.inf), axis=1)
    return choice


def knn_route(X_train: np.ndarray, acc_train: np.ndarray, X_query: np.ndarray, k: int = KNN_K) -> np.ndarray:
    """(n_query,) model index chosen by the cosine kNN router."""
    Xt, Xq = _normalise(X_train), _normalise(X_query)
    acc_train = np.asarray(acc_train, dtype=np.float64)
    if len(Xt) == 0:
        raise InputError("kNN routing needs at least one training question")
    k = max(1, min(int(k), len(Xt)))
    sims = Xq @ Xt.T  # (n_query, n_train)
    # stable sort on -sim: equal similarities keep training order
    nn = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    scores = acc_train[nn].mean(axis=1)  # (n_query, M)
    return _argmax_tiebreak(scores, _model_order(acc_train))


def centroid_route(X_train: np.ndarray, acc_train: np.ndarray, X_query: np.ndarray) -> np.ndarray:
    """(n_query,) model index chosen by the nearest-centroid router."""
    Xt, Xq = _normalise(X_train), _normalise(X_query)
    acc_train = np.asarray(acc_train, dtype=np.float64)
    m = acc_train.shape[1]
    rank = _model_order(acc_train)
    top = acc_train.max(axis=1, keepdims=True)
    unique_best = np.isclose(acc_train, top, rtol=0.0, atol=1e-12).sum(axis=1) == 1
    label = np.argmax(acc_train, axis=1)
    models = [j for j in range(m) if np.any(unique_best & (label == j))]
    if not models:
        return np.full(len(Xq), int(np.argmin(rank)))
    cents = np.stack([Xt[unique_best & (label == j)].mean(axis=0) for j in models])
    sims = Xq @ _normalise(cents).T  # (n_query, n_centroids)
    chosen: np.ndarray = np.asarray(models)[np.argmax(sims, axis=1)]
    return chosen


def route(method: str, X_train: np.ndarray, acc_train: np.ndarray, X_query: np.ndarray, k: int = KNN_K) -> np.ndarray:
    if method == "knn":
        return knn_route(X_train, acc_train, X_query, k)
    if method == "centroid":
        return centroid_route(X_train, acc_train, X_query)
    raise InputError(f"unknown feature router {method!r}; use one of {', '.join(METHODS)}")


def cross_validated_choices(
    method: str, X: np.ndarray, acc: np.ndarray, folds: int = FOLDS, seed: int = 0, k: int = KNN_K
) -> np.ndarray:
    """(N,) model index per question, each from a router fitted on the other folds."""
    n = len(X)
    folds = min(int(folds), n)
    if folds < 2:
        raise InputError(f"cross-validation needs at least 2 questions, got {n}")
    order = np.random.RandomState(seed + 15485863).permutation(n)
    out = np.empty(n, dtype=np.int64)
    for part in np.array_split(order, folds):
        rest = np.setdiff1d(order, part, assume_unique=True)
        out[part] = route(method, X[rest], acc[rest], X[part], k)
    return out


@dataclass
class LearnableGain:
    method: str
    accuracy: float  # cross-validated routed accuracy
    best_single: str
    best_single_acc: float
    gain: CI  # paired: routed − best single, per question
    folds: int
    k: int | None

    @property
    def significant(self) -> bool:
        return self.gain.lo > 0

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "accuracy": self.accuracy,
            "best_single": self.best_single,
            "best_single_acc": self.best_single_acc,
            "gain": self.gain.to_json(),
            "folds": self.folds,
            "k": self.k,
            "significant": self.significant,
        }


def learnable_gain(
    X: np.ndarray,
    acc: np.ndarray,
    models: list[str],
    method: str = "knn",
    folds: int = FOLDS,
    seed: int = 0,
    bootstrap: int = 2000,
    k: int = KNN_K,
) -> LearnableGain:
    acc = np.asarray(acc, dtype=np.float64)
    choice = cross_validated_choices(method, X, acc, folds, seed, k)
    routed = acc[np.arange(len(acc)), choice]
    best = int(np.argmax(acc.mean(axis=0)))
    ci = paired_bootstrap_ci(routed, acc[:, best], bootstrap, seed)
    ci = CI(ci.point, ci.lo, ci.hi, f"{ci.method}; {min(folds, len(acc))}-fold cross-validated {method}", ci.level)
    return LearnableGain(
        method,
        float(routed.mean()),
        models[best],
        float(acc[:, best].mean()),
        ci,
        min(folds, len(acc)),
        k if method == "knn" else None,
    )


def learnable_verdict(ceiling_verdict: str, ceiling_ci: CI | None, gain: LearnableGain) -> tuple[str, str]:
    """One line that uses both bounds: the per-question cross-fit ceiling and the learnable gain."""
    g = gain.gain
    span = f"{g.point:+.3f} [{g.lo:+.3f}, {g.hi:+.3f}]"
    if gain.significant:
        if ceiling_verdict in ("INCONCLUSIVE", "POOL_BOUND"):
            return "LEARNABLE", (
                f"the per-question ceiling says {ceiling_verdict}, but a cross-validated "
                f"{gain.method} router on the frozen features gains {span} over the best single "
                "model: the headroom is real and learnable — train the router"
            )
        return "LEARNABLE", (
            f"a cross-validated {gain.method} router gains {span} over the best single model "
            f"(ceiling verdict {ceiling_verdict}): a trained head should reach at least that"
        )
    if ceiling_ci is not None and ceiling_ci.lo > 0:
        return "CEILING_ONLY", (
            f"the cross-fit ceiling shows headroom but {gain.method} on the frozen features "
            f"gains only {span}: the structure is per question, not in the features; "
            "SVF/ES may still find some, or the pool is the lever"
        )
    return "NOT_LEARNABLE", (
        f"neither the cross-fit ceiling nor {gain.method} on the features ({span}) shows "
        "a gain: the lever is the pool, or more questions/samples"
    )


# ---- a run's frozen features (eval, oracle --learnable) ------------------------------------------


def question_features(router: RouterLike | TextFeatureRouter, questions: Sequence[Question]) -> np.ndarray:
    """(N, H) frozen features of `questions` (turn-1 encoder input) under `router` (SVF 1.0)."""
    return frozen_features(router, [encoder_input(q.question) for q in questions])


def run_feature_routes(
    run_dir: str | os.PathLike[str] | RunDir, split: str, methods: Sequence[str] = METHODS, k: int = KNN_K
) -> dict[str, np.ndarray]:
    """{method: (n_split,) model index}: each feature router fitted on the run's training split
    (its frozen features and recorded correctness), routing the run's `split` questions."""
    inputs = load_run_inputs(run_dir)
    if inputs.matrix is None:
        raise InputError(f"{run_dir}: the run has no outcome matrix; feature baselines need its labels")
    by_id = {q.id: q for q in inputs.questions}
    router = load_trained(run_dir).router
    train = [by_id[i] for i in inputs.splits["train"]]
    query = [by_id[i] for i in inputs.splits[split]]
    acc = inputs.matrix.accuracy()
    a_train = acc[[inputs.matrix.row(q.id) for q in train]]
    X_train, X_query = question_features(router, train), question_features(router, query)
    return {m: route(m, X_train, a_train, X_query, k) for m in methods}


def encoder_router(encoder: str, device: str | None = None, encoder_seed: int = 0) -> Router:
    """A router over `encoder` for feature extraction only (the head is never used)."""
    cfg = TrainConfig.model_validate({"encoder": encoder, "device": device, "encoder_seed": encoder_seed})
    return build_router(cfg, 1)


def matrix_questions(
    matrix: OutcomeMatrix, questions_spec: str | None, run_dir: str | os.PathLike[str] | RunDir | None = None
) -> list[Question]:
    """The questions of the matrix's rows, in row order: from --questions, or the run's inputs."""
    if run_dir is not None:
        qs = load_run_inputs(run_dir).questions
    elif questions_spec:
        qs = resolve_questions(questions_spec)
    else:
        raise InputError("feature routers read the questions' text: pass --questions FILE.jsonl (or a --run)")
    by_id = {q.id: q for q in qs}
    missing = [i for i in matrix.ids if i not in by_id]
    if missing:
        raise InputError(
            f"{len(missing)} matrix row(s) have no question in the questions file "
            f"(e.g. {', '.join(missing[:3])}); use the questions the matrix was collected on"
        )
    return [by_id[i] for i in matrix.ids]


def feature_systems(
    X: np.ndarray, acc: np.ndarray, folds: int = FOLDS, seed: int = 0, k: int = KNN_K
) -> dict[str, np.ndarray]:
    """{method: (N,) cross-validated routed correctness} for the `trinity baselines` table."""
    acc = np.asarray(acc, dtype=np.float64)
    rows = np.arange(len(acc))
    return {m: acc[rows, cross_validated_choices(m, X, acc, folds, seed, k)] for m in METHODS}
