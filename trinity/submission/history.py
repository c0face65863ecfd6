"""The local submission history: one JSON line per pack and per submit attempt.

Where it lives (first that applies): an explicit path (`--history FILE`), then
`$MINERTUI_DATA_DIR/submissions.jsonl`, then `$XDG_DATA_HOME/minertui/submissions.jsonl`, then
`~/.local/share/minertui/submissions.jsonl`.

Records (every one has `kind` and `time`, ISO-8601 UTC, plus `unix`):
  {"kind": "pack",   "miner", "bundle", "bundle_hash", "format", "run_id", "run_dir"}
  {"kind": "submit", "miner", "bundle", "bundle_hash", "format", "gates": {name: status},
   "skip_gates", "outcome": "pushed|committed|refused|failed", "pushed", "commit", "branch",
   "remote", "pr_url", "compare_url", "message"}

The rate-limit gate counts `submit` records that reached the remote (`pushed`), whatever their
result later was — the competition counts attempts, not wins. The duplicate gate compares
against the bundle directories of those submitted attempts that still exist. `pack` records let
`check` find the run (and its ledger) a bundle came from.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trinity.io import append_jsonl, read_jsonl

HISTORY_FILE = "submissions.jsonl"


def default_history_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser()
    data_dir = os.environ.get("MINERTUI_DATA_DIR")
    if data_dir:
        return Path(data_dir).expanduser() / HISTORY_FILE
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "minertui" / HISTORY_FILE


@dataclass
class SubmissionHistory:
    path: Path

    @classmethod
    def open(cls, explicit: str | os.PathLike[str] | None = None) -> "SubmissionHistory":
        return cls(default_history_path(explicit))

    def records(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [r for r in read_jsonl(self.path) if isinstance(r, dict)]

    def append(self, kind: str, **fields: Any) -> dict[str, Any]:
        now = time.time()
        record = {
            "kind": kind,
            "time": datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="seconds"),
            "unix": round(now, 3),
            **fields,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        append_jsonl(self.path, record, fsync=True)
        return record

    def attempts(self, miner: str) -> list[dict[str, Any]]:
        """Submit attempts of `miner` that reached the remote, oldest first."""
        return [r for r in self.records() if r.get("kind") == "submit" and r.get("miner") == miner and r.get("pushed")]

    def submitted_bundle_dirs(self) -> list[Path]:
        """Bundle directories of every attempt that reached the remote (any miner), deduplicated.
        Packed-but-never-submitted bundles are not priors: the competition compares against
        earlier submissions."""
        seen: dict[str, Path] = {}
        for r in self.records():
            b = r.get("bundle")
            if r.get("kind") == "submit" and r.get("pushed") and isinstance(b, str) and b not in seen:
                seen[b] = Path(b)
        return list(seen.values())

    def pack_record(self, bundle_hash: str) -> dict[str, Any] | None:
        """The newest `pack` record of a bundle with this content hash."""
        for r in self.records()[::-1]:
            if r.get("kind") == "pack" and r.get("bundle_hash") == bundle_hash:
                return r
        return None
