"""The routing policy over the head's logits: one group of `n_models` model scores, one group of
3 role scores (Thinker, Worker, Verifier). Argmax per group by default; sampling from
the per-group softmax with a temperature is the option."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from trinity.errors import ConfigError
from trinity.model.arrays import Float64Array, FloatArray, IndexArray
from trinity.model.theta import N_ROLES


def _groups(logits: npt.ArrayLike, n_models: int) -> tuple[FloatArray, FloatArray]:
    logits = np.asarray(logits)
    if logits.shape[-1] != n_models + N_ROLES:
        raise ConfigError(f"logits have {logits.shape[-1]} columns; expected n_models + 3 = {n_models + N_ROLES}")
    return logits[..., :n_models], logits[..., n_models:]


def choose(logits: npt.ArrayLike, n_models: int) -> tuple[IndexArray, IndexArray]:
    """`logits (..., n_models + 3)` → `(model_idx (...), role_idx (...))`, argmax per group
    (ties go to the lower index)."""
    models, roles = _groups(logits, n_models)
    model_idx: IndexArray = np.argmax(models, axis=-1)
    role_idx: IndexArray = np.argmax(roles, axis=-1)
    return model_idx, role_idx


def _softmax(x: FloatArray, temperature: float) -> Float64Array:
    z: Float64Array = np.asarray(x, dtype=np.float64) / temperature
    z = z - z.max(axis=-1, keepdims=True)  # stable: the largest exponent is 0
    e = np.exp(z)
    probs: Float64Array = e / e.sum(axis=-1, keepdims=True)
    return probs


def group_probs(logits: npt.ArrayLike, n_models: int, temperature: float = 1.0) -> tuple[Float64Array, Float64Array]:
    """`logits (..., n_models + 3)` → `(model_probs (..., n_models), role_probs (..., 3))`, a
    softmax per group at `temperature`."""
    if not temperature > 0:
        raise ConfigError(f"policy temperature must be > 0, got {temperature}")
    models, roles = _groups(logits, n_models)
    return _softmax(models, temperature), _softmax(roles, temperature)


def _draw(probs: Float64Array, rng: np.random.RandomState) -> IndexArray:
    # Inverse-CDF draw per row with the caller's RandomState (never the global one).
    flat = probs.reshape(-1, probs.shape[-1])
    cdf = np.cumsum(flat, axis=-1)
    u = rng.random_sample(flat.shape[0])[:, None] * cdf[:, -1:]
    idx: IndexArray = np.minimum((u >= cdf).sum(axis=-1), flat.shape[-1] - 1)
    return idx.reshape(probs.shape[:-1])


def sample(
    logits: npt.ArrayLike, n_models: int, rng: np.random.RandomState, temperature: float = 1.0
) -> tuple[IndexArray, IndexArray]:
    """Draw `(model_idx, role_idx)` from the per-group softmax at `temperature` using `rng`."""
    model_p, role_p = group_probs(logits, n_models, temperature)
    return _draw(model_p, rng), _draw(role_p, rng)
