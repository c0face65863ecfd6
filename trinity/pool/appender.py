"""A durable single-writer JSONL appender with group commit.

The ledger and the call journal must be on disk (fsync) before the caller sees a paid call's
result, yet hundreds of calls a second may finish. One writer thread takes every line queued
since its last pass, writes them with one `write()` on an O_APPEND descriptor and fsyncs once, then
wakes every waiter: durability per line, one fsync per batch, and the event loop never blocks on
the disk. Lines are written in submit order. Async waiters of a batch are woken with one
`call_soon_threadsafe` per event loop (not one per line: 64 wake-ups a batch, each re-taking the GIL
from a busy loop, cost the calls ~5 ms p50 / 15 ms p99 at 1,000 calls a second).

The file is held with an exclusive `flock`, so a second writer (another engine process on the same
run) is refused instead of interleaving its lines.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
from collections import deque
from concurrent.futures import Future
from pathlib import Path
from typing import TypeAlias

from trinity.errors import RunLockedError
from trinity.io import open_append_nofollow

# Who waits for a queued write: a concurrent Future (a thread) or (its loop, an asyncio future)
# (a coroutine, woken on its own loop).
Waiter: TypeAlias = Future[None] | tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]


def _finish(fut: Future[None] | asyncio.Future[None], error: BaseException | None) -> None:
    if fut.done():  # the waiter was cancelled
        return
    if error is None:
        fut.set_result(None)
    else:
        fut.set_exception(error)


def _wake(futs: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for fut in futs:
        _finish(fut, error)


class GroupCommitAppender:
    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = True, what: str = "file"):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self._fd = open_append_nofollow(self.path)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise RunLockedError(
                f"{what} {self.path} is being written by another process; stop that engine first"
            ) from None
        # (line(s), who waits), in submit order
        self._queue: deque[tuple[bytes, Waiter]] = deque()
        self._cv = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None
        self.batches = 0  # fsync passes (for tests / stats)

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"append:{self.path.name}", daemon=True)
            self._thread.start()

    def _enqueue(self, data: bytes, waiter: Waiter) -> None:
        with self._cv:
            if self._closed:
                raise RuntimeError(f"{self.path} appender is closed")
            self._start()
            self._queue.append((data, waiter))
            self._cv.notify()

    def submit(self, data: bytes) -> Future[None]:
        """Queue whole line(s); the future completes once they are written (and fsynced)."""
        fut: Future[None] = Future()
        self._enqueue(data, fut)
        return fut

    def write(self, data: bytes) -> None:
        self.submit(data).result()

    def submit_async(self, data: bytes) -> asyncio.Future[None]:
        """`submit` for a coroutine (call it on the running loop's thread): an asyncio future."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._enqueue(data, (loop, fut))
        return fut

    async def write_async(self, data: bytes) -> None:
        await self.submit_async(data)

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._queue and not self._closed:
                    self._cv.wait()
                if not self._queue and self._closed:
                    return
                batch = list(self._queue)
                self._queue.clear()
            try:
                buf = b"".join(d for d, _ in batch)
                view = memoryview(buf)
                while view:  # os.write may write less than asked (signals, full disks)
                    n = os.write(self._fd, view)
                    view = view[n:]
                if self.fsync:
                    os.fsync(self._fd)
                self.batches += 1
            except Exception as e:  # a full disk, a closed descriptor: every waiter hears of it
                self._settle(batch, e)
                continue
            self._settle(batch, None)

    @staticmethod
    def _settle(batch: list[tuple[bytes, Waiter]], error: BaseException | None) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
        for _, waiter in batch:
            if isinstance(waiter, Future):
                _finish(waiter, error)
            else:
                loop, fut = waiter
                by_loop.setdefault(loop, []).append(fut)
        for loop, futs in by_loop.items():
            try:
                loop.call_soon_threadsafe(_wake, futs, error)
            except RuntimeError:  # the loop was closed: nobody is waiting any more
                pass

    def truncate_to(self, size: int) -> None:
        """Cut the file to `size` bytes (dropping a torn tail before the first append)."""
        os.ftruncate(self._fd, size)
        os.fsync(self._fd)

    def close(self) -> None:
        with self._cv:
            if self._closed:
                return
            self._closed = True
            self._cv.notify()
        if self._thread is not None:
            self._thread.join()
        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)
