"""Running the application on uvicorn: in the foreground (`trinity serve`) or in a thread (tests,
benchmarks, the app), on a socket bound before the server starts (port 0: any free port)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

from trinity.errors import InputError

LOOPBACK = ("127.0.0.1", "::1", "localhost")
GRACE_S = 600  # how long a shutdown waits for the sessions in flight


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port} ({e.strerror}); pick another --port or --host") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def uvicorn_server(app: Any, *, log_level: str = "warning") -> Any:
    import uvicorn  # lazy: optional extra 'serve'

    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=GRACE_S,
        lifespan="on",
        backlog=2048,
    )
    return uvicorn.Server(config)


class ServerThread:
    """uvicorn in a daemon thread; `base_url` once `start()` returns; `stop()` shuts it down
    gracefully (sessions in flight finish, then the engine closes)."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        self.sock = bind(host, port)
        self.host, self.port = self.sock.getsockname()[:2]
        self.server = uvicorn_server(app)
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="trinity-serve", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def _run(self) -> None:
        try:
            asyncio.run(self.server.serve(sockets=[self.sock]))
        except BaseException as e:  # reported by start()/stop()
            self.error = e

    def start(self, timeout_s: float = 120) -> "ServerThread":
        self._thread.start()

        deadline = time.monotonic() + timeout_s
        while not self.server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self.server.started:
            self.stop()
            raise RuntimeError(f"the server did not start: {self.error!r}")
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=GRACE_S + 30)
        self.sock.close()

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
