"""API keys for `trinity serve`, stored only as hashes, each with its own budget.

The keys file (JSON, written by `trinity serve-keys add FILE NAME`):

    {"keys": [{"name": "alice", "sha256": "<hex of sha256(key)>", "budget_usd": 1.0}]}

A key itself is shown once, when it is made, and is never written anywhere: the server compares
the sha256 of the bearer token of each request with the stored hashes (in constant time). A
key's `budget_usd` (null: none) caps what its requests may spend, counted over the server's
whole call journal, so a restart does not give a key its money back.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from trinity.errors import InputError

KEY_PREFIX = "trn-"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ApiKey:
    name: str
    sha256: str
    budget_usd: float | None


class KeyStore:
    def __init__(self, keys: list[ApiKey]):
        self.keys = list(keys)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "KeyStore":
        p = Path(path)
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"keys file {p} not found; make one with `trinity serve-keys add {p} NAME`") from None
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise InputError(
                f"keys file {p} is not readable JSON ({e}); make one with `trinity serve-keys add`"
            ) from None
        rows = doc.get("keys") if isinstance(doc, dict) else None
        if not isinstance(rows, list):
            raise InputError(f'keys file {p}: expected {{"keys": [...]}}')
        keys: list[ApiKey] = []
        for i, row in enumerate(rows):
            where = f"keys file {p}, key {i + 1}"
            if not isinstance(row, dict):
                raise InputError(f"{where}: expected an object with name, sha256, budget_usd")
            name, digest, budget = row.get("name"), row.get("sha256"), row.get("budget_usd")
            if not isinstance(name, str) or not NAME_RE.match(name):
                raise InputError(f"{where}: name must be 1-64 letters, digits, '_', '.' or '-'")
            if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
                raise InputError(
                    f"{where} ({name}): sha256 must be 64 lower-case hex digits (the key's hash, never the key)"
                )
            if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget < 0):
                raise InputError(f"{where} ({name}): budget_usd must be a number >= 0 or null")
            keys.append(ApiKey(name, digest, None if budget is None else float(budget)))
        names = [k.name for k in keys]
        if len(set(names)) != len(names):
            raise InputError(f"keys file {p}: a key name appears twice")
        return cls(keys)

    def check(self, bearer: str | None) -> ApiKey | None:
        """The key whose hash matches `bearer`, or None."""
        if not bearer:
            return None
        digest = key_hash(bearer)
        found = None
        for k in self.keys:  # compare with every key: the time does not say which one matched
            if hmac.compare_digest(k.sha256, digest):
                found = k
        return found


def add_key(path: str | os.PathLike[str], name: str, budget_usd: float | None) -> str:
    """Make a new key named `name`, store its hash in `path` (created when missing) and return the
    key (the only time it exists outside the client that will use it)."""
    p = Path(path)
    if not NAME_RE.match(name):
        raise InputError(f"key name {name!r}: use 1-64 letters, digits, '_', '.' or '-'")
    if budget_usd is not None and budget_usd < 0:
        raise InputError(f"--budget-usd must be >= 0, got {budget_usd}")
    store = KeyStore.load(p) if p.exists() else KeyStore([])
    if any(k.name == name for k in store.keys):
        raise InputError(f"keys file {p} already has a key named {name!r}; pick another name")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    rows = [{"name": k.name, "sha256": k.sha256, "budget_usd": k.budget_usd} for k in store.keys]
    rows.append({"name": name, "sha256": key_hash(key), "budget_usd": budget_usd})
    tmp = p.with_name(p.name + ".tmp")
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"keys": rows}, f, indent=2)
        f.write("\n")
    os.replace(tmp, p)
    return key
