"""The fault policy: which provider answers are retried, how long to wait, and the pool's
shared cool-down.

| answer                                   | what the client does                              |
|------------------------------------------|---------------------------------------------------|
| 429                                      | wait `Retry-After` (seconds or HTTP date), else    |
|                                          | exponential backoff with jitter; the whole pool    |
|                                          | waits too (shared cool-down); bounded retries     |
| 5xx, 408, timeouts, connection errors    | bounded retries with backoff (or the 5xx's own    |
|                                          | Retry-After)                                      |
| 400 / 401 / 403 / 404 / 422 / other 4xx  | no retry: `ProviderError` naming provider + model |
| 402                                      | `OutOfCredit`: the run stops cleanly              |
| 200 with an `error` body or no `choices` | a failed call (reward 0), tokens billed if given  |
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

from trinity.errors import check_stop

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529})


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5  # retries after the first attempt
    backoff_base_s: float = 1.0  # first backoff; doubles each retry
    backoff_max_s: float = 60.0
    max_retry_after_s: float = 300.0  # a longer Retry-After is capped to this

    def backoff(self, retry: int, rng: random.Random | None = None) -> float:
        """Full-jitter exponential backoff for the `retry`-th retry (1-based): U(0.5, 1) × base·2^(r-1).

        Half the delay is kept fixed so a retry never fires immediately (full jitter can pick ~0,
        which hammers a provider that just said it is overloaded)."""
        draw = rng.random if rng is not None else random.random
        ceiling = min(self.backoff_max_s, self.backoff_base_s * (2.0 ** max(retry - 1, 0)))
        return ceiling * (0.5 + 0.5 * draw())


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header: delta-seconds or an HTTP date; None if absent
    or unparseable. Negative waits (a date in the past) become 0."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = time.time() if now is None else now
    return max(0.0, when.timestamp() - now)


def is_retryable(status: int) -> bool:
    return status in RETRYABLE_STATUS or 500 <= status < 600


class Cooldown:
    """A pool-wide pause: after a 429 every request of the pool waits until `until` (monotonic).

    Only ever extended, never shortened, so concurrent 429s keep the longest wait.
    """

    def __init__(self) -> None:
        self.until = 0.0
        self.total_s = 0.0  # how long the pool was told to cool down, summed (for stats)

    def extend(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        if until > self.until:
            self.total_s += until - max(self.until, time.monotonic())
            self.until = until

    async def wait(self) -> None:
        while True:
            delay = self.until - time.monotonic()
            if delay <= 0:
                return
            await stoppable_sleep(delay)


STOP_POLL_S = 0.1  # how often a wait looks for a stop request (SIGTERM)


async def stoppable_sleep(seconds: float) -> None:
    """`asyncio.sleep(seconds)` that raises StopRequested within STOP_POLL_S of a stop request
    (the trainer's SIGINT/SIGTERM handler), so no Retry-After can hold a run past its signal."""
    end = time.monotonic() + seconds
    while True:
        check_stop()
        left = end - time.monotonic()
        if left <= 0:
            return
        await asyncio.sleep(min(left, STOP_POLL_S))


def http_date(ts: float) -> str:
    """An RFC 7231 HTTP date (used by the practice server's Retry-After option)."""
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%a, %d %b %Y %H:%M:%S GMT")
