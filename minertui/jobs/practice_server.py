"""`python -m minertui.jobs.practice_server --run-dir DIR --port N [server flags…]`

Runs `trinity pool serve-practice --port N …` for as long as the engine of one run needs it. The
demo starts this detached (its own session), so, like the engine, it outlives the app (an SSH
hang-up) — but not the run: once the engine that holds DIR's lock lets go (finished, stopped,
failed), or if no engine takes the lock within `--start-timeout` seconds, it stops the server
and exits. No orphaned servers.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time

from trinity.runs.rundir import RunDir


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m minertui.jobs.practice_server")
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument(
        "--start-timeout", type=float, default=600.0, help="stop if no engine holds the run within this many seconds"
    )
    args, server_flags = ap.parse_known_args(argv)
    run = RunDir(args.run_dir)
    server = subprocess.Popen(
        [sys.executable, "-m", "trinity", "pool", "serve-practice", "--port", str(args.port), *server_flags],
        stdin=subprocess.DEVNULL,
    )
    stop = False

    def on_signal(signum, frame) -> None:
        nonlocal stop
        stop = True

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    started, seen = time.monotonic(), False
    try:
        while not stop and server.poll() is None:
            locked = run.is_locked()
            if locked:
                seen = True
            elif seen or time.monotonic() - started > args.start_timeout:
                break  # the engine is done (or never came): nobody needs the server
            time.sleep(1.0)
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
