"""`minertui demo`: no network, no key. Starts the practice pool server (simulated models) and
a live practice run on tiny-qwen3 in a fresh runs dir, and shows it in Train mode.

If the live engine exits with an error before its first generation, the app says so (the
engine's last log line) and shows that run; there is no stand-in run. Everything is labelled "practice (simulated pool)".
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from minertui.settings import state_dir
from minertui.supervisor import log_tail
from trinity.errors import InputError
from trinity.practice.simulation import config_path
from trinity.runs.records import GenerationEvent
from trinity.runs.rundir import RunDir, list_runs, new_run_id

# the practice setup the engine itself reads (trinity.practice.simulation: $MINERTUI_PRACTICE_CONFIG,
# else its shipped file), so the demo and the engine never disagree on where it lives
PRACTICE_CONFIG = config_path()
LIVE_GRACE_S = 25.0  # a live engine that has not written a generation by then and exited = failed


KEEP_RUNS = 3  # the newest demo runs kept in the demo dir; older ones (not running) are removed


def default_demo_dir() -> Path:
    """Where `minertui demo` keeps its runs: `$XDG_STATE_HOME/minertui/demo` (default
    ~/.local/state/minertui/demo). Open them later with `minertui --runs-dir <that dir>`."""
    return state_dir() / "demo"


def demo_runs_dir(explicit: str | None = None) -> Path:
    p = Path(explicit) if explicit else default_demo_dir()
    p.mkdir(parents=True, exist_ok=True)
    if not explicit:
        prune_demo_runs(p)
        prune_old_temp_dirs()
    return p


def running_demo(root: Path) -> Path | None:
    """A demo run an engine still trains in `root` (a second `minertui demo` re-attaches to it)."""
    for r in list_runs(root):
        if r.id.startswith("demo-") and r.is_locked():
            return r.path
    return None


def _created(run: RunDir) -> str:
    try:
        return run.meta().created or ""
    except InputError:  # a run.json this version cannot read: oldest first in line for pruning
        return ""


def prune_demo_runs(root: Path, keep: int = KEEP_RUNS) -> list[Path]:
    """Remove all but the newest `keep` demo runs that no engine holds (each is a few MB)."""
    runs = sorted(
        (r for r in list_runs(root) if r.id.startswith("demo-")),
        key=_created,
        reverse=True,
    )
    removed = []
    for r in runs[keep:]:
        if not r.is_locked():
            shutil.rmtree(r.path, ignore_errors=True)
            removed.append(r.path)
    return removed


def prune_old_temp_dirs() -> None:
    """Earlier versions put each demo in a fresh `/tmp/minertui-demo-*` and never removed it:
    remove those of this user that no engine holds."""
    base = Path(tempfile.gettempdir())
    for d in base.glob("minertui-demo-*"):
        try:
            if not d.is_dir() or d.stat().st_uid != os.getuid():
                continue
            if any(RunDir(p).is_locked() for p in d.iterdir() if (p / "run.json").is_file()):
                continue
        except OSError:
            continue
        shutil.rmtree(d, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def live_args(port: int) -> list[str]:
    # smaller than practice.yaml's cached settings: a live generation is 8 × 4 multi-turn
    # sessions, so the curves move within seconds even on 2 CPU cores
    return [
        "--config",
        str(PRACTICE_CONFIG),
        "--mode",
        "live",
        "--pool",
        "practice",
        "--base-url",
        f"http://127.0.0.1:{port}/v1",
        "--popsize",
        "8",
        "--m",
        "4",
    ]


def make_throwaway_repo(base: Path) -> Path:
    """A local stand-in for the competition repository (a clone with a bare `origin`), so the
    demo's Submit mode can pack, plan, commit and push without touching anything real."""
    origin, repo = base / "competition-origin.git", base / "competition-repo"
    if (repo / ".git").is_dir():
        return repo

    def git(*args: str, cwd: Path) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30)

    base.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "--bare", "-b", "main", str(origin), cwd=base)
    git("init", "-q", "-b", "main", str(repo), cwd=base)
    git("config", "user.name", "minertui demo", cwd=repo)
    git("config", "user.email", "demo@minertui.invalid", cwd=repo)
    (repo / "README.md").write_text("Throwaway stand-in for the competition repository (minertui demo).\n")
    git("add", "README.md", cwd=repo)
    git("commit", "-q", "-m", "throwaway competition repo for the minertui demo", cwd=repo)
    git("remote", "add", "origin", str(origin), cwd=repo)
    git("push", "-q", "origin", "main", cwd=repo)
    return repo


def start_demo(app) -> None:
    """Kick off the demo from the app (runs in a thread worker; never blocks the UI)."""
    app.demo_note = "practice (simulated pool): starting…"
    app.run_worker(lambda: _demo(app), thread=True, group="demo", exit_on_error=False, name="demo")


def _demo(app) -> None:
    sup = app.supervisor
    root = sup.runs_root
    try:
        # its own submission history: demo bundles never count against the miner's real ones
        app.submit_defaults = {
            "miner": "demo-miner",
            "repo": str(make_throwaway_repo(root / ".demo-git")),
            "history": str(root / ".demo-git" / "submissions.jsonl"),
        }
    except (OSError, subprocess.SubprocessError) as e:  # no git: Submit just starts empty
        app.call_from_thread(app.notify, f"no throwaway repo for Submit: {e}", severity="warning")
    attached = running_demo(root)
    if attached is not None:  # a demo already trains here (another terminal): show it
        app.call_from_thread(_select, app, attached, "practice (simulated pool): re-attached to the running demo")
        return
    port = free_port()
    run_id = new_run_id("demo-live")
    # the server lives exactly as long as this run's engine needs it (see jobs/practice_server)
    sup.start_server(
        [
            sys.executable,
            "-m",
            "minertui.jobs.practice_server",
            "--run-dir",
            str((root / run_id).resolve()),
            "--port",
            str(port),
            "--start-timeout",
            "120",
        ],
        root / "practice-server.log",
    )
    run_dir = sup.start_train(live_args(port), run_id=run_id)
    app.call_from_thread(_select, app, run_dir, "practice (simulated pool): live run starting")
    deadline = time.monotonic() + LIVE_GRACE_S
    while time.monotonic() < deadline:
        launched = sup.launched.get(run_dir)
        code = launched.proc.poll() if launched else None
        gens = [e for e in RunDir(run_dir).read_typed_events() if isinstance(e, GenerationEvent)]
        if gens:
            app.call_from_thread(_note, app, "practice (simulated pool): live run")
            return
        if code is not None and code != 0 or (launched is None and not RunDir(run_dir).is_locked()):
            break
        time.sleep(0.25)
    else:
        return  # still starting after the grace period, no error: leave it running

    why = (log_tail(sup.log_of(run_dir), 1) or "the live engine exited").strip()
    sup.stop_servers()
    app.call_from_thread(_note, app, "practice (simulated pool): the live run stopped")
    app.call_from_thread(
        app.notify,
        f"the demo's live practice run stopped: {why[:300]} (its log is in the run folder)",
        title="demo",
        severity="error",
        timeout=15,
    )


def _select(app, run_dir: Path, note: str) -> None:
    app.demo_note = note
    app.demo_run = Path(run_dir)
    app.reader.open(run_dir) if run_dir.parent.resolve() != app.runs_root.resolve() else None
    app.select_run(run_dir)


def _note(app, note: str) -> None:
    app.demo_note = note
    app.poll_soon()


def stop_demo_servers(app) -> None:
    """On quit: stop the practice server unless a run still needs it (an engine holding a run
    this app launched); then it stays up with that engine, in its own session.

    Quitting the demo stops the demo's own engine (it checkpoints; its practice server exits
    with it) and leaves a line for the terminal saying where the run is and how to go on."""
    sup = app.supervisor
    if getattr(app, "demo", False):
        for path, launched in list(sup.launched.items()):
            if RunDir(path).is_locked():
                try:
                    sup.pause(path)
                except Exception:  # noqa: BLE001 — it exited meanwhile
                    continue
            elif launched.proc.poll() is None:  # still starting (no lock yet): nothing to checkpoint
                launched.proc.terminate()
        app.exit_note = demo_exit_note(sup.runs_root)
    sup.release_servers()


def demo_exit_note(root: Path) -> str:
    return (
        f"minertui demo: the demo engine was asked to checkpoint and stop; its runs are kept in {root} "
        f"(newest {KEEP_RUNS}). Open them with `minertui --runs-dir {root}`; `minertui demo` starts "
        "a fresh one (or re-attaches to one still running)."
    )
