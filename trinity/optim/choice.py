"""Turn the head's logits into (model, role) choices, in numpy, for whole populations.

Logits are (..., n_models + 3): the first n_models pick the model, the last 3 the role
(Thinker, Worker, Verifier). Argmax per group is the policy (ties: the first index, as
numpy's argmax). `sample` draws from the softmax with a temperature, from the run's own RNG.
"""

from __future__ import annotations

import numpy as np

ROLES = ("Thinker", "Worker", "Verifier")  # = trinity.model.ROLES (the head's role rows)


def argmax(logits: np.ndarray, n_models: int) -> tuple[np.ndarray, np.ndarray]:
    """(..., M + 3) -> model_idx (...), role_idx (...)."""
    return logits[..., :n_models].argmax(axis=-1), logits[..., n_models:].argmax(axis=-1)


def _softmax(x: np.ndarray) -> np.ndarray:
    z = x - x.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def probs(logits: np.ndarray, n_models: int, temperature: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(..., M + 3) -> model probabilities (..., M), role probabilities (..., 3)."""
    return _softmax(logits[..., :n_models] / temperature), _softmax(logits[..., n_models:] / temperature)


def _draw(p: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
    # inverse CDF: one uniform per row; clip guards the cumsum's rounding at the top end
    u = rng.random_sample(p.shape[:-1] + (1,))
    return np.minimum((np.cumsum(p, axis=-1) < u).sum(axis=-1), p.shape[-1] - 1)


def sample(logits: np.ndarray, n_models: int, temperature: float,
           rng: np.random.RandomState) -> tuple[np.ndarray, np.ndarray]:
    mp, rp = probs(logits, n_models, temperature)
    return _draw(mp, rng), _draw(rp, rng)
