"""Messages the reader posts to the app: small, immutable, one per refresh."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from minertui.reader import Poll


class RunsUpdated(Message):
    """One poll of the runs root (all runs, the selected run, engines that exited)."""

    def __init__(self, poll: Poll) -> None:
        super().__init__()
        self.poll = poll


class CompareChanged(Message):
    """The runs marked for comparison (Runs, space), in the order they were marked; `metric`:
    what the overlay should compare ("val" for a sweep's trials; None: leave it as it is)."""

    def __init__(self, paths: tuple, metric: str | None = None) -> None:
        super().__init__()
        self.paths = paths
        self.metric = metric


class BaselinePinned(Message):
    """The run pinned as the baseline of the curves (None: unpinned)."""

    def __init__(self, path) -> None:
        super().__init__()
        self.path = path


class FormDraft(Message):
    """What a closed form held (kept for the session; {} once used)."""

    def __init__(self, form: str, values: dict) -> None:
        super().__init__()
        self.form = form
        self.values = values
