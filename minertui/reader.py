"""The reader: polls every run under the runs root (plus runs opened by path) in a worker
thread and returns one immutable `Poll`. No textual here, so the benchmark and tests can drive
it directly.

Cheap by design: the runs root is listed at most every `LIST_EVERY_S`; each run's files are
read incrementally; only the selected run reads its (possibly huge) traces, and only once the
Traces mode has asked for them.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path

from minertui.runmodel import RunModel, RunSnapshot
from minertui.supervisor import Supervisor, log_tail
from minertui.sweeps import SweepModel, SweepSnapshot, list_sweeps
from trinity.runs.rundir import RunDir, list_runs
from trinity.runs.system import SystemSampler


def engine_pid(run_dir: Path) -> int | None:
    """The pid an engine wrote into the run's lock file (None: unreadable)."""
    try:
        pid = int((run_dir / ".lock").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if pid > 0 else None


@dataclass(frozen=True)
class Exited:
    run_dir: Path
    code: int
    log_tail: str
    log_path: Path | None = None
    created: bool = True  # False: it exited before it made its run directory (bad input)


@dataclass(frozen=True)
class Poll:
    runs: tuple[RunSnapshot, ...]  # newest first, then the sweeps' trials
    current: RunSnapshot | None
    exited: tuple[Exited, ...] = ()
    poll_ms: float = 0.0
    seq: int = 0
    sweeps: tuple[SweepSnapshot, ...] = ()  # each sweep under the root; its trials are in `runs` too
    system: tuple[dict, ...] = ()  # this box's samples, oldest first (while the system pane is shown)

    def in_sweeps(self) -> set[Path]:
        """The run dirs that are some sweep's trials (shown inside their sweep, not on their own)."""
        return {t.path for sw in self.sweeps for t in sw.trials}


SYSTEM_EVERY_S = 1.0
SYSTEM_KEEP = 120  # samples of history (two minutes at one a second)


class Reader:
    LIST_EVERY_S = 2.0

    def __init__(self, runs_root: str | os.PathLike, supervisor: Supervisor | None = None):
        self.runs_root = Path(runs_root)
        self.supervisor = supervisor
        self.models: dict[Path, RunModel] = {}
        self.sweeps: dict[Path, SweepModel] = {}
        self.extra: list[Path] = []  # runs opened by path, outside the root
        self.order: list[Path] = []
        self.current: Path | None = None
        self.want_traces = False
        self._listed_at = 0.0
        self._seq = 0
        self._forgotten: set[Path] = set()
        # one poll at a time: the app's poll worker and refresh_now (after an action) may both
        # poll; run in parallel, one could reap an engine while the other still reports its run
        self._lock = threading.Lock()
        self.want_system = False  # the system pane is shown: sample the box at most every SYSTEM_EVERY_S
        self._sampler: SystemSampler | None = None
        self._system: deque[dict] = deque(maxlen=SYSTEM_KEEP)

    def open(self, path: str | os.PathLike) -> Path:
        p = Path(path).resolve()
        if p not in self.extra and p.parent != self.runs_root.resolve():
            self.extra.append(p)
        self.current = p
        self._listed_at = 0.0
        return p

    def forget(self, path: str | os.PathLike) -> None:
        """A run that was archived or deleted: drop it at the next poll (which relists)."""
        self._forgotten.add(Path(path).resolve())
        self._listed_at = 0.0

    def model(self, path: Path) -> RunModel:
        m = self.models.get(path)
        if m is None:
            m = self.models[path] = RunModel(path)
        return m

    def _phased(self, sn: RunSnapshot) -> RunSnapshot:
        assert self.supervisor is not None
        phase = self.supervisor.phase(sn.path.resolve(), sn.locked, sn.status)
        return replace(sn, phase=phase) if phase != sn.phase else sn

    def poll(self, force_list: bool = False) -> Poll:
        with self._lock:
            return self._poll(force_list)

    def _poll(self, force_list: bool = False) -> Poll:
        t0 = time.perf_counter()
        while self._forgotten:
            gone = self._forgotten.pop()
            self.models.pop(gone, None)
            self.extra = [p for p in self.extra if p != gone]
            if self.current == gone:
                self.current = None
        if force_list or time.monotonic() - self._listed_at > self.LIST_EVERY_S:
            found = [r.path.resolve() for r in list_runs(self.runs_root)]
            sweep_dirs = list_sweeps(self.runs_root)
            self.sweeps = {p: self.sweeps.get(p) or SweepModel(p) for p in sweep_dirs}
            seen = set(found)
            for sw in self.sweeps.values():  # a trial is polled once, however it was reached
                sw.poll()
                for p in sw.trial_paths:
                    if p not in seen:
                        seen.add(p)
                        found.append(p)
            launched = list(self.supervisor.launched) if self.supervisor else []
            order = list(found)
            for p in (*launched, *self.extra):
                if p not in seen:
                    seen.add(p)
                    order.append(p)
            self.order = order  # whole, as before: a screen never sees a half-built list
            self._listed_at = time.monotonic()
            if self.current is None and self.order:
                self.current = self.order[0]
        cur = self.current
        snaps = []
        for p in self.order:
            m = self.model(p)
            m.want_traces = self.want_traces and p == cur
            m.poll()
            snaps.append(m.snapshot())
        current = None
        if cur is not None:
            m = self.model(cur)
            if cur not in self.order:
                m.want_traces = self.want_traces
                m.poll()
            current = m.snapshot()
        if self.supervisor is not None and self.supervisor.phases:
            snaps = [self._phased(sn) for sn in snaps]
            current = self._phased(current) if current is not None else None
        by_path = {sn.path: sn for sn in snaps}  # the models are keyed by resolved paths
        sweeps = tuple(sw.snapshot(by_path) for sw in self.sweeps.values())
        exited: list[Exited] = []
        if self.supervisor:
            self.supervisor.adopt_logs()
            for l in self.supervisor.reap():
                log = self.supervisor.log_of(l.run_dir)
                created = RunDir(l.run_dir).exists()
                exited.append(Exited(l.run_dir, l.proc.returncode, log_tail(log), log, created))
                if not created:  # nothing to show: forget it, select another run
                    self.models.pop(l.run_dir, None)
                    self.order = [p for p in self.order if p != l.run_dir]
                    snaps = [sn for sn in snaps if sn.path.resolve() != l.run_dir]
                    if self.current == l.run_dir:
                        self.current = self.order[0] if self.order else None
                        current = self.model(self.current).snapshot() if self.current else None
        if self.want_system:
            self._sample_system(current)
        self._seq += 1
        return Poll(
            tuple(snaps),
            current,
            tuple(exited),
            (time.perf_counter() - t0) * 1000,
            self._seq,
            sweeps,
            tuple(self._system) if self.want_system else (),
        )

    def _sample_system(self, current: RunSnapshot | None) -> None:
        """One sample of this box (NVML, /proc) a second at most, in this worker thread."""
        if self._system and time.time() - self._system[-1]["time"] < SYSTEM_EVERY_S:
            return
        if self._sampler is None:
            self._sampler = SystemSampler(self.runs_root if self.runs_root.is_dir() else None)
        pid = engine_pid(current.path) if current is not None and current.locked else None
        self._system.append(self._sampler.sample(pid))
