"""A small stand-in for `trinity.model.Router` (a linear map of hashed bag-of-words features),
and a synthetic routing task: three question categories, a different best model for each."""

from __future__ import annotations

import hashlib

import numpy as np

from trinity.data.matrix import OutcomeMatrix
from trinity.data.questions import Question

# Three kinds of question that look different token by token (the tiny encoder is
# random-init: it separates texts by their tokens, not by meaning).
CATEGORIES = ("arith", "history", "code")
WORDS = "empire king war century treaty dynasty river temple harvest bronze".split()


def question_text(cat: str, i: int, rng: np.random.RandomState) -> str:
    if cat == "arith":
        a, b, c, d = rng.randint(10, 999), rng.randint(10, 999), rng.randint(2, 99), rng.randint(1, 50)
        return f"Compute {a} + {b} * {c} - {d} = ?"
    if cat == "history":
        return "In which century did the " + " ".join(rng.choice(WORDS, 6)) + " begin?"
    return f"def f_{i}(xs):\n    return [x[{rng.randint(0, 9)}] for x in xs if x != '{{}}']  # fix it"


MODELS = ["m-arith", "m-hist", "m-code"]


class LinearRouter:
    """θ = [W (M+3, dim) flattened | svf (n_svf)]; logits = W · feature(text). SVF is ignored."""

    def __init__(self, n_models: int, dim: int = 32, n_svf: int = 16):
        self.n_models, self.dim, self.n_svf = n_models, dim, n_svf
        self.n_head = (n_models + 3) * dim
        self.n_params = self.n_head + n_svf
        self.calls = 0

    def initial_mean(self) -> np.ndarray:
        return np.concatenate([np.zeros(self.n_head), np.ones(self.n_svf)])

    def features(self, texts: list[str]) -> np.ndarray:  # (N, dim), unit norm
        out = np.zeros((len(texts), self.dim))
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def population_logits(self, thetas: np.ndarray, texts: list[str]) -> np.ndarray:
        self.calls += 1
        W = thetas[:, : self.n_head].reshape(len(thetas), self.n_models + 3, self.dim)  # (P, M+3, dim)
        return np.einsum("pkd,nd->pnk", W, self.features(texts))  # (P, N, M+3)


def synthetic_task(
    n_per_cat: int = 30, k: int = 4, seed: int = 0, best: float = 0.9, other: float = 0.25, skew: float = 0.05
):
    """Questions + matrix. Model c answers category c right with p=best, the rest with p=other;
    model 0 gets +skew everywhere so that one single model is clearly best overall."""
    rng = np.random.RandomState(seed)
    qs, rows = [], []
    for c, cat in enumerate(CATEGORIES):
        for i in range(n_per_cat):
            text = question_text(cat, i, rng)
            qs.append(Question(f"{cat}-{i}", f"synth-{cat}", text, "x", "math"))
            p = np.full(len(MODELS), other)
            p[c] = best
            p[0] = min(p[0] + skew, 1.0)
            rows.append((rng.random_sample((len(MODELS), k)) < p[:, None]).astype(float))
    mat = OutcomeMatrix("synth", list(MODELS), [q.id for q in qs], np.stack(rows))
    return qs, mat
