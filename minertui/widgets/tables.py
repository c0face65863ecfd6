"""What every table mode shares: sort by a column, a `/` text filter, export of what is shown.

No textual here except the small `FilterBar` widget, so the benchmark and the tests can drive the
sorting and filtering directly. Rows are tuples of plain values (str / int / float / None); the
screens turn them into cells.
"""

from __future__ import annotations

import csv
import json
import math
import time
from pathlib import Path
from typing import Any
from collections.abc import Callable, Iterable, Sequence

from textual.binding import Binding
from textual.widgets import Input


def export_dir() -> Path:
    """Where exports and screenshots go: settings `export_dir`, else
    `$XDG_STATE_HOME/minertui/exports` (always creatable, unlike ~/Downloads on a rented box)."""
    from minertui.settings import load_settings, state_dir

    explicit = load_settings().get("export_dir")
    return Path(explicit).expanduser() if isinstance(explicit, str) and explicit else state_dir() / "exports"


def sort_key(v: Any) -> tuple:
    """Numbers before text, missing values last, whichever the direction."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return (2, 0.0, "")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, float(v), "")
    return (1, 0.0, str(v).lower())


def sort_rows(rows: Sequence[tuple[str, tuple]], column: int | None, reverse: bool = False,
              values: Callable[[tuple], tuple] | None = None) -> list[tuple[str, tuple]]:
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


def filter_rows(rows: Sequence[tuple[str, tuple]], text: str, columns: Sequence[str] = (),
                values: Callable[[tuple], tuple] | None = None) -> list[tuple[str, tuple]]:
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


def export_table(name: str, columns: Sequence[str], rows: Iterable[Sequence[Any]],
                 where: Path | None = None) -> tuple[Path, Path]:
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
