"""Messages the reader posts to the app: small, immutable, one per refresh."""

from __future__ import annotations

from textual.message import Message

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minertui.reader import Poll


class RunsUpdated(Message):
    """One poll of the runs root (all runs, the selected run, engines that exited)."""

    def __init__(self, poll: Poll) -> None:
        super().__init__()
        self.poll = poll
