"""The encoder's features of Milestone-1 prompts, computed once and cached on disk.

Penultimate (their default): `(N, d_h)` float32, the final layer's state at position -2 of
`encoder_text(prompt)` + EOS, L2-normalised. Attentive: each prompt's final-layer states of every
position but the EOS, `(K_i, d_h)`, not normalised (the pool normalises after pooling).

The cache key is the encoder (name, seed, dtype), the pool and the texts, so a cache is never
read for other prompts or another encoder. Caches live in the run directory (`features/`).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from trinity.competition.m1 import encoder_text
from trinity.errors import InputError

MAX_BATCH_TOKENS = 8192


@dataclass
class Features:
    pool: str
    X: np.ndarray | None  # penultimate: (N, d_h)
    seqs: list[np.ndarray] | None  # attentive: N arrays (K_i, d_h)
    seconds: float
    cached: bool

    def __len__(self) -> int:
        return len(self.X) if self.X is not None else len(self.seqs or [])

    def subset(self, idx: list[int]) -> "Features":
        if self.X is not None:
            return Features(self.pool, self.X[idx], None, self.seconds, self.cached)
        seqs = self.seqs or []
        return Features(self.pool, None, [seqs[i] for i in idx], self.seconds, self.cached)


def cache_key(encoder: Any, encoder_seed: int, pool: str, prompts: list[str]) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([encoder.name, encoder_seed, str(encoder.dtype), pool, len(prompts)]).encode())
    for p in prompts:
        h.update(b"\x00" + p.encode("utf-8"))
    return h.hexdigest()[:24]


@torch.inference_mode()
def _encode(encoder: Any, prompts: list[str], pool: str) -> list[np.ndarray]:
    texts = [encoder_text(p) for p in prompts]
    ids = encoder.token_ids_many(texts)
    for p, i in zip(prompts, ids):
        if len(i) < 2:
            raise InputError(f"prompt {p[:40]!r} tokenises to nothing; check the data file")
    dev = encoder.device
    out: list[np.ndarray] = [np.empty(0, np.float32)] * len(ids)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    batch: list[int] = []

    def flush(batch: list[int]) -> None:
        T = max(len(ids[i]) for i in batch)
        input_ids = torch.full((len(batch), T), encoder.eos_token_id, dtype=torch.long)
        mask = torch.zeros((len(batch), T), dtype=torch.long)
        for b, i in enumerate(batch):
            input_ids[b, : len(ids[i])] = torch.tensor(ids[i])
            mask[b, : len(ids[i])] = 1
        hidden = encoder.decoder(
            input_ids=input_ids.to(dev), attention_mask=mask.to(dev), use_cache=False
        ).last_hidden_state.float()
        for b, i in enumerate(batch):
            n = len(ids[i])
            if pool == "penultimate":
                out[i] = F.normalize(hidden[b, n - 2], dim=-1).cpu().numpy()
            else:
                out[i] = hidden[b, : n - 1].cpu().numpy()

    for i in order:
        if batch and (len(batch) + 1) * len(ids[i]) > MAX_BATCH_TOKENS:
            flush(batch)
            batch = []
        batch.append(i)
    if batch:
        flush(batch)
    return out


def features(encoder: Any, encoder_seed: int, prompts: list[str], pool: str, cache_dir: str | Path | None) -> Features:
    """The features of `prompts`, from `cache_dir` when it holds them, else computed and stored."""
    key = cache_key(encoder, encoder_seed, pool, prompts)
    path = Path(cache_dir) / f"{pool}-{key}.npz" if cache_dir is not None else None
    t0 = time.perf_counter()
    if path is not None and path.is_file():
        try:
            with np.load(path, allow_pickle=False) as z:
                if pool == "penultimate":
                    return Features(pool, z["X"], None, time.perf_counter() - t0, True)
                flat, offs = z["H"], z["offsets"]
                seqs = [flat[offs[i] : offs[i + 1]] for i in range(len(offs) - 1)]
                return Features(pool, None, seqs, time.perf_counter() - t0, True)
        except (OSError, ValueError, KeyError):
            pass  # a torn cache file: compute again and replace it
    rows = _encode(encoder, prompts, pool)
    secs = time.perf_counter() - t0
    if pool == "penultimate":
        X = np.stack(rows).astype(np.float32)
        if path is not None:
            _save(path, X=X)
        return Features(pool, X, None, secs, False)
    if path is not None:
        offs = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
        _save(path, H=np.concatenate(rows).astype(np.float32), offsets=offs)
    return Features(pool, None, rows, secs, False)


def _save(path: Path, **arrays: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **arrays)  # type: ignore[arg-type]
    tmp.replace(path)
