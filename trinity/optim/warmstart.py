"""Warm start from correctness labels (issue 14): fit the head's model rows on the outcome matrix.

The outcome matrix holds, for every training question, which models answered it right. ES on a
minibatch of m noisy 0/1 rewards is a weak learner for the head's first rows; these labels are
free. So before generation 1 the head's model rows are fitted on the *frozen* features (SVF scales
at 1.0, the encoder as shipped) by a regularised per-model logistic regression:

    P(model j right | h) = sigmoid(w_j · h),   loss = Σ_i Σ_j BCE(acc[i, j], sigmoid(w_j · h_i)) / n
                                                      + λ/2 Σ_j |w_j|²

with acc[i, j] the mean of model j's k recorded samples (a fractional label). The head has no
bias, so neither has the fit (L2-normalised features keep a common direction that serves as
one). Argmax of w_j · h is argmax of the predicted correctness: the route a Bayes router takes.
λ is chosen from `LAMBDAS` by `FOLDS`-fold cross-validation on the training split (routed
accuracy, ties to the larger λ), then the fit is redone on the whole training split.

Label targets (`label_targets`, default `group`): with k answers per cell, a single question's
label is mostly sampling noise (k = 1: one 0/1 draw), and a fit on 30 such labels learns to tell
the training questions apart instead of the topics (it misroutes held-out questions of a topic
whose training labels it memorised). So each question's target is shrunk towards the mean of its
group — the questions of the same benchmark and kind, metadata every question carries — by an
empirical-Bayes weight (`shrink_to_groups`): the part of the between-question spread within a
(group, model) that the k draws per cell cannot explain by sampling noise is kept, the rest goes
to the group's mean. With k = 1 the spread is not identifiable and every target is its group's
mean; with many draws per cell the per-question labels stand. With fewer than two groups (or a
group of one question) nothing is shrunk: the targets are the labels, as before. `question`
keeps the labels as targets (the recipe before). With group targets, cross-validation scores a
held-out fold's routes against its questions' group means over the other folds (`group_estimates`)
rather than against their single draws, which pick a λ by luck. A matrix with rows for only some
training questions (a live run's `trinity collect --per-group N`): every question is still fitted,
one without a row to its group's mean label (`fill_group_means`; in each fold over the fold's
labelled rows), and the record counts them (`n_with_rows`, `n_group_mean`).
`best` routes each group as a whole: every question's target is the one-hot of its group's best
model by the group targets' mean (a tie shared evenly), a classification of topics rather than a
regression of their rates. Offline it reaches 0.945–0.953 of the per-topic ceiling with 8–12
one-draw labels a topic where `group` plateaus at 0.91–0.92 (`scripts/label_noise_probe.py`,
docs/perf/live-dollar.md).

Role rows (`fit_role_rows`): a session's turn rules (trinity.session.loop) let a Verifier's
ACCEPT end it only once a Worker answered, and score the newest non-Verifier answer. The default
that uses them: Worker on a bare query, Verifier once the transcript holds turns — so a session
stops at turn 2 when the Verifier accepts, and a REVISE leaves the Worker's answer as the scored
one (no accuracy is lost against a one-Worker session). The role rows are fitted to that on the
*frozen features of synthesised transcripts* of up to `ROLE_MAX_QUESTIONS` training questions
(the competition's transcript format, 0-4 earlier turns alternating Worker / Verifier REVISE,
`ROLE_TEMPLATES` as their outputs): a multinomial logistic regression over the three role logits
with balanced classes, then scaled so the median margin is `ROLE_MARGIN` (ES noise σ0 on a row
moves a logit by ≈ σ0, so the default survives the first generations). Thinker gets no examples.
"Worker again after a REVISE" would need the features to tell the last turn's role apart, which
tiny-qwen3's do not on unseen phrasings. The SVF scales stay 1.0. In live mode this runs without
a matrix too (warm start `auto`): stopping exists from generation 1 and ES trades it against
accuracy under lambda_turns. The ES mean starts at this θ; the trainer records what was fitted.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Protocol

import numpy as np
import numpy.typing as npt

from trinity.config import DEFAULT_LABEL_TARGETS, LABEL_TARGETS
from trinity.data.matrix import group_means
from trinity.errors import check_stop
from trinity.model import ROLES
from trinity.model.arrays import Float64Array, FloatArray, IndexArray, Int64Array

if TYPE_CHECKING:
    from trinity.competition.text import RouterText
    from trinity.data.questions import Question
    from trinity.optim.fitness import RouterLike

LAMBDAS = (1e-5, 1e-4, 1e-3, 1e-2)  # L2 strengths tried by cross-validation (the loss is a mean over questions)
FOLDS = 4
ROLE_SCALE = 0.5
MAX_ITER = 200
TARGET_TEXT = {  # what the fit's record says each target is
    "group": "shrunk towards its benchmark/kind group",
    "best": "one-hot of its benchmark/kind group's best model",
}
ROLE_MARGIN = 2.0  # median logit margin of the fitted role rows (the chosen role over the next)
ROLE_LAMBDA = 1e-3
# A Verifier on a bare query loses the question (no Worker answer follows; a session ends with
# none), a Worker on a later state costs a turn: the bare-query class weighs this much more than
# a balanced fit gives it. On held-out practice questions (scripts/role_rows_probe.py) bare
# queries sent to a non-Worker 0.080 -> 0.012, later states sent to a non-Verifier 0.075 -> 0.169.
ROLE_BARE_WEIGHT = 2.5
ROLE_MAX_QUESTIONS = 128  # training questions the role fit uses (5 transcripts each to encode)
# turn outputs of the synthesised transcripts the role rows are fitted on: several phrasings per
# question kind ({v}: a value that varies by question), so the fit reads the turn's role, not one text
ROLE_TEMPLATES = {
    "math": (
        "Working through the problem step by step.\nAfter simplifying, the result is {v}.\n\n"
        "The final answer is $\\boxed{{{v}}}$.",
        "Let me compute this carefully. Substituting and simplifying gives {v}.\n\n$\\boxed{{{v}}}$",
        "We set up the equation and solve it; checking by substitution confirms the value.\n\n"
        "**Answer:** $\\boxed{{{v}}}$",
        "The answer is {v}.",
    ),
    "mc": (
        "Comparing the options one by one, option {l} fits best.\n\nAnswer: {l}",
        "Option {l} is the only one consistent with the facts; the others contradict them.\n\nAnswer: {l}",
        "The correct option is {l}.",
        "Eliminating the alternatives leaves {l}.\n\n**{l}**",
    ),
    "code": (
        "Here is my program.\n\n```python\nimport sys\nprint(sys.stdin.read().strip())\n```",
        "```python\ndef solve():\n    n = int(input())\n    print(n * {v})\n\nsolve()\n```",
        "Read the input, handle the edge cases, print the result.\n\n```python\nprint({v})\n```",
    ),
    "other": ("Here is the answer, in the form the request asks for.", "The result is {v}.", "Done: {v}."),
    "verifier": (
        "The latest answer does not hold up when I check it.\n\nVERDICT: REVISE",
        "I re-derived the result and it does not match the answer given.\n\nVERDICT: REVISE",
        "The reasoning has a gap in the second step.\nVERDICT: REVISE",
        "VERDICT: REVISE",
    ),
}


class TextFeatureRouter(Protocol):
    """The tests' stand-in routers: θ-independent features of texts, no `population_features`."""

    def initial_mean(self) -> Float64Array: ...

    def features(self, texts: list[str]) -> FloatArray: ...


def frozen_features(router: RouterLike | TextFeatureRouter, texts: list[str]) -> Float64Array:
    """(N, H) features of `texts` under the router's initial θ (SVF scales 1.0)."""
    x0 = np.asarray(router.initial_mean(), dtype=np.float64)[None, :]
    if hasattr(router, "population_features"):
        return np.asarray(router.population_features(x0, texts)[0], dtype=np.float64)
    return np.asarray(router.features(texts), dtype=np.float64)  # stand-in routers of the tests


def fit_logistic(X: npt.ArrayLike, Y: npt.ArrayLike, lam: float, W0: npt.ArrayLike | None = None) -> Float64Array:
    """(M, H) weights of M independent L2-regularised logistic regressions without intercept,
    X (N, H), fractional labels Y (N, M) in [0, 1]; L-BFGS (`minimise`, float64: deterministic)."""
    Xa = np.asarray(X, dtype=np.float64)
    Ya = np.asarray(Y, dtype=np.float64)
    n, m, h = Xa.shape[0], Ya.shape[1], Xa.shape[1]
    w0 = np.zeros(m * h) if W0 is None else np.asarray(W0, dtype=np.float64).reshape(-1)

    def loss_grad(w: Float64Array) -> tuple[float, Float64Array]:
        W = w.reshape(m, h)
        Z = Xa @ W.T  # (N, M)
        # binary cross-entropy with logits, summed over models, a mean over questions
        bce = np.maximum(Z, 0) - Z * Ya + np.log1p(np.exp(-np.abs(Z)))
        sig = 0.5 * (1.0 + np.tanh(0.5 * Z))  # σ(Z) without overflow
        grad = (sig - Ya).T @ Xa / n + lam * W
        return float(bce.sum() / n + 0.5 * lam * float(w @ w)), grad.reshape(-1)

    return minimise(loss_grad, w0).reshape(m, h)


def fit_softmax(X: npt.ArrayLike, y: npt.ArrayLike, class_weight: npt.ArrayLike, lam: float) -> Float64Array:
    """(C, H) rows of an L2-regularised multinomial logistic regression without intercept, X (N, H),
    labels y (N,) in 0..C-1, each question weighted by its class's `class_weight` (the loss is the
    weighted mean, as torch's `cross_entropy(weight=…)`)."""
    Xa = np.asarray(X, dtype=np.float64)
    ya = np.asarray(y, dtype=np.int64)
    cw = np.asarray(class_weight, dtype=np.float64)
    c, h = len(cw), Xa.shape[1]
    s = cw[ya]  # (N,) each question's weight
    total = float(s.sum())
    onehot = np.zeros((len(ya), c))
    onehot[np.arange(len(ya)), ya] = 1.0

    def loss_grad(w: Float64Array) -> tuple[float, Float64Array]:
        R = w.reshape(c, h)
        Z = Xa @ R.T  # (N, C)
        top = Z.max(axis=1, keepdims=True)
        e = np.exp(Z - top)
        lse = top[:, 0] + np.log(e.sum(axis=1))
        p = e / e.sum(axis=1, keepdims=True)
        nll = lse - Z[np.arange(len(ya)), ya]
        grad = ((p - onehot) * (s / total)[:, None]).T @ Xa + lam * R
        return float(s @ nll / total + 0.5 * lam * float(w @ w)), grad.reshape(-1)

    return minimise(loss_grad, np.zeros(c * h)).reshape(c, h)


def minimise(loss_grad: Callable[[Float64Array], tuple[float, Float64Array]], x0: Float64Array) -> Float64Array:
    """A minimum of a smooth convex loss from `x0`: scipy's L-BFGS-B (no bounds, at most `MAX_ITER`
    iterations, float64: deterministic). A SIGTERM stops the fit between evaluations."""
    from scipy.optimize import minimize  # lazy: scipy loaded only when a warm start fits
    from threadpoolctl import threadpool_limits  # lazy: with scipy

    def checked(w: Float64Array) -> tuple[float, Float64Array]:
        check_stop()  # a SIGTERM stops the fit between evaluations
        return loss_grad(w)

    # one BLAS thread: the fit's vectors and matrices are small, and extra threads only spin (at
    # H = 1024, 6 models, 200 questions: 0.11 s on one thread against 1.1 s on this 2-core box's default)
    with threadpool_limits(limits=1, user_api="blas"):
        res = minimize(
            checked,
            np.asarray(x0, dtype=np.float64),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": MAX_ITER, "maxcor": 20, "gtol": 1e-9, "ftol": 1e-13},
        )
    out: Float64Array = np.asarray(res.x, dtype=np.float64).copy()
    return out


def routed_accuracy(W: Float64Array, X: Float64Array, acc: Float64Array) -> float:
    """Mean recorded correctness of argmax_j (w_j · h) over the rows of X."""
    if len(X) == 0:
        return float("nan")
    pick = np.argmax(X @ W.T, axis=1)
    return float(acc[np.arange(len(X)), pick].mean())


def shrink_to_groups(acc: Float64Array, groups: list[str] | None, k: int = 1) -> tuple[Float64Array, dict[str, Any]]:
    """(N, M) fit targets: each question's label `acc` (mean of k draws per cell) shrunk towards
    its group's mean by the empirical-Bayes weight w = τ² / (τ² + v) per (group, model), where v is
    the sampling variance of a cell mean (the cells' unbiased p(1-p)/k) and τ² = max(s² − v, 0)
    the rest of the observed between-question variance s²; with k = 1 (one 0/1 draw per cell,
    whose spread shows no question's own rate) w = 0: the group's mean. Unchanged with fewer than two groups; a group of one question
    keeps its label. Also returns a JSON-ready record (groups, sizes, mean weight kept)."""
    acc = np.asarray(acc, dtype=np.float64)
    if groups is None or len(set(groups)) < 2:
        return acc.copy(), {"label_targets": "question", "why": "fewer than two groups"}
    g = np.asarray(groups)
    out = acc.copy()
    kept: list[float] = []
    sizes: dict[str, int] = {}
    for name in sorted(set(groups)):
        sel = g == name
        sizes[str(name)] = int(sel.sum())
        if sel.sum() < 2:
            continue
        a = acc[sel]  # (n_g, M)
        mean = a.mean(axis=0)
        s2 = a.var(axis=0, ddof=1)
        if k >= 2:
            v = (a * (1 - a) * k / (k - 1)).mean(axis=0) / k
            tau2 = np.maximum(s2 - v, 0.0)
            w = np.where(tau2 + v > 0, tau2 / np.maximum(tau2 + v, 1e-300), 0.0)
        else:  # one draw per cell: its spread is all a Bernoulli draw's, no question's own rate shows
            w = np.zeros(a.shape[1])
        out[sel] = mean + w * (a - mean)
        kept.extend(float(x) for x in w)
    return out, {
        "label_targets": "group",
        "groups": sizes,
        "own_label_weight": float(np.mean(kept)) if kept else 0.0,
    }


def best_of_groups(targets: Float64Array, groups: list[str]) -> Float64Array:
    """(N, M): each row the one-hot of its group's best model by the mean of the group's rows of
    `targets` (models within 1e-12 of the best share the 1 evenly)."""
    t = np.asarray(targets, dtype=np.float64)
    g = np.asarray(groups)
    out = np.zeros_like(t)
    for name in sorted(set(groups)):
        sel = g == name
        mean = t[sel].mean(axis=0)
        top = mean >= mean.max() - 1e-12
        out[sel] = top / top.sum()
    return out


def group_estimates(
    acc: Float64Array, groups: list[str], fit_rows: IndexArray, rows: IndexArray, k: int = 1
) -> Float64Array:
    """(len(rows), M) estimated correctness of the questions `rows` from the labels of `fit_rows`
    alone: their group's mean over `fit_rows` (k ≥ 2: plus the own label's part that
    `shrink_to_groups` keeps, its weight from `fit_rows`); a question whose group `fit_rows` lacks
    keeps its own label. What cross-validation scores a fold's routes against."""
    g = np.asarray(groups)
    out = np.asarray(acc[rows], dtype=np.float64).copy()
    for name in sorted(set(g[rows].tolist())):
        have = fit_rows[g[fit_rows] == name]
        sel = g[rows] == name
        if len(have) == 0:
            continue
        a = acc[have]
        mean = a.mean(axis=0)
        w = np.zeros(a.shape[1])
        if k >= 2 and len(have) >= 2:
            v = (a * (1 - a) * k / (k - 1)).mean(axis=0) / k
            tau2 = np.maximum(a.var(axis=0, ddof=1) - v, 0.0)
            w = np.where(tau2 + v > 0, tau2 / np.maximum(tau2 + v, 1e-300), 0.0)
        out[sel] = mean + w * (out[sel] - mean)
    return out


def fill_group_means(
    acc: Float64Array, groups: list[str], labelled: npt.NDArray[np.bool_], fit_rows: IndexArray, rows: IndexArray
) -> Float64Array:
    """(len(rows), M): `acc` of `rows`, where a row without labels (`labelled` False) gets the mean
    label of its group over the labelled `fit_rows` (a group none of them has: their mean over all
    groups). What a question the matrix has no row for is fitted to and scored against."""
    g = np.asarray(groups)
    have = fit_rows[labelled[fit_rows]]
    out = np.asarray(acc[rows], dtype=np.float64).copy()
    overall = acc[have].mean(axis=0) if len(have) else np.zeros(acc.shape[1])
    means = group_means(acc[have], g[have].tolist()) if len(have) else {}
    for i in np.flatnonzero(~labelled[rows]):
        out[i] = means.get(str(g[rows[i]]), overall)
    return out


def choose_lambda(
    X: Float64Array,
    acc: Float64Array,
    seed: int,
    targets: Callable[[IndexArray], Float64Array] | None = None,
    score_on: Callable[[IndexArray, IndexArray], Float64Array] | None = None,
) -> tuple[float, dict[str, float]]:
    """λ of `LAMBDAS` with the best cross-validated routed accuracy on (X, acc); `targets(rows)`
    gives the fit's targets for a fold's training rows (default: their labels), `score_on(fit_rows,
    rows)` what a held-out fold's routes are scored against (default: their labels)."""
    n = len(X)
    folds = min(FOLDS, n)
    if folds < 2:
        return LAMBDAS[-1], {}
    order = np.random.RandomState(seed + 104729).permutation(n)
    parts = np.array_split(order, folds)
    scores: dict[str, float] = {}
    prev: list[Float64Array | None] = [None] * folds
    for lam in sorted(LAMBDAS, reverse=True):  # a path: each fit starts from the stronger λ's solution
        correct = 0.0
        for f in range(folds):
            te = parts[f]
            tr = np.concatenate([parts[g] for g in range(folds) if g != f])
            prev[f] = W = fit_logistic(X[tr], acc[tr] if targets is None else targets(tr), lam, prev[f])
            correct += routed_accuracy(W, X[te], acc[te] if score_on is None else score_on(tr, te)) * len(te)
        scores[f"{lam:g}"] = correct / n
    best = max(LAMBDAS, key=lambda lam: (round(scores[f"{lam:g}"], 12), lam))
    return best, scores


def warm_start_theta(
    router: RouterLike | TextFeatureRouter,
    x0: npt.ArrayLike,
    n_models: int,
    texts_train: list[str],
    acc_train: npt.ArrayLike,
    texts_val: list[str] | None = None,
    acc_val: npt.ArrayLike | None = None,
    seed: int = 0,
    roles: tuple[Float64Array, dict[str, Any]] | None = None,
    groups: list[str] | None = None,
    k: int = 1,
    label_targets: str = DEFAULT_LABEL_TARGETS,
    labelled: npt.ArrayLike | None = None,
) -> tuple[Float64Array, dict[str, Any]]:
    """θ with the model rows fitted on (texts, acc) and the role rows at their default (`roles`:
    rows and record from `fit_role_rows`; without it Worker everywhere), and a JSON-ready record
    of the fit (λ, CV scores, train/val routed accuracy). `groups` (one name per training text,
    e.g. benchmark/kind) and `k` (draws per cell) shrink the targets (`label_targets` group, see
    `shrink_to_groups`); `question` fits the labels themselves. `labelled` (one bool per training
    text; None: all) marks the texts `acc_train` has labels for: the others are fitted to their
    group's mean (`fill_group_means`), in the cross-validation's folds too, and the record says
    how many (`n_with_rows`, `n_group_mean`; left out when every text had labels)."""
    if label_targets not in LABEL_TARGETS:
        raise ValueError(f"label_targets {label_targets!r}: one of {', '.join(LABEL_TARGETS)}")
    if labelled is not None and not bool(np.all(labelled)):
        if groups is None:
            raise ValueError("texts without labels are fitted to their group's mean: pass groups")
        return _warm_start_sparse(
            router, x0, n_models, texts_train, acc_train, np.asarray(labelled, dtype=bool), groups,
            texts_val, acc_val, seed, roles, k, label_targets,
        )  # fmt: skip
    X = frozen_features(router, texts_train)
    acc_tr = np.asarray(acc_train, dtype=np.float64)
    use_groups = groups if label_targets != "question" else None
    best = label_targets == "best" and groups is not None and len(set(groups)) >= 2

    def targets(rows: IndexArray) -> Float64Array:
        out = shrink_to_groups(acc_tr[rows], None if use_groups is None else [use_groups[i] for i in rows], k)[0]
        return best_of_groups(out, [use_groups[i] for i in rows]) if best and use_groups is not None else out

    def score_on(fit_rows: IndexArray, rows: IndexArray) -> Float64Array:
        assert use_groups is not None
        return group_estimates(acc_tr, use_groups, fit_rows, rows, k)

    grouped = use_groups is not None and len(set(use_groups)) >= 2
    lam, cv = choose_lambda(X, acc_tr, seed, targets if grouped else None, score_on if grouped else None)
    fit_y, shrink_info = shrink_to_groups(acc_tr, use_groups, k)
    if label_targets == "question":
        shrink_info = {"label_targets": "question"}
    elif best:
        fit_y = targets(np.arange(len(X)))
        shrink_info = {**shrink_info, "label_targets": "best"}
    W = fit_logistic(X, fit_y, lam)
    return _assemble(router, x0, n_models, X, W, acc_tr, shrink_info, lam, cv, roles, texts_val, acc_val)


def _assemble(
    router: RouterLike | TextFeatureRouter,
    x0: npt.ArrayLike,
    n_models: int,
    X: Float64Array,
    W: Float64Array,
    acc_tr: Float64Array,
    shrink_info: dict[str, Any],
    lam: float,
    cv: dict[str, float],
    roles: tuple[Float64Array, dict[str, Any]] | None,
    texts_val: list[str] | None,
    acc_val: npt.ArrayLike | None,
    extra: dict[str, Any] | None = None,
    fitted_note: str = "",
) -> tuple[Float64Array, dict[str, Any]]:
    """θ with the fitted model rows `W` and the role rows, and the fit's record."""
    hidden = X.shape[1]
    theta = np.asarray(x0, dtype=np.float64).copy()
    head = theta[: (n_models + len(ROLES)) * hidden].reshape(n_models + len(ROLES), hidden)
    head[:n_models] = W
    mu = X.mean(axis=0)
    norm = float(np.linalg.norm(mu))
    head[n_models:] = 0.0
    role_text = f"Worker = {ROLE_SCALE} x mean feature direction, Thinker/Verifier 0"
    if roles is not None:
        head[n_models:] = roles[0]
        role_text = roles[1]["role_rows"]
    elif norm > 0:
        head[n_models + ROLES.index("Worker")] = ROLE_SCALE * mu / norm
    info: dict[str, Any] = {
        "method": "labels",
        "fitted": (
            f"head model rows [0:{n_models}]: per-model L2-regularised logistic regression (no intercept) "
            f"of recorded correctness ({TARGET_TEXT.get(shrink_info['label_targets'], 'per question')}{fitted_note}) "
            f"on the frozen features of the training split; role rows: {role_text}; "
            "SVF scales 1.0"
        ),
        **({key: v for key, v in roles[1].items() if key != "role_rows"} if roles is not None else {}),
        "n_train": len(X),
        **(extra or {}),
        **shrink_info,
        "lambda": lam,
        "cv_routed_acc": cv,
        "train_acc": routed_accuracy(W, X, acc_tr),
        "logit_scale": float(np.abs(X @ W.T).mean()) if len(X) else 0.0,
    }
    if texts_val and acc_val is not None and len(texts_val):
        Xv = frozen_features(router, texts_val)
        info["val_acc"] = routed_accuracy(W, Xv, np.asarray(acc_val, dtype=np.float64))
        info["n_val"] = len(Xv)
    return theta, info


def _warm_start_sparse(
    router: RouterLike | TextFeatureRouter,
    x0: npt.ArrayLike,
    n_models: int,
    texts_train: list[str],
    acc_train: npt.ArrayLike,
    labelled: npt.NDArray[np.bool_],
    groups: list[str],
    texts_val: list[str] | None,
    acc_val: npt.ArrayLike | None,
    seed: int,
    roles: tuple[Float64Array, dict[str, Any]] | None,
    k: int,
    label_targets: str,
) -> tuple[Float64Array, dict[str, Any]]:
    """`warm_start_theta` when some training texts have no labels: every text is fitted, those
    without labels to their group's mean over the labelled ones (in each CV fold: over the fold's
    labelled training rows); a held-out fold's routes are scored the same way."""
    X = frozen_features(router, texts_train)
    acc_tr = np.asarray(acc_train, dtype=np.float64)
    everyone = np.arange(len(X))
    grouped = label_targets in ("group", "best") and len(set(groups)) >= 2

    def targets(rows: IndexArray) -> Float64Array:
        out = fill_group_means(acc_tr, groups, labelled, rows, rows)
        lab = labelled[rows]
        if grouped:
            out[lab] = shrink_to_groups(acc_tr[rows[lab]], [groups[i] for i in rows[lab]], k)[0]
            if label_targets == "best":  # a group's rows average to its labelled rows' mean
                out = best_of_groups(out, [groups[i] for i in rows])
        return out

    def score_on(fit_rows: IndexArray, rows: IndexArray) -> Float64Array:
        out = fill_group_means(acc_tr, groups, labelled, fit_rows, rows)
        lab = labelled[rows]
        if grouped:
            have = fit_rows[labelled[fit_rows]]
            out[lab] = group_estimates(acc_tr, groups, have, rows[lab], k)
        return out

    full = fill_group_means(acc_tr, groups, labelled, everyone, everyone)
    lam, cv = choose_lambda(X, full, seed, targets, score_on)
    fit_y = targets(everyone)
    if grouped:
        shrink_info = shrink_to_groups(acc_tr[labelled], [g for g, has in zip(groups, labelled) if has], k)[1]
        shrink_info["label_targets"] = label_targets
    else:
        shrink_info = {"label_targets": "question"}
    n_with = int(labelled.sum())
    W = fit_logistic(X, fit_y, lam)
    return _assemble(
        router, x0, n_models, X, W, full, shrink_info, lam, cv, roles, texts_val, acc_val,
        extra={"n_with_rows": n_with, "n_group_mean": len(X) - n_with},
        fitted_note="; a question without a row: its group's mean",
    )  # fmt: skip


def role_transcripts(text: RouterText, questions: list[Question], models: list[str]) -> tuple[list[str], Int64Array]:
    """Encoder inputs of the session states of each question and the role each should get: a bare
    query → Worker; once the transcript holds turns (0 to 4 earlier turns, alternating Worker /
    Verifier REVISE) → Verifier. `text` is the competition's `RouterText`; models and phrasings
    cycle with the question's index."""
    texts: list[str] = []
    labels: list[int] = []
    w, v = ROLES.index("Worker"), ROLES.index("Verifier")
    for i, q in enumerate(questions):
        query = text.render_question(q)
        outs = ROLE_TEMPLATES.get(q.kind, ROLE_TEMPLATES["other"])
        vers = ROLE_TEMPLATES["verifier"]
        turns: list[tuple[str, str, str]] = []
        for k in range(4):
            role = "Worker" if k % 2 == 0 else "Verifier"
            pick = outs if role == "Worker" else vers
            out = pick[(i + k) % len(pick)].format(v=(7 * i + 3 * k) % 97, l="ABCD"[(i + k) % 4])
            turns.append((role, models[(i + k) % len(models)], out))
        for n_turns in range(5):
            texts.append(text.encoder_input(query, turns[:n_turns]))
            labels.append(v if n_turns else w)
    return texts, np.asarray(labels, dtype=np.int64)


def role_features(
    router: RouterLike | TextFeatureRouter,
    text: RouterText,
    questions: list[Question],
    models: list[str],
    log: Callable[[str], None] | None = None,
) -> tuple[Float64Array, Int64Array]:
    """Frozen features of `role_transcripts` and their role labels. The five texts of a question
    are one growing session, so a router with a session encoder reads them as one: each step
    reads only the tokens the transcript added (every token once, where re-encoding each text
    whole reads the question five times), with a line to `log` after each step."""
    qs = list(questions)[:ROLE_MAX_QUESTIONS]
    texts, y = role_transcripts(text, qs, models)
    make = getattr(router, "session_encoder", None)
    if make is None or not qs:
        return frozen_features(router, texts), y
    x0 = np.asarray(router.initial_mean(), dtype=np.float64)[None, :]
    enc = make(x0)
    n, steps = len(qs), len(texts) // len(qs)
    X: Float64Array | None = None
    t0 = time.perf_counter()
    for k in range(steps):
        idx = [i * steps + k for i in range(n)]
        feats = np.asarray(enc.features([texts[j] for j in idx], np.zeros(n, dtype=np.int64), list(range(n))))
        if X is None:
            X = np.empty((len(texts), feats.shape[1]), dtype=np.float64)
        X[idx] = feats
        if log is not None:
            log(
                f"warm start: role transcripts {k + 1}/{steps} encoded ({n} questions, {enc.tokens_read} tokens "
                f"read of {enc.tokens_seen}, {time.perf_counter() - t0:.1f} s)"
            )
    assert X is not None
    return X, y


def fit_role_rows(
    router: RouterLike | TextFeatureRouter,
    text: RouterText,
    questions: list[Question],
    models: list[str],
    log: Callable[[str], None] | None = None,
) -> tuple[Float64Array, dict[str, Any]]:
    """(3, H) role rows (Thinker, Worker, Verifier) fitted on `role_transcripts`, and a record."""
    X, y = role_features(router, text, questions, models, log)
    counts = np.bincount(y, minlength=len(ROLES)).astype(np.float64)
    # balanced classes (the one bare-query state weighs as much as the four later ones), then the
    # bare query ROLE_BARE_WEIGHT times more: a Verifier at turn 1 wastes the session
    balanced = np.where(counts > 0, counts.sum() / np.maximum(counts, 1), 0.0)
    balanced[ROLES.index("Worker")] *= ROLE_BARE_WEIGHT
    rows = fit_softmax(X, y, balanced, ROLE_LAMBDA)
    Z = X @ rows.T
    idx = np.arange(len(y))
    other = Z.copy()
    other[idx, y] = -np.inf
    margin = Z[idx, y] - other.max(axis=1)
    med = float(np.median(margin))
    if med > 0:
        rows *= ROLE_MARGIN / med
    acc = float(np.mean(np.argmax(X @ rows.T, axis=1) == y))
    info = {
        "role_rows": (
            "multinomial logistic regression of the role on frozen features of synthesised "
            "transcripts (a bare query -> Worker, weighted "
            f"{ROLE_BARE_WEIGHT:g}x a balanced fit; after 1-4 earlier turns -> Verifier), scaled to a "
            f"median margin {ROLE_MARGIN:g}"
        ),
        "role_n": int(len(y)),
        "role_train_acc": acc,
    }
    return rows, info


def set_role_rows(theta: npt.ArrayLike, n_models: int, hidden: int, rows: Float64Array) -> Float64Array:
    out = np.asarray(theta, dtype=np.float64).copy()
    head = out[: (n_models + len(ROLES)) * hidden].reshape(n_models + len(ROLES), hidden)
    head[n_models:] = rows
    return out
