"""θ layout and files (docs/CONTRACTS.md, Router model).

θ is one float64 vector `[head.flatten() (C order) | svf]`:
- `head`: `(n_models + 3, hidden)`; rows `[:n_models]` score the models, the last 3 the roles
  (Thinker, Worker, Verifier);
- `svf`: the multiplicative singular-value scales of the SVF layer's 7 matrices, in the order
  q, k, v, o, gate, up, down, each `min(out, in)` long, largest singular value first
  (7 × 1024 = 7168 for Qwen3-0.6B).

Files: `best_theta.npy` (float64, the whole vector) and the TinyRouter bundle's
`head_weights.npy` `(n_models + 3, hidden)` float32 + `svf_scales.npy` `(svf_size,)` float32.
The names and the layout constants are defined once, in `trinity.layout`.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from trinity.errors import InputError
from trinity.io import atomic_write_bytes
from trinity.layout import HEAD_FILE as HEAD_FILE  # the θ layout and names: defined once there
from trinity.layout import N_ROLES as N_ROLES
from trinity.layout import SVF_FILE as SVF_FILE
from trinity.layout import THETA_FILE as THETA_FILE
from trinity.model.arrays import Float64Array, FloatArray

_F = TypeVar("_F", bound=np.floating[Any])


def theta_size(n_models: int, hidden: int, svf_size: int) -> int:
    """Length of θ: `(n_models + 3) * hidden + svf_size` (13,312 for 3 models, 1024, 7168)."""
    return (n_models + N_ROLES) * hidden + svf_size


def split_theta(theta: npt.NDArray[_F], n_models: int, hidden: int) -> tuple[npt.NDArray[_F], npt.NDArray[_F]]:
    """θ `(D,)` → `(head (n_models + 3, hidden), svf (D - head.size,))`; views, same dtype."""
    theta = np.asarray(theta)
    n_head = (n_models + N_ROLES) * hidden
    if theta.ndim != 1 or theta.size < n_head:
        raise InputError(
            f"theta has shape {theta.shape}; expected a vector of at least {n_head} values "
            f"(head of {n_models}+{N_ROLES} rows × {hidden}) followed by the SVF scales"
        )
    return theta[:n_head].reshape(n_models + N_ROLES, hidden), theta[n_head:]


def join_theta(head: npt.ArrayLike, svf: npt.ArrayLike) -> Float64Array:
    """`head (n_models + 3, hidden)` + `svf (svf_size,)` → θ float64 `(D,)`."""
    head_a = np.asarray(head, dtype=np.float64)
    svf_a = np.asarray(svf, dtype=np.float64)
    if head_a.ndim != 2 or head_a.shape[0] <= N_ROLES:
        raise InputError(f"head weights have shape {head_a.shape}; expected (n_models + 3, hidden) with n_models >= 1")
    if svf_a.ndim != 1:
        raise InputError(f"SVF scales have shape {svf_a.shape}; expected a vector")
    return np.concatenate([head_a.reshape(-1), svf_a])


def _npy_bytes(array: FloatArray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _load_npy(path: Path, what: str) -> FloatArray:
    try:
        array = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise InputError(f"{what} not found: {path}") from None
    except (ValueError, OSError, EOFError) as e:
        # numpy's own advice here ("allow_pickle=True") would be unsafe for a file from elsewhere
        why = "not in .npy format" if "pickle" in str(e) else str(e)
        raise InputError(f"{what} {path} is not a readable .npy file ({why}); regenerate it") from None
    if not isinstance(array, np.ndarray) or array.dtype.kind != "f":
        raise InputError(f"{what} {path} holds {getattr(array, 'dtype', type(array))}, not floats; regenerate it")
    if not np.all(np.isfinite(array)):
        raise InputError(f"{what} {path} contains NaN or infinite values; regenerate it")
    return array


def save_theta(path: str | os.PathLike[str], theta: npt.ArrayLike) -> None:
    """Write θ as float64 `.npy` atomically (a reader never sees half a file)."""
    vec = np.asarray(theta, dtype=np.float64)
    if vec.ndim != 1:
        raise InputError(f"theta to save has shape {vec.shape}; expected a vector")
    atomic_write_bytes(path, _npy_bytes(vec))


def load_theta(path: str | os.PathLike[str], expected_size: int | None = None) -> Float64Array:
    """Read a θ file → float64 `(D,)`; `InputError` if missing, corrupt, not a float vector, or
    not `expected_size` long."""
    path = Path(path)
    theta = _load_npy(path, "theta file")
    if theta.ndim != 1:
        raise InputError(f"theta file {path} has shape {theta.shape}; expected a vector")
    if expected_size is not None and theta.size != expected_size:
        raise InputError(
            f"theta file {path} has {theta.size} values but this router needs {expected_size} "
            "(different pool size or encoder?); use the theta trained for this setup"
        )
    return theta.astype(np.float64, copy=False)


def save_bundle_weights(
    directory: str | os.PathLike[str], theta: npt.ArrayLike, n_models: int, hidden: int
) -> tuple[Path, Path]:
    """Split θ into `head_weights.npy` `(n_models + 3, hidden)` and `svf_scales.npy` `(svf_size,)`,
    both float32, in `directory`; returns the two paths."""
    directory = Path(directory)
    head, svf = split_theta(np.asarray(theta, dtype=np.float64), n_models, hidden)
    head_path, svf_path = directory / HEAD_FILE, directory / SVF_FILE
    atomic_write_bytes(head_path, _npy_bytes(head.astype(np.float32)))
    atomic_write_bytes(svf_path, _npy_bytes(svf.astype(np.float32)))
    return head_path, svf_path


def load_bundle_weights(directory: str | os.PathLike[str]) -> Float64Array:
    """`head_weights.npy` + `svf_scales.npy` in `directory` → θ float64 `(D,)`."""
    directory = Path(directory)
    head = _load_npy(directory / HEAD_FILE, "head weights")
    svf = _load_npy(directory / SVF_FILE, "SVF scales")
    if head.ndim != 2 or head.shape[0] <= N_ROLES:
        raise InputError(
            f"head weights {directory / HEAD_FILE} have shape {head.shape}; expected (n_models + 3, hidden)"
        )
    if svf.ndim != 1:
        raise InputError(f"SVF scales {directory / SVF_FILE} have shape {svf.shape}; expected a vector")
    return join_theta(head, svf)
