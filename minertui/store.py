"""Compact, append-only columns for a run's history (no textual, no torch).

A run can hold 10,000 generations and 100,000 traces; keeping each as a dict would cost
gigabytes. `Column` is a growable numpy array: appends amortise to O(1) and `view()` returns a
zero-copy slice of the filled part, which stays valid (and unchanged) after later appends, so a
snapshot can hand views to the UI thread without copying. `Interner` maps repeated strings
(model ids, benchmarks, question ids, routing paths) to small integers. The files are tailed by
`trinity.io.JsonlTail` (with each line's byte offset, for drill-down).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class Column:
    __slots__ = ("_data", "n")

    def __init__(self, dtype: Any, capacity: int = 256, fill: Any = 0):
        self._data = np.full(capacity, fill, dtype=dtype)
        self.n = 0

    def append(self, value: Any) -> None:
        if self.n == len(self._data):
            grown = np.empty(len(self._data) * 2, dtype=self._data.dtype)
            grown[: self.n] = self._data
            self._data = grown  # old views keep pointing at the old buffer: still valid
        self._data[self.n] = value
        self.n += 1

    def view(self) -> np.ndarray:
        v = self._data[: self.n]
        v.flags.writeable = False
        return v

    def __len__(self) -> int:
        return self.n


class Interner:
    """str <-> int. `names` only grows, so an index handed out stays valid."""

    __slots__ = ("index", "names")

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.names: list[str] = []

    def __call__(self, name: str) -> int:
        i = self.index.get(name)
        if i is None:
            i = self.index[name] = len(self.names)
            self.names.append(name)
        return i
