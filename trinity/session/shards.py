"""How a generation's live sessions are cut into shards for the session encoder.

The incremental session encoder's features of a text depend, in their last bits, on which other
texts share its batch (matmul and attention shapes; measured on tiny-qwen3: ~9e-8 apart at
turn 2). So that `trinity train --mode live --workers N` gives the same numbers as one process,
both encode a turn in the same groups: the sessions are cut into shards by question (contiguous
blocks of the generation's distinct questions, in their order), each shard has its own
`SessionEncoder`, and a turn runs shard by shard — in this process for one worker, on the shard's
Ray actor otherwise (`trinity.optim.livepopulation`). All sessions of one question sit in one
shard: they share θ-independent prefix states (the question, and transcripts candidates have in
common), which a cut by candidate would compute once per actor.

`LIVE_SHARDS` shards, or one per worker when there are more (as the cached mode's chunks), and
never more than there are questions. Each shard's encoder gets an equal part of the session
encoder's memory budget, wherever it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeGuard

import numpy as np
import numpy.typing as npt

from trinity.data.questions import Question

if TYPE_CHECKING:
    from trinity.model.encoder import Encoder
    from trinity.model.sessions import SessionEncoder

LIVE_SHARDS = 4
# (texts, candidate of each text, stream of each text) -> logits (N, n_models + 3)
LogitsFn = Callable[[list[str], np.ndarray, list[int]], np.ndarray]


class ShardRouter(Protocol):
    """What the shards need of their router (`trinity.model.router.Router`): its encoder's
    device and one incremental `SessionEncoder` per shard."""

    @property
    def encoder(self) -> Encoder: ...

    def session_encoder(self, thetas: npt.ArrayLike, budget_mb: float | None = None) -> SessionEncoder: ...


def has_session_encoder(router: object) -> TypeGuard[ShardRouter]:
    """Whether `router` encodes sessions incrementally (a fixed-policy stand-in does not)."""
    return getattr(router, "session_encoder", None) is not None


def shard_count(n_questions: int, workers: int = 1) -> int:
    return max(1, min(max(LIVE_SHARDS, int(workers)), int(n_questions)))


def shards_of_pairs(pairs: Sequence[tuple[int, Question]], workers: int = 1) -> tuple[list[int], int]:
    """(shard of each (candidate, question) pair, number of shards): contiguous blocks of the
    distinct questions in their first-appearance order, cut as `np.linspace` cuts them."""
    order: dict[str, int] = {}
    for _, q in pairs:
        order.setdefault(q.id, len(order))
    n = shard_count(len(order), workers)
    bounds = np.linspace(0, len(order), n + 1).astype(int)
    shard_of_q = np.searchsorted(bounds, np.arange(len(order)), side="right") - 1
    return [int(shard_of_q[order[q.id]]) for _, q in pairs], n


def shard_budget_mb(router: ShardRouter, n_shards: int) -> float:
    """One shard encoder's part of the session encoder's default memory budget."""
    from trinity.model.sessions import default_budget_mb  # lazy: torch + transformers loaded only when used

    return default_budget_mb(router.encoder.device) / max(1, n_shards)


def split_by_shard(shard_of_stream: Sequence[int], streams: Sequence[int]) -> dict[int, list[int]]:
    """{shard: positions in this turn's batch}, shards in increasing order."""
    out: dict[int, list[int]] = {}
    for k, s in enumerate(streams):
        out.setdefault(int(shard_of_stream[s]), []).append(k)
    return dict(sorted(out.items()))


class ShardedLogits:
    """A `SessionRunner` logits function that encodes each turn shard by shard, one
    `SessionEncoder` per shard (this process: `--workers 1`).

    `keep_absent = True` before the first call (the pipelined schedule): a call carries only the
    sessions that are ready, and `end_streams` says which have ended; a shard's encoder is freed
    when its last session ends."""

    keep_absent = False

    def __init__(self, router: ShardRouter, thetas: np.ndarray, shard_of_stream: Sequence[int], n_shards: int) -> None:
        self.router, self.thetas = router, thetas
        self.shard_of_stream = list(shard_of_stream)
        self.budget_mb = shard_budget_mb(router, n_shards)
        self.encoders: dict[int, SessionEncoder] = {}

    def __call__(self, texts: list[str], cands: np.ndarray, streams: list[int]) -> np.ndarray:
        parts = split_by_shard(self.shard_of_stream, streams)
        if not self.keep_absent:
            for ended in [s for s in self.encoders if s not in parts]:
                del self.encoders[ended]  # every session of the shard has ended: free its states
        out: np.ndarray | None = None
        for shard, pos in parts.items():
            enc = self.encoders.get(shard)
            if enc is None:
                enc = self.encoders[shard] = self.router.session_encoder(self.thetas, self.budget_mb)
                enc.keep_absent = self.keep_absent
            lg = np.asarray(enc.logits([texts[k] for k in pos], cands[pos], [streams[k] for k in pos]))
            if out is None:
                out = np.empty((len(texts), lg.shape[1]), dtype=lg.dtype)
            out[pos] = lg
        assert out is not None, "a turn step with no texts"
        return out

    def end_streams(self, streams: Sequence[int]) -> None:
        """Sessions that have ended (pipelined schedule): their states go, and a shard's encoder
        with its last session."""
        if not hasattr(self, "_left"):
            self._left: dict[int, int] = {}
            for sh in self.shard_of_stream:
                self._left[int(sh)] = self._left.get(int(sh), 0) + 1
        for shard, pos in split_by_shard(self.shard_of_stream, streams).items():
            self._left[shard] -= len(pos)
            enc = self.encoders.get(shard)
            if enc is None:
                continue
            if self._left[shard] <= 0:
                del self.encoders[shard]
            else:
                enc.end_streams([streams[k] for k in pos])
