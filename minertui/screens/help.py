"""`?` help (every binding, from the bindings themselves) and the yes/no dialog."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from minertui.keys import keys_of

MODES_TEXT = {
    "Runs": "every run: status, generation, best, smoothed validation (val~), spend, ETA; Enter open, "
    "n new, p/s/r pause/stop/resume, R resume with a budget or more generations, space mark, "
    "c compare the marked runs, b pin a baseline, o/O sort (or click a header), / filter (it looks inside "
    "sweeps too), L engine log, "
    "C clone into the new-run form, A archive, D delete, e export (CSV + JSON)",
    "Train": "fitness curves (EMA +/-, raw faint; z/Z zoom, [ ] pan, 0 reset, f axis 0–1, v val/best), "
    "σ and spend in their own panels, the marked runs overlaid (c), progress, ETA (bounded by "
    "the budget), routing mix, B pin a score (the king's) as the baseline, l the full event log",
    "Ledger": "every paid call, totals per model and purpose, spend over time, budget, v verify the hash "
    "chain, / filter by model, purpose or day, o sort (or click a header), e export",
    "Traces": "every routing trajectory; filters (benchmark, right/wrong, model, role, generation), / question id, "
    "o sort (or click a header), e export, Enter drill-down (y copies its text)",
    "Analysis": "o oracle ceiling, b baselines, e evaluate the router, a all three (in a child process); "
    "each report's findings, then its tables: s/S sort the focused one (Tab: the next) or click "
    "a header, / filter them all, x export each as shown (CSV + JSON) with the full reports",
    "Submit": "pack a bundle, run the gates, show the plan (PgUp/PgDn), x execute it, c copy the PR URL",
}


def bindings_table(app) -> Table:
    """Every key of the app and of the mode below this dialog, as a person reads it ('/', 'Esc'),
    with the user's keymap applied, and each binding's id (the keymap's name for it)."""
    t = Table(box=None, expand=True, show_header=True)
    t.add_column("key", style="bold", no_wrap=True)
    t.add_column("what")
    t.add_column("id (keymap)", style="dim", no_wrap=True)
    screens = [app] + list(app.screen_stack[-2:-1])
    for node in screens:
        for b, keys in keys_of(app, node):
            if not b.description:
                continue
            t.add_row(keys, b.description, b.id or "")
    return t


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,question_mark", "dismiss", "Close", id="help.close"),
        # vi keys scroll here as in the tables (the scroll itself has the arrows and PgUp/PgDn)
        Binding("j", "scroll(1)", "Down", show=False, id="help.down"),
        Binding("k", "scroll(-1)", "Up", show=False, id="help.up"),
        Binding("g", "scroll_home", "Top", show=False, id="help.top"),
        Binding("G", "scroll_end", "Bottom", show=False, id="help.bottom"),
    ]

    def action_scroll(self, lines: int) -> None:
        self.query_one("#help", VerticalScroll).scroll_relative(y=lines, animate=False)

    def action_scroll_home(self) -> None:
        self.query_one("#help", VerticalScroll).scroll_home(animate=False)

    def action_scroll_end(self) -> None:
        self.query_one("#help", VerticalScroll).scroll_end(animate=False)

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    #help { width: 90%; max-width: 110; height: 90%; border: round $primary; background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text("minertui — keys", style="bold"))
            yield Static(bindings_table(self.app))
            modes = Table(box=None, expand=True, show_header=False)
            modes.add_column(style="bold", no_wrap=True)
            modes.add_column()
            for k, (name, text) in enumerate(MODES_TEXT.items(), start=1):
                modes.add_row(f"{k} {name}", text)
            yield Static(Text("\nmodes", style="bold"))
            yield Static(modes)
            yield Static(
                Text(
                    "\n^p opens the command palette: every action of every mode, themes, "
                    'screenshot. Rebind keys in settings.json: "keymap": {"<id>": "key"}. '
                    "Engines run detached: quitting or losing SSH leaves them training; "
                    "reopen minertui to see them.",
                    style="dim",
                )
            )


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    #confirm { width: 60; height: auto; border: round $warning; background: $surface; padding: 1 2; }
    #confirm-buttons { height: 3; align-horizontal: right; }
    """

    def __init__(self, question: str, yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self.question, self.yes, self.no = question, yes, no

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(self.question)
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.no} (n)", id="no")
                yield Button(f"{self.yes} (y)", id="yes", variant="warning")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
