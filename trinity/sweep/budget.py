"""One budget across a sweep: a Ray actor holds it; every trial's pool client reserves from it.

The holder keeps the same three numbers as a run's `Budget` (cap, spent, in flight, integer
micro-USD) and answers the same questions, one at a time (an actor runs its methods serially), so
the worst-case reservation rule of a single run holds across processes and machines. A trial's
client reserves from its own `Budget` first (its own --budget-usd, if any), then from the holder.

On resume the holder starts from what the trials' ledgers say was spent: a ledger record is
written for every billed call before the call settles, so nothing paid is forgotten.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trinity.errors import BudgetExceeded
from trinity.pool.budget import MICRO, Budget, Reservation, to_micro
from trinity.pool.ledger import verify_ledger

RESERVE_TIMEOUT_S = 60.0


class BudgetHolder:
    """The sweep's budget (a Ray actor's class; plain Python, so it is testable without Ray)."""

    def __init__(self, cap_usd: float, spent_micro: int = 0):
        self.cap_micro = to_micro(cap_usd)
        self.spent_micro = int(spent_micro)
        self.reserved_micro = 0
        self.reservations = 0
        self.refusals = 0

    def reserve(self, amount_micro: int, what: str) -> tuple[str, bool] | None:
        """None when reserved, else (the refusal message, whether only the calls in flight are in
        the way — then the caller waits for them to settle instead of stopping). One answer from
        one actor call: another trial's settle cannot slip in between the two."""
        amount = max(0, int(amount_micro))
        if self.spent_micro + self.reserved_micro + amount > self.cap_micro:
            self.refusals += 1
            only_inflight = self.reserved_micro > 0 and self.spent_micro + amount <= self.cap_micro
            message = (
                f"sweep budget of ${self.cap_micro / MICRO:.4f} reached: spent ${self.spent_micro / MICRO:.4f} "
                f"by all trials, in flight ${self.reserved_micro / MICRO:.4f}, {what} may cost up to "
                f"${amount / MICRO:.4f}; raise the sweep's --budget-usd to continue"
            )
            return message, only_inflight
        self.reserved_micro += amount
        self.reservations += 1
        return None

    def blocked_only_by_inflight(self, amount_micro: int) -> bool:
        amount = max(0, int(amount_micro))
        return self.reserved_micro > 0 and self.spent_micro + amount <= self.cap_micro

    def settle(self, reserved_micro: int, actual_micro: int) -> None:
        self.reserved_micro -= int(reserved_micro)
        self.spent_micro += max(0, int(actual_micro))

    def state(self) -> dict[str, Any]:
        return {
            "cap_micro_usd": self.cap_micro,
            "spent_micro_usd": self.spent_micro,
            "reserved_micro_usd": self.reserved_micro,
            "reservations": self.reservations,
            "refusals": self.refusals,
        }


def make_holder(ray: Any, cap_usd: float, spent_micro: int) -> Any:
    # one CPU-less actor: it must never wait for a slot behind the trials it serves
    return ray.remote(BudgetHolder).options(num_cpus=0, max_restarts=0).remote(cap_usd, spent_micro)


def spent_micro_of(run_paths: list[Path]) -> int:
    """What the trials' ledgers say was spent (the good records of each chain)."""
    total = 0
    for p in run_paths:
        led = Path(p) / "ledger.jsonl"
        if led.is_file():
            total += int(verify_ledger(led).total_micro_usd)
    return total


class SharedBudget:
    """A trial's budget: its own `Budget`, within the sweep's holder (a Ray actor handle)."""

    def __init__(self, local: Budget, holder: Any):
        import ray  # lazy: optional extra 'ray'

        self._ray = ray
        self.local = local
        self.holder = holder

    @property
    def cap_usd(self) -> float | None:
        return self.local.cap_usd

    @property
    def cap_micro(self) -> int:
        """Always a cap: the sweep's (or the trial's own, when that is lower)."""
        if not hasattr(self, "_sweep_cap_micro"):
            self._sweep_cap_micro = int(self._call(self.holder.state)["cap_micro_usd"])
        own = self.local.cap_micro
        return self._sweep_cap_micro if own is None else min(own, self._sweep_cap_micro)

    @property
    def spent_usd(self) -> float:
        return self.local.spent_usd

    def _call(self, method: Any, *args: Any) -> Any:
        return self._ray.get(method.remote(*args), timeout=RESERVE_TIMEOUT_S)

    def reserve(self, worst_case_usd: float, what: str = "the next call") -> Reservation:
        res = self.local.reserve(worst_case_usd, what)  # the trial's own cap first
        try:
            refused = self._call(self.holder.reserve, res.micro_usd, what)
        except BaseException:
            self.local.settle(res, 0)
            raise
        if refused is not None:
            self.local.settle(res, 0)
            self._wait_verdict = bool(refused[1])
            raise BudgetExceeded(refused[0])
        self._wait_verdict = False
        return res

    _wait_verdict = False  # the last refusal's: only calls in flight (of any trial) were in the way

    def blocked_only_by_inflight(self, worst_case_usd: float) -> bool:
        # the client asks right after a refusal, with no await in between: answer with that
        # refusal's verdict (a second actor call could see another trial's settle in between)
        return self._wait_verdict or self.local.blocked_only_by_inflight(worst_case_usd)

    def settle(self, reservation: Reservation, actual_micro_usd: int) -> None:
        if reservation.settled:
            return
        amount = reservation.micro_usd
        self.local.settle(reservation, actual_micro_usd)
        self._call(self.holder.settle, amount, actual_micro_usd)
