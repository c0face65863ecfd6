"""The one-line bar at the top of every mode: mode, selected run, its status, and the
"practice (simulated pool)" label whenever the pool is simulated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:
    from minertui.runmodel import RunSnapshot
from minertui.widgets.format import STATUS_RICH

# = trinity.config.PRACTICE (a test holds them equal): importing trinity.config here would bring
# pydantic onto the UI thread in the middle of a redraw (0.7 s on a shared box)
PRACTICE = "practice"


def is_practice(snap: RunSnapshot | None) -> bool:
    """The *pool* is simulated. Practice questions or a practice matrix answered by a paid pool
    (`--pool openrouter --questions practice`) are real calls, not a simulation."""
    if snap is None:
        return False
    cfg = snap.config
    pool = snap.pool
    if pool is None:  # a cached run replays its matrix: simulated when that is the practice one
        return cfg.mode == "cached" and cfg.matrix == PRACTICE
    return pool == PRACTICE


def shorten_middle(text: str, width: int) -> str:
    """`text` cut to `width` characters with '…' in the middle (both ends of a run id matter)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


class RunBar(Static):
    DEFAULT_CSS = "RunBar { height: 1; background: $panel; padding: 0 1; }"

    def show(self, mode: str, snap: RunSnapshot | None, note: str = "") -> None:
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append("minertui", style="bold")
        t.append(f" · {mode}")
        if snap is not None:
            label = " · practice (simulated pool)" if is_practice(snap) else ""
            if label:  # the demo's note repeats the label: say it once
                note = note.removeprefix("practice (simulated pool)").lstrip(": ")
            # the run id gives way (middle ellipsis) before the status or the simulated label do
            fixed = (
                len(t.plain) + len(" · ") + len(" ") + len(snap.shown_status) + len(label) + len(note and f" · {note}")
            )
            room = (self.size.width or 78) - fixed
            t.append(" · ")
            t.append(shorten_middle(snap.id, max(12, room)), style="bold")
            t.append(" ")
            t.append(snap.shown_status, style=STATUS_RICH.get(snap.shown_status, ""))
            if label:
                t.append(label, style="italic")
        else:
            t.append(" · no run selected", style="dim")
        if note:
            t.append(f" · {note}", style="yellow")
        if t != getattr(self, "_shown", None):  # an unchanged bar costs no repaint
            self._shown = t
            self.update(t)
