"""Token-budget batching and the content key of a token sequence, shared by the population path
(`trinity.model.router`) and the incremental session path (`trinity.model.sessions`)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def token_key(ids: list[int] | np.ndarray) -> str:
    """sha256 of the ids as int64: equal sequences, equal keys."""
    return hashlib.sha256(np.asarray(ids, dtype=np.int64).tobytes()).hexdigest()


def batches(items: Iterable[T], size_of: Callable[[T], int], budget: int) -> Iterator[list[T]]:
    """Consecutive groups of `items` whose sizes sum to <= budget (an item larger than the budget
    goes alone)."""
    batch: list[T] = []
    used = 0
    for it in items:
        n = size_of(it)
        if batch and used + n > budget:
            yield batch
            batch, used = [], 0
        batch.append(it)
        used += n
    if batch:
        yield batch
