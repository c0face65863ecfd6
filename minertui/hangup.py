"""The app ends within `GRACE_S` when its terminal goes away (SSH dropped, tmux session killed)
or it is sent SIGHUP / SIGTERM, even when the terminal's death has wedged the normal shutdown.

Why a guard: when the terminal vanishes, textual's output thread dies on the first write
(EIO); the next redraws fill its queue and the shutdown then blocks for ever putting its stop
marker there (App._shutdown → driver.close → WriterThread.stop → Queue.put). An asyncio signal
handler never runs while the loop is blocked like that, so the guard uses `signal.signal` (run
between bytecodes of the main thread, even inside a blocked lock acquire) and a watcher thread:
it asks the app to exit, and if the process is still here after the grace it runs the app's
own cleanup (the demo checkpoints and stops its engine) and leaves with `os._exit`.

Installed only by the `minertui` command (never in tests that run the app in-process)."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable

GRACE_S = 1.5  # a normal exit has this long; the whole hang-up stays under 2 s
CHECK_S = 0.25  # how often the watcher looks for a dead output thread


class HangupGuard:
    def __init__(self, app: Any, cleanup: Callable[[], None] | None = None, grace_s: float = GRACE_S):
        self.app = app
        self.cleanup = cleanup
        self.grace_s = grace_s
        self.reason = ""
        self._fired = threading.Event()
        self._stopped = threading.Event()

    def install(self) -> "HangupGuard":
        for sig in (signal.SIGHUP, signal.SIGTERM):
            signal.signal(sig, self._on_signal)
        threading.Thread(target=self._watch, name="minertui-hangup", daemon=True).start()
        return self

    def stop(self) -> None:
        """The app has returned normally: the watcher has nothing left to do."""
        self._stopped.set()

    def _on_signal(self, signum: int, frame: object) -> None:
        self.trigger(signal.Signals(signum).name)

    def trigger(self, reason: str) -> None:
        if self._fired.is_set():
            return
        self.reason = reason
        self._fired.set()
        threading.Thread(target=self._finish, name="minertui-exit", daemon=True).start()

    def _output_dead(self) -> bool:
        driver = getattr(self.app, "_driver", None)
        writer = getattr(driver, "_writer_thread", None)
        return writer is not None and not writer.is_alive() and not getattr(self.app, "_exit", False)

    def _watch(self) -> None:
        while not self._stopped.wait(CHECK_S):
            if self._fired.is_set():
                return
            if self._output_dead():
                self.trigger("terminal gone")
                return

    def _finish(self) -> None:
        loop = getattr(self.app, "_loop", None)
        try:
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(lambda: self.app.exit(return_code=0))
        except RuntimeError:  # the loop closed meanwhile: the app is ending anyway
            pass
        if self._stopped.wait(self.grace_s):
            return
        try:
            if self.cleanup is not None:
                self.cleanup()
        finally:
            os._exit(0)
