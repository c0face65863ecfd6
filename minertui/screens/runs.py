"""Runs mode: every run under the runs root; open, start, pause, stop, resume."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static

from typing import TYPE_CHECKING

from minertui.screens.common import EngineActions, ModeScreen
from minertui.widgets.format import fmt_duration, iso_short, num, status_text, usd

if TYPE_CHECKING:  # numpy comes with them; the Runs mode draws its first frame without it
    from minertui.reader import Poll
    from minertui.runmodel import RunSnapshot

COLUMNS = ("run", "status", "gen", "best", "spend", "ETA", "mode", "pool", "started (UTC)")  # most needed first: 80 columns


def run_row(s: RunSnapshot) -> tuple:
    total = s.generations_total
    gen = f"{s.generations_done}/{total}" if total else str(s.generations_done)
    budget = s.budget_usd
    spend = usd(s.spend_usd, 2) + (f"/{usd(budget, 0)}" if budget else "")
    pool = str(s.meta.get("pool") or (s.meta.get("config") or {}).get("pool") or "—")
    mode = str(s.meta.get("mode") or (s.meta.get("config") or {}).get("mode") or "—")
    eta = fmt_duration(s.eta_secs) if s.eta_secs is not None else "—"
    return (s.id, s.status, gen, num(s.best), spend, eta, mode, pool, iso_short(s.started))


class RunsScreen(EngineActions, ModeScreen):
    MODE = "Runs"
    CSS_PATH = "runs.tcss"
    BINDINGS = [
        Binding("enter", "open_run", "Open", id="runs.open"),
        Binding("n", "new_run", "New", id="runs.new"),
        Binding("p", "pause", "Pause", id="runs.pause"),
        Binding("s", "stop", "Stop", id="runs.stop"),
        Binding("r", "resume", "Resume", id="runs.resume"),
    ]

    def compose_body(self) -> ComposeResult:
        table = DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        table.add_columns(*COLUMNS)
        yield table
        yield Static("", id="runs-detail")

    def update_body(self, poll: Poll) -> None:
        table = self.query_one(DataTable)
        rows = [(str(s.path), run_row(s)) for s in poll.runs]
        if rows != getattr(self, "_rows", None):
            # keep the highlighted run; on the first fill, highlight the app's selected run
            # (e.g. the one `minertui open` named), not simply the newest
            cur = poll.current
            keep = self._selected_key() if getattr(self, "_rows", None) else (str(cur.path) if cur else None)
            table.clear()
            for key, row in rows:
                table.add_row(*(status_text(v) if i == 1 else v for i, v in enumerate(row)), key=key)
            self._rows = rows
            if keep is not None:
                for i, (key, _) in enumerate(rows):
                    if key == keep:
                        table.move_cursor(row=i, animate=False)
        detail = self.query_one("#runs-detail", Static)
        if not poll.runs:
            detail.update(Text(f"No runs under {self.app.runs_root}. Press n to start one "
                               "(or run `minertui demo`).", style="dim"))
        else:
            s = self._selected(poll)
            if s is not None:
                detail.update(self._detail(s))

    def _detail(self, s: RunSnapshot) -> Text:
        cfg = s.meta.get("config") or {}
        t = Text()
        t.append(f"{s.path}\n", style="dim")
        t.append(f"encoder {s.meta.get('encoder') or cfg.get('encoder') or '—'} · "
                 f"popsize {cfg.get('popsize', '—')} · m {cfg.get('m', '—')} · "
                 f"σ0 {cfg.get('sigma0', '—')} · seed {cfg.get('seed', '—')}")
        if s.meta.get("status_message"):
            t.append(f"\n{s.meta['status_message']}", style="italic")
        if s.error:
            t.append(f"\n{s.error}", style="red")
        return t

    def _selected_key(self) -> str | None:
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return None
        try:
            return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:  # cursor outside the rows while the table is rebuilt
            return None

    def _selected(self, poll: Poll | None = None) -> RunSnapshot | None:
        poll = poll or self.app.latest
        key = self._selected_key()
        if poll is None or key is None:
            return None
        return next((s for s in poll.runs if str(s.path) == key), None)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.app.select_run(Path(event.row_key.value))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open_run()

    # ---- actions -------------------------------------------------------------------------
    def _run_path(self) -> Path | None:
        key = self._selected_key()
        if key is None:
            self.notify("no run selected", severity="warning")
        return Path(key) if key else None

    def action_open_run(self) -> None:
        path = self._run_path()
        if path is not None:
            self.app.select_run(path)
            self.app.action_mode("train")

    def action_new_run(self) -> None:
        from minertui.screens.newrun import NewRunScreen
        self.app.push_screen(NewRunScreen())

    def engine_target(self) -> Path | None:
        return self._run_path()
