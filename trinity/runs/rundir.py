"""`RunDir`: paths and small read/write helpers for `runs/<run-id>/`.

| file            | writer           | what                                                       |
|-----------------|------------------|------------------------------------------------------------|
| run.json        | engine (atomic)  | id, created, status, mode, resolved config, models, splits |
| events.jsonl    | engine (append)  | `generation`, `progress`, `status`, `log` events           |
| traces.jsonl    | engine (append)  | one routing trajectory a line                              |
| ledger.jsonl    | pool ledger      | hash-chained cost records                                  |
| journal.jsonl   | pool client      | paid calls by key (+ journal.sent.jsonl: sent / lost calls) |
| checkpoint/     | trainer          | data-only ES replay + RNG states + generation, checksum,   |
|                 |                  | ledger head + record count                                 |
| best_theta.npy, history.json, summary.json (with ledger_head, ledger_records), eval.json | artifacts |

What each file holds, field by field (every event has "type" and "time", unix seconds): the
typed records in `trinity.runs.records`, the one definition. Readers tolerate a torn last line
and never block the writer.

No symlinks: an engine that takes a run's lock first checks that neither the run directory nor
anything in it (checkpoint/ included) is a symbolic link, and opens the lock with O_NOFOLLOW (as
every append does: `trinity.io.open_append_nofollow`) — a tampered run directory could otherwise
make a resume truncate, append to or delete files outside it. A link is refused with one line
naming it.
"""

from __future__ import annotations

import fcntl
import os
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trinity.errors import InputError, RunLockedError
from trinity.io import append_jsonl, atomic_write_json, read_json, read_jsonl
from trinity.runs.records import (
    CHECKPOINT_DIR,
    EVAL_FILE,
    EVENTS_FILE,
    HISTORY_FILE,
    RUN_JSON,
    RUN_STATUSES,
    SUMMARY_FILE,
    THETA_FILE,
    TRACES_FILE,
    Event,
    RunMeta,
    parse_event,
    parse_run_meta,
    read_run_meta,
    try_event,
)

STATUSES = RUN_STATUSES


def new_run_id(prefix: str = "run") -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{prefix}-{stamp}-{uuid.uuid4().hex[:6]}"


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class RunLock:
    """An exclusive, non-blocking flock on `<run>/.lock`: one engine per run directory.

    The lock dies with the process (even on SIGKILL), so a stale lock never blocks a resume.
    """

    def __init__(self, run_dir: "RunDir"):
        self.path = run_dir.path / ".lock"
        self.fd: int | None = None

    def acquire(self) -> "RunLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        check_no_links(self.path.parent)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as e:
            raise InputError(f"cannot open the run's lock {self.path}: {e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunLockedError(
                f"run directory {self.path.parent} is in use by another engine process; "
                "stop it first or use another --run-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class RunDir:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    # ---- paths -----------------------------------------------------------------------------
    @property
    def run_json(self) -> Path:
        return self.path / RUN_JSON

    @property
    def events(self) -> Path:
        return self.path / EVENTS_FILE

    @property
    def traces(self) -> Path:
        return self.path / TRACES_FILE

    @property
    def ledger(self) -> Path:
        return self.path / "ledger.jsonl"

    @property
    def journal(self) -> Path:
        return self.path / "journal.jsonl"

    @property
    def checkpoint_dir(self) -> Path:
        return self.path / CHECKPOINT_DIR

    @property
    def best_theta(self) -> Path:
        return self.path / THETA_FILE

    @property
    def history(self) -> Path:
        return self.path / HISTORY_FILE

    @property
    def summary(self) -> Path:
        return self.path / SUMMARY_FILE

    @property
    def eval_json(self) -> Path:
        return self.path / EVAL_FILE

    @property
    def engine_log(self) -> Path:
        return self.path / "engine.log"

    @property
    def id(self) -> str:
        return self.path.name

    def exists(self) -> bool:
        return self.run_json.exists()

    # ---- run.json --------------------------------------------------------------------------
    def read_meta(self) -> dict[str, Any]:
        """run.json as the raw JSON object: for `update_meta` and tests that write run.json by hand;
        a reader of the run goes through `meta()` (its record)."""
        if not self.run_json.exists():
            raise InputError(f"{self.path} is not a run directory (no run.json)")
        meta = read_json(self.run_json, "run.json")
        if not isinstance(meta, dict):
            raise InputError(f"{self.run_json} is not a JSON object")
        return meta

    def meta(self) -> RunMeta:
        """run.json as its record (`trinity.runs.records.RunMeta`)."""
        return read_run_meta(self.path)

    def write_meta(self, meta: RunMeta | dict[str, Any]) -> dict[str, Any]:
        """Write run.json (atomically) through its record, `updated` set to now; returns what was
        written."""
        data = meta.to_json() if isinstance(meta, RunMeta) else dict(meta)
        data["updated"] = utc_now_iso()
        written = parse_run_meta(data, str(self.run_json)).to_json()
        atomic_write_json(self.run_json, written)
        return written

    def update_meta(self, **changes: Any) -> dict[str, Any]:
        """Merge `changes` into run.json; returns the record as written (its `updated` is the
        new one, not the one read)."""
        meta = self.read_meta()
        meta.update(changes)
        return self.write_meta(meta)

    # ---- events ----------------------------------------------------------------------------
    def append_event(self, type_: str, **fields: Any) -> dict[str, Any]:
        """Append one event, typed by its record (`trinity.runs.records`: a RecordError for a field
        the event does not hold); returns the line written."""
        ev = parse_event({"type": type_, "time": round(time.time(), 3), **fields}, str(self.events)).to_json()
        append_jsonl(self.events, ev, fsync=type_ in ("generation", "status"))
        return ev

    def set_status(self, status: str, message: str = "") -> None:
        """Record a status change in run.json and as a `status` event."""
        assert status in STATUSES, status
        self.update_meta(status=status, status_message=message)
        self.append_event("status", status=status, message=message)

    def log(self, message: str, level: str = "info") -> None:
        self.append_event("log", level=level, message=message)

    def read_events(self) -> list[dict[str, Any]]:
        """events.jsonl's lines as raw JSON objects (tests, tools); a reader of the run goes through
        `read_typed_events()` (their records)."""
        return read_jsonl(self.events) if self.events.exists() else []

    def read_typed_events(self) -> list[Event]:
        """The events as records; a line this version cannot type (a newer engine's) is skipped."""
        return [ev for d in self.read_events() if (ev := try_event(d)) is not None]

    def lock(self) -> RunLock:
        return RunLock(self)

    def is_locked(self) -> bool:
        """True while some engine process holds the run's lock (i.e. it is really running)."""
        p = self.path / ".lock"
        if not p.exists():
            return False
        fd = os.open(p, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        finally:
            os.close(fd)


def check_no_links(path: str | os.PathLike[str], depth: int = 2) -> None:
    """InputError naming the first symbolic link found: `path` itself or anything inside it
    (`depth` levels deep: the run directory and checkpoint/)."""
    path = Path(path)
    if path.is_symlink():
        raise InputError(
            f"run directory {path} is a symbolic link (to {os.readlink(path)}); use the real directory as --run-dir"
        )

    def walk(d: Path, left: int) -> None:
        try:
            entries = list(os.scandir(d))
        except FileNotFoundError:
            return
        for e in entries:
            if e.is_symlink():
                raise InputError(
                    f"{e.path} in the run directory is a symbolic link (to {os.readlink(e.path)}); "
                    "a run directory holds only its own files — replace the link with the file, or start a new run"
                )
            if left > 1 and e.is_dir(follow_symlinks=False):
                walk(Path(e.path), left - 1)

    if path.is_dir():
        walk(path, depth)


def list_runs(root: str | os.PathLike[str]) -> list[RunDir]:
    """Every run directory directly under `root` (those with a run.json), newest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    runs = [RunDir(p) for p in root.iterdir() if (p / "run.json").is_file()]
    runs.sort(key=lambda r: r.run_json.stat().st_mtime, reverse=True)
    return runs
