"""What every table mode shares: sort by a column, a `/` text filter, export of what is shown.

No textual here except the small `FilterBar` and `SortableTable` widgets, so the benchmark and the tests can drive the
sorting and filtering directly. Rows are tuples of plain values (str / int / float / None); the
screens turn them into cells.
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable, Input
from textual.widgets.data_table import ColumnKey

from minertui.settings import load_settings, state_dir


def export_dir() -> Path:
    """Where exports and screenshots go: settings `export_dir`, else
    `$XDG_STATE_HOME/minertui/exports` (always creatable, unlike ~/Downloads on a rented box)."""
    explicit = load_settings().export_dir
    return Path(explicit).expanduser() if explicit else state_dir() / "exports"


def sort_key(v: Any) -> tuple:
    """Numbers before text, missing values last, whichever the direction."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return (2, 0.0, "")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, float(v), "")
    return (1, 0.0, str(v).lower())


def sort_rows(
    rows: Sequence[tuple[str, tuple]],
    column: int | None,
    reverse: bool = False,
    values: Callable[[tuple], tuple] | None = None,
) -> list[tuple[str, tuple]]:
    """Rows `(key, values)` sorted by `column` (stable, ties by key); missing values stay last."""
    if column is None:
        return list(rows)
    get = values or (lambda r: r)
    present = [r for r in rows if sort_key(get(r[1])[column])[0] != 2]
    missing = [r for r in rows if sort_key(get(r[1])[column])[0] == 2]
    present.sort(key=lambda r: (sort_key(get(r[1])[column]), r[0]), reverse=reverse)
    return present + sorted(missing, key=lambda r: r[0])


def matches(text: str, row: Iterable[Any]) -> bool:
    """Every word of `text` occurs in some cell (case-insensitive); `col:word` looks in one column
    only when the screen passes named cells (see `filter_rows`)."""
    hay = " ".join("" if v is None else str(v) for v in row).lower()
    return all(w in hay for w in text.lower().split())


def filter_rows(
    rows: Sequence[tuple[str, tuple]],
    text: str,
    columns: Sequence[str] = (),
    values: Callable[[tuple], tuple] | None = None,
) -> list[tuple[str, tuple]]:
    """Rows whose cells contain every word of `text`; a word `name:value` must be in column `name`."""
    text = text.strip()
    if not text:
        return list(rows)
    get = values or (lambda r: r)
    cols = {c.lower().split(" ")[0]: i for i, c in enumerate(columns)}
    plain, scoped = [], []
    for w in text.lower().split():
        name, sep, val = w.partition(":")
        if sep and name in cols:
            scoped.append((cols[name], val))
        else:
            plain.append(w)
    out = []
    for r in rows:
        vals = get(r[1])
        if scoped and not all(v in str(vals[i]).lower() for i, v in scoped):
            continue
        if plain and not matches(" ".join(plain), vals):
            continue
        out.append(r)
    return out


def export_table(
    name: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], where: Path | None = None
) -> tuple[Path, Path]:
    """Write `rows` (what the table shows, in its order) to `<name>-<UTC time>.csv` and `.json`;
    returns both paths. JSON is a list of {column: value} objects."""
    where = where or export_dir()
    where.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    base = where / f"{name}-{stamp}"
    rows = [list(r) for r in rows]
    csv_path, json_path = base.with_suffix(".csv"), base.with_suffix(".json")
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(columns)
        w.writerows(["" if v is None else v for v in r] for r in rows)
    records = [{c: _plain(v) for c, v in zip(columns, r)} for r in rows]
    json_path.write_text(json.dumps(records, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return csv_path, json_path


def _plain(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)


def header(label: str, column: int, sort_col: int | None, reverse: bool) -> str:
    return label + ((" ▼" if reverse else " ▲") if column == sort_col else "")


class FilterBar(Input):
    """The `/` filter line under a table: hidden until `/`, Enter keeps the filter and returns to
    the table, Esc clears it. The screen reacts to `Input.Changed` (id `filter`)."""

    DEFAULT_CSS = "FilterBar { height: 1; border: none; display: none; } FilterBar.-on { display: block; }"
    BINDINGS = [Binding("escape", "clear_filter", "Clear filter", show=False, id="filter.clear")]

    def __init__(self, placeholder: str = "filter: words, or column:word", **kw) -> None:
        super().__init__(placeholder=placeholder, id="filter", compact=True, **kw)

    def open(self) -> None:
        self.add_class("-on")
        self.focus()

    def action_clear_filter(self) -> None:
        self.value = ""
        self.remove_class("-on")
        self.screen.set_focus(None)
        self.screen.focus_next()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not self.value:
            self.remove_class("-on")
        self.screen.focus_next()


def cell_text(c: Any) -> str:
    """A cell as plain text (what filters match and exports write)."""
    return c.plain if hasattr(c, "plain") else "" if c is None else str(c)


def header_miss(table: DataTable) -> bool:
    """Whether the last click on `table` was on its header row right of the last column (Textual
    reports that as a click on the first column's header: no sort should follow). Tables made
    from `ClickRecorder` record it; for other tables it is False."""
    return bool(getattr(table, "_header_miss", False))


class ClickRecorder(DataTable):
    """A DataTable that remembers whether a click hit its header row outside the columns."""

    _header_miss = False

    def on_click(self, event) -> None:
        meta = event.style.meta
        self._header_miss = meta.get("row") == -1 and bool(meta.get("out_of_bounds"))


class SortableTable(ClickRecorder):
    """A DataTable over a fixed set of rows `(values, cells)`: `action_sort_next` sorts by the next
    column, `action_sort_reverse` reverses (the screen binds them, so the keymap has them), a click
    on a header sorts by it (again: the other way); numbers sort as numbers and
    missing values (None) last, whichever the direction (`sort_rows`). `set_filter` keeps the
    rows whose cells hold every word (`filter_rows`, `column:word` too); `shown()` is what the
    table shows, in its order, for export. `name` identifies the table across rebuilds."""

    def __init__(
        self,
        name: str,
        title: str,
        columns: Sequence[str],
        rows: Sequence[tuple[tuple, tuple]],
        sort: tuple[int | None, bool] = (None, False),
        filter_text: str = "",
        **kw: Any,
    ) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kw)
        self.table_name, self.title = name, title
        self.names = list(columns)
        self._all = [(f"{i:06d}", (tuple(v), tuple(c))) for i, (v, c) in enumerate(rows)]
        self.sort_col, self.sort_reverse = sort
        self.filter_text = filter_text
        self._shown: list[tuple[str, tuple]] = []

    def on_mount(self) -> None:
        for i, c in enumerate(self.names):
            self.add_column(header(c, i, self.sort_col, self.sort_reverse), key=str(i))
        self.refill()

    def refill(self) -> None:
        rows = filter_rows(
            self._all, self.filter_text, self.names, values=lambda vc: tuple(cell_text(c) for c in vc[1])
        )
        rows = sort_rows(rows, self.sort_col, self.sort_reverse, values=lambda vc: vc[0])
        keep = None
        if self.row_count:
            try:
                keep = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
            except Exception:  # the cursor is outside the rows
                keep = None
        for i, c in enumerate(self.names):
            self.columns[ColumnKey(str(i))].label = Text(header(c, i, self.sort_col, self.sort_reverse))
        self.clear()
        for key, (_, cells) in rows:
            self.add_row(*cells, key=key)
        where = next((i for i, (k, _) in enumerate(rows) if k == keep), None)
        if where is not None:
            self.move_cursor(row=where, animate=False)
        self._shown = rows
        count = f"{len(rows)} of {len(self._all)} rows" if self.filter_text.strip() else ""
        by = f"by {self.names[self.sort_col]}{' ▼' if self.sort_reverse else ' ▲'}" if self.sort_col is not None else ""
        self.border_title = " · ".join(p for p in (self.title, count, by) if p)

    def shown(self) -> list[tuple]:
        """The rows as shown (plain text), in the order shown."""
        return [tuple(cell_text(c) for c in cells) for _, (_, cells) in self._shown]

    def shown_values(self) -> list[tuple]:
        return [values for _, (values, _) in self._shown]

    def set_filter(self, text: str) -> None:
        if text != self.filter_text:
            self.filter_text = text
            self.refill()

    def sort_by(self, col: int, reverse: bool | None = None) -> None:
        if reverse is None:  # numbers read best from the largest, text from A
            reverse = any(sort_key(vals[col])[0] == 0 for _, (vals, _) in self._all)
        self.sort_col, self.sort_reverse = col, reverse
        self.refill()

    def action_sort_next(self) -> None:
        self.sort_by(0 if self.sort_col is None else (self.sort_col + 1) % len(self.names))

    def action_sort_reverse(self) -> None:
        self.sort_col = 0 if self.sort_col is None else self.sort_col
        self.sort_reverse = not self.sort_reverse
        self.refill()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        if header_miss(self):
            return
        col = event.column_index
        self.sort_by(col, not self.sort_reverse if col == self.sort_col else None)
