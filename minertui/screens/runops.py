"""Run management dialogs: resume with a new budget / more generations, the engine-log viewer,
and the file operations behind archive, delete and clone."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RichLog, Static

from minertui.widgets.format import money
from trinity.errors import TrinityError

if TYPE_CHECKING:
    from minertui.runmodel import RunSnapshot
    from minertui.screens.common import TypedApp

ARCHIVE = ".archive"  # under the runs root: not a run directory, so `list_runs` skips it


def archive_run(run_dir: Path, runs_root: Path) -> Path:
    target = Path(runs_root) / ARCHIVE / Path(run_dir).name
    if target.exists():
        raise OSError(f"{target} already exists")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(run_dir), str(target))
    return target


def delete_run(run_dir: Path) -> None:
    from trinity.runs.rundir import RunDir  # lazy: PyYAML loaded only when used

    if not RunDir(run_dir).exists():  # never rmtree something that is not a run
        raise OSError(f"{run_dir} is not a run directory (no run.json)")
    shutil.rmtree(run_dir)


def clone_config(s: RunSnapshot, runs_root: Path) -> tuple[Path, dict[str, str]]:
    """The run's resolved config written to `<root>/.configs/clone-<id>.yaml` (the whole config,
    practice settings and all), and the form fields it fills in."""
    import yaml  # lazy: PyYAML loaded only when used

    from minertui.screens.newrun import FIELDS  # lazy: PyYAML loaded only when used
    from trinity.io import atomic_write_text  # lazy: PyYAML loaded only when used

    config = s.config
    path = (Path(runs_root) / ".configs" / f"clone-{s.id}.yaml").resolve()
    # the file: the whole config as run.json recorded it (what the form's config path reads)
    text = yaml.safe_dump(config.to_json(), sort_keys=False)
    atomic_write_text(path, f"# cloned by minertui from run {s.id}\n" + text)
    fields: dict[str, str] = {}
    for name, _label, _ph, _kind in FIELDS:  # every form field is a RunConfig field
        v = getattr(config, name)
        if v is None:
            continue
        fields[name] = ",".join(map(str, v)) if isinstance(v, list) else str(v)
    if config.mode:
        fields["mode"] = config.mode
    return path, fields


def resume_args(budget: str, generations: str, done: int, planned: int | None = None) -> tuple[dict, str | None]:
    """({"budget_usd": …, "generations": …}, error) from the dialog's fields. "+N" is N more
    than the run's plan (a run at 23/30 with +5 goes to 35, never below its plan)."""
    out: dict = {}
    if budget.strip():
        try:
            out["budget_usd"] = float(budget.strip().lstrip("$"))
        except ValueError:
            return {}, f"budget: {budget!r} is not a number of dollars"
        if out["budget_usd"] <= 0:
            return {}, "budget: must be more than $0"
    if generations.strip():
        g = generations.strip()
        try:
            out["generations"] = max(done, planned or 0) + int(g[1:]) if g.startswith("+") else int(g)
        except ValueError:
            return {}, f"generations: {generations!r} is not a whole number (N in all, or +N more)"
        if out["generations"] <= done:
            return {}, f"generations: the run has done {done}; give more than that (or +N)"
    return out, None


class ResumeScreen(ModalScreen[None]):
    """`trinity resume RUN --budget-usd X --generations N`, from the app."""

    if TYPE_CHECKING:
        app: TypedApp  # the inherited property returns the MinerApp (typing only)

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="resume.cancel")]
    DEFAULT_CSS = """
    ResumeScreen { align: center middle; }
    #resume { width: 72; max-width: 95%; height: auto; border: round $primary; background: $surface; padding: 0 1; }
    #resume .row { height: 1; margin-top: 1; }
    #resume Label { width: 16; }
    #resume Input { width: 1fr; }
    #resume-err { color: $error; height: auto; }
    #resume-buttons { height: 3; align-horizontal: right; margin-top: 1; }
    """

    def __init__(self, s: RunSnapshot) -> None:
        super().__init__()
        self.snap = s
        self.sweep = None  # a trial of a sweep with a budget: the budget here is the sweep's

    def compose(self) -> ComposeResult:
        s = self.snap
        total = s.generations_total
        latest = getattr(self.app, "latest", None)
        self.sweep = next(
            (
                sw
                for sw in (latest.sweeps if latest is not None else ())
                if sw.budget_usd is not None and sw.trial_of(s.path) is not None
            ),
            None,
        )
        budget, spent = (
            (s.budget_usd, s.spend_usd) if self.sweep is None else (self.sweep.budget_usd, self.sweep.spent_usd)
        )
        whose = "" if self.sweep is None else f"trial of sweep {self.sweep.id}, which has "
        with Vertical(id="resume"):
            yield Static(
                Text.assemble(
                    ("Resume ", "bold"),
                    (s.id, "bold"),
                    f"\n{s.status} · {s.generations_done}/{total or '?'} generations · {whose}"
                    f"spent {money(spent)}" + (f" of {money(budget)}" if budget else ""),
                )
            )
            with Horizontal(classes="row"):
                yield Label("budget $" if self.sweep is None else "sweep budget $")
                yield Input(placeholder=f"keep {f'${budget:g}' if budget else 'none'}", id="r-budget", compact=True)
            with Horizontal(classes="row"):
                yield Label("generations")
                yield Input(
                    placeholder=f"keep {total or '?'} (N in all, or +N more than {total or s.generations_done})",
                    id="r-gens",
                    compact=True,
                )
            yield Static("", id="resume-err")
            with Horizontal(id="resume-buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Resume", id="go", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#r-budget", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.go()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "go":
            self.go()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def go(self) -> None:
        s = self.snap
        args, err = resume_args(
            self.query_one("#r-budget", Input).value,
            self.query_one("#r-gens", Input).value,
            s.generations_done,
            s.generations_total,
        )
        sw = self.sweep
        budget = args.get("budget_usd", s.budget_usd if sw is None else sw.budget_usd)
        spent = s.spend_usd if sw is None else sw.spent_usd
        if err is None and budget is not None and spent >= budget:
            err = (
                f"{'sweep ' if sw is not None else ''}budget: ${budget:g} is already spent ({money(spent)}); give more"
            )
        if err:
            self.query_one("#resume-err", Static).update(err)
            return
        try:
            self.app.supervisor.resume(s.path, **args)
        except TrinityError as e:
            self.query_one("#resume-err", Static).update(str(e))
            return
        said = ", ".join(f"{k.replace('_usd', '').replace('_', ' ')} {v}" for k, v in args.items())
        self.notify(f"resuming {s.id}" + (f" with {said}" if said else ""))
        self.app.poll_soon()
        self.dismiss(None)


class LogScreen(ModalScreen[None]):
    """A text file (an engine log), whole lines, wrapped: nothing is cut at the edge."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close", id="log.close"), Binding("y", "copy", "Copy", id="log.copy")]
    DEFAULT_CSS = """
    LogScreen { align: center middle; }
    #log { width: 95%; height: 90%; border: round $primary; background: $surface; }
    """
    MAX_BYTES = 1 << 20

    def __init__(self, path: Path | None, title: str, text: str | None = None) -> None:
        super().__init__()
        self.path, self.title_text, self.text = path, title, text

    def compose(self) -> ComposeResult:
        # min_width: RichLog wraps at 78 columns at least by default, wider than this dialog at
        # 80 columns, and the border then cut words off each line
        log = RichLog(id="log", wrap=True, markup=False, highlight=False, max_lines=20000, min_width=20)
        log.border_title = self.title_text
        log.border_subtitle = "Esc closes · y copies"
        yield log

    def on_mount(self) -> None:
        log = self.query_one(RichLog)
        text = self.text
        if text is None:
            text = self._read()
        self.text = text
        log.write(text)

    def _read(self) -> str:
        if self.path is None or not self.path.exists():
            return f"no log at {self.path} (runs started outside the app log to their terminal)"
        with open(self.path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - self.MAX_BYTES))
            data = f.read().decode("utf-8", "replace")
        head = f"… (first {size - self.MAX_BYTES:,} bytes not shown)\n" if size > self.MAX_BYTES else ""
        return head + data

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.text or "")
        self.notify("copied to the clipboard (OSC 52)")


class ScoreScreen(ModalScreen[float | None]):
    """A baseline given as a number (e.g. the current king's bundle score)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="score.cancel")]
    DEFAULT_CSS = """
    ScoreScreen { align: center middle; }
    #score { width: 60; max-width: 95%; height: auto; border: round $primary; background: $surface; padding: 0 1; }
    #score-err { color: $error; height: auto; }
    """

    def compose(self) -> ComposeResult:
        with Vertical(id="score"):
            yield Static("Baseline score (e.g. the king's bundle score, 0–1); empty unpins it")
            yield Input(placeholder="0.812", id="score-value", compact=True)
            yield Static("", id="score-err")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        raw = event.value.strip()
        if not raw:
            self.dismiss(None)
            return
        try:
            v = float(raw)
        except ValueError:
            self.query_one("#score-err", Static).update(f"{raw!r} is not a number")
            return
        self.dismiss(v)

    def action_cancel(self) -> None:
        self.dismiss(None)
