"""Response cache: SQLite (WAL), keyed by (endpoint, model, messages, decoding params).

A hit costs $0, writes no ledger record and is marked `cache_hit` in the result. Only
deterministic requests (temperature 0) are cached unless `cache_nondeterministic=True`. The key
is a sha256 of canonical JSON of those four things — never of headers, so never of the API key.

WAL mode lets any number of readers (the app, another `eval`) read while one engine writes;
`busy_timeout` makes a second writer wait instead of failing.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from trinity.errors import ConfigError
from trinity.io import canonical_json


def default_cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "minertui" / "responses.sqlite"


def cache_key(namespace: str, model: str, messages: list[dict[str, Any]], decoding: dict[str, Any]) -> str:
    blob = canonical_json({"endpoint": namespace, "model": model, "messages": messages, "decoding": decoding})
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, path: str | os.PathLike[str] | None = None, *, cache_nondeterministic: bool = False):
        self.path = Path(path) if path else default_cache_path()
        self.cache_nondeterministic = cache_nondeterministic
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable at checkpoints, never corrupt
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, provider TEXT NOT NULL, "
                "model TEXT NOT NULL, created REAL NOT NULL, result TEXT NOT NULL)"
            )
        except sqlite3.DatabaseError as e:
            raise ConfigError(
                f"response cache {self.path} cannot be opened ({e}); delete it or pass another --cache path"
            ) from None

    def cacheable(self, decoding: dict[str, Any]) -> bool:
        if self.cache_nondeterministic:
            return True
        t = decoding.get("temperature", 0)
        return t is not None and float(t) == 0.0

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT result FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        result: dict[str, Any] = json.loads(row[0])  # written by put(): always an object
        return result

    def put(self, key: str, provider: str, model: str, result: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, provider, model, created, result) VALUES (?, ?, ?, ?, ?)",
                (key, provider, model, time.time(), json.dumps(result, ensure_ascii=False)),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
