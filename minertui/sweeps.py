"""Sweeps under the runs root (issue 16), for the reader thread: no textual here.

A sweep directory (one holding `sweep.json`, written by `trinity sweep`) is one thing in the app:
`SweepModel` re-reads its sweep.json only when the file changed, and names its trials' run
directories (`DIR/trials/<trial-id>/`, ordinary runs the reader polls like any other). Each poll,
`SweepModel.snapshot(trial snapshots)` builds an immutable `SweepSnapshot`: the trials in sweep
order with their state (the trial's own run.json status, "pending" before it has one, the
driver's recorded error kept), the sweep's spend (its trials' ledgers) against its budget, and
the best trial by validation accuracy. Formats: docs/CONTRACTS.md ("Sweeps").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from trinity.errors import TrinityError
from trinity.sweep.runner import SWEEP_JSON, SweepDir

if TYPE_CHECKING:
    from minertui.runmodel import RunSnapshot

# a short mark per state, for the one-cell summary of a sweep row (the detail line spells them out)
STATE_MARK = {
    "finished": "✓",
    "running": "▶",
    "stopped": "■",
    "failed": "✗",
    "interrupted": "✗",
    "pending": "○",  # not "…", which reads as text cut at the column's edge
    "created": "○",
}


def is_sweep_dir(path: str | os.PathLike) -> bool:
    return (Path(path) / SWEEP_JSON).is_file()


def list_sweeps(root: str | os.PathLike) -> list[Path]:
    """Every sweep directory directly under `root` (resolved), by name."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted((p.resolve() for p in root.iterdir() if is_sweep_dir(p)), key=lambda p: p.name)


@dataclass(frozen=True)
class Trial:
    index: int  # position in the sweep: the trial's stable colour
    id: str
    label: str  # its overrides, e.g. "sigma0=0.2 seed=1"
    path: Path  # its run directory (resolved)
    state: str
    error: str = ""
    planned: int | None = None  # generations its config asks for


@dataclass(frozen=True)
class SweepSnapshot:
    path: Path
    id: str
    status: str  # the driver's: created | running | finished | incomplete
    created: str
    budget_usd: float | None
    trials: tuple[Trial, ...]
    spent_usd: float  # the trials' ledgers, summed
    best: tuple[str, float] | None  # (trial id, its best validation accuracy)
    driver_alive: bool = False  # some trial's engine holds its run dir now
    error: str = ""  # sweep.json unreadable

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.trials:
            out[t.state] = out.get(t.state, 0) + 1
        return out

    def counts_text(self, short: bool = False) -> str:
        order = ("running", "finished", "stopped", "interrupted", "failed", "pending", "created")
        c = self.counts
        keys = sorted(c, key=lambda k: (order.index(k) if k in order else len(order), k))
        if short:
            return " ".join(f"{STATE_MARK.get(k, '?')}{c[k]}" for k in keys)
        return ", ".join(f"{c[k]} {k}" for k in keys)

    def trial_of(self, path: Path) -> Trial | None:
        return next((t for t in self.trials if t.path == path), None)


class SweepModel:
    """sweep.json of one sweep directory, re-read when it changes. One poller at a time."""

    def __init__(self, path: str | os.PathLike):
        self.sweep = SweepDir(Path(path).resolve())
        self._mtime = -1.0
        self._doc: dict[str, Any] = {}
        self._error = ""
        self.trial_paths: tuple[Path, ...] = ()

    def poll(self) -> bool:
        """True when sweep.json changed (its trials may be new)."""
        try:
            mtime = self.sweep.sweep_json.stat().st_mtime
        except FileNotFoundError:
            mtime = -2.0
        if mtime == self._mtime:
            return False
        self._mtime = mtime
        try:
            doc = self.sweep.read()
        except TrinityError as e:  # torn, not UTF-8, not a sweep file: the row says so
            self._error, self._doc, self.trial_paths = str(e), {}, ()
            return True
        trials = [t for t in doc["trials"] if isinstance(t, dict) and _safe_id(t.get("id"))]
        self._doc = {**doc, "trials": trials}
        self._error = ""
        self.trial_paths = tuple(self.sweep.trial_path(t["id"]).resolve() for t in trials)
        return True

    def snapshot(self, runs: dict[Path, RunSnapshot]) -> SweepSnapshot:
        doc, trials = self._doc, []
        spent, best, alive = 0.0, None, False
        for i, (t, path) in enumerate(zip(doc.get("trials", ()), self.trial_paths)):
            s = runs.get(path)
            state = s.status if s is not None and s.record else "pending"
            # the driver's error is kept while the trial has not finished (SweepDir.refresh's rule)
            err = str(t.get("error") or "") if state in ("failed", "pending", "interrupted", "stopped") else ""
            if s is not None and s.error and s.record:
                err = s.error
            if state == "pending" and err:
                state = "failed"
            gens = (t.get("config") or {}).get("generations") if isinstance(t.get("config"), dict) else None
            trials.append(
                Trial(
                    i,
                    str(t["id"]),
                    str(t.get("label", "")),
                    path,
                    state,
                    err,
                    int(gens) if isinstance(gens, int) and not isinstance(gens, bool) else None,
                )
            )
            if s is None:
                continue
            spent += s.spend_usd
            alive |= s.locked
            v = best_val(s)
            if v is not None and (best is None or v > best[1]):
                best = (str(t["id"]), v)
        budget = doc.get("budget_usd")
        return SweepSnapshot(
            path=self.sweep.path,
            id=str(doc.get("id") or self.sweep.path.name),
            status=str(doc.get("status") or ("unreadable" if self._error else "?")),
            created=str(doc.get("created") or ""),
            budget_usd=float(budget) if isinstance(budget, (int, float)) and not isinstance(budget, bool) else None,
            trials=tuple(trials),
            spent_usd=spent,
            best=best,
            driver_alive=alive,
            error=self._error,
        )


def best_val(s: RunSnapshot) -> float | None:
    v = s.gens.val_acc
    return float(np.nanmax(v)) if len(v) and np.isfinite(v).any() else None


def _safe_id(tid: Any) -> bool:
    """A trial id names a folder under DIR/trials/: never a path out of it."""
    return isinstance(tid, str) and bool(tid) and "/" not in tid and "\\" not in tid and tid not in (".", "..")
