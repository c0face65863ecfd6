"""Compact, append-only columns for a run's history (no textual, no torch).

A run can hold 10,000 generations and 100,000 traces; keeping each as a dict would cost
gigabytes. `Column` is a growable numpy array: appends amortise to O(1) and `view()` returns a
zero-copy slice of the filled part, which stays valid (and unchanged) after later appends, so a
snapshot can hand views to the UI thread without copying. `Interner` maps repeated strings
(model ids, benchmarks, question ids, routing paths) to small integers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

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


class OffsetTail:
    """Like `trinity.io.JsonlTail`, but yields each line's byte offset too (for drill-down).

    Reads at most `max_bytes` per call so one refresh stays bounded however far behind it is;
    a partial last line (writer mid-append) stays unread until its newline arrives. If the file
    shrinks it starts over and `reset` is set so the owner can drop what it had.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.offset = 0
        self.reset = False
        self.bad_lines = 0

    def read_new(self, max_bytes: int = 8 << 20) -> Iterator[tuple[int, Any]]:
        self.reset = False
        try:
            size = os.path.getsize(self.path)
        except FileNotFoundError:
            return
        if size < self.offset:
            self.offset, self.reset = 0, True
        if size == self.offset:
            return
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read(min(max_bytes, size - self.offset))
        end = chunk.rfind(b"\n")
        if end < 0:
            if len(chunk) == max_bytes:  # one line longer than max_bytes: read it whole
                with open(self.path, "rb") as f:
                    f.seek(self.offset)
                    line = f.readline()
                if line.endswith(b"\n"):
                    chunk, end = line, len(line) - 1
                else:
                    return
            else:
                return
        base = self.offset
        self.offset += end + 1
        pos = 0
        for raw in chunk[: end + 1].split(b"\n")[:-1]:
            at = base + pos
            pos += len(raw) + 1
            if not raw.strip():
                continue
            try:
                yield at, json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                self.bad_lines += 1

    @property
    def pending(self) -> bool:
        """True while the file holds bytes this tail has not read yet."""
        try:
            return os.path.getsize(self.path) > self.offset
        except FileNotFoundError:
            return False


def read_line_at(path: str | os.PathLike, offset: int) -> dict[str, Any]:
    """The JSON object on the line that starts at `offset` (trace drill-down)."""
    with open(path, "rb") as f:
        f.seek(offset)
        return json.loads(f.readline())
