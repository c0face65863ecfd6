"""The minertui app: modes, key bindings, the reader timer, themes, quitting.

Data flow (like dolphie / memray's live view): a 2 Hz timer starts one poll at a time in a
worker thread (`Reader.poll`); the poll posts one immutable `RunsUpdated`; the app keeps the
latest and asks only the visible screen to redraw (inside `batch_update`).
"""

from __future__ import annotations

import asyncio
import importlib
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from rich.console import Console
from textual import work
from textual.app import App, ScreenStackError
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from minertui.keymap import load_keymap, palette_commands
from minertui.messages import BaselinePinned, CompareChanged, FormDraft, RunsUpdated
from minertui.modes import MODE_KEYS
from minertui.notify import EndWatcher, Notifier, parse_settings
from minertui.screens.common import AppState, ModeScreen
from minertui.screens.help import ConfirmScreen, HelpScreen
from minertui.settings import DEFAULT_THEME, load_themes, read_settings, save_settings, state_dir
from minertui.widgets.tables import export_dir
from trinity.errors import TrinityError

if TYPE_CHECKING:
    from minertui.notify import EndWatcher, Notifier
    from minertui.reader import Poll, Reader
    from minertui.supervisor import Supervisor


def _mode_screen(mode: str) -> Callable[[], Screen]:
    """The factory of a mode's screen: its module is imported when the mode is first shown."""

    def make() -> Screen:
        return getattr(importlib.import_module(f"minertui.screens.{mode}"), f"{mode.capitalize()}Screen")()

    return make


class MinerApp(App):
    TITLE = "minertui"
    CSS_PATH = [Path(__file__).with_name("app.tcss")]  # absolute: subclasses live elsewhere
    ENABLE_COMMAND_PALETTE = True
    # screens (and numpy, plotext behind them) load when first shown: the first frame stays fast
    MODES = {mode: _mode_screen(mode) for _key, mode, _label in MODE_KEYS}
    BINDINGS = [
        *(Binding(key, f"mode('{mode}')", label, id=f"mode.{mode}") for key, mode, label in MODE_KEYS),
        Binding("question_mark,f1", "help", "Help", id="app.help"),
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("ctrl+p", "command_palette", "Palette", show=False, id="app.palette"),
    ]
    POLL_S = 0.5  # ≤ 2 Hz redraws

    def __init__(
        self,
        runs_root: str | Path = "runs",
        theme: str | None = None,
        open_run: str | Path | None = None,
        start_mode: str = "runs",
        poll: bool = True,
        demo: bool = False,
    ) -> None:
        super().__init__()
        self.runs_root = Path(runs_root)
        self._supervisor: Supervisor | None = None  # made on first use (`supervisor`)
        self._supervisor_lock = threading.Lock()  # the poll thread and the UI may both ask first
        self._reader: Reader | None = None
        self._open_run = open_run
        self.latest: Poll | None = None
        self.start_mode = start_mode
        self.auto_poll = poll
        self.demo = demo
        self.demo_note = ""
        self.demo_run: Path | None = None  # the demo's live run (its note is shown only with it)
        self.submit_defaults: dict[str, str] = {}  # the demo pre-fills Submit (miner, throwaway repo)
        self.unsaved: dict[str, str] = {}  # what would be lost on quit -> why
        self._polling = False
        self._drawn_at = 0.0
        self._requested_theme = theme
        self._theme_errors: list[str] = []
        self.compare: tuple[Path, ...] = ()  # runs marked in Runs (space), overlaid in Train
        self.baseline: Path | None = None  # the run pinned as the curves' baseline
        self.compare_metric: tuple[int, str] | None = None  # the overlay's metric asked for (a sweep: "val")
        self.smoothing = 0.6  # EMA of the curves (0 = raw), settings "smoothing"
        self.drafts: dict[str, dict] = {}  # closed forms' contents, for the session
        self.exit_note = ""  # a line for the terminal after the app closed
        self.hangup_guard: object | None = None  # the `minertui` command's (minertui.hangup)
        self.ends: EndWatcher | None = None  # runs seen ending (notifications), made on mount
        self.notifier: Notifier | None = None

    # ---- start-up ------------------------------------------------------------------------
    def on_mount(self) -> None:
        themes, self._theme_errors = load_themes()
        for t in themes:
            self.register_theme(t)
        settings, settings_errors = read_settings()
        wanted = self._requested_theme or settings.theme or DEFAULT_THEME
        if wanted not in self.available_themes:
            if self._requested_theme:
                self._theme_errors.append(f"theme '{wanted}' not found; using {DEFAULT_THEME}")
            wanted = DEFAULT_THEME if DEFAULT_THEME in self.available_themes else "textual-dark"
        self.theme = wanted
        self.theme_changed_signal.subscribe(self, lambda t: save_settings(theme=t.name))
        if settings.smoothing is not None:
            self.smoothing = settings.smoothing

        keymap, errors = load_keymap(settings.keymap, type(self))
        self._theme_errors.extend(errors)
        if keymap:
            self.set_keymap(keymap)
        for err in self._theme_errors:
            self.notify(err, title="theme", severity="warning", timeout=8)
        for err in settings_errors:
            self.notify(err, title="settings", severity="warning", timeout=10)
        self._install_signal_handlers()
        self._setup_notifications(settings.get("notifications"))
        self.switch_mode(self.start_mode)
        if self.auto_poll:
            self.set_interval(self.POLL_S, self.poll_soon)
            self.call_after_refresh(self.poll_soon)
        if self.demo:
            from minertui.demo import start_demo  # lazy: numpy + PyYAML kept off the app's first frame

            start_demo(self)

    def _install_signal_handlers(self) -> None:
        """SIGHUP (SSH dropped, terminal closed) and SIGTERM end the app cleanly; the engines
        live in their own sessions and keep running. The `minertui` command installs its
        HangupGuard instead (it also ends an app whose terminal died mid-write)."""
        if self.hangup_guard is not None:
            return

        try:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGHUP, signal.SIGTERM):
                loop.add_signal_handler(sig, self._hang_up)
        except (RuntimeError, NotImplementedError, ValueError):
            pass

    def _setup_notifications(self, raw: object) -> None:
        ns, errors = parse_settings(raw)
        for err in errors:
            self.notify(err, title="settings", severity="warning", timeout=8)
        self.ends = EndWatcher()
        self.notifier = Notifier(
            ns,
            write=self._write_terminal,
            bell=self.bell,
            spawn=self._spawn_notify,
            warn=lambda msg: self.call_from_thread(self.notify, msg, title="notify", severity="warning"),
        )

    def _spawn_notify(self, fn: Callable[[], None]) -> None:
        self.run_worker(fn, thread=True, group="notify", exit_on_error=False)

    def _write_terminal(self, text: str) -> None:
        driver = self._driver
        if driver is not None:
            driver.write(text)
            driver.flush()

    def _hang_up(self) -> None:
        self.exit(return_code=0)

    # ---- the supervisor and the reader ---------------------------------------------------
    @property
    def supervisor(self) -> Supervisor:
        """Made on first use (it brings the run records and pydantic), i.e. after the first frame:
        the first poll, or an engine action."""
        with self._supervisor_lock:
            if self._supervisor is None:
                from minertui.supervisor import Supervisor  # lazy: run records + pydantic kept off the first frame

                self._supervisor = Supervisor(self.runs_root)
            return self._supervisor

    def release_servers(self) -> None:
        """On quit or a closed terminal: the demo stops its own engine and leaves a note; any app
        stops the servers it started unless a run it launched still needs them."""
        if self.demo:
            from minertui.demo import stop_demo_servers  # lazy: only the demo needs it (numpy + PyYAML)

            stop_demo_servers(self)
        elif self._supervisor is not None:  # never made: this app started nothing
            self._supervisor.release_servers()

    @property
    def reader(self) -> Reader:
        """Made on first use (it brings numpy), i.e. in the first poll, after the first frame."""
        if self._reader is None:
            from minertui.reader import Reader  # lazy: numpy + PyYAML kept off the app's first frame

            reader = Reader(self.runs_root, self.supervisor)
            if self._open_run is not None:
                reader.open(self._open_run)
            reader.want_traces = self.start_mode == "traces"
            self._reader = reader
        return self._reader

    def poll_soon(self) -> None:
        if not self._polling:
            self._polling = True
            self._poll_worker()

    @work(thread=True, group="poll", exit_on_error=False)
    def _poll_worker(self) -> None:
        try:
            poll = self.reader.poll()
        finally:
            self._polling = False
        self.post_message(RunsUpdated(poll))

    async def refresh_now(self) -> Poll:
        """Poll synchronously (tests, after an action) and redraw."""
        poll = await asyncio.to_thread(self.reader.poll, True)
        self._apply(poll, force=True)
        return poll

    def on_runs_updated(self, message: RunsUpdated) -> None:
        self._apply(message.poll)
        cur = message.poll.current
        if self.auto_poll and cur is not None and cur.catching_up:
            self.call_after_refresh(self.poll_soon)  # behind: read the next chunk after this frame

    def _apply(self, poll: Poll, force: bool = False) -> None:
        if self.latest is not None and poll.seq < self.latest.seq:
            return
        self.latest = poll
        if self.ends is not None and self.notifier is not None:
            for ended in self.ends.update(poll.runs):
                self.notify(
                    ended.body,
                    title=ended.title,
                    severity="error" if ended.kind == "failed" else "information",
                    timeout=10,
                )
                self.notifier.deliver(ended)
        for ex in poll.exited:
            if ex.code != 0:
                where = "before it created its run" if not ex.created else ""
                log = f"log: {ex.log_path}" if ex.log_path is not None else ""
                self.notify(
                    f"engine for {ex.run_dir.name} exited with status {ex.code} {where}\n{ex.log_tail}\n{log}".replace(
                        " \n", "\n"
                    ),
                    title="engine",
                    severity="error",
                    timeout=12,
                )
        try:
            screen = self.screen
        except ScreenStackError:  # a poll that lands while the app is closing: nothing to draw
            return
        cur = poll.current
        now = time.monotonic()
        if not force and cur is not None and cur.catching_up and now - self._drawn_at < self.POLL_S:
            return  # reading a backlog: keep reading, redraw at most at 2 Hz
        if isinstance(screen, ModeScreen):
            self._drawn_at = now
            with self.batch_update():
                screen.show(poll)

    # ---- selection -----------------------------------------------------------------------
    def select_run(self, path: Path) -> None:
        self.reader.current = Path(path).resolve()
        self.poll_soon()

    @property
    def current(self):
        return self.latest.current if self.latest else None

    # ---- actions -------------------------------------------------------------------------
    def action_mode(self, mode: str) -> None:
        if mode == "traces":
            self.reader.want_traces = True
        self.switch_mode(mode)
        if self.latest is not None and isinstance(self.screen, ModeScreen):
            self.screen.show(self.latest)
        self.poll_soon()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        if not self.unsaved:
            self.exit()
            return
        why = "; ".join(self.unsaved.values())

        def answer(yes: bool | None) -> None:
            if yes:
                self.exit()

        self.push_screen(ConfirmScreen(f"Quit? {why} will be lost.", "Quit", "Stay"), answer)

    def on_compare_changed(self, message: CompareChanged) -> None:
        self.compare = tuple(message.paths)
        if message.metric is not None:  # (request number, metric): asking twice is asking again
            self.compare_metric = ((self.compare_metric or (0,))[0] + 1, message.metric)

    def on_form_draft(self, message: FormDraft) -> None:
        self.drafts[message.form] = dict(message.values)

    def on_baseline_pinned(self, message: BaselinePinned) -> None:
        self.baseline = message.path

    def get_system_commands(self, screen):
        yield from super().get_system_commands(screen)
        yield from palette_commands(self, screen)

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        """Screenshots go to the export folder (made when missing), not a ~/Downloads that a
        rented box does not have; the toast says where."""
        where = Path(path) if path else export_dir()
        try:
            where.mkdir(parents=True, exist_ok=True)
            name = self.save_screenshot(filename, str(where), time_format)
        except OSError as e:
            self.notify(f"screenshot not saved: {e}", severity="error")
            return None
        self.notify(f"screenshot saved: {name}", title="screenshot", timeout=8)
        return name

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            err = event.worker.error
            self.notify(
                f"{type(err).__name__}: {err}" if not _is_user_error(err) else str(err),
                title=event.worker.name or "error",
                severity="error",
                timeout=10,
            )

    def on_unmount(self) -> None:
        self.release_servers()

    def _print_error_renderables(self) -> None:
        """An internal error never dumps a traceback on the terminal: it goes to a crash log,
        and the terminal gets one line (the CLI contract: `error: …`)."""
        if not self._exit_renderables:
            return
        path = state_dir() / f"crash-{time.strftime('%Y%m%d-%H%M%S')}.log"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                console = Console(file=f, width=120, color_system=None)
                for r in self._exit_renderables:
                    console.print(r)
            where = f"details in {path}"
        except OSError:
            where = "no crash log could be written"
        err = self._exception
        what = f"{type(err).__name__}: {err}" if err is not None else "internal error"
        print(f"error: minertui stopped on an internal error ({what}); {where}", file=sys.stderr)
        self._exit_renderables.clear()


def _is_user_error(err: BaseException) -> bool:
    return isinstance(err, TrinityError)


if TYPE_CHECKING:  # the screens type the app by AppState: MinerApp must provide all of it

    def _provides_app_state(app: MinerApp) -> AppState:
        return app
