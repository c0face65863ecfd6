"""How a run's money and times are written for people: `trinity status` / `trinity watch` and
the app's screens use these, so both say the same thing. Standard library only: the app's first
frame imports this module, so nothing heavy (pydantic, numpy) may come in with it."""

from __future__ import annotations

import math
import time


def money(x: float | None) -> str:
    """USD with the precision it has (the ledger counts micro-USD): $0.025, $1.50, $0.000125."""
    if x is None or not math.isfinite(x):
        return "—"
    text = f"{x:,.6f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def duration(secs: float | None) -> str:
    """1h05m, 4m09s, 7s."""
    if secs is None or not math.isfinite(secs):
        return "—"
    s = int(round(secs))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def age(ts: float | None, now: float | None = None) -> str:
    """How long ago a unix time was: '4m09s ago'."""
    if ts is None:
        return "—"
    return duration(max(0.0, (now if now is not None else time.time()) - ts)) + " ago"
