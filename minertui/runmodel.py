"""One run directory, read incrementally into compact columns; immutable snapshots for the UI.

`RunModel.poll()` runs in a worker thread: it reads whatever the engine appended to
`events.jsonl`, `ledger.jsonl` and (when asked for) `traces.jsonl` since the last call, at most
a few MB per file per call, so a refresh stays bounded even when the app opens a huge finished
run. `snapshot()` returns a frozen `RunSnapshot` of numpy views (no copies) that the UI thread
renders. Formats: `trinity.runs.records` (every line goes through its typed record; a line it
cannot type, say an event kind from a newer engine, is skipped).
"""

from __future__ import annotations

import math
import os
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from minertui.store import Column, Interner
from trinity.errors import InputError
from trinity.io import JsonlTail, read_line_at
from trinity.pool.ledger import try_ledger_line
from trinity.runs.records import (
    GenerationEvent,
    LogEvent,
    ProgressEvent,
    RunConfig,
    RunMeta,
    StatusEvent,
    SystemSample,
    WarmStartEvent,
    read_run_meta,
    try_event,
    try_trace,
)
from trinity.runs.rundir import RunDir


def model_letter(i: int) -> str:
    """A, B, C … for the pool's models in θ order (the head's model rows)."""
    return chr(ord("A") + i) if i < 26 else f"M{i}"


@dataclass(frozen=True)
class Generations:
    gen: np.ndarray
    best: np.ndarray
    mean: np.ndarray
    max: np.ndarray
    sigma: np.ndarray
    evals: np.ndarray
    cost_usd: np.ndarray
    secs: np.ndarray
    val_acc: np.ndarray  # NaN where validation did not run
    avg_turns: np.ndarray  # live mode: turns per session (NaN in cached mode)
    accuracy: np.ndarray  # live mode: graded accuracy of the generation's own sessions (NaN in cached mode)
    cost_per_correct: np.ndarray  # live mode: USD per right answer in the generation (NaN: none right / cached)
    competition_score: np.ndarray  # --objective competition: the best candidate's score (NaN: not scored so)
    gpu_util: np.ndarray  # mean GPU utilisation % the engine sampled at the generation's end (NaN: none)

    def __len__(self) -> int:
        return len(self.gen)


@dataclass(frozen=True)
class TraceView:
    gen: np.ndarray  # (N,) int32
    candidate: np.ndarray  # (N,) int32
    correct: np.ndarray  # (N,) int8: 1 right, 0 wrong, -1 unknown
    cost: np.ndarray  # (N,) float64 USD
    turns: np.ndarray  # (N,) int8
    bench: np.ndarray  # (N,) int16 -> bench_names
    qid: np.ndarray  # (N,) int32 -> qid_names
    path: np.ndarray  # (N,) int32 -> path_names
    models: np.ndarray  # (N,) int64 bitmask over model_names
    offset: np.ndarray  # (N,) int64 byte offset of the line in traces.jsonl
    bench_names: list[str]
    qid_names: list[str]
    path_names: list[str]
    model_names: list[str]

    def __len__(self) -> int:
        return len(self.gen)


@dataclass(frozen=True)
class LedgerView:
    time: np.ndarray  # (N,) float64 unix seconds
    model: np.ndarray  # (N,) int16 -> model_names
    purpose: np.ndarray  # (N,) int8 -> purpose_names
    prompt_tokens: np.ndarray
    completion_tokens: np.ndarray
    cost_micro: np.ndarray  # (N,) int64 micro-USD
    estimated: np.ndarray  # (N,) bool: price-table estimate, not provider-reported
    model_names: list[str]
    purpose_names: list[str]

    def __len__(self) -> int:
        return len(self.time)

    @property
    def total_usd(self) -> float:
        return int(self.cost_micro.sum()) / 1e6

    def totals_by(self, codes: np.ndarray, names: list[str]) -> list[tuple[str, int, int, float]]:
        """[(name, calls, tokens, usd)] per name, largest spend first."""
        k = len(names)
        calls = np.bincount(codes, minlength=k)
        toks = np.bincount(codes, weights=self.prompt_tokens + self.completion_tokens, minlength=k)
        usd = np.bincount(codes, weights=self.cost_micro, minlength=k) / 1e6
        rows = [(names[i], int(calls[i]), int(toks[i]), float(usd[i])) for i in range(k) if calls[i]]
        return sorted(rows, key=lambda r: -r[3])


ETA_WINDOW = 20  # generations the ETA looks back over


@dataclass(frozen=True)
class Eta:
    secs: float
    generations: float  # generations left that will run
    limit: str  # "generations" (the planned count) or "budget" (the money runs out first)


@dataclass(frozen=True)
class Progress:
    gen: int
    done: int
    total: int
    time: float


@dataclass(frozen=True)
class LogLine:
    time: float
    level: str
    message: str


@dataclass(frozen=True)
class RunSnapshot:
    path: Path
    id: str
    version: int
    status: str  # run.json status, or "interrupted" (says running, no engine holds it)
    locked: bool  # an engine process holds the run right now
    gens: Generations
    progress: Progress | None
    logs: tuple[LogLine, ...]
    model_mix: dict[str, int]
    role_mix: dict[str, int]
    ledger: LedgerView
    traces: TraceView | None  # None until someone asked for traces
    catching_up: bool  # more bytes on disk than read so far
    error: str = ""  # run.json unreadable etc.
    record: RunMeta | None = None  # run.json as its record (None until it was read)
    phase: str = ""  # what this app asked of the engine, while it catches up: pausing…, paused, resuming…

    @property
    def shown_status(self) -> str:
        return self.phase or self.status

    @property
    def config(self) -> RunConfig:
        """run.json's `config` (the engine's resolved TrainConfig as its record; empty until
        run.json was read: built without validation, so a redraw never builds the record's
        validator on the UI thread — 0.1 s on a loaded box)."""
        return self.record.config if self.record else RunConfig.model_construct()

    @property
    def models(self) -> list[str]:
        """The pool's model ids in θ order ([] until run.json was read)."""
        return list(self.record.models) if self.record else []

    @property
    def pool(self) -> str | None:
        """The run's pool (older runs kept it only in the config)."""
        return (self.record.pool if self.record else None) or self.config.pool

    @property
    def status_message(self) -> str:
        return self.record.status_message if self.record else ""

    # ---- derived figures (all from the files) --------------------------------------------
    @property
    def generations_total(self) -> int | None:
        return self.config.generations

    @property
    def generations_done(self) -> int:
        return len(self.gens)

    @property
    def best(self) -> float | None:
        return float(np.nanmax(self.gens.best)) if len(self.gens) else None

    @property
    def budget_usd(self) -> float | None:
        r = self.record
        if r is None:
            return None
        return r.budget_usd if "budget_usd" in r.model_fields_set else r.config.budget_usd

    @property
    def spend_usd(self) -> float:
        """Ledger total when there is a ledger (the truth), else the engine's running total
        (`cost_usd` of a generation event is cumulative)."""
        if len(self.ledger):
            return self.ledger.total_usd
        if not len(self.gens):
            return 0.0
        c = self.gens.cost_usd[np.isfinite(self.gens.cost_usd)]
        return float(c.max()) if len(c) else 0.0

    @property
    def secs_per_gen(self) -> float | None:
        """Median seconds of the last `ETA_WINDOW` generations: one slow generation (validation,
        a retry storm) does not swing the estimate."""
        s = self.gens.secs[-ETA_WINDOW:]
        s = s[np.isfinite(s) & (s > 0)]
        return float(np.median(s)) if len(s) else None

    @property
    def usd_per_gen(self) -> float | None:
        """Median spend of the last `ETA_WINDOW` generations (`cost_usd` is cumulative)."""
        c = self.gens.cost_usd[-(ETA_WINDOW + 1) :]
        c = c[np.isfinite(c)]
        if len(c) < 2:
            n = self.generations_done
            return self.spend_usd / n if n and self.spend_usd > 0 else None
        d = np.diff(c)
        d = d[d >= 0]
        return float(np.median(d)) if len(d) and np.median(d) > 0 else None

    @property
    def eta(self) -> Eta | None:
        """Time left, bounded by what the budget still pays for; names the limiting factor."""
        total, per = self.generations_total, self.secs_per_gen
        if total is None or per is None or self.status not in ("running", "created"):
            return None
        left = max(0.0, float(total - self.generations_done))
        if self.in_progress is not None:
            left = max(0.0, left - min(1.0, self.in_progress.done / self.in_progress.total))
        limit = "generations"
        budget, cost = self.budget_usd, self.usd_per_gen
        if budget is not None and cost:
            affordable = max(0.0, (budget - self.spend_usd) / cost)
            if affordable < left:
                left, limit = affordable, "budget"
        return Eta(left * per, left, limit)

    @property
    def eta_secs(self) -> float | None:
        e = self.eta
        return e.secs if e is not None else None

    @property
    def in_progress(self) -> Progress | None:
        """The progress of the generation being evaluated now (none between generations)."""
        p = self.progress
        last = int(self.gens.gen[-1]) if len(self.gens) else None
        if p is None or not p.total or (last is not None and p.gen <= last):
            return None
        return p

    @property
    def evals_per_sec(self) -> float | None:
        if not len(self.gens):
            return None
        e, s = self.gens.evals[-1], self.gens.secs[-1]
        return float(e / s) if s > 0 and np.isfinite(e) else None

    @property
    def started(self) -> str:
        return (self.record.created or "") if self.record else ""


class RunModel:
    """Incremental reader of one run directory. Not thread-safe: one poller at a time."""

    CHUNK_BYTES = 256 << 10  # read unit: ~400 traces, ~40 ms of parsing on a busy core
    POLL_BUDGET_S = 0.05  # per file and poll; a backlog is read over several polls
    LOG_LINES = 200

    def __init__(self, path: str | os.PathLike, want_traces: bool = False):
        self.run = RunDir(path)
        self.want_traces = want_traces
        self.version = 0
        self._meta: RunMeta | None = None
        self._meta_mtime = -1.0
        self._error = ""
        self._events = JsonlTail(self.run.events)
        self._ledger_tail = JsonlTail(self.run.ledger)
        self._traces_tail = JsonlTail(self.run.traces)
        self._reset_events()
        self._reset_ledger()
        self._reset_traces()
        self._snapshot: RunSnapshot | None = None

    # ---- state ---------------------------------------------------------------------------
    def _reset_events(self) -> None:
        f8 = np.float64
        self._g = {
            k: Column(f8, fill=np.nan)
            for k in (
                "gen",
                "best",
                "mean",
                "max",
                "sigma",
                "evals",
                "cost_usd",
                "secs",
                "val_acc",
                "avg_turns",
                "accuracy",
                "cost_per_correct",
                "competition_score",
                "gpu_util",
            )
        }
        self._progress: Progress | None = None
        self._logs: deque[LogLine] = deque(maxlen=self.LOG_LINES)
        self._model_mix: dict[str, int] = {}
        self._role_mix: dict[str, int] = {}
        self._last_status: str | None = None

    def _reset_ledger(self) -> None:
        self._l = {
            "time": Column(np.float64),
            "model": Column(np.int16),
            "purpose": Column(np.int8),
            "prompt_tokens": Column(np.int64),
            "completion_tokens": Column(np.int64),
            "cost_micro": Column(np.int64),
            "estimated": Column(np.bool_),
        }
        self._l_models, self._l_purposes = Interner(), Interner()

    def _reset_traces(self) -> None:
        self._t = {
            "gen": Column(np.int32),
            "candidate": Column(np.int32),
            "correct": Column(np.int8),
            "cost": Column(np.float64),
            "turns": Column(np.int8),
            "bench": Column(np.int16),
            "qid": Column(np.int32),
            "path": Column(np.int32),
            "models": Column(np.int64),
            "offset": Column(np.int64),
        }
        self._t_bench, self._t_qid, self._t_path, self._t_models = (Interner() for _ in range(4))
        self._traces_loaded = False

    # ---- reading -------------------------------------------------------------------------
    def poll(self, max_bytes: int | None = None, budget_s: float | None = None) -> bool:
        """Read what is new; True when anything changed (then `snapshot()` is a new object).

        Reads whole lines in chunks until `budget_s` of work is spent (the UI thread shares the
        GIL with this one), so a huge backlog is taken in bounded bites over several polls."""
        chunk = max_bytes or self.CHUNK_BYTES
        deadline = time.perf_counter() + (self.POLL_BUDGET_S if budget_s is None else budget_s)
        changed = self._poll_meta()
        tails = [
            (self._events, self._reset_events, lambda at, o: self._on_event(o)),
            (self._ledger_tail, self._reset_ledger, lambda at, o: self._on_ledger(o)),
        ]
        if self.want_traces:
            if not self._traces_loaded:
                self._traces_loaded, changed = True, True
            tails.append((self._traces_tail, self._reset_traces, self._on_trace))
        for tail, reset, handle in tails:
            while True:
                n = 0
                for at, obj in self._read(tail, chunk, reset, offsets=True):
                    handle(at, obj)
                    n += 1
                changed |= n > 0
                if not n or not tail.pending or time.perf_counter() > deadline:
                    break
        locked = self.run.is_locked()
        if self._snapshot is None or changed or locked != self._snapshot.locked:
            self.version += 1
            self._snapshot = None
            return True
        return False

    def _read(self, tail: JsonlTail, max_bytes: int, reset, offsets: bool = False):
        items = tail.read_new_at(max_bytes)
        if tail.reset:
            reset()
        for at, obj in items:
            if isinstance(obj, dict):
                yield (at, obj) if offsets else obj

    def _poll_meta(self) -> bool:
        try:
            mtime = self.run.run_json.stat().st_mtime
        except FileNotFoundError:
            if not self._error:
                self._error = f"{self.run.path}: no run.json yet"
                return True
            return False
        if mtime == self._meta_mtime:
            return False
        try:
            meta = read_run_meta(self.run.path)
        except InputError as e:  # mid-replace on an odd filesystem, or a broken file: one line
            self._error = str(e)
            return True
        self._meta, self._meta_mtime, self._error = meta, mtime, ""
        return True

    def _on_event(self, raw: dict[str, Any]) -> None:
        ev = try_event(raw)
        if ev is None:  # an event kind from a newer engine, or a line that is not an event
            return
        t = ev.time
        if isinstance(ev, GenerationEvent):
            derived = {"gpu_util": gpu_util_of(ev.system)}  # the box at the generation's end
            for k, col in self._g.items():
                col.append(as_number(derived[k] if k in derived else getattr(ev, k, None), math.nan))
            if ev.model_mix is not None:
                self._model_mix = dict(ev.model_mix)
            if ev.role_mix is not None:
                self._role_mix = dict(ev.role_mix)
        elif isinstance(ev, WarmStartEvent) and ev.method == "roles":  # live: the role rows' default alone
            self._logs.append(
                LogLine(
                    t,
                    "info",
                    "gen 0 = role rows' default (Worker, then Verifier once turns "
                    f"exist): fit acc {as_number(ev.role_train_acc, 0.0):.3f}",
                )
            )
        elif isinstance(ev, WarmStartEvent):  # generation 0: the head fitted on the training labels (issue 14)
            val = f", val {ev.val_acc:.3f}" if ev.val_acc is not None else ""
            self._logs.append(
                LogLine(
                    t,
                    "info",
                    f"gen 0 = warm start from labels: train {as_number(ev.train_acc, 0.0):.3f}{val} (lambda {ev.lambda_})",
                )
            )
        elif isinstance(ev, ProgressEvent):
            self._progress = Progress(ev.gen, ev.done, ev.total, t)
        elif isinstance(ev, StatusEvent):
            self._last_status = ev.status
            msg = ev.message
            text = msg if msg.startswith(self._last_status) else f"{self._last_status}" + (f": {msg}" if msg else "")
            self._logs.append(LogLine(t, "status", text))
        elif isinstance(ev, LogEvent):
            self._logs.append(LogLine(t, ev.level, ev.message))

    def _on_ledger(self, raw: Any) -> None:
        rec = try_ledger_line(raw)
        if rec is None:  # not a ledger record (a foreign line): `trinity ledger verify` says why
            return
        c = self._l
        c["time"].append(as_time(rec.time))
        c["model"].append(self._l_models(rec.model))
        c["purpose"].append(self._l_purposes(rec.purpose))
        c["prompt_tokens"].append(rec.prompt_tokens)
        c["completion_tokens"].append(rec.completion_tokens)
        c["cost_micro"].append(rec.cost_micro_usd)
        c["estimated"].append(rec.estimated)

    def _on_trace(self, at: int, raw: dict[str, Any]) -> None:
        tr = try_trace(raw)
        if tr is None:  # not a trajectory this reader can type: skipped
            return
        c = self._t
        pool = self._meta.models if self._meta else []
        steps, mask = [], 0
        for turn in tr.turns:
            m = turn.model
            mask |= 1 << min(self._t_models(m), 62)
            letter = model_letter(pool.index(m)) if m in pool else m
            steps.append(f"{letter}·{turn.role}")
        correct = tr.correct
        marks: dict[object, str] = {True: " ✓", False: " ✗"}
        mark = marks.get(correct, "")
        c["gen"].append(tr.gen if tr.gen is not None else -1)
        c["candidate"].append(tr.candidate if tr.candidate is not None else -1)
        c["correct"].append(1 if correct is True else 0 if correct is False else -1)
        c["cost"].append(as_number(tr.cost_usd, 0.0))
        c["turns"].append(min(len(tr.turns), 127))
        c["bench"].append(self._t_bench(tr.benchmark))
        c["qid"].append(self._t_qid(tr.qid))
        # the verdict first: a long Verifier path cut at the column's edge keeps its ✓/✗
        c["path"].append(self._t_path((mark.strip() + " " if mark else "") + " → ".join(steps)))
        c["models"].append(mask)
        c["offset"].append(at)

    # ---- snapshot ------------------------------------------------------------------------
    def snapshot(self) -> RunSnapshot:
        if self._snapshot is not None:
            return self._snapshot
        locked = self.run.is_locked()
        # "interrupted" is the app's reading, not a value run.json holds
        status: str = self._meta.status if self._meta else ("running" if locked else "created")
        if status in ("running", "created") and not locked and self._meta:
            # no engine holds it: it died (a created one before its first generation)
            status = "interrupted"
        g = {k: col.view() for k, col in self._g.items()}
        l = {k: col.view() for k, col in self._l.items()}
        traces = None
        if self.want_traces:
            t = {k: col.view() for k, col in self._t.items()}
            traces = TraceView(
                **t,
                bench_names=self._t_bench.names,
                qid_names=self._t_qid.names,
                path_names=self._t_path.names,
                model_names=self._t_models.names,
            )
        catching_up = (
            self._events.pending or self._ledger_tail.pending or (self.want_traces and self._traces_tail.pending)
        )
        self._snapshot = RunSnapshot(
            path=self.run.path,
            id=self._meta.id if self._meta else self.run.id,
            version=self.version,
            record=self._meta,
            status=status,
            locked=locked,
            gens=Generations(**g),
            progress=self._progress,
            logs=tuple(self._logs),
            model_mix=dict(self._model_mix),
            role_mix=dict(self._role_mix),
            ledger=LedgerView(**l, model_names=self._l_models.names, purpose_names=self._l_purposes.names),
            traces=traces,
            catching_up=catching_up,
            error=self._error,
        )
        return self._snapshot

    def trace_record(self, offset: int) -> dict[str, Any]:
        return read_line_at(self.run.traces, offset)


def gpu_util_of(system: SystemSample | None) -> float | None:
    """Mean utilisation % over the GPUs of a system sample (None: no sample, or no GPU in it)."""
    return system.gpu_util if system is not None else None


def ema(y: np.ndarray, smoothing: float) -> np.ndarray:
    """Exponential moving average, `smoothing` in [0, 1) as in W&B (0 = raw): each point is
    `s·previous + (1-s)·value`, starting at the first value; NaN points stay NaN and do not move
    the average. Vectorised in blocks (the closed form within a block, the carry between them),
    so 8 runs × 10,000 generations smooth in about a millisecond."""
    y = np.asarray(y, dtype=np.float64)
    if smoothing <= 0 or not len(y):
        return y.copy()
    s = float(min(smoothing, 0.999))
    ok = np.isfinite(y)
    x = y[ok]
    out = np.full(len(y), np.nan)
    if not len(x):
        return out
    block = int(max(1, min(256, 300 // max(1e-9, -math.log10(s)))))  # s**-block stays finite
    powers = s ** np.arange(block + 1, dtype=np.float64)
    inv = 1.0 / powers[:block]
    res = np.empty(len(x))
    carry = x[0]
    for a in range(0, len(x), block):
        chunk = x[a : a + block]
        k = len(chunk)
        csum = np.cumsum(chunk * inv[:k])
        res[a : a + k] = powers[1 : k + 1] * carry + (1.0 - s) * powers[:k] * csum
        carry = res[a + k - 1]
    out[ok] = res
    return out


def last_finite(y: np.ndarray) -> float | None:
    f = y[np.isfinite(y)] if len(y) else y
    return float(f[-1]) if len(f) else None


def as_number(v: Any, default: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return default
    return float(v)


def as_time(v: Any) -> float:
    """Ledger times may be unix seconds or ISO strings."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        try:
            return datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return math.nan
    return math.nan


TRACE_SORT = ("gen", "cost", "turns", "correct", "question", "benchmark")  # Traces' sortable columns


def sort_traces(tv: TraceView, idx: np.ndarray, column: str | None, reverse: bool = False) -> np.ndarray:
    """`idx` ordered by a column (stable: ties keep the file order); vectorised."""
    if column is None or column == "gen" and not reverse or not len(idx):
        return idx
    key = {
        "gen": tv.gen,
        "cost": tv.cost,
        "turns": tv.turns,
        "correct": tv.correct,
        "question": tv.qid,
        "benchmark": tv.bench,
    }[column][idx]
    if column in ("question", "benchmark"):  # by name, not by first-seen code
        names = tv.qid_names if column == "question" else tv.bench_names
        rank = np.argsort(np.argsort(np.array(names, dtype=object)[: int(key.max()) + 1], kind="stable"))
        key = rank[key]
    order = np.argsort(-key if reverse and column not in ("question", "benchmark") else key, kind="stable")
    if reverse and column in ("question", "benchmark"):
        order = order[::-1]
    return idx[order]


def filter_traces(
    tv: TraceView,
    bench: str | None = None,
    correct: int | None = None,
    model: str | None = None,
    gen: int | None = None,
    qid_search: str = "",
    role: str | None = None,
) -> np.ndarray:
    """Indices (int64, ascending) of the traces that pass every filter; vectorised over 100k.
    `role`: some turn of the trace played it (Thinker / Worker / Verifier)."""
    keep = np.ones(len(tv), dtype=bool)
    if role is not None and len(tv):
        has = np.array([f"·{role}" in p for p in tv.path_names], dtype=bool)
        keep &= has[tv.path]
    if bench is not None:
        code = tv.bench_names.index(bench) if bench in tv.bench_names else -1
        keep &= tv.bench == code
    if correct is not None:
        keep &= tv.correct == correct
    if model is not None:
        i = tv.model_names.index(model) if model in tv.model_names else -1
        keep &= (tv.models & (1 << min(i, 62))) != 0 if i >= 0 else False
    if gen is not None:
        keep &= tv.gen == gen
    if qid_search:
        s = qid_search.lower()
        hits = np.array([s in q.lower() for q in tv.qid_names[: int(tv.qid.max()) + 1]] if len(tv) else [], dtype=bool)
        keep &= hits[tv.qid] if len(hits) else False
    return np.flatnonzero(keep)
