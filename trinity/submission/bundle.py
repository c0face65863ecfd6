"""Submission bundles: read a bundle directory back, hash it, and split/join its θ.

Two formats (docs/CONTRACTS.md, Submission):
- `minirouter`: `submissions/final_model/` — `best_theta.npy` (float64 `[head | svf]`),
  `summary.json`, `history.json`, `eval.json` (optional).
- `tinyrouter`: `submissions/<miner>/<n>/` — `head_weights.npy` (n_models+3, hidden) float32,
  `svf_scales.npy` (7·hidden,) float32, `receipt.json`, `README.md`.

`load_bundle` never raises for a malformed weight file: it records the problem, so the gates can
report it as a failing gate instead of a traceback. A directory that is neither format is an
`InputError`.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trinity.errors import InputError
from trinity.layout import HEAD_FILE as HEAD_FILE  # the θ layout and names: defined once there
from trinity.layout import N_ROLES as N_ROLES
from trinity.layout import N_SVF_MATRICES as N_SVF_MATRICES
from trinity.layout import RECEIPT_FILE as RECEIPT_FILE
from trinity.layout import SVF_FILE as SVF_FILE
from trinity.layout import THETA_FILE as THETA_FILE
from trinity.model.theta import join_theta, split_theta

TINYROUTER = "tinyrouter"
MINIROUTER = "minirouter"
FORMATS = (TINYROUTER, MINIROUTER)


def hidden_from_size(size: int, n_models: int) -> int | None:
    """The hidden width for which (n_models + 3)·hidden head weights + 7·hidden SVF scales make
    `size` parameters (13,312 = 13 × 1024 for 3 models), or None."""
    per = n_models + N_ROLES + N_SVF_MATRICES
    return size // per if size > 0 and size % per == 0 else None


def detect_format(path: str | os.PathLike[str]) -> str:
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"bundle directory not found: {path}")
    if (path / HEAD_FILE).exists() or (path / RECEIPT_FILE).exists():
        return TINYROUTER
    if (path / THETA_FILE).exists():
        return MINIROUTER
    raise InputError(
        f"{path} is not a submission bundle (no {HEAD_FILE}, {RECEIPT_FILE} or {THETA_FILE}); "
        "make one with `trinity pack RUN_DIR --miner NAME --format tinyrouter|minirouter`"
    )


def bundle_files(path: str | os.PathLike[str]) -> list[Path]:
    """Regular files of the bundle, sorted by relative path (hidden files included)."""
    root = Path(path)
    return sorted(
        (p for p in root.rglob("*") if p.is_file() and not p.is_symlink()), key=lambda p: p.relative_to(root).as_posix()
    )


def bundle_hash(path: str | os.PathLike[str]) -> str:
    """sha256 over (relative path, sha256 of content) of every file: the bundle's identity."""
    root = Path(path)
    outer = hashlib.sha256()
    for p in bundle_files(root):
        inner = hashlib.sha256(p.read_bytes()).hexdigest()
        outer.update(f"{p.relative_to(root).as_posix()}\0{inner}\n".encode())
    return outer.hexdigest()


def _load_npy(path: Path, problems: list[str]) -> np.ndarray | None:
    if not path.exists():
        problems.append(f"{path.name} is missing")
        return None
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        # numpy calls any non-.npy file "pickled data" and suggests allow_pickle: not advice to pass on
        why = "not in .npy format" if "pickle" in str(e) else str(e)
        problems.append(f"{path.name} is not a readable .npy array ({why}); re-pack the bundle")
        return None
    if not isinstance(arr, np.ndarray) or not np.issubdtype(arr.dtype, np.floating):
        problems.append(f"{path.name} holds {getattr(arr, 'dtype', type(arr))}, not floating point")
        return None
    return arr


def _load_json(path: Path, problems: list[str]) -> Any:
    if not path.exists():
        problems.append(f"{path.name} is missing")
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        problems.append(f"{path.name} is not valid JSON ({e})")
        return None


@dataclass
class LoadedBundle:
    """A bundle read back from disk; arrays are as stored (no casting)."""

    path: Path
    format: str
    hash: str
    head: np.ndarray | None = None  # (n_models + 3, hidden)
    svf: np.ndarray | None = None  # (7 · hidden,)
    theta: np.ndarray | None = None  # minirouter: the stored best_theta.npy
    receipt: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None
    history: list[Any] | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def n_models(self) -> int | None:
        return None if self.head is None or self.head.ndim != 2 else self.head.shape[0] - N_ROLES

    @property
    def hidden(self) -> int | None:
        return None if self.head is None or self.head.ndim != 2 else self.head.shape[1]

    def joined_theta(self) -> np.ndarray | None:
        """θ as the trainer stores it, float64 `[head.flatten() | svf]`, or None if unreadable."""
        if self.head is None or self.svf is None or self.head.ndim != 2 or self.svf.ndim != 1:
            return None

        try:
            return join_theta(self.head, self.svf)
        except InputError:
            return None

    @property
    def miner(self) -> str | None:
        miner = self.receipt.get("miner") if self.receipt else None
        if isinstance(miner, str):
            return miner
        if self.format == TINYROUTER and self.path.parent.name:
            return self.path.parent.name  # submissions/<miner>/<n>/
        return None


def _minirouter_layout(theta: np.ndarray, summary: object, problems: list[str]) -> tuple[int, int] | None:
    """(n_models, hidden) of a minirouter θ: from summary.json when it says, else hidden 1024."""
    n_models = hidden = None
    if isinstance(summary, dict):
        models = summary.get("models")
        pool = summary.get("pool")  # MiniRouter's own key: the pool's model names
        if isinstance(models, list) and models:
            n_models = len(models)
        elif isinstance(pool, list) and pool:
            n_models = len(pool)
        elif isinstance(summary.get("n_models"), int):
            n_models = summary["n_models"]
        if isinstance(summary.get("hidden"), int) and summary["hidden"] > 0:
            hidden = summary["hidden"]
    if n_models is not None and hidden is None:
        hidden = hidden_from_size(theta.size, n_models)
    if hidden is None:
        hidden = 1024  # Qwen3-0.6B, the competition encoder
    if n_models is None and theta.size % hidden == 0:
        n_models = theta.size // hidden - N_ROLES - N_SVF_MATRICES
    if n_models is None or n_models < 1 or theta.size <= (n_models + N_ROLES) * hidden:
        problems.append(
            f"{THETA_FILE} has {theta.size} values, which is no (n_models + 10)·hidden "
            f"layout (hidden {hidden}); summary.json should name the models and hidden"
        )
        return None
    return n_models, hidden


def load_bundle(path: str | os.PathLike[str]) -> LoadedBundle:
    path = Path(path)
    fmt = detect_format(path)
    lb = LoadedBundle(path=path, format=fmt, hash=bundle_hash(path))
    if fmt == TINYROUTER:
        lb.head = _load_npy(path / HEAD_FILE, lb.problems)
        lb.svf = _load_npy(path / SVF_FILE, lb.problems)
        receipt = _load_json(path / RECEIPT_FILE, lb.problems)
        if receipt is not None and not isinstance(receipt, dict):
            lb.problems.append(f"{RECEIPT_FILE} is not a JSON object")
            receipt = None
        lb.receipt = receipt
        return lb
    lb.theta = _load_npy(path / THETA_FILE, lb.problems)
    summary = _load_json(path / "summary.json", lb.problems)
    lb.summary = summary if isinstance(summary, dict) else None
    history = _load_json(path / "history.json", lb.problems) if (path / "history.json").exists() else None
    lb.history = history if isinstance(history, list) else None
    if lb.theta is not None:
        if lb.theta.ndim != 1:
            lb.problems.append(f"{THETA_FILE} has shape {lb.theta.shape}, expected a flat vector")
        else:
            layout = _minirouter_layout(lb.theta, lb.summary, lb.problems)
            if layout:
                # head (n_models+3, hidden), svf (D - head.size,)
                lb.head, lb.svf = split_theta(lb.theta, *layout)
    return lb


def find_bundles(root: str | os.PathLike[str]) -> list[Path]:
    """Bundle directories under `root` (itself included): dirs holding a head or a θ file.
    Hidden directories (a pack in progress, `.git`) are skipped."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"directory of prior bundles not found: {root}")
    found = {
        p.parent
        for name in (HEAD_FILE, THETA_FILE)
        for p in root.rglob(name)
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    }
    return sorted(found)
