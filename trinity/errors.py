"""Errors that the CLI turns into one clear line and a non-zero exit.

Raise these (never bare exceptions) for anything a user can fix: bad input files, broken
configs, unknown model ids, provider faults. The message names the thing and says what to do.
"""

from __future__ import annotations


class TrinityError(Exception):
    """A user-facing error: `str(err)` is the one-line message, `exit_code` the CLI status."""

    exit_code = 2


class ConfigError(TrinityError):
    """A config file or flag is invalid."""


class InputError(TrinityError):
    """An input file (questions, matrix, theta, bundle …) is missing or malformed."""


class CheckpointError(TrinityError):
    """A checkpoint is corrupt, truncated, or belongs to another run."""


class RunLockedError(TrinityError):
    """Another engine process holds the run directory."""

    exit_code = 3


class ModelLoadError(TrinityError):
    """An encoder model id or path could not be loaded."""


class ProviderError(TrinityError):
    """A provider refused a call in a way that retrying cannot fix (400/401/403)."""


class OutOfCredit(TrinityError):
    """The provider answered 402: the account has no credit left."""

    exit_code = 4


class BudgetExceeded(TrinityError):
    """The next call would pass the run's --budget-usd cap."""

    exit_code = 4


class PoolStop(TrinityError):
    """The pool cannot be trained against right now: the run stops at its last checkpoint."""

    exit_code = 4


class PoolUnreachable(PoolStop):
    """The recent calls all failed to connect (`PoolClient.unreachable()`): a training run stops
    at its last checkpoint instead of training on rewards of 0 from calls that reached no model."""


class PoolFailing(PoolStop):
    """Most calls since `start_window()` failed (5xx, 429, malformed bodies, timeouts …)."""


class AbsurdCharge(PoolStop):
    """A provider reported usage or a cost far past what the request could cost."""


class StopRequested(Exception):
    """SIGINT/SIGTERM asked the run to stop (raised from a progress hook, a wait or a long loop)."""


# The process-wide stop request: the trainer's signal handler sets it; every wait of the pool
# client (a 429 cool-down, a retry back-off, a budget wait) and every long loop polls it, so a
# SIGTERM stops a run within a fraction of a second even during a minute-long Retry-After.
_stop_reason: list[str] = []


def request_stop(reason: str) -> None:
    if not _stop_reason:
        _stop_reason.append(reason)


def clear_stop() -> None:
    _stop_reason.clear()


def stop_requested() -> str | None:
    return _stop_reason[0] if _stop_reason else None


def check_stop() -> None:
    """Raise StopRequested when a stop was asked for (call it inside long loops)."""
    if _stop_reason:
        raise StopRequested(_stop_reason[0])
