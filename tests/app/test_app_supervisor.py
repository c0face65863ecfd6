"""The engine supervisor end to end: the app (in a real pseudo-terminal) starts a real
`trinity train`; SIGHUP ends the app cleanly while the engine keeps training; pause
(checkpoint + stop) and resume work on it; a new app session shows the finished run."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

from textual.widgets import DataTable
from train_argv import train_argv

from minertui.app import MinerApp
from minertui.supervisor import Supervisor
from trinity.runs.rundir import RunDir

ROOT = Path(__file__).resolve().parents[2]
GENERATIONS = 60

DRIVER = """
import sys
from minertui.app import MinerApp
root, args = sys.argv[1], sys.argv[2:]

class Driver(MinerApp):
    def on_mount(self):  # Textual also runs MinerApp.on_mount (handlers run along the MRO)
        self.supervisor.start_train(args, run_id="run-hup")

Driver(runs_root=root).run()
"""


def wait_for(cond, timeout: float, what: str, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def generations_done(run: RunDir) -> int:
    return sum(1 for e in run.read_events() if e.get("type") == "generation") if run.events.exists() else 0


def status(run: RunDir) -> str | None:
    try:
        return run.read_meta().get("status")
    except Exception:
        return None


def test_engine_survives_sighup_then_pause_resume_and_reopen(tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    train_args = train_argv(None, config=ROOT / "configs" / "practice.yaml", generations=GENERATIONS, popsize=4, m=4)[
        1:
    ]  # the driver adds `train` and the run directory
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", OMP_NUM_THREADS="1")
    app = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(root), *train_args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        cwd=ROOT,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    screen = bytearray()

    def drain() -> None:  # the app must never block on a full terminal
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            screen.extend(chunk)

    threading.Thread(target=drain, daemon=True).start()
    run = RunDir(root / "run-hup")
    try:
        wait_for(lambda: generations_done(run) >= 1, 120, "the engine's first generation")
        assert run.is_locked()
        app.send_signal(signal.SIGHUP)
        assert app.wait(timeout=20) == 0
        assert b"Traceback" not in bytes(screen)
        # the app is gone, the engine is not: it lives in its own session
        assert run.is_locked(), "the engine died with the app"
        assert generations_done(run) < GENERATIONS
        assert (run.path / "engine.log").exists() or (root / ".run-hup.engine.log").exists()

        # pause = SIGTERM: checkpoint, status "stopped"
        sup = Supervisor(root)
        sup.pause(run.path)
        wait_for(lambda: not run.is_locked(), 60, "the paused engine to exit")
        assert status(run) == "stopped"
        paused_at = generations_done(run)
        assert 1 <= paused_at < GENERATIONS

        sup.resume(run.path)
        wait_for(lambda: status(run) == "finished" and not run.is_locked(), 180, "the resumed run to finish")
        gens = [e["gen"] for e in run.read_events() if e.get("type") == "generation"]
        assert sorted(set(gens)) == list(range(1, GENERATIONS + 1))
    finally:
        if app.poll() is None:
            app.kill()
        os.close(master)
        pid = Supervisor(root).engine_pid(run.path) if run.exists() else None
        if pid:
            os.kill(pid, signal.SIGKILL)

    # a later minertui shows it, finished, with every generation
    import asyncio

    async def reopen() -> list:
        app2 = MinerApp(runs_root=root, poll=False)
        async with app2.run_test(size=(120, 30)) as pilot:
            await app2.refresh_now()
            await pilot.pause()
            table = app2.screen.query_one(DataTable)
            return [str(c) for c in table.get_row_at(0)]

    row = asyncio.run(reopen())
    assert row[0] == "run-hup" and row[1] == "finished" and row[2] == f"{GENERATIONS}/{GENERATIONS}"
    meta = json.loads((run.path / "run.json").read_text())
    assert meta["status"] == "finished"


def test_resuming_a_demo_run_restarts_its_practice_server(tmp_path):
    """The demo's practice server stops with the engine; a resume must bring it back on the
    recorded port, else every call of the resumed run fails (connection refused)."""
    import socket

    from minertui.supervisor import port_in_use

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = RunDir(tmp_path / "runs" / "demo-live-x")
    run.path.mkdir(parents=True)
    run.write_meta(
        {
            "id": "demo-live-x",
            "status": "stopped",
            "config": {"pool": "practice", "mode": "live", "base_url": f"http://127.0.0.1:{port}/v1"},
        }
    )
    sup = Supervisor(tmp_path / "runs")
    try:
        assert not port_in_use("127.0.0.1", port)
        sup._restart_practice_server(run)
        deadline = time.monotonic() + 60
        while not port_in_use("127.0.0.1", port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert port_in_use("127.0.0.1", port), (tmp_path / "runs" / "practice-server.log").read_text()
        n = len(sup.servers)
        sup._restart_practice_server(run)  # already listening: no second server
        assert len(sup.servers) == n == 1
    finally:
        for p in sup.servers:
            p.terminate()
            p.wait(timeout=30)
