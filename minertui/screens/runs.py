"""Runs mode: every run under the runs root; open, start, pause, stop, resume (with a new budget
or more generations), archive, delete, clone; sort by any column (a smoothed validation
accuracy too), `/` filter, mark runs (space) to compare their curves, pin a baseline, export.

A sweep (a directory with sweep.json) is one row: its trials' states, the sweep's spend against
its budget, its best trial's validation accuracy. Enter (or x) expands it into its trials, which
are ordinary runs (open, pause, stop, resume); space on it marks all its trials, c overlays them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Static
from textual.widgets.data_table import ColumnKey

from minertui.messages import BaselinePinned, CompareChanged
from minertui.screens.common import EngineActions, ModeScreen
from minertui.screens.help import ConfirmScreen
from minertui.widgets.format import duration, iso_short, num, spend_of, status_text
from minertui.widgets.tables import ClickRecorder, FilterBar, export_table, filter_rows, header, header_miss, sort_rows

if TYPE_CHECKING:  # numpy comes with them; the Runs mode draws its first frame without it
    from minertui.reader import Poll
    from minertui.runmodel import RunSnapshot
    from minertui.sweeps import SweepSnapshot

# most needed first: 80 columns. "val~" is the validation accuracy smoothed (EMA, the curves'
# smoothing), so sorting by it is not a lottery on the last noisy point
COLUMNS = ("run", "status", "gen", "best", "val~", "spend", "ETA", "mode", "pool", "started (UTC)")
STARTED = COLUMNS.index("started (UTC)")


def _or_dash(v: object) -> str:
    return "—" if v is None else str(v)


def run_values(s: RunSnapshot, smoothing: float = 0.6) -> tuple:
    """The sortable values of a row (numbers where the column is a number)."""
    from minertui.runmodel import ema, last_finite  # lazy: numpy + pydantic kept off the app's first frame

    val = last_finite(ema(s.gens.val_acc, smoothing)) if len(s.gens) else None
    pool = s.pool or "—"
    mode = str((s.record.mode if s.record else None) or s.config.mode or "—")
    return (s.id, s.status, s.generations_done, s.best, val, s.spend_usd, s.eta_secs, mode, pool, s.started)


def run_row(s: RunSnapshot, smoothing: float = 0.6) -> tuple:
    """The row as shown (strings)."""
    v = run_values(s, smoothing)
    total = s.generations_total
    gen = f"{s.generations_done}/{total}" if total else str(s.generations_done)
    eta = s.eta
    eta_text = "—" if eta is None else duration(eta.secs) + ("$" if eta.limit == "budget" else "")
    return (
        s.id,
        s.shown_status,
        gen,
        num(s.best),
        num(v[4]),
        spend_of(s.spend_usd, s.budget_usd),
        eta_text,
        v[7],
        v[8],
        iso_short(s.started),
    )


def sweep_values(sw: SweepSnapshot, trials: list[RunSnapshot], smoothing: float = 0.6) -> tuple:
    """A sweep row's sortable values: its best trial's figures, the trials' spend summed."""
    vals = [run_values(t, smoothing) for t in trials]
    best = max((v[3] for v in vals if v[3] is not None), default=None)
    val = max((v[4] for v in vals if v[4] is not None), default=None)
    etas = [v[6] for v in vals if v[6] is not None]
    modes = {v[7] for v in vals if v[7] != "—"}
    pools = {v[8] for v in vals if v[8] != "—"}
    done = sum(t.generations_done for t in trials)
    return (
        sw.id,
        "sweep",
        done,
        best,
        val,
        sw.spent_usd,
        max(etas) if etas else None,
        "/".join(sorted(modes)) or "—",
        "/".join(sorted(pools)) or "—",
        sw.created,
    )


def sweep_row(sw: SweepSnapshot, trials: list[RunSnapshot], expanded: bool, smoothing: float = 0.6) -> tuple:
    v = sweep_values(sw, trials, smoothing)
    planned = {t.path: t.planned for t in sw.trials}  # a pending trial: its config's generations
    total = sum(t.generations_total or planned.get(t.path) or 0 for t in trials)
    gen = f"{v[2]}/{total}" if total else str(v[2])
    status = "sweep " + (sw.counts_text(short=True) if not sw.error else "unreadable")
    return (
        ("▾ " if expanded else "▸ ") + sw.id,
        status,
        gen,
        num(v[3]),
        num(v[4]),
        spend_of(sw.spent_usd, sw.budget_usd),
        "—" if v[6] is None else duration(v[6]),
        v[7],
        v[8],
        iso_short(sw.created),
    )


def sweep_detail(sw: SweepSnapshot) -> Text:
    t = Text()
    t.append(f"{sw.path}\n", style="dim")
    if sw.error:
        t.append(sw.error, style="red")
        return t
    t.append(f"sweep {sw.status} · {len(sw.trials)} trials: {sw.counts_text()}\nspent ")
    if sw.budget_usd:
        frac = sw.spent_usd / sw.budget_usd
        t.append(
            f"{spend_of(sw.spent_usd, sw.budget_usd)} of the sweep budget {frac:.0%}",
            style="bold red" if frac > 0.9 else "",
        )
    else:
        t.append(f"{spend_of(sw.spent_usd, None)} (no sweep budget)")
    if sw.best is not None:
        label = next((x.label for x in sw.trials if x.id == sw.best[0]), "")
        t.append(f" · best {sw.best[0]} val {sw.best[1]:.3f}" + (f" ({label})" if label else ""))
    failed = [x for x in sw.trials if x.error]
    if failed:
        t.append(f"\n{failed[0].id}: {failed[0].error}", style="red")
    t.append("\n⏎/x: its trials · space: mark them all · c: overlay them in Train", style="dim")
    return t


def budget_stopped(s: RunSnapshot) -> bool:
    b = s.budget_usd
    return s.status == "stopped" and ((b is not None and s.spend_usd >= b * 0.999) or "budget" in s.status_message)


class RunsTable(ClickRecorder):
    """Home and End go to the first and the last run (DataTable's own go to the first column);
    Home also scrolls back to the first column, so the run names are in view again."""

    BINDINGS = [
        Binding("home", "scroll_top", "Top", show=False, id="runs.top"),
        Binding("end", "scroll_bottom", "Bottom", show=False, id="runs.bottom"),
    ]

    def action_scroll_top(self) -> None:
        super().action_scroll_top()
        self.scroll_to(x=0, animate=False, immediate=True)


class RunsScreen(EngineActions, ModeScreen):
    MODE = "Runs"
    CSS_PATH = "runs.tcss"
    BINDINGS = [
        Binding("enter", "open_run", "Open", id="runs.open"),
        Binding("x", "expand", "Expand", show=False, id="runs.expand"),
        Binding("n", "new_run", "New", id="runs.new"),
        Binding("p", "pause", "Pause", id="runs.pause"),
        Binding("s", "stop", "Stop", id="runs.stop"),
        Binding("r", "resume", "Resume", id="runs.resume"),
        Binding("R", "resume_with", "Resume+", id="runs.resume_with"),
        Binding("space", "mark", "Mark", id="runs.mark"),
        Binding("c", "compare", "Compare", id="runs.compare"),
        Binding("b", "baseline", "Baseline", id="runs.baseline"),
        Binding("o", "sort", "Sort", id="runs.sort"),
        Binding("O", "sort_reverse", "Reverse", show=False, id="runs.sort_reverse"),
        Binding("slash", "filter", "Filter", id="runs.filter"),
        Binding("L", "engine_log", "Log", id="runs.log"),
        Binding("C", "clone", "Clone", show=False, id="runs.clone"),
        Binding("A", "archive", "Archive", show=False, id="runs.archive"),
        Binding("D", "delete", "Delete", show=False, id="runs.delete"),
        Binding("e", "export", "Export", show=False, id="runs.export"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.sort_col: int | None = STARTED  # newest first by creation: never by a file's mtime
        self.sort_reverse = True
        self.marked: list[Path] = []
        self.baseline: Path | None = None
        self._rows: list | None = None
        self._order: list[str] | None = None
        self._shown_rows: list = []
        self.expanded: set[str] = set()  # sweeps shown with their trials under them

    def compose_body(self) -> ComposeResult:
        table = RunsTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        for i, c in enumerate(COLUMNS):
            table.add_column(header(c, i, self.sort_col, self.sort_reverse), key=c)
        yield table
        yield FilterBar()
        yield Static("", id="runs-detail")

    def _smoothing(self) -> float:
        return float(getattr(self.app, "smoothing", 0.6))

    def update_body(self, poll: Poll) -> None:
        table = self.query_one(DataTable)
        sm = self._smoothing()
        shown = self._rows_of(poll, sm)
        order = [k for k, _ in shown]
        if order != self._order:
            self._rebuild(table, shown, poll)
        elif shown != self._shown_rows:
            # same runs in the same order: change the cells in place, the cursor does not move
            for (key, (_, row)), (_, (_, old)) in zip(shown, self._shown_rows):
                for i, (v, o) in enumerate(zip(row, old)):
                    if v != o:
                        table.update_cell(key, COLUMNS[i], self._cell(key, i, v), update_width=True)
        self._shown_rows = shown
        self._detail(poll)

    def _rows_of(self, poll: Poll, sm: float) -> list:
        """[(key, (values, row))]: the runs that are no sweep's trials, and one row per sweep,
        filtered and sorted; an expanded sweep's trials follow it (sorted the same way).

        The `/` filter looks inside every sweep too: a sweep with matching trials is shown
        expanded with only those (whether or not it was expanded); one whose own row matches
        and no trial does is shown as it was. `self.expanded` is not touched, so clearing the
        filter gives back the rows as they were."""
        in_sweeps = poll.in_sweeps()
        by_path = {s.path: s for s in poll.runs}
        text = self.query_one(FilterBar).value.strip()
        top = [(str(s.path), (run_values(s, sm), run_row(s, sm))) for s in poll.runs if s.path not in in_sweeps]
        shown = filter_rows(top, text, COLUMNS, values=lambda vr: vr[1])
        trials_of: dict[str, list] = {}
        for sw in poll.sweeps:
            key = str(sw.path)
            snaps = [by_path[t.path] for t in sw.trials if t.path in by_path]
            rows = []
            for t in sw.trials if text or key in self.expanded else ():  # collapsed, no filter: none
                s = by_path.get(t.path)
                if s is None:
                    continue
                row = run_row(s, sm)
                name = f"└ {t.id}" + (f" {t.label}" if t.label else "")
                rows.append((str(t.path), (run_values(s, sm), (name, t.state, *row[2:]))))
            hits = filter_rows(rows, text, COLUMNS, values=lambda vr: vr[1]) if text else []
            if hits:
                rows, expanded = hits, True
            else:
                expanded = key in self.expanded
            me = (key, (sweep_values(sw, snaps, sm), sweep_row(sw, snaps, expanded, sm)))
            if not hits and text and not filter_rows([me], text, COLUMNS, values=lambda vr: vr[1]):
                continue  # neither the sweep nor any of its trials matches
            shown.append(me)
            if expanded:
                # by the table's column; by their place in the sweep while it sorts by start time
                trials_of[key] = (
                    rows
                    if self.sort_col == STARTED
                    else sort_rows(rows, self.sort_col, self.sort_reverse, values=lambda vr: vr[0])
                )
        shown = sort_rows(shown, self.sort_col, self.sort_reverse, values=lambda vr: vr[0])
        out = []
        for key, vr in shown:
            out.append((key, vr))
            out.extend(trials_of.get(key, ()))
        return out

    def _sweep(self, key: str | None, poll: Poll | None = None) -> SweepSnapshot | None:
        poll = poll or self.app.latest
        if key is None or poll is None:
            return None
        return next((sw for sw in poll.sweeps if str(sw.path) == key), None)

    def _cell(self, key: str, i: int, v: str):
        sw = self._sweep(key) if i == 0 else None
        if sw is not None:
            n = len(sw.trials)
            marked = n > 0 and all(t.path in self.marked for t in sw.trials if t.state != "pending")
            return Text(f"{'●' if marked else ''}{v}", style="bold magenta" if marked else "magenta")
        if i == 0:
            marked = Path(key) in self.marked
            pin = "⚑" if self.baseline is not None and Path(key) == self.baseline else ""
            return Text(f"{'●' if marked else ''}{pin}{v}", style="bold" if marked else "")
        return status_text(v) if i == 1 else v

    def _rebuild(self, table: DataTable, shown: list, poll: Poll) -> None:
        # keep the highlighted run; on the first fill, highlight the app's selected run
        # (e.g. the one `minertui open` named), not simply the newest
        cur = poll.current
        refill = bool(self._order)
        keep = self._selected_key() if refill else (str(cur.path) if cur else None)
        keys = {k for k, _ in shown}
        if keep is not None and keep not in keys:  # a trial of a collapsed sweep: its sweep's row
            owner = next((sw for sw in poll.sweeps if sw.trial_of(Path(keep)) is not None), None)
            keep = str(owner.path) if owner is not None else keep
        with self.prevent(DataTable.RowHighlighted):  # no "select the first row" on the way
            table.clear()
            for col in table.columns.values():  # widths fit the rows shown now (a trial's long
                col.content_width = col.label.cell_len  # name goes with the filter that showed it)
            for key, (_, row) in shown:
                table.add_row(*(self._cell(key, i, v) for i, v in enumerate(row)), key=key)
            for i, (key, _) in enumerate(shown):
                if key == keep:
                    table.move_cursor(row=i, animate=False)
        self._order = [k for k, _ in shown]
        now = self._selected_key()
        if refill and keep is not None and keep not in keys and now is not None:
            # the selected run left the view (filtered out, archived): the cursor's row is the
            # selected run now, as if it had been highlighted, so every mode shows what Runs does
            self._select_key(now)

    def _detail(self, poll: Poll) -> None:
        detail = self.query_one("#runs-detail", Static)
        if not poll.runs:
            detail.update(
                Text(f"No runs under {self.app.runs_root}. Press n to start one (or run `minertui demo`).", style="dim")
            )
            return
        sw = self._sweep(self._selected_key(), poll)
        s = self._selected(poll)
        if sw is not None:
            detail.update(sweep_detail(sw))
        elif s is not None:
            detail.update(self.detail_text(s))
        self.refresh_bindings()  # pause/stop only for a run an engine holds

    def detail_text(self, s: RunSnapshot) -> Text:
        cfg = s.config
        t = Text()
        t.append(f"{s.path}\n", style="dim")
        v = run_values(s, self._smoothing())
        # the columns a narrow table leaves out (mode, pool, started) are always here
        t.append(f"{v[7]} · pool {v[8]} · started {iso_short(s.started)} UTC · ")
        t.append(
            f"encoder {(s.record.encoder if s.record else None) or cfg.encoder or '—'} · "
            f"popsize {_or_dash(cfg.popsize)} · m {_or_dash(cfg.m)} · "
            f"σ0 {_or_dash(cfg.sigma0)} · seed {_or_dash(cfg.seed)}"
        )
        eta = s.eta
        if eta is not None:
            t.append(
                f" · ETA {duration(eta.secs)} ({eta.limit} runs out first)"
                if eta.limit == "budget"
                else f" · ETA {duration(eta.secs)}"
            )
        if s.phase == "paused":
            t.append(f"\npaused at generation {s.generations_done}, checkpointed; r resumes it", style="italic")
        elif s.phase:
            t.append(f"\n{s.phase}", style="italic")
        elif s.status_message:
            t.append(f"\n{s.status_message}", style="italic")
        elif s.status == "interrupted" and not len(s.gens):
            from minertui.supervisor import log_tail  # lazy: PyYAML kept off the app's first frame

            tail = log_tail(self.app.supervisor.log_of(s.path), 1)
            t.append(
                "\nno engine holds it and it never finished a generation"
                + (f"; its log ends: {tail}" if tail else f"; see why with `trinity resume {s.path}` in a terminal"),
                style="italic",
            )
        if budget_stopped(s):
            t.append("\nstopped by its budget: R resumes with a higher budget", style="yellow")
        if s.error:
            t.append(f"\n{s.error}", style="red")
        if self.marked:
            t.append(f"\n{len(self.marked)} marked for compare (c shows them in Train)", style="dim")
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
            self._select_key(event.row_key.value)

    def _select_key(self, key: str) -> None:
        sw = self._sweep(key)
        if sw is not None:  # a sweep: its best trial (else its first) is the selected run
            pick = next((t for t in sw.trials if sw.best and t.id == sw.best[0]), None) or (
                sw.trials[0] if sw.trials else None
            )
            if pick is not None:
                self.app.select_run(pick.path)
            if self.app.latest is not None:
                self._detail(self.app.latest)
        else:
            self.app.select_run(Path(key))
        self.refresh_bindings()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open_run()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        if header_miss(event.data_table):
            return
        self._set_sort(event.column_index, not self.sort_reverse if event.column_index == self.sort_col else False)

    def on_input_changed(self, event) -> None:
        if event.input.id == "filter" and self.app.latest is not None:
            self.show(self.app.latest)

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        verdict = super().check_action(action, parameters)
        if verdict is not True:
            return verdict
        mounted = self.is_mounted and self.query(DataTable)
        if mounted and self._sweep(self._selected_key()) is not None:
            # a sweep row: its trials are the runs (expand it); the sweep's driver is `trinity sweep`
            return action not in (
                "pause",
                "stop",
                "resume",
                "resume_with",
                "clone",
                "archive",
                "delete",
                "engine_log",
                "baseline",
            )
        s = self._selected() if mounted else None
        if s is None:
            return True
        if action in ("archive", "delete") and self.app.latest is not None and s.path in self.app.latest.in_sweeps():
            return False  # a trial's dir belongs to its sweep (sweep.json names it)
        if action in ("pause", "stop"):
            return s.locked  # hidden when no engine holds the run: nothing to pause
        if action in ("resume", "resume_with"):
            return not (s.locked or s.status == "finished" and action == "resume")
        return True

    # ---- actions -------------------------------------------------------------------------
    def _run_path(self) -> Path | None:
        key = self._selected_key()
        if key is None:
            self.notify("no run selected", severity="warning")
        return Path(key) if key else None

    def action_expand(self) -> None:
        """Expand a sweep row into its trials, or collapse it (from the sweep or one of its trials)."""
        key = self._selected_key()
        latest = self.app.latest
        if self._sweep(key) is None and key is not None and latest is not None:
            owner = next((sw for sw in latest.sweeps if sw.trial_of(Path(key)) is not None), None)
            key = str(owner.path) if owner is not None and str(owner.path) in self.expanded else None
        if key is None or self._sweep(key) is None:
            self.notify("not a sweep: x expands a sweep row into its trials", severity="warning")
            return
        if key in self.expanded:
            self.expanded.discard(key)
        else:
            self.expanded.add(key)
        if latest is not None:
            self.show(latest)
        table = self.query_one(DataTable)
        if self._order and key in self._order:  # the cursor stays on the sweep's row
            table.move_cursor(row=self._order.index(key), animate=False)

    def action_open_run(self) -> None:
        if self._sweep(self._selected_key()) is not None:
            self.action_expand()
            return
        path = self._run_path()
        if path is not None:
            self.app.select_run(path)
            self.app.action_mode("train")

    def action_new_run(self) -> None:
        from minertui.screens.newrun import NewRunScreen  # lazy: PyYAML kept off the app's first frame

        self.app.push_screen(NewRunScreen())

    def engine_target(self) -> Path | None:
        return self._run_path()

    def action_resume(self) -> None:
        s = self._selected()
        if s is not None and budget_stopped(s):
            self.notify(
                "this run stopped at its budget: resuming it as is would stop at once; give it a higher budget",
                severity="warning",
            )
            self.action_resume_with()
            return
        super().action_resume()

    def action_resume_with(self) -> None:
        s = self._selected()
        if s is None:
            self.notify("no run selected", severity="warning")
            return
        from minertui.screens.runops import ResumeScreen  # lazy: PyYAML + attrs kept off the app's first frame

        self.app.push_screen(ResumeScreen(s))

    def action_top(self) -> None:
        table = self.query_one(DataTable)
        if table.row_count:
            table.move_cursor(row=0, animate=False)

    def action_bottom(self) -> None:
        table = self.query_one(DataTable)
        if table.row_count:
            table.move_cursor(row=table.row_count - 1, animate=False)

    def _set_sort(self, col: int, reverse: bool) -> None:
        self.sort_col, self.sort_reverse = col, reverse
        table = self.query_one(DataTable)
        for i, c in enumerate(COLUMNS):
            table.columns[ColumnKey(c)].label = Text(header(c, i, self.sort_col, self.sort_reverse))
        table.refresh()
        self.notify(f"sorted by {COLUMNS[col]} ({'descending' if reverse else 'ascending'})", timeout=2)
        if self.app.latest is not None:
            self.show(self.app.latest)

    def action_sort(self) -> None:
        col = 0 if self.sort_col is None else (self.sort_col + 1) % len(COLUMNS)
        self._set_sort(col, col in (3, 4, 9))  # best, val~ and started read best descending

    def action_sort_reverse(self) -> None:
        self._set_sort(self.sort_col or 0, not self.sort_reverse)

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def _redraw_cells(self) -> None:
        table = self.query_one(DataTable)
        for key, (_, row) in self._shown_rows:
            table.update_cell(key, COLUMNS[0], self._cell(key, 0, row[0]), update_width=True)
        if self.app.latest is not None:
            self._detail(self.app.latest)

    def _mark_sweep(self, sw: SweepSnapshot, only: bool = False) -> None:
        """Mark every trial of `sw` (best smoothed validation accuracy first: the overlay's order);
        unmark them when all were marked. `only`: these trials and nothing else."""
        paths = [t.path for t in sw.trials if t.state != "pending"]  # a pending one has no curve yet
        if not only and paths and all(p in self.marked for p in paths):
            self.marked = [p for p in self.marked if p not in paths]
        else:
            by_path = {s.path: s for s in self.app.latest.runs} if self.app.latest else {}
            sm = self._smoothing()
            ranked = sorted(paths, key=lambda p: -(run_values(by_path[p], sm)[4] or -1.0) if p in by_path else 1.0)
            keep = [] if only else [p for p in self.marked if p not in paths]
            self.marked = keep + ranked
        self.post_message(CompareChanged(tuple(self.marked), metric="val" if self.marked else None))

    def action_mark(self) -> None:
        sw = self._sweep(self._selected_key())
        if sw is not None:
            self._mark_sweep(sw)
            self._redraw_cells()
            self.query_one(DataTable).action_cursor_down()
            return
        path = self._run_path()
        if path is None:
            return
        if path in self.marked:
            self.marked.remove(path)
        else:
            self.marked.append(path)
        self.post_message(CompareChanged(tuple(self.marked)))
        self._redraw_cells()
        self.query_one(DataTable).action_cursor_down()

    def action_compare(self) -> None:
        sw = self._sweep(self._selected_key())
        if sw is not None:  # the sweep's trials overlaid, whatever was marked before
            if not sw.trials:
                self.notify(f"sweep {sw.id} has no trials to compare", severity="warning")
                return
            self._mark_sweep(sw, only=True)
            self._redraw_cells()
            best = next((t for t in sw.trials if sw.best and t.id == sw.best[0]), None)
            if best is not None:  # Train's side panel: the best trial's figures
                self.app.select_run(best.path)
            self.app.action_mode("train")
            return
        if not self.marked:
            path = self._run_path()
            if path is None:
                return
            self.notify("mark runs with space first (now: the highlighted one)", severity="warning")
            self.marked.append(path)
            self.post_message(CompareChanged(tuple(self.marked)))
        self.app.action_mode("train")

    def action_baseline(self) -> None:
        path = self._run_path()
        if path is None:
            return
        self.baseline = None if self.baseline == path else path
        self.post_message(BaselinePinned(self.baseline))
        self.notify(f"baseline: {self.baseline.name}" if self.baseline else "baseline unpinned", timeout=3)
        self._redraw_cells()

    def action_engine_log(self) -> None:
        path = self._run_path()
        if path is not None:
            from minertui.screens.runops import LogScreen  # lazy: PyYAML + attrs kept off the app's first frame

            self.app.push_screen(LogScreen(self.app.supervisor.log_of(path), f"engine log — {path.name}"))

    def action_clone(self) -> None:
        s = self._selected()
        if s is None:
            self.notify("no run selected", severity="warning")
            return
        from minertui.screens.newrun import NewRunScreen  # lazy: PyYAML kept off the app's first frame
        from minertui.screens.runops import clone_config  # lazy: PyYAML + attrs kept off the app's first frame

        try:
            cfg_file, fields = clone_config(s, self.app.runs_root)
        except OSError as e:
            self.notify(f"could not write the cloned config: {e}", severity="error")
            return
        self.app.push_screen(NewRunScreen(prefill={"config": str(cfg_file), **fields}))

    def action_archive(self) -> None:
        self._remove("archive")

    def action_delete(self) -> None:
        self._remove("delete")

    def _remove(self, how: str) -> None:
        s = self._selected()
        if s is None:
            self.notify("no run selected", severity="warning")
            return
        if s.locked:
            self.notify(f"{s.id} is running: pause or stop it first", severity="error")
            return
        # lazy: PyYAML + attrs kept off the app's first frame
        from minertui.screens.runops import archive_run, delete_run

        q = (
            f"Delete {s.id}? Its directory {s.path} goes for good (checkpoints, ledger, traces)."
            if how == "delete"
            else f"Archive {s.id}? It moves to {self.app.runs_root / '.archive'}."
        )

        def answer(yes: bool | None) -> None:
            if not yes:
                return
            where: Path | None = None
            try:
                if how == "archive":
                    where = archive_run(s.path, self.app.runs_root)
                else:
                    delete_run(s.path)
            except OSError as e:
                self.notify(f"{how} {s.id}: {e}", severity="error")
                return
            if s.path in self.marked:
                self.marked.remove(s.path)
                self.post_message(CompareChanged(tuple(self.marked)))
            self.app.reader.forget(s.path)
            self.notify(f"archived to {where}" if where else f"deleted {s.id}")
            self.app.poll_soon()

        self.app.push_screen(ConfirmScreen(q, how.capitalize(), "Keep"), answer)

    def action_export(self) -> None:
        rows = [r for _, (_, r) in self._shown_rows]
        try:
            csv_path, json_path = export_table("runs", COLUMNS, rows)
        except OSError as e:
            self.notify(f"export failed: {e}", severity="error")
            return
        self.notify(f"{len(rows)} runs exported: {csv_path} and {json_path.name}", timeout=8)
