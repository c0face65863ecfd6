"""Traces mode: a paged table over (up to) 100,000 trajectories held as compact columns,
filters (benchmark, right/wrong, model, generation) and question-id search; Enter opens the
drill-down. Filtering is vectorised; only one page of rows is ever put in the DataTable."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Input, Select, Static
from textual.widgets.data_table import ColumnKey

from minertui.reader import Poll
from minertui.runmodel import TRACE_SORT, TraceView, filter_traces, model_letter, sort_traces
from minertui.screens.common import ModeScreen
from minertui.widgets.format import usd
from minertui.widgets.tables import ClickRecorder, export_table, header, header_miss

PAGE = 100
COLUMNS = ("gen", "cand", "question", "correct", "benchmark", "turns", "cost", "path")  # the long path last


ROLE_INITIAL = {"·Thinker": "T", "·Worker": "W", "·Verifier": "V"}


def compact_path(path: str) -> str:
    """'✓ B·Thinker → A·Worker' → 'BT→AW' (model letter, role initial; the verdict is in its own
    column): three steps in view at 80 columns. Enter's detail spells the roles out."""
    path = path.removeprefix("✓ ").removeprefix("✗ ")
    for role, initial in ROLE_INITIAL.items():
        path = path.replace(role, initial)
    return path.replace(" → ", "→")


class TracesScreen(ModeScreen):
    MODE = "Traces"
    CSS_PATH = "traces.tcss"
    AUTO_FOCUS = "#traces-table"
    BINDINGS = [
        Binding("left_square_bracket", "page(-1)", "Prev page", id="traces.prev"),
        Binding("right_square_bracket", "page(1)", "Next page", id="traces.next"),
        Binding("slash", "search", "Search id", id="traces.search"),
        Binding("escape", "focus_table", "Table", show=False, id="traces.table"),
        Binding("e", "export", "Export", id="traces.export"),
        Binding("o", "sort", "Sort", id="traces.sort"),
        Binding("O", "sort_reverse", "Reverse", show=False, id="traces.sort_reverse"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.page = 0
        self.follow = True  # stay on the newest page while a run appends
        self.rows = np.zeros(0, dtype=np.int64)  # filtered trace indices, current page order
        self._filter_key: tuple | None = None
        self._page_key: tuple | None = None
        self._options_key: tuple | None = None
        self._tv: TraceView | None = None
        self.sort_col: str | None = None  # None: file order (generation by generation)
        self.sort_reverse = False

    @property
    def narrow(self) -> bool:
        """Under 110 columns: the verdict is a mark, the path compact, so every step fits."""
        width = self.app.size.width
        return bool(width) and width < 110

    def _label(self, column: str) -> str:
        return "ok" if column == "correct" and self.narrow else column

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="traces-filters"):
            yield Select([], prompt="benchmark", id="flt-bench", compact=True)
            yield Select([("right", "right"), ("wrong", "wrong")], prompt="right/wrong", id="flt-correct", compact=True)
            yield Select([], prompt="model", id="flt-model", compact=True)
            yield Select(
                [(r, r) for r in ("Thinker", "Worker", "Verifier")], prompt="role", id="flt-role", compact=True
            )
            yield Input(placeholder="gen", id="flt-gen", type="integer", compact=True)
            yield Input(placeholder="/ question id", id="flt-qid", compact=True)
        table = ClickRecorder(id="traces-table", cursor_type="row", zebra_stripes=True)
        for c in COLUMNS:
            table.add_column(self._label(c), key=c)
        yield table
        yield Static(id="traces-status")

    # ---- drawing -------------------------------------------------------------------------
    def update_body(self, poll: Poll) -> None:
        s = poll.current
        status = self.query_one("#traces-status", Static)
        if s is None or s.traces is None:
            status.update(Text("No run selected." if s is None else "loading traces…", style="dim"))
            return
        tv = self._tv = s.traces
        self._update_options(tv, s.models)
        fkey = (str(s.path), len(tv), *self._filters(), self.sort_col, self.sort_reverse)
        if fkey != self._filter_key:
            self._filter_key = fkey
            self.rows = sort_traces(tv, filter_traces(tv, *self._filters()), self.sort_col, self.sort_reverse)
        n = len(self.rows)
        pages = max(1, -(-n // PAGE))
        if self.follow:
            self.page = pages - 1
        self.page = min(max(0, self.page), pages - 1)
        lo, hi = self.page * PAGE, min(n, (self.page + 1) * PAGE)
        pkey = (str(s.path), lo, hi, fkey[2:], int(self.rows[hi - 1]) if hi else -1)
        if pkey != self._page_key:
            self._page_key = pkey
            self._fill(tv, self.rows[lo:hi], s.models)
        more = " · reading…" if s.catching_up else ""
        right = int((tv.correct == 1).sum())
        status.update(
            Text(
                f"rows {lo + 1 if n else 0}–{hi} of {n:,} shown (of {len(tv):,} traces; {right:,} right)"
                f" · page {self.page + 1}/{pages}"
                + (f" · by {self.sort_col}{' ▼' if self.sort_reverse else ' ▲'}" if self.sort_col else "")
                + f" · Enter opens{more}"
                + (" · path: model letter + T/W/V" if self.narrow else "")
            )
        )

    def _fill(self, tv: TraceView, idx: np.ndarray, pool: list[str]) -> None:
        """Show the page `idx`. While a run appends to the page on screen, only the new rows are
        added (the table keeps the rendered cells of the others)."""
        table = self.query_one(DataTable)
        shown = getattr(self, "_shown_idx", None)
        if shown is not None and len(idx) > len(shown) and np.array_equal(idx[: len(shown)], shown):
            new = idx[len(shown) :]
        else:
            row = table.cursor_row
            table.clear()
            new = idx
        narrow = self.narrow  # the path gets what the columns leave
        for i in new.tolist():
            c = int(tv.correct[i])
            path = tv.path_names[int(tv.path[i])]
            table.add_row(
                str(int(tv.gen[i])),
                str(int(tv.candidate[i])),
                tv.qid_names[int(tv.qid[i])],
                Text("✓" if narrow else "✓ right", style="green")
                if c == 1
                else Text("✗" if narrow else "✗ wrong", style="red")
                if c == 0
                else "?",
                tv.bench_names[int(tv.bench[i])],
                str(int(tv.turns[i])),
                usd(float(tv.cost[i]), 5),
                compact_path(path) if narrow else path,
                key=str(i),
            )
        if new is idx and table.row_count:
            table.move_cursor(row=min(row, table.row_count - 1), animate=False)
        self._shown_idx = idx.copy()

    def _update_options(self, tv: TraceView, pool: list[str]) -> None:
        key = (len(tv.bench_names), len(tv.model_names))
        if key == self._options_key:
            return
        self._options_key = key
        self.query_one("#flt-bench", Select).set_options([(b, b) for b in tv.bench_names])
        names = [(f"{model_letter(pool.index(m))} {m}" if m in pool else m, m) for m in tv.model_names]
        self.query_one("#flt-model", Select).set_options(names)

    # ---- filters -------------------------------------------------------------------------
    def _filters(self) -> tuple:
        def val(sel: str):
            v = self.query_one(sel, Select).value
            return v if isinstance(v, str) else None  # Select.NULL when nothing is chosen

        gen_raw = self.query_one("#flt-gen", Input).value.strip()
        gen = int(gen_raw) if gen_raw.lstrip("-").isdigit() else None
        correct = {"right": 1, "wrong": 0}.get(val("#flt-correct") or "")
        return (
            val("#flt-bench"),
            correct,
            val("#flt-model"),
            gen,
            self.query_one("#flt-qid", Input).value.strip(),
            val("#flt-role"),
        )

    def _refilter(self) -> None:
        self.follow = False
        self.page = 0
        if self.app.latest is not None:
            self.show(self.app.latest)

    def on_select_changed(self, event: Select.Changed) -> None:
        self._refilter()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._refilter()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one(DataTable).focus()

    # ---- actions -------------------------------------------------------------------------
    def action_page(self, delta: int) -> None:
        pages = max(1, -(-len(self.rows) // PAGE))
        self.page = min(max(0, self.page + delta), pages - 1)
        self.follow = self.page == pages - 1
        if self.app.latest is not None:
            self.show(self.app.latest)

    def action_search(self) -> None:
        self.query_one("#flt-qid", Input).focus()

    def action_focus_table(self) -> None:
        self.query_one(DataTable).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        s = self.app.current
        if s is None or self._tv is None or event.row_key.value is None:
            return
        i = int(event.row_key.value)
        from minertui.screens.trace_detail import TraceDetailScreen  # lazy: markdown-it loaded only when used

        self.app.push_screen(TraceDetailScreen(s, int(self._tv.offset[i])))

    def action_export(self) -> None:
        """Every trace that passes the filters (not only this page), to CSV and JSON."""
        tv = self._tv
        if tv is None:
            self.notify("no traces loaded", severity="warning")
            return
        rows = [
            (
                int(tv.gen[i]),
                int(tv.candidate[i]),
                tv.qid_names[int(tv.qid[i])],
                {1: "right", 0: "wrong"}.get(int(tv.correct[i]), "?"),
                tv.bench_names[int(tv.bench[i])],
                int(tv.turns[i]),
                float(tv.cost[i]),
                tv.path_names[int(tv.path[i])],
            )
            for i in self.rows.tolist()
        ]
        try:
            csv_path, json_path = export_table("traces", COLUMNS, rows)
        except OSError as e:
            self.notify(f"export failed: {e}", severity="error")
            return
        self.notify(f"{len(rows):,} traces exported: {csv_path} and {json_path.name}", timeout=8)

    def action_sort(self) -> None:
        i = TRACE_SORT.index(self.sort_col) + 1 if self.sort_col in TRACE_SORT else 0
        self.sort_col = TRACE_SORT[i % len(TRACE_SORT)]
        self.sort_reverse = self.sort_col == "cost"  # the dearest first
        self._resort()

    def action_sort_reverse(self) -> None:
        self.sort_col = self.sort_col or "gen"
        self.sort_reverse = not self.sort_reverse
        self._resort()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a header sorts by it (again: the other way); cost starts dearest first."""
        if header_miss(event.data_table):
            return
        col = COLUMNS[event.column_index]
        if col not in TRACE_SORT:
            self.notify(f"traces sort by {', '.join(TRACE_SORT)}; not by {col}", severity="warning", timeout=3)
            return
        self.sort_reverse = not self.sort_reverse if col == self.sort_col else col == "cost"
        self.sort_col = col
        self._resort()

    def _resort(self) -> None:
        table = self.query_one(DataTable)
        at = COLUMNS.index(self.sort_col) if self.sort_col in COLUMNS else None
        for i, c in enumerate(COLUMNS):
            table.columns[ColumnKey(c)].label = Text(header(self._label(c), i, at, self.sort_reverse))
        table.refresh()
        self.notify(f"traces by {self.sort_col} ({'descending' if self.sort_reverse else 'ascending'})", timeout=2)
        self.follow = False
        self.page = 0
        if self.app.latest is not None:
            self.show(self.app.latest)
