"""The engine supervisor: start, resume, pause and stop `trinity train` processes.

An engine runs detached (`start_new_session=True`, stdin from /dev/null, stdout+stderr appended
to `<run>/engine.log`), so a lost SSH connection (SIGHUP to the terminal's session) does not
reach it, and the app never blocks on it. The run directory is the only shared state: whether an
engine is alive is `RunDir.is_locked()` (its flock dies with it), its pid is in `<run>/.lock`.

- pause = SIGTERM: the engine checkpoints and exits with status "stopped" (resumable);
- stop  = SIGTERM, then SIGKILL of its process group if it still holds the run after a grace
  period (the last checkpoint stays; resume still works);
- resume = `trinity resume RUN_DIR`, detached the same way; a trial of a sweep with a budget is
  resumed by its sweep, `trinity sweep resume SWEEP_DIR --trial ID` (under the sweep's one
  budget), or refused while the sweep's driver runs (it holds that budget).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from trinity.errors import TrinityError
from trinity.runs.records import read_run_meta
from trinity.runs.rundir import RunDir, new_run_id


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


class EngineError(TrinityError):
    """An engine could not be started or signalled."""


@dataclass
class Launched:
    """An engine this app process started (others are found through their run dir)."""

    run_dir: Path
    proc: subprocess.Popen
    argv: list[str]
    started: float


def trinity_argv(*args: str) -> list[str]:
    """`python -m trinity …` with this interpreter (works without the console script on PATH)."""
    return [sys.executable, "-m", "trinity", *args]


class Supervisor:
    def __init__(self, runs_root: str | os.PathLike):
        self.runs_root = Path(runs_root)
        self.launched: dict[Path, Launched] = {}
        self.servers: list[subprocess.Popen] = []
        # what this app asked of a run's engine and when: "pausing" | "stopping" | "resuming"
        self.phases: dict[Path, tuple[str, float]] = {}

    # ---- starting ------------------------------------------------------------------------
    def spawn(self, argv: list[str], log_path: Path, cwd: str | os.PathLike | None = None) -> subprocess.Popen:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        with open(log_path, "ab") as log:
            log.write(f"\n$ {' '.join(_shown(a) for a in argv[2:])}\n".encode())
            log.flush()
            try:
                return subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    cwd=cwd,
                    env=env,
                    close_fds=True,
                )
            except OSError as e:
                raise EngineError(f"could not start {argv[2:4]}: {e}") from None

    def start_train(self, train_args: list[str], run_id: str | None = None) -> Path:
        """`trinity train ARGS --run-dir <root>/<id>`; returns the run directory.

        The engine refuses a non-empty run directory, so its log starts next to it
        (`<root>/.<id>.engine.log`) and `adopt_logs()` moves it into the run directory once the
        engine has created it; the engine's open descriptor follows the rename."""
        run_dir = (self.runs_root / (run_id or new_run_id())).resolve()
        if run_dir.exists():
            raise EngineError(f"run directory {run_dir} already exists; pick another name")
        argv = trinity_argv("train", *train_args, "--run-dir", str(run_dir))
        proc = self.spawn(argv, self.pending_log(run_dir))
        self.launched[run_dir] = Launched(run_dir, proc, argv, time.time())
        return run_dir

    @staticmethod
    def pending_log(run_dir: Path) -> Path:
        return run_dir.parent / f".{run_dir.name}.engine.log"

    def log_of(self, run_dir: Path) -> Path:
        pending = self.pending_log(run_dir)
        return pending if pending.exists() else RunDir(run_dir).engine_log

    def adopt_logs(self) -> None:
        """Move `<root>/.<id>.engine.log` into `<root>/<id>/engine.log` once the run exists
        (also for engines an earlier app session started)."""
        for pending in self.runs_root.glob(".*.engine.log"):
            run_dir = self.runs_root / pending.name[1 : -len(".engine.log")]
            if RunDir(run_dir).exists():
                target = RunDir(run_dir).engine_log
                if not target.exists():  # else leave it: never overwrite a log
                    os.replace(pending, target)  # the engine's open descriptor follows

    def resume(
        self, run_dir: str | os.PathLike, budget_usd: float | None = None, generations: int | None = None
    ) -> None:
        """`trinity resume RUN_DIR [--budget-usd X] [--generations N]`, detached."""
        run = RunDir(run_dir)
        if not run.exists():
            raise EngineError(f"{run.path} is not a run directory (no run.json)")
        if run.is_locked():
            raise EngineError(f"run {run.id} is already running; nothing to resume")
        extra = [
            *(["--budget-usd", repr(float(budget_usd))] if budget_usd is not None else []),
            *(["--generations", str(int(generations))] if generations is not None else []),
        ]
        argv = self.sweep_resume_argv(run, extra) or trinity_argv("resume", str(run.path.resolve()), *extra)
        self._restart_practice_server(run)
        proc = self.spawn(argv, run.engine_log)
        self.launched[run.path.resolve()] = Launched(run.path.resolve(), proc, argv, time.time())
        self.phases[run.path.resolve()] = ("resuming", time.time())

    @staticmethod
    def sweep_resume_argv(run: RunDir, extra: list[str]) -> list[str] | None:
        """A trial of a sweep with a budget: `trinity sweep resume SWEEP --trial ID` (`--budget-usd`
        then sets the sweep's budget); None for any other run. Refused while the sweep's driver
        runs: it holds the sweep's budget, and a second holder could spend it twice."""
        # lazy: numpy + PyYAML kept off the app's first frame
        from trinity.sweep.runner import driver_pid, sweep_of_trial, trial_resume_command

        found = sweep_of_trial(run.path)
        if found is None or found[2].get("budget_usd") is None:
            return None
        sd, tid, _ = found
        pid = driver_pid(sd)
        if pid is not None:
            raise EngineError(
                f"sweep {sd.path.name} is being run by its driver (pid {pid}), which holds its "
                f"budget; resume trial {tid} when it ends: `{trial_resume_command(sd, tid)}`"
            )
        return trinity_argv("sweep", "resume", str(sd.path.resolve()), "--trial", tid, *extra)

    def _restart_practice_server(self, run: RunDir) -> None:
        """A demo run talks to a practice server that the app started for it and that stopped
        with its engine; resuming against the dead port would fail every call. Start it again
        on the recorded port, for this run, the way the demo did."""
        cfg = read_run_meta(run.path).config  # the resolved TrainConfig, as run.json holds it
        url = urlsplit(cfg.base_url or "")
        if cfg.pool != "practice" or url.hostname not in ("127.0.0.1", "localhost") or not url.port:
            return
        if port_in_use(url.hostname, url.port):
            return  # a server (the user's own `trinity pool serve-practice`) is already there
        self.start_server(
            [
                sys.executable,
                "-m",
                "minertui.jobs.practice_server",
                "--run-dir",
                str(run.path.resolve()),
                "--port",
                str(url.port),
                "--start-timeout",
                "120",
            ],
            run.path.parent / "practice-server.log",
        )

    def phase(self, run_dir: Path, locked: bool, status: str) -> str:
        """What to show for a run this app paused, stopped or resumed, while the engine catches
        up: "pausing…" / "stopping…" until it lets go of the run, then "paused" (until resumed);
        "resuming…" until the new engine holds the run and says it is running. "" otherwise."""
        p = self.phases.get(run_dir)
        if p is None:
            return ""
        what, _since = p
        if what in ("pausing", "stopping"):
            if locked:
                return what + "…"
            if what == "pausing" and status == "stopped":
                return "paused"
        elif what == "resuming":
            launched = self.launched.get(run_dir)
            gone = launched is not None and launched.proc.poll() is not None
            if not (locked and status == "running") and not (gone and not locked):
                return "resuming…"
        del self.phases[run_dir]
        return ""

    def start_server(self, argv: list[str], log_path: Path) -> subprocess.Popen:
        proc = self.spawn(argv, log_path)
        self.servers.append(proc)
        return proc

    # ---- signalling ----------------------------------------------------------------------
    def engine_pid(self, run_dir: str | os.PathLike) -> int | None:
        """The pid of the engine holding the run, or None when no engine holds it."""
        run = RunDir(run_dir)
        if not run.is_locked():
            return None
        pid: object
        try:
            pid = int((run.path / ".lock").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pid = read_run_meta(run.path).pid
        return pid if isinstance(pid, int) and pid > 0 else None

    def pause(self, run_dir: str | os.PathLike) -> int:
        """SIGTERM: checkpoint and exit with status "stopped". Returns the pid signalled."""
        pid = self.engine_pid(run_dir)
        if pid is None:
            raise EngineError(f"no engine is running {Path(run_dir).name}; nothing to pause")
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            raise EngineError(f"engine {pid} of {Path(run_dir).name} has already exited") from None
        self.phases[Path(run_dir).resolve()] = ("pausing", time.time())
        return pid

    def stop(self, run_dir: str | os.PathLike, grace_s: float = 15.0) -> int:
        """SIGTERM now; SIGKILL the engine's process group if it still holds the run after
        `grace_s` (checked in a daemon thread, so the caller never waits)."""
        pid = self.pause(run_dir)
        self.phases[Path(run_dir).resolve()] = ("stopping", time.time())
        run = RunDir(run_dir)

        def escalate() -> None:
            deadline = time.time() + grace_s
            while time.time() < deadline:
                if not run.is_locked():
                    return
                time.sleep(0.2)
            if self.engine_pid(run_dir) == pid:
                try:
                    if os.getpgid(pid) == pid:  # it leads its own group (we started it so)
                        os.killpg(pid, signal.SIGKILL)
                    else:
                        os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

        threading.Thread(target=escalate, daemon=True, name=f"stop-{pid}").start()
        return pid

    def reap(self) -> list[Launched]:
        """Engines this app started that have exited since the last call (no zombies)."""
        done = [l for l in self.launched.values() if l.proc.poll() is not None]
        for l in done:
            del self.launched[l.run_dir]
        return done

    def stop_servers(self) -> None:
        for p in self.servers:
            if p.poll() is None:
                p.terminate()
        self.servers.clear()

    def release_servers(self) -> None:
        """On quit: stop the servers this app started unless a run it launched still needs them
        (an engine holding that run); then they stay up with that engine, in their own session."""
        if any(RunDir(p).is_locked() for p in self.launched):
            return
        self.stop_servers()


def _shown(arg: str) -> str:
    return arg if arg and " " not in arg else repr(arg)


def log_tail(path: Path, lines: int = 8) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 8192))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])
