"""Encoder work of concurrent sessions in one batch.

Every running session asks for its next turn's logits with `await batcher.logits(text, stream)`.
One worker task takes everything that is queued when it wakes, runs the session encoder once on
all of it (in a worker thread, so the event loop keeps serving), and answers each caller; what
arrives meanwhile forms the next batch. No timer decides a batch: under load the batches grow by
themselves, alone a session waits for nobody.

`StreamKeepingEncoder` is the live trainer's incremental session encoder
(`trinity.model.sessions.SessionEncoder`: a turn reads only the tokens its transcript added) for
sessions that do not move in lock step: a stream that is waiting for its pool call is not in the
current batch, and must keep its state until its session ends (`end(stream)`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

from trinity.model.sessions import SessionEncoder

LogitsFn = Callable[[list[str], np.ndarray, list[Hashable]], np.ndarray]


class StreamKeepingEncoder(SessionEncoder):
    """A `SessionEncoder` whose streams live until `end(stream)` (not until the next call that
    leaves them out). The memory budget still holds: over it, the least recently used streams are
    forgotten and read again in full on their next turn."""

    def __init__(self, router: Any, thetas: npt.ArrayLike, budget_mb: float | None = None) -> None:
        super().__init__(router, thetas, budget_mb)
        self.live: set[Hashable] = set()

    def end(self, stream: Hashable) -> None:
        self.live.discard(stream)
        self.streams.pop(stream, None)
        self._trim()

    def features(self, texts: list[str], candidate_of_text: npt.ArrayLike, stream_of_text: Iterable[Hashable]) -> Any:
        streams = list(stream_of_text)
        asked = set(streams)
        self.live |= asked
        # The base class drops every stream absent from the call: keep the waiting ones.
        waiting = {s: v for s, v in self.streams.items() if s in self.live and s not in asked}
        prefixes = {key: self.prefixes[key] for key, _ in waiting.values() if key in self.prefixes}
        out = super().features(texts, candidate_of_text, streams)
        for key, state in prefixes.items():
            self.prefixes.setdefault(key, state)
        for s, v in waiting.items():
            if s not in self.streams:
                self.streams[s] = v
                self.streams.move_to_end(s, last=False)  # waited longest: first to go if over budget
        self._trim()
        return out


@dataclass
class _Ask:
    text: str
    stream: Hashable
    future: asyncio.Future[np.ndarray]
    at: float = field(default_factory=time.perf_counter)  # when it was asked
    done_at: float = 0.0  # when its batch handed the row over


@dataclass
class BatchStats:
    calls: int = 0
    texts: int = 0
    sizes: list[int] = field(default_factory=list)  # texts per encoder call, in order
    seconds: list[float] = field(default_factory=list)  # wall seconds per encoder call
    cpu_seconds: list[float] = field(default_factory=list)  # CPU seconds of the encoder thread per call
    waits: list[float] = field(default_factory=list)  # seconds each text waited for its call to start
    # Per call, the hand-offs around the encoder's thread: from the batch's start on the loop to
    # the thread running it, and from the thread's end to the loop handing the rows over.
    to_thread: list[float] = field(default_factory=list)
    back: list[float] = field(default_factory=list)


class EncoderBatcher:
    """Batches `logits(text, stream)` asks of concurrent sessions into one `logits_fn` call.

    `logits_fn(texts, candidates, streams) -> (N, n_models + 3)` (a `SessionEncoder.logits`;
    every text is under candidate 0, the served θ). `run_in_thread`: run it off the event loop
    (the server); tests may run it inline. `end(stream)` frees a finished session's state."""

    def __init__(
        self,
        logits_fn: LogitsFn,
        *,
        end_fn: Callable[[Hashable], None] | None = None,
        run_in_thread: bool = True,
        max_batch: int = 256,
    ) -> None:
        self.logits_fn = logits_fn
        self.end_fn = end_fn
        self.run_in_thread = run_in_thread
        self.max_batch = max_batch
        self.stats = BatchStats()
        self._queue: list[_Ask] = []
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._ended: list[Hashable] = []

    def start(self) -> None:
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._work())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        for ask in self._queue:
            if not ask.future.done():
                ask.future.cancel()
        self._queue.clear()

    async def logits(self, text: str, stream: Hashable) -> np.ndarray:
        """This text's logits row `(n_models + 3,)`, computed in the next batch."""
        row, _ = await self.logits_at(text, stream)
        return row

    async def logits_at(self, text: str, stream: Hashable) -> tuple[np.ndarray, float]:
        """`logits`, and when its batch handed it over (`time.perf_counter()`): the asking
        coroutine resumes later when the loop is busy (the other sessions of the batch run their
        next steps first)."""
        self.start()
        fut: asyncio.Future[np.ndarray] = asyncio.get_running_loop().create_future()
        ask = _Ask(text, stream, fut)
        self._queue.append(ask)
        assert self._wake is not None
        self._wake.set()
        row = await fut
        return row, ask.done_at

    def end(self, stream: Hashable) -> None:
        """The session of `stream` is over; its state is freed before the next batch runs (the
        encoder is only touched by the worker)."""
        self._ended.append(stream)

    def take_batch(self) -> list[_Ask]:
        """The asks the next encoder call serves: everything queued (one per stream, in arrival
        order, at most `max_batch`); a second ask of a stream already in the batch waits."""
        batch: list[_Ask] = []
        seen: set[Hashable] = set()
        rest: list[_Ask] = []
        for ask in self._queue:
            if ask.future.cancelled():
                continue
            if ask.stream in seen or len(batch) >= self.max_batch:
                rest.append(ask)
            else:
                seen.add(ask.stream)
                batch.append(ask)
        self._queue = rest
        return batch

    def _run(self, texts: list[str], streams: list[Hashable]) -> tuple[np.ndarray, float, float, float, float]:
        t0, c0 = time.perf_counter(), time.thread_time()
        if self.end_fn is not None:
            ended, self._ended = self._ended, []
            for s in ended:
                self.end_fn(s)
        out = np.asarray(self.logits_fn(texts, np.zeros(len(texts), dtype=np.int64), streams))
        t1 = time.perf_counter()
        return out, t1 - t0, time.thread_time() - c0, t0, t1

    async def run_once(self) -> int:
        """Serve one batch of what is queued now; returns its size (0: nothing queued)."""
        batch = self.take_batch()
        if not batch:
            return 0
        texts = [a.text for a in batch]
        streams = [a.stream for a in batch]
        start = time.perf_counter()
        try:
            if self.run_in_thread:
                out, secs, cpu, began, ended = await asyncio.to_thread(self._run, texts, streams)
            else:
                out, secs, cpu, began, ended = self._run(texts, streams)
        except Exception as e:  # every caller of the batch gets the error, the worker goes on
            for a in batch:
                if not a.future.done():
                    a.future.set_exception(e)
            return len(batch)
        self.stats.calls += 1
        self.stats.texts += len(batch)
        self.stats.sizes.append(len(batch))
        self.stats.seconds.append(secs)
        self.stats.cpu_seconds.append(cpu)
        self.stats.waits.extend(start - a.at for a in batch)
        done = time.perf_counter()
        self.stats.to_thread.append(began - start)
        self.stats.back.append(done - ended)
        for a, row in zip(batch, out):
            if not a.future.done():
                a.done_at = done
                a.future.set_result(row)
        return len(batch)

    async def _work(self) -> None:
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            while await self.run_once():
                pass
