"""The one-line bar at the top of every mode: mode, selected run, its status, and the
"practice (simulated pool)" label whenever the pool is simulated."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minertui.runmodel import RunSnapshot
from minertui.widgets.format import STATUS_RICH


def is_practice(snap: RunSnapshot | None) -> bool:
    if snap is None:
        return False
    cfg = snap.meta.get("config") or {}
    names = [snap.meta.get("pool"), cfg.get("pool"), cfg.get("questions"), cfg.get("matrix")]
    return any(isinstance(n, str) and "practice" in n for n in names)


class RunBar(Static):
    DEFAULT_CSS = "RunBar { height: 1; background: $panel; padding: 0 1; }"

    def show(self, mode: str, snap: RunSnapshot | None, note: str = "") -> None:
        t = Text()
        t.append("minertui", style="bold")
        t.append(f" · {mode}")
        if snap is not None:
            t.append(" · ")
            t.append(snap.id, style="bold")
            t.append(" ")
            t.append(snap.status, style=STATUS_RICH.get(snap.status, ""))
            if is_practice(snap):
                t.append(" · practice (simulated pool)", style="italic")
        else:
            t.append(" · no run selected", style="dim")
        if note:
            t.append(f" · {note}", style="yellow")
        if t != getattr(self, "_shown", None):  # an unchanged bar costs no repaint
            self._shown = t
            self.update(t)
