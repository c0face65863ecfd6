"""What a run is doing, read from its directory alone: the one summary behind `trinity status`
and `trinity watch` (a plain SSH session, no app).

`RunWatcher` keeps byte offsets into `events.jsonl` and `ledger.jsonl` and reads only what the
engine appended since its last `poll()`, so `watch` stays cheap on a run with a long history;
each poll returns a frozen `RunStatus`. Formats: docs/CONTRACTS.md ("Run directory").
"""

from __future__ import annotations

import math
import os
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trinity.errors import InputError
from trinity.io import JsonlTail
from trinity.runs.records import RunConfig, RunMeta, read_run_meta
from trinity.runs.rundir import RunDir, list_runs

ETA_WINDOW = 20  # generations the ETA looks back over (the median of their times)
LOG_KEEP = 50
TERMINAL = ("finished", "stopped", "failed", "interrupted")


@dataclass(frozen=True)
class RunStatus:
    path: str
    id: str
    state: str  # run.json's status, or "interrupted" (says running, no engine holds it)
    mode: str
    pool: str
    gen: int  # generations done
    generations: int | None  # planned
    best_val: float | None  # the best validation accuracy so far (warm start included)
    best_fitness: float | None
    last_val: float | None
    spend_usd: float  # the ledger's total (the truth), else the engine's running total
    budget_usd: float | None
    secs_per_gen: float | None
    eta_secs: float | None
    eta_limit: str  # "generations" | "budget" | ""
    progress: tuple[int, int] | None  # (done, total) of the generation being evaluated now
    last_event: str
    last_event_time: float | None
    updated: float | None  # the newest event's time
    message: str  # run.json's status_message
    error: str = ""  # the run directory could not be read
    val_curve: tuple[float, ...] = ()  # validation accuracy per generation that validated
    best_curve: tuple[float, ...] = ()  # best fitness per generation
    logs: tuple[str, ...] = ()  # the newest log/status lines, oldest first
    system: dict[str, Any] = field(default_factory=dict)  # the newest generation's system sample

    @property
    def done(self) -> bool:
        return self.state in TERMINAL

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["progress"] = list(self.progress) if self.progress else None
        d["val_curve"], d["best_curve"], d["logs"] = list(self.val_curve), list(self.best_curve), list(self.logs)
        return d


def _num(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _event_text(ev: dict[str, Any]) -> str:
    kind = ev.get("type")
    if kind == "generation":
        val = _num(ev.get("val_acc"))
        return f"generation {ev.get('gen')}: best {_num(ev.get('best')) or 0:.3f}" + (
            f", val {val:.3f}" if val is not None else ""
        )
    if kind == "status":
        msg = str(ev.get("message") or "")
        st = str(ev.get("status", ""))
        return msg if msg.startswith(st) else (f"{st}: {msg}" if msg else st)
    if kind == "log":
        return f"{ev.get('level', 'info')}: {ev.get('message', '')}"
    if kind == "warm_start":
        val = _num(ev.get("val_acc"))
        return f"warm start ({ev.get('method')})" + (f", val {val:.3f}" if val is not None else "")
    if kind == "progress":
        return f"generation {ev.get('gen')}: {ev.get('done')}/{ev.get('total')}"
    return str(kind)


class RunWatcher:
    """Incremental reader of one run directory; `poll()` → `RunStatus`. One poller at a time."""

    def __init__(self, path: str | os.PathLike[str]):
        self.run = RunDir(path)
        self._events = JsonlTail(self.run.events)
        self._ledger = JsonlTail(self.run.ledger)
        self._reset_events()
        self._ledger_micro = 0
        self._meta: RunMeta | None = None
        self._meta_mtime = -1.0

    def _reset_events(self) -> None:
        self._gens: list[int] = []
        self._best: list[float] = []
        self._vals: list[float] = []
        self._secs: list[float] = []
        self._costs: list[float] = []
        self._warm_val: float | None = None
        self._progress: tuple[int, int, int] | None = None
        self._logs: list[str] = []
        self._last: dict[str, Any] | None = None
        self._system: dict[str, Any] = {}

    def _on_event(self, ev: dict[str, Any]) -> None:
        kind = ev.get("type")
        if kind == "generation":
            self._gens.append(int(_num(ev.get("gen")) or 0))
            b = _num(ev.get("best"))
            self._best.append(b if b is not None else math.nan)
            v = _num(ev.get("val_acc"))
            self._vals.append(v if v is not None else math.nan)
            self._secs.append(_num(ev.get("secs")) or math.nan)
            c = _num(ev.get("cost_usd"))
            self._costs.append(c if c is not None else math.nan)
            if isinstance(ev.get("system"), dict):
                self._system = dict(ev["system"])
        elif kind == "warm_start":
            self._warm_val = _num(ev.get("val_acc"))
        elif kind == "progress":
            g, d, t = (int(_num(ev.get(k)) or 0) for k in ("gen", "done", "total"))
            self._progress = (g, d, t)
            return  # progress ticks are not "the last event" (they come twice a second)
        if kind in ("status", "log", "warm_start"):
            self._logs.append(_event_text(ev))
            del self._logs[:-LOG_KEEP]
        self._last = ev

    def _read_meta(self) -> str:
        try:
            mtime = self.run.run_json.stat().st_mtime
        except FileNotFoundError:
            return f"{self.run.path} is not a run directory (no run.json)"
        if mtime != self._meta_mtime:
            try:
                meta = read_run_meta(self.run.path)
            except InputError as e:  # not JSON, or not a run.json (RecordError): one line
                return str(e)
            self._meta, self._meta_mtime = meta, mtime
        return ""

    def poll(self) -> RunStatus:
        error = self._read_meta()
        while True:
            items = self._events.read_new(4 << 20)
            if self._events.reset:
                self._reset_events()
            for ev in items:
                if isinstance(ev, dict):
                    self._on_event(ev)
            if not self._events.pending:
                break
        while True:
            recs = self._ledger.read_new(4 << 20)
            if self._ledger.reset:
                self._ledger_micro = 0
            for r in recs:
                if isinstance(r, dict):
                    self._ledger_micro += int(_num(r.get("cost_micro_usd")) or 0)
            if not self._ledger.pending:
                break
        return self._status(error)

    def _status(self, error: str) -> RunStatus:
        meta = self._meta
        cfg = meta.config if meta else RunConfig()  # the engine's resolved TrainConfig
        locked = self.run.is_locked()
        state: str = meta.status if meta else ("running" if locked else "created")
        if state in ("running", "created") and not locked and meta:
            state = "interrupted"
        total = _num(cfg.generations)
        budget = _num(meta.budget_usd if meta and "budget_usd" in meta.model_fields_set else cfg.budget_usd)
        vals = [v for v in self._vals if not math.isnan(v)]
        best_val_all = [*vals, *([self._warm_val] if self._warm_val is not None else [])]
        bests = [b for b in self._best if not math.isnan(b)]
        costs = [c for c in self._costs if not math.isnan(c)]
        if self._ledger_micro or self.run.ledger.exists():
            spend = self._ledger_micro / 1e6
        else:
            spend = max(costs) if costs else 0.0
        done = self._gens[-1] if self._gens else 0
        secs = [s for s in self._secs[-ETA_WINDOW:] if not math.isnan(s) and s > 0]
        per = statistics.median(secs) if secs else None
        progress = None
        if self._progress and self._progress[0] > done and self._progress[2] and state in ("running", "created"):
            progress = (self._progress[1], self._progress[2])
        eta, limit = None, ""
        if total is not None and per is not None and state in ("running", "created"):
            left = max(0.0, total - done)
            if progress:
                left = max(0.0, left - min(1.0, progress[0] / progress[1]))
            limit = "generations"
            window = costs[-ETA_WINDOW - 1 :]
            steps = [b - a for a, b in zip(window, window[1:]) if b >= a]
            per_usd = statistics.median(steps) if steps else None
            if budget is not None and per_usd:
                affordable = max(0.0, (budget - spend) / per_usd)
                if affordable < left:
                    left, limit = affordable, "budget"
            eta = left * per
        last = self._last
        times = [_num(e.get("time")) for e in ([last] if last else [])]
        return RunStatus(
            path=str(self.run.path),
            id=meta.id if meta else self.run.id,
            state=state,
            mode=(meta.mode if meta else None) or cfg.mode or "?",
            pool=cfg.pool or (meta.pool if meta else None) or "",
            gen=done,
            generations=int(total) if total is not None else None,
            best_val=max(best_val_all) if best_val_all else None,
            best_fitness=max(bests) if bests else None,
            last_val=vals[-1] if vals else None,
            spend_usd=spend,
            budget_usd=budget,
            secs_per_gen=per,
            eta_secs=eta,
            eta_limit=limit,
            progress=progress,
            last_event=_event_text(last) if last else "",
            last_event_time=times[0] if times else None,
            updated=times[0] if times else None,
            message=meta.status_message if meta else "",
            error=error,
            val_curve=tuple(vals),
            best_curve=tuple(bests),
            logs=tuple(self._logs),
            system=dict(self._system),
        )


def run_status(path: str | os.PathLike[str]) -> RunStatus:
    return RunWatcher(path).poll()


def root_of(path: Path) -> list[Path]:
    """The run directories under a runs root (a run directory itself: just it), newest first,
    then each sweep's trials (`<root>/<sweep>/trials/<id>/`, as `trinity sweep` lays them out)."""
    if (path / "run.json").is_file():
        return [path]
    runs = [r.path for r in list_runs(path)]
    for sweep in sorted(p for p in path.iterdir() if p.is_dir() and (p / "trials").is_dir()):
        runs += sorted(t.path for t in list_runs(sweep / "trials"))
    return runs
