"""The frame every mode shares: the run bar on top, the body, the footer with the keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen

if TYPE_CHECKING:
    from pathlib import Path

    from minertui.reader import Poll, Reader
    from minertui.supervisor import Supervisor
from minertui.widgets.keybar import KeyBar
from minertui.widgets.runbar import RunBar
from trinity.errors import TrinityError


class AppState(Protocol):
    """What the screens read of the app (minertui.app.MinerApp, which app.py checks against this):
    declared here because a screen cannot import the app module (app imports the screens)."""

    runs_root: Path
    latest: Poll | None
    unsaved: dict[str, str]
    smoothing: float

    @property
    def supervisor(self) -> Supervisor: ...

    @property
    def reader(self) -> Reader: ...

    @property
    def current(self) -> Any: ...

    def select_run(self, path: Path) -> None: ...

    def poll_soon(self) -> None: ...

    def action_mode(self, mode: str) -> None: ...


if TYPE_CHECKING:

    class TypedApp(App[Any], AppState):  # for the type checker only: the running app's type
        pass


class ModeScreen(Screen):
    if TYPE_CHECKING:
        app: TypedApp  # the inherited property returns the MinerApp (typing only)
    MODE = ""
    # a focused text field takes every letter and digit: Esc hands the keys back to the mode
    BINDINGS = [Binding("escape", "leave_field", "Leave field", show=False, id="mode.leave_field")]

    def action_leave_field(self) -> None:
        self.set_focus(None)

    def compose(self) -> ComposeResult:
        yield RunBar(id="runbar")
        yield from self.compose_body()
        yield KeyBar()  # this mode's keys that fit, then always Help and Quit; ^p has the rest

    def compose_body(self) -> ComposeResult:
        return iter(())

    def show(self, poll: Poll) -> None:
        """Redraw from one poll. Called only while this screen is the visible one."""
        try:
            self.query_one(RunBar).show(self.MODE, poll.current, self.demo_note(poll.current))
            self.update_body(poll)
        except NoMatches:  # resumed before its widgets were mounted: on_mount draws it
            pass

    def update_body(self, poll: Poll) -> None:
        pass

    def demo_note(self, snap: Any) -> str:
        """The demo's note belongs to the demo's live run: not shown while another run is selected."""
        note: str = getattr(self.app, "demo_note", "")
        demo_run = getattr(self.app, "demo_run", None)
        if note and snap is not None and demo_run is not None and snap.path.resolve() != demo_run.resolve():
            return ""
        return note

    def on_mount(self) -> None:
        self.call_after_refresh(self.on_screen_resume)

    def on_screen_resume(self) -> None:
        latest = getattr(self.app, "latest", None)
        if latest is not None:
            self.show(latest)
        elif self.query(RunBar):
            self.query_one(RunBar).show(self.MODE, None, getattr(self.app, "demo_note", ""))


# EngineActions is mixed into a ModeScreen: the type checker sees it as one (its app, notify)
if TYPE_CHECKING:
    _EngineHost = ModeScreen
else:
    _EngineHost = object


class EngineActions(_EngineHost):
    """Pause / stop / resume of the engine of one run, for the modes that offer them (p, s, r).
    A screen says which run with `engine_target()`."""

    def engine_target(self) -> Path | None:
        raise NotImplementedError

    def _engine(self, what: str) -> None:
        path = self.engine_target()
        if path is None:
            return
        sup = self.app.supervisor
        try:
            if what == "pause":
                pid = sup.pause(path)
                self.notify(f"asked engine {pid} to checkpoint and stop ({path.name})")
            elif what == "stop":
                pid = sup.stop(path)
                self.notify(f"stopping engine {pid} ({path.name}); killed if still running in 15 s")
            else:
                sup.resume(path)
                self.notify(f"resuming {path.name}")
        except TrinityError as e:
            self.notify(str(e), severity="error")
        self.app.poll_soon()

    def action_pause(self) -> None:
        self._engine("pause")

    def action_stop(self) -> None:
        self._engine("stop")

    def action_resume(self) -> None:
        self._engine("resume")
