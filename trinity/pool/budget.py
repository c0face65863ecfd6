"""A run's USD cap: the worst-case cost of a call is reserved before it is sent.

`reserve()` raises `BudgetExceeded` when spent + in-flight reservations + this call's worst case
would pass the cap, so the cap holds even with hundreds of concurrent calls. When only the
in-flight reservations are in the way (`blocked_only_by_inflight`), the client waits for them to
settle instead of stopping: a run stops when the cap itself is near, not when it is busy. `settle()` swaps a
reservation for the call's actual cost (0 when the call was never billed). Money is kept in
integer micro-USD, like the ledger, so totals add up exactly.

A provider may bill past a call's reserved worst case (reasoning tokens that `max_tokens` does not
bound, a stale price table). The client takes such a bill as long as it stays within
`SANE_MULTIPLE` × the reservation + `SANE_SLACK_USD` (past that it is absurd: billed from the price
table, and the run stops). So every call in flight also holds a *guard*, the most it can bill
without being absurd, and a call is admitted only when spent + every guard in flight + its own
guard fit under the cap: concurrency shrinks as the margin shrinks, and the bills of the calls in
flight together can never pass the cap. One call alone is admitted when its reservation fits but
its guard does not (else a small budget could never make a call).

The bound: the ledger total ≤ cap + (guard − reservation) of one lone call, i.e. at most
(SANE_MULTIPLE − 1) × that call's reservation + SANE_SLACK_USD past the cap; the client also
reserves each model at the worst bill ÷ reservation it has seen, so a provider that over-bills
once is reserved honestly afterwards. Absurd bills stop the run and are recorded at the table price
(what the provider itself charged for them is not ours to bound).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Protocol

from trinity.errors import BudgetExceeded, ConfigError

MICRO = 1_000_000

# A bill above SANE_MULTIPLE × the call's reserved worst case + SANE_SLACK_USD is absurd (the client
# bills it from the price table and the run stops); below it, it is taken and guarded for.
SANE_MULTIPLE = 10
SANE_SLACK_USD = 0.01


def to_micro(usd: float) -> int:
    return int(round(usd * MICRO))


def guard_micro(amount_micro: int) -> int:
    """The most a call reserved at `amount_micro` can bill without being absurd."""
    return SANE_MULTIPLE * amount_micro + to_micro(SANE_SLACK_USD)


@dataclass
class Reservation:
    micro_usd: int
    settled: bool = False
    guard_micro: int = 0


class Budget:
    def __init__(self, cap_usd: float | None, spent_usd: float = 0.0):
        if cap_usd is not None and cap_usd < 0:
            raise ConfigError(f"--budget-usd must be >= 0, got {cap_usd}")
        self.cap_micro = None if cap_usd is None else to_micro(cap_usd)
        self.spent_micro = to_micro(spent_usd)  # a resumed run starts from its ledger total
        self.reserved_micro = 0
        self.guarded_micro = 0  # the guards of the calls in flight, summed
        self.in_flight = 0
        self._lock = threading.Lock()

    @property
    def cap_usd(self) -> float | None:
        return None if self.cap_micro is None else self.cap_micro / MICRO

    @property
    def spent_usd(self) -> float:
        return self.spent_micro / MICRO

    def reserve(self, worst_case_usd: float, what: str = "the next call") -> Reservation:
        amount = max(0, to_micro(worst_case_usd))
        guard = guard_micro(amount)
        with self._lock:
            cap = self.cap_micro
            if cap is not None and (
                self.spent_micro + amount > cap
                or (self.in_flight and self.spent_micro + self.guarded_micro + guard > cap)
            ):
                raise BudgetExceeded(
                    f"budget of ${cap / MICRO:.4f} reached: spent ${self.spent_micro / MICRO:.4f}, "
                    f"in flight ${self.reserved_micro / MICRO:.4f} (may bill up to ${self.guarded_micro / MICRO:.4f}), "
                    f"{what} may cost up to ${amount / MICRO:.4f}; raise --budget-usd to continue"
                )
            self.reserved_micro += amount
            self.guarded_micro += guard
            self.in_flight += 1
        return Reservation(amount, guard_micro=guard)

    def blocked_only_by_inflight(self, worst_case_usd: float) -> bool:
        """True when the call would fit once the calls in flight settle (their actual cost is
        usually far below their worst case): the caller should wait, not stop the run."""
        amount = max(0, to_micro(worst_case_usd))
        with self._lock:
            return self.cap_micro is not None and self.in_flight > 0 and self.spent_micro + amount <= self.cap_micro

    def settle(self, reservation: Reservation, actual_micro_usd: int) -> None:
        with self._lock:
            if reservation.settled:
                return
            reservation.settled = True
            self.reserved_micro -= reservation.micro_usd
            self.guarded_micro -= reservation.guard_micro
            self.in_flight -= 1
            self.spent_micro += max(0, int(actual_micro_usd))


class BudgetLike(Protocol):
    """What the pool client needs of a budget (a `Budget`, or one shared by many runs)."""

    @property
    def cap_micro(self) -> int | None: ...  # None: no cap (then unpriced models are allowed)

    def reserve(self, worst_case_usd: float, what: str = "the next call") -> Reservation: ...

    def blocked_only_by_inflight(self, worst_case_usd: float) -> bool: ...

    def settle(self, reservation: Reservation, actual_micro_usd: int) -> None: ...


# A process that runs its runs under a shared budget (a sweep's trial) installs a wrapper here:
# every run budget made by `run_budget` then also reserves from the shared holder.
_wrapper: Callable[[Budget], BudgetLike] | None = None


def set_budget_wrapper(wrap: Callable[[Budget], BudgetLike] | None) -> None:
    global _wrapper
    _wrapper = wrap


def run_budget(cap_usd: float | None, spent_usd: float = 0.0) -> BudgetLike:
    """A run's budget: its own cap, within the shared one when a wrapper is installed."""
    local = Budget(cap_usd, spent_usd=spent_usd)
    return local if _wrapper is None else _wrapper(local)
