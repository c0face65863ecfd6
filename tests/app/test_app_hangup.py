"""The `minertui` command ends when its terminal goes away or it is sent SIGHUP / SIGTERM, also
when nobody reads the terminal any more (a dropped SSH link: the output thread blocks on a full
pty, and the normal shutdown used to wait on it for ever). Run under a real pseudo-terminal."""

import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

import pytest

from minertui.synth import make_run

# generous: the app must end within 2 s; a box loaded by parallel tests gets slack, but a hung
# app (the old behaviour) never ends at all
LIVENESS_S = 15.0


def _start_app(runs):
    pid, fd = pty.fork()
    if pid == 0:  # the child: the app on the pty's slave side, as in a terminal
        os.environ["TERM"] = "xterm-256color"
        os.execvp(sys.executable, [sys.executable, "-m", "minertui", "--runs-dir", str(runs)])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    seen, t0 = b"", time.monotonic()
    while b"Runs" not in seen and time.monotonic() - t0 < 60:
        if select.select([fd], [], [], 0.5)[0]:
            try:
                seen += os.read(fd, 1 << 16)
            except OSError:
                break
    assert b"Runs" in seen, seen[-500:]
    return pid, fd


def _wait_exit(pid) -> int | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < LIVENESS_S:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


@pytest.mark.parametrize("how", ["terminal closed", "SIGTERM, terminal not read", "SIGHUP, terminal not read"])
def test_app_ends_when_its_terminal_goes(tmp_path, how):
    make_run(tmp_path / "runs" / "r1", status="running")
    pid, fd = _start_app(tmp_path / "runs")
    try:
        if how == "terminal closed":
            os.close(fd)
            fd = -1
        else:  # the app keeps redrawing into a pty nobody reads until its buffer is full
            time.sleep(1.5)
            os.kill(pid, signal.SIGTERM if how.startswith("SIGTERM") else signal.SIGHUP)
        status = _wait_exit(pid)
    finally:
        if fd >= 0:
            os.close(fd)
    assert status is not None, f"the app was still running {LIVENESS_S:.0f} s after: {how}"
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
