"""The routing policy over the head's logits: one group of `n_models` model scores, one group of
3 role scores (Thinker, Worker, Verifier). Argmax per group by default (DESIGN §3); sampling from
the per-group softmax with a temperature is the option."""

from __future__ import annotations

import numpy as np

from trinity.errors import ConfigError
from trinity.model.theta import N_ROLES


def _groups(logits: np.ndarray, n_models: int) -> tuple[np.ndarray, np.ndarray]:
    logits = np.asarray(logits)
    if logits.shape[-1] != n_models + N_ROLES:
        raise ConfigError(
            f"logits have {logits.shape[-1]} columns; expected n_models + 3 = {n_models + N_ROLES}"
        )
    return logits[..., :n_models], logits[..., n_models:]


def choose(logits: np.ndarray, n_models: int) -> tuple[np.ndarray, np.ndarray]:
    """`logits (..., n_models + 3)` → `(model_idx (...), role_idx (...))`, argmax per group
    (ties go to the lower index)."""
    models, roles = _groups(logits, n_models)
    return np.argmax(models, axis=-1), np.argmax(roles, axis=-1)


def _softmax(x: np.ndarray, temperature: float) -> np.ndarray:
    z = np.asarray(x, dtype=np.float64) / temperature
    z = z - z.max(axis=-1, keepdims=True)  # stable: the largest exponent is 0
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def group_probs(logits: np.ndarray, n_models: int, temperature: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """`logits (..., n_models + 3)` → `(model_probs (..., n_models), role_probs (..., 3))`, a
    softmax per group at `temperature`."""
    if not temperature > 0:
        raise ConfigError(f"policy temperature must be > 0, got {temperature}")
    models, roles = _groups(logits, n_models)
    return _softmax(models, temperature), _softmax(roles, temperature)


def _draw(probs: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
    # Inverse-CDF draw per row with the caller's RandomState (never the global one).
    flat = probs.reshape(-1, probs.shape[-1])
    cdf = np.cumsum(flat, axis=-1)
    u = rng.random_sample(flat.shape[0])[:, None] * cdf[:, -1:]
    idx = np.minimum((u >= cdf).sum(axis=-1), flat.shape[-1] - 1)
    return idx.reshape(probs.shape[:-1])


def sample(
    logits: np.ndarray, n_models: int, rng: np.random.RandomState, temperature: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Draw `(model_idx, role_idx)` from the per-group softmax at `temperature` using `rng`."""
    model_p, role_p = group_probs(logits, n_models, temperature)
    return _draw(model_p, rng), _draw(role_p, rng)
