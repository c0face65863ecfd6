"""Pipelined sessions: a session's next turn is encoded and sent as soon as its own call returns.

The barrier schedule (`SessionRunner`'s turn steps) encodes every running session at once and
sends all their calls together, so each turn step lasts as long as its slowest call: with a
provider's latency tail a generation costs turns × the slowest call. Here each session moves on
alone. When calls come back, the sessions that are ready are gathered for a bounded wait
(`wait_s`, a few ms, or until no call is left in flight), encoded in one micro-batch, decided and
sent; the others' calls stay in flight meanwhile. A generation's wall time approaches the slowest
session's own sum of call latencies, not the sum over turns of each turn's slowest call.

What a session does depends only on its own transcript: the router reads only that session's
text (the incremental encoder keeps each stream's state across batches, `keep_absent`), the
sampling seed is (seed, key prefix, candidate, question, turn), the journal key is the session's,
and a reply depends on its request. So rewards and ledger totals are the barrier's for a fixed
seed (the features of a text differ in their last bits with its batch's company, ~1e-7, which
moves an argmax only at an exact tie).

Only a logits function that can be told which streams ended (`end_streams`, the in-process
`ShardedLogits`) is pipelined; any other (Ray workers keep their own per-turn protocol) runs
the barrier schedule.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

import numpy as np

from trinity.data.questions import Question
from trinity.model import ROLES
from trinity.model.arrays import Float64Array, IndexArray
from trinity.session.transcript import Trajectory

if TYPE_CHECKING:
    from trinity.competition.text import RouterText

SCHEDULES = ("pipelined", "barrier")
DEFAULT_WAIT_S = 0.005  # how long ready sessions wait for more to share their encoder batch


class StreamLogits(Protocol):
    """A logits function that can be told which streams ended (`trinity.session.shards.ShardedLogits`)."""

    keep_absent: bool

    def __call__(self, texts: list[str], cands: np.ndarray, streams: list[int]) -> np.ndarray: ...

    def end_streams(self, streams: Sequence[int]) -> None: ...


class PipelineSpec(Protocol):
    """What the schedule reads of `trinity.session.loop.SessionSpec`."""

    @property
    def models(self) -> Sequence[str]: ...

    @property
    def max_turns(self) -> int: ...


class PipelinedRunner(Protocol):
    """What the schedule needs of its `trinity.session.loop.SessionRunner` (a protocol: the
    runner's module imports this one)."""

    @property
    def spec(self) -> PipelineSpec: ...

    @property
    def logits_fn(self) -> Callable[[list[str], np.ndarray, list[int]], np.ndarray]: ...

    @property
    def text(self) -> RouterText: ...

    @property
    def on_step(self) -> Callable[[int, int], None] | None: ...

    def _decide(
        self, logits: np.ndarray, trajs: list[Trajectory], turn: int
    ) -> tuple[IndexArray, IndexArray, Float64Array, Float64Array]: ...

    def _one_turn(
        self,
        q: Question,
        query: str,
        traj: Trajectory,
        model: str,
        role: str,
        mprobs: np.ndarray,
        rprobs: np.ndarray,
        turn: int,
    ) -> Coroutine[Any, Any, None]: ...


def can_pipeline(logits_fn: object) -> TypeGuard[StreamLogits]:
    """Whether `logits_fn` keeps a stream's state across calls that do not carry it."""
    return callable(getattr(logits_fn, "end_streams", None))


async def run_turns_pipelined(
    runner: PipelinedRunner,
    trajs: list[Trajectory],
    questions: list[Question],
    queries: list[str],
    wait_s: float = DEFAULT_WAIT_S,
    *,
    pool_queries: list[str],
) -> dict[str, float]:
    """Play every session of `trajs` to its end (ACCEPT, a failed call, or `max_turns`), each at
    its own pace; marks each `done`. Raises the first error a call raised, after the calls
    already in flight have finished (they land in the journal and ledger first, as the barrier
    does). Returns counters: encoder batches and the mean texts per batch."""
    spec = runner.spec
    logits_fn = runner.logits_fn
    assert can_pipeline(logits_fn), "a logits function that cannot end streams runs the barrier schedule"
    streams = logits_fn
    streams.keep_absent = True
    n = len(trajs)
    turn_of = [0] * n
    ready = list(range(n))
    inflight: dict[asyncio.Task[None], int] = {}
    errors: list[BaseException] = []
    batches = texts_total = 0
    step_turn = 0  # the turn every session has finished (or ended before): on_step's "turn step"

    def ended(i: int) -> bool:
        return trajs[i].done or turn_of[i] >= spec.max_turns

    try:
        while ready or inflight:
            go = [i for i in ready if not ended(i)] if not errors else []
            stop = [i for i in ready if i not in set(go)]
            ready = []
            for i in stop:
                trajs[i].done = True
            if stop:
                streams.end_streams(stop)
            if go:
                texts = [runner.text.encoder_input(queries[i], trajs[i].encoder_turns()) for i in go]
                cands = np.array([trajs[i].candidate for i in go], dtype=np.int64)
                logits = np.asarray(streams(texts, cands, go))
                batches += 1
                texts_total += len(go)
                # `_decide` seeds sampling by turn: one call per turn present in the batch
                by_turn: dict[int, list[int]] = {}
                for k, i in enumerate(go):
                    by_turn.setdefault(turn_of[i] + 1, []).append(k)
                for turn, ks in by_turn.items():
                    mi, ri, mp, rp = runner._decide(logits[ks], [trajs[go[k]] for k in ks], turn)
                    for j, k in enumerate(ks):
                        i = go[k]
                        turn_of[i] = turn
                        coro = runner._one_turn(
                            questions[i],
                            pool_queries[i],
                            trajs[i],
                            spec.models[int(mi[j])],
                            ROLES[int(ri[j])],
                            mp[j],
                            rp[j],
                            turn,
                        )
                        inflight[asyncio.ensure_future(coro)] = i
            if not inflight:
                continue
            finished, _ = await asyncio.wait(list(inflight), return_when=asyncio.FIRST_COMPLETED)
            if wait_s > 0 and len(finished) < len(inflight):
                # a bounded wait so that sessions whose calls return together share a batch
                more, _ = await asyncio.wait([t for t in inflight if t not in finished], timeout=wait_s)
                finished |= more
            for t in finished:
                i = inflight.pop(t)
                exc = t.exception()
                if exc is not None:
                    errors.append(exc)
                    trajs[i].done = True
                ready.append(i)
            ready.sort()  # the batch's order does not depend on which call came back first
            if runner.on_step is not None:
                live = [turn_of[i] for i in range(n) if not ended(i) and i not in ready]
                live += [turn_of[i] for i in ready if not ended(i)]
                now = min(live) if live else max(turn_of, default=0)
                if now > step_turn or not live:
                    step_turn = now if live else spec.max_turns
                    runner.on_step(step_turn, sum(ended(i) for i in range(n)))
    finally:
        for t in inflight:  # cancelled from outside (SIGTERM): no orphan calls
            t.cancel()
    if errors:
        raise errors[0]
    return {"batches": float(batches), "texts_per_batch": texts_total / batches if batches else 0.0}
