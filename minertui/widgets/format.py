"""Text formatting shared by the screens. Times are shown in UTC (deterministic, and what a
remote GPU box logs in)."""

from __future__ import annotations

import math
from datetime import datetime, timezone

from rich.text import Text

from trinity.runs.fmt import duration, money  # noqa: F401 — the one money and duration format, for the screens

STATUS_STYLE = {
    "running": "bold $success",
    "finished": "$primary",
    "stopped": "$warning",
    "failed": "bold $error",
    "interrupted": "bold $error",
    "created": "$secondary",
    "pausing…": "$warning",
    "stopping…": "$warning",
    "paused": "$warning",
    "resuming…": "$success",
}
STATUS_RICH = {
    "running": "bold green",
    "finished": "cyan",
    "stopped": "yellow",
    "failed": "bold red",
    "interrupted": "bold red",
    "created": "dim",
    "pausing…": "yellow",
    "stopping…": "yellow",
    "paused": "yellow",
    "resuming…": "green",
}


def usd(x: float | None, digits: int = 4) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return f"${x:,.{digits}f}" if abs(x) < 100 else f"${x:,.2f}"


def usd_cap(x: float | None) -> str:
    """A budget as typed: $0.05, $2.5, $10 (never rounded to $0)."""
    if x is None or not math.isfinite(x):
        return "—"
    text = f"{x:,.4f}".rstrip("0").rstrip(".")
    return f"${text}"


def spend_of(spend: float, budget: float | None) -> str:
    """'$0.012/$0.05': the spend with enough digits to move against a small budget."""
    digits = 2 if budget is None or budget >= 10 else 3 if budget >= 1 else 4
    return usd(spend, digits) + (f"/{usd_cap(budget)}" if budget else "")


def num(x: float | None, fmt: str = ".3f") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    return format(x, fmt)


def utc(ts: float | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    if ts is None or not math.isfinite(ts):
        return "—"
    return datetime.fromtimestamp(ts, timezone.utc).strftime(fmt)


def iso_short(iso: str) -> str:
    """'2026-11-29T19:36:40+00:00' -> '2026-11-29 19:36' (UTC)."""
    if not iso:
        return "—"
    try:
        dt = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso[:16]
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%d %H:%M")


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_RICH.get(status, ""))


def bar(frac: float, width: int, fill: str = "█", empty: str = "░") -> str:
    """A plain-text bar: readable without truecolor and in snapshots."""
    frac = 0.0 if not math.isfinite(frac) else min(1.0, max(0.0, frac))
    n = int(round(frac * width))
    return fill * n + empty * (width - n)
