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

Role rows: the Worker row gets `ROLE_SCALE` × the mean training feature direction (so every
question starts as Worker, the role whose answer is scored at turn 1), Thinker and Verifier 0;
the SVF scales stay 1.0. The ES mean starts at this θ; the trainer records what was fitted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trinity.model import ROLES

LAMBDAS = (1e-5, 1e-4, 1e-3, 1e-2)  # L2 strengths tried by cross-validation (the loss is a mean over questions)
FOLDS = 4
ROLE_SCALE = 0.5
MAX_ITER = 200
MODES = ("auto", "labels", "none")


def frozen_features(router: Any, texts: list[str]) -> np.ndarray:
    """(N, H) features of `texts` under the router's initial θ (SVF scales 1.0)."""
    x0 = np.asarray(router.initial_mean(), dtype=np.float64)[None, :]
    if hasattr(router, "population_features"):
        return np.asarray(router.population_features(x0, texts)[0], dtype=np.float64)
    return np.asarray(router.features(texts), dtype=np.float64)  # stand-in routers of the tests


def fit_logistic(X: np.ndarray, Y: np.ndarray, lam: float, W0: np.ndarray | None = None) -> np.ndarray:
    """(M, H) weights of M independent L2-regularised logistic regressions without intercept,
    X (N, H), fractional labels Y (N, M) in [0, 1]; L-BFGS (torch, float64, CPU: deterministic)."""
    import torch

    Xt = torch.as_tensor(np.asarray(X, dtype=np.float64))
    Yt = torch.as_tensor(np.asarray(Y, dtype=np.float64))
    n, m = Xt.shape[0], Yt.shape[1]
    W = torch.zeros((m, Xt.shape[1]), dtype=torch.float64) if W0 is None else \
        torch.as_tensor(np.asarray(W0, dtype=np.float64)).clone()
    W.requires_grad_(True)
    opt = torch.optim.LBFGS([W], lr=1.0, max_iter=MAX_ITER, tolerance_grad=1e-9, tolerance_change=1e-12,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        Z = Xt @ W.T
        loss = torch.nn.functional.binary_cross_entropy_with_logits(Z, Yt, reduction="sum") / n \
            + 0.5 * lam * (W * W).sum()
        loss.backward()
        return loss

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matmuls: extra threads only spin, and a busy box makes that slow
    try:
        with torch.enable_grad():
            opt.step(closure)
    finally:
        torch.set_num_threads(threads)
    return W.detach().numpy().copy()


def routed_accuracy(W: np.ndarray, X: np.ndarray, acc: np.ndarray) -> float:
    """Mean recorded correctness of argmax_j (w_j · h) over the rows of X."""
    if len(X) == 0:
        return float("nan")
    pick = np.argmax(X @ W.T, axis=1)
    return float(acc[np.arange(len(X)), pick].mean())


def choose_lambda(X: np.ndarray, acc: np.ndarray, seed: int) -> tuple[float, dict[str, float]]:
    """λ of `LAMBDAS` with the best cross-validated routed accuracy on (X, acc)."""
    n = len(X)
    folds = min(FOLDS, n)
    if folds < 2:
        return LAMBDAS[-1], {}
    order = np.random.RandomState(seed + 104729).permutation(n)
    parts = np.array_split(order, folds)
    scores: dict[str, float] = {}
    prev: list[np.ndarray | None] = [None] * folds
    for lam in sorted(LAMBDAS, reverse=True):  # a path: each fit starts from the stronger λ's solution
        correct = 0.0
        for f in range(folds):
            te = parts[f]
            tr = np.concatenate([parts[g] for g in range(folds) if g != f])
            prev[f] = W = fit_logistic(X[tr], acc[tr], lam, prev[f])
            correct += routed_accuracy(W, X[te], acc[te]) * len(te)
        scores[f"{lam:g}"] = correct / n
    best = max(LAMBDAS, key=lambda lam: (round(scores[f"{lam:g}"], 12), lam))
    return best, scores


def warm_start_theta(router: Any, x0: np.ndarray, n_models: int, texts_train: list[str], acc_train: np.ndarray,
                     texts_val: list[str] | None = None, acc_val: np.ndarray | None = None,
                     seed: int = 0) -> tuple[np.ndarray, dict[str, Any]]:
    """θ with the model rows fitted on (texts, acc) and the role rows at their default, and a
    JSON-ready record of the fit (λ, CV scores, train/val routed accuracy)."""
    X = frozen_features(router, texts_train)
    acc_train = np.asarray(acc_train, dtype=np.float64)
    lam, cv = choose_lambda(X, acc_train, seed)
    W = fit_logistic(X, acc_train, lam)
    hidden = X.shape[1]
    theta = np.asarray(x0, dtype=np.float64).copy()
    head = theta[: (n_models + len(ROLES)) * hidden].reshape(n_models + len(ROLES), hidden)
    head[:n_models] = W
    mu = X.mean(axis=0)
    norm = float(np.linalg.norm(mu))
    head[n_models:] = 0.0
    if norm > 0:
        head[n_models + ROLES.index("Worker")] = ROLE_SCALE * mu / norm
    info: dict[str, Any] = {
        "method": "labels",
        "fitted": (f"head model rows [0:{n_models}]: per-model L2-regularised logistic regression (no intercept) "
                   "of recorded correctness on the frozen features of the training split; role rows: Worker = "
                   f"{ROLE_SCALE} x mean feature direction, Thinker/Verifier 0; SVF scales 1.0"),
        "n_train": len(X), "lambda": lam, "cv_routed_acc": cv,
        "train_acc": routed_accuracy(W, X, acc_train),
        "logit_scale": float(np.abs(X @ W.T).mean()) if len(X) else 0.0,
    }
    if texts_val and acc_val is not None and len(texts_val):
        Xv = frozen_features(router, texts_val)
        info["val_acc"] = routed_accuracy(W, Xv, np.asarray(acc_val, dtype=np.float64))
        info["n_val"] = len(Xv)
    return theta, info
