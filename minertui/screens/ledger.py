"""Ledger mode: per-call table (paged), totals per model and per purpose, spend over time, the
budget bar, and the hash-chain status from `trinity.pool.ledger.verify_ledger`."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Static
from textual.widgets.data_table import ColumnKey

from minertui.calls import PLAYGROUND_DIR, SERVE_DIR, call_rows, load_calls
from minertui.reader import Poll
from minertui.runmodel import LedgerView, RunSnapshot
from minertui.screens.common import ModeScreen
from minertui.screens.playground import playground_spend
from minertui.widgets.curves import CachedPlot, reduce
from minertui.widgets.format import bar, money, usd, utc
from minertui.widgets.tables import ClickRecorder, FilterBar, export_table, header_miss

PAGE = 100
CALL_COLUMNS = ("time (UTC)", "model", "purpose", "tokens in/out", "cost", "source")
# the Playground's and a served run's calls: each with its role and turn, the cache's answers too
SERVED_COLUMNS = ("time (UTC)", "model", "role", "turn", "tokens in/out", "cost", "cached")
SOURCES = ("run", "serve", "playground")  # s cycles through those that have calls
SOURCE_TITLES = {
    "run": "the run's ledger",
    "serve": "the run's served calls (trinity serve)",
    "playground": "the Playground's calls (all runs)",
}
LEDGER_SORT = {"time (UTC)": None, "tokens in/out": "tokens", "cost": "cost"}  # header -> ledger_rows' sort


def totals_table(lv: LedgerView) -> Table:
    """Spend per model, then per purpose, in one narrow table (fits 80 columns)."""
    t = Table(expand=True, box=None, pad_edge=False)
    t.add_column("spend by", overflow="ellipsis", no_wrap=True, ratio=1)
    t.add_column("calls", justify="right")
    t.add_column("tokens", justify="right")
    t.add_column("$", justify="right")
    for title, rows in (
        ("model", lv.totals_by(lv.model, lv.model_names)),
        ("purpose", lv.totals_by(lv.purpose, lv.purpose_names)),
    ):
        for i, (name, calls, toks, cost) in enumerate(rows):
            t.add_row(
                Text.assemble((f"{title} " if i == 0 else " " * (len(title) + 1), "dim"), name.split("/")[-1]),
                f"{calls:,}",
                f"{toks:,}",
                usd(cost),
            )
    if not len(lv):
        t.add_row("no paid calls", "0", "0", usd(0.0))
    return t


def chain_lag(verified: int, read: int, every_s: float) -> Text:
    """Why the chain's record count and the calls read differ: a live run appends while the chain
    is re-verified at most every `every_s` seconds (or the table is still reading the file)."""
    if read > verified:
        n = read - verified
        return Text(
            f" · {n:,} newer call{'s' if n != 1 else ''} not verified yet (re-checked every {every_s:g} s)",
            style="dim",
        )
    return Text(f" · the table has read {read:,} of them so far", style="dim")


def chain_text(report, error: str | None) -> Text:
    if error:
        return Text(f"chain: not verified ({error})", style="yellow")
    if report is None:
        return Text("chain: verifying…", style="dim")
    if report.ok:
        t = Text("chain OK", style="bold green")
        t.append(f" · {report.n_records:,} records · head {report.head_hash[:12]}…", style="")
        if report.torn_tail:
            t.append(" · torn last line (crash mid-append, not tampering)", style="yellow")
        return t
    return Text(f"chain BROKEN at line {report.first_bad_line}: {report.problem}", style="bold red")


def ledger_rows(lv: LedgerView, text: str = "", sort: str | None = None) -> np.ndarray:
    """Indices of the calls whose model, purpose or UTC day (YYYY-MM-DD) contains every word of
    `text`, newest first (or by cost / tokens, largest first); vectorised over the interned names."""
    idx = np.arange(len(lv) - 1, -1, -1, dtype=np.int64)
    words = text.lower().split()
    if words and len(lv):
        days = np.floor(np.nan_to_num(lv.time, nan=0.0) / 86400).astype(np.int64)
        uniq, inv = np.unique(days, return_inverse=True)
        day_names = [utc(float(d) * 86400, "%Y-%m-%d") for d in uniq]
        keep = np.ones(len(lv), dtype=bool)
        for w in words:
            m = np.array([w in n.lower() for n in lv.model_names], dtype=bool)[lv.model] if lv.model_names else False
            p = (
                np.array([w in n.lower() for n in lv.purpose_names], dtype=bool)[lv.purpose]
                if lv.purpose_names
                else False
            )
            d = np.array([w in n for n in day_names], dtype=bool)[inv]
            keep &= m | p | d
        idx = idx[keep[idx]]
    if sort == "cost":
        idx = idx[np.argsort(-lv.cost_micro[idx], kind="stable")]
    elif sort == "tokens":
        idx = idx[np.argsort(-(lv.prompt_tokens[idx] + lv.completion_tokens[idx]), kind="stable")]
    return idx


class SpendPlot(CachedPlot):
    def set_data(self, lv: LedgerView, key: tuple) -> None:
        if key == getattr(self, "_key", None):
            return
        self._key = key
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title("cumulative spend ($)")
        if len(lv):
            t = lv.time
            ok = np.isfinite(t)
            if ok.any():
                minutes = (t[ok] - t[ok].min()) / 60.0
                cum = np.cumsum(lv.cost_micro[ok]) / 1e6
                x, (y,) = reduce(minutes, [cum], ["max"])
                plt.plot(x.tolist(), y.tolist(), marker="braille", color="cyan")
                plt.xlabel("minutes since first call")
        self.data_changed(key)


class LedgerScreen(ModeScreen):
    MODE = "Ledger"
    CSS_PATH = "ledger.tcss"
    BINDINGS = [
        Binding("left_square_bracket", "page(-1)", "Newer", id="ledger.newer"),
        Binding("right_square_bracket", "page(1)", "Older", id="ledger.older"),
        Binding("v", "verify", "Verify", id="ledger.verify"),
        Binding("e", "export", "Export", id="ledger.export"),
        Binding("slash", "filter", "Filter", id="ledger.filter"),
        Binding("o", "sort", "Sort", id="ledger.sort"),
        Binding("s", "source", "Source", id="ledger.source"),
    ]
    VERIFY_EVERY_S = 5.0

    def __init__(self) -> None:
        super().__init__()
        self.page = 0
        self._report = None
        self._report_error: str | None = None
        self._verified: tuple | None = None
        self._verified_at = 0.0
        self._table_key: tuple | None = None
        self.sort_col: str | None = None
        self.rows = np.zeros(0, dtype=np.int64)
        self.source = "run"  # whose calls: the run's ledger, its served calls, the Playground's
        self._columns: tuple[str, ...] = CALL_COLUMNS

    def compose_body(self) -> ComposeResult:
        yield Static(id="ledger-head")
        with Horizontal(id="ledger-mid"):
            yield Static(id="ledger-totals")
            yield SpendPlot(id="ledger-plot")
        table = ClickRecorder(id="ledger-table", cursor_type="row", zebra_stripes=True)
        for c in CALL_COLUMNS:
            table.add_column(c, key=c)
        yield table
        yield FilterBar("filter: model, purpose or day (2026-01-01), e.g. scholar train")

    # ---- whose calls ----

    def source_dir(self, s: RunSnapshot | None, source: str | None = None) -> Path | None:
        """The folder of `source` (default: the shown one): the run, its serve/, the Playground's."""
        source = source or self.source
        if source == "playground":
            return Path(self.app.runs_root) / PLAYGROUND_DIR
        if s is None:
            return None
        return s.path / SERVE_DIR if source == "serve" else s.path

    def sources(self, s: RunSnapshot | None) -> list[str]:
        """The sources with calls to show (the run's ledger always)."""
        out = ["run"]
        for src in SOURCES[1:]:
            d = self.source_dir(s, src)
            if d is not None and ((d / "ledger.jsonl").exists() or (d / "journal.jsonl").exists()):
                out.append(src)
        return out

    def action_source(self) -> None:
        have = self.sources(self.app.current)
        if len(have) == 1:
            self.notify("no Playground or served calls yet: the run's ledger is all there is", timeout=4)
            self.source = "run"
        else:
            self.source = have[(have.index(self.source) + 1) % len(have)] if self.source in have else "run"
            self.notify(f"showing {SOURCE_TITLES[self.source]}", timeout=3)
        self.page = 0
        self._table_key = None
        if self.app.latest is not None:
            self.show(self.app.latest)

    def _set_columns(self, columns: tuple[str, ...]) -> None:
        if columns == self._columns:
            return
        self._columns = columns
        table = self.query_one(DataTable)
        table.clear(columns=True)
        for c in columns:
            label = c + (" ▼" if self.sort_col is not None and LEDGER_SORT.get(c) == self.sort_col else "")
            table.add_column(label, key=c)
        self._table_key = None

    def update_body(self, poll: Poll) -> None:
        s = poll.current
        if s is None and self.source != "playground":
            self.query_one("#ledger-head", Static).update(Text("No run selected.", style="dim"))
            return
        if self.source != "run":
            self._update_calls(s)
            return
        self._set_columns(CALL_COLUMNS)
        assert s is not None
        lv = s.ledger
        self._maybe_verify(s)
        self.query_one("#ledger-head", Static).update(self._head(s))
        self.query_one("#ledger-totals", Static).update(totals_table(lv))
        self.query_one(SpendPlot).set_data(lv, (str(s.path), len(lv)))
        self._fill_table(s)

    def _update_calls(self, s: RunSnapshot | None) -> None:
        """The Playground's or the served run's calls: chain, totals, plot and every call."""
        self._set_columns(SERVED_COLUMNS)
        folder = self.source_dir(s)
        view = load_calls(folder) if folder is not None else None
        head = Text()
        if view is None:
            head.append(f"{SOURCE_TITLES[self.source]}: no calls yet", style="dim")
            self.query_one("#ledger-head", Static).update(head)
            self._table_key = None
            self.rows = np.zeros(0, dtype=np.int64)
            self.query_one(DataTable).clear()
            return
        lv = view.ledger
        if (view.path / "ledger.jsonl").exists():
            self._maybe_verify_dir(view.path, len(lv))
            head.append_text(chain_text(self._report, self._report_error))
            rep = self._report
            if rep is not None and rep.ok and rep.n_records != len(lv):
                head.append_text(chain_lag(rep.n_records, len(lv), self.VERIFY_EVERY_S))
            head.append("\n")
        head.append(f"{SOURCE_TITLES[self.source]} · {len(lv):,} paid · {usd(lv.total_usd, 6)}")
        if view.cached:
            head.append(f" · {view.cached:,} cached ($0)", style="dim")
        head.append(f"\n{view.path} · s: source", style="dim")
        self.query_one("#ledger-head", Static).update(head)
        self.query_one("#ledger-totals", Static).update(totals_table(lv))
        self.query_one(SpendPlot).set_data(lv, (str(view.path), len(lv)))
        self._fill_calls(view)

    def _fill_calls(self, view) -> None:
        text = self.query_one(FilterBar).value.strip()
        idx = call_rows(view.rows, text, self.sort_col)
        n = len(idx)
        pages = max(1, -(-n // PAGE))
        self.page = min(self.page, pages - 1)
        key = (self.source, str(view.path), len(view.rows), self.page, text, self.sort_col)
        if key == self._table_key:
            return
        self._table_key = key
        self.rows = np.asarray(idx, dtype=np.int64)
        table = self.query_one(DataTable)
        table.clear()
        lo, hi = self.page * PAGE, min(n, (self.page + 1) * PAGE)
        for i in idx[lo:hi]:
            r = view.rows[i]
            table.add_row(
                utc(r.time, "%m-%d %H:%M:%S") if np.isfinite(r.time) else Text("–", style="dim"),
                r.model.split("/")[-1],
                r.role,
                "" if r.turn is None else str(r.turn),
                f"{r.prompt_tokens:,}/{r.completion_tokens:,}",
                Text(usd(r.cost_micro / 1e6, 6), style="yellow" if r.estimated else ""),
                Text("cached", style="green") if r.cached else "",
            )
        order = "newest first" if self.sort_col is None else f"by {self.sort_col}, largest first"
        shown = f" matching '{text}' (of {len(view.rows):,})" if text else ""
        table.border_title = f"calls {lo + 1 if n else 0}–{hi} of {n:,}{shown} ({order}) · [ ] page · s source"

    def _head(self, s: RunSnapshot) -> Text:
        lv = s.ledger
        t = Text()
        if not s.path.joinpath("ledger.jsonl").exists() and (self._report is None or self._report.ok):
            t.append("no ledger.jsonl: this run made no paid calls (cached mode spends $0)\n", style="dim")
        else:
            t.append_text(chain_text(self._report, self._report_error))
            rep = self._report
            if rep is not None and rep.ok and rep.n_records != len(lv):
                t.append_text(chain_lag(rep.n_records, len(lv), self.VERIFY_EVERY_S))
            t.append("\n")
        t.append(f"{len(lv):,} calls · total {usd(lv.total_usd)}")
        est = int(lv.cost_micro[lv.estimated].sum()) / 1e6 if len(lv) else 0.0
        if est:
            t.append(f" (of which {usd(est)} estimated from the price table)", style="yellow")
        rep = self._report
        if rep is not None and rep.ok and rep.excess:
            t.append(
                f" · {usd(rep.excess_usd, 6)} billed above the reserved worst case on {rep.excess_calls} "
                f"call{'s' if rep.excess_calls != 1 else ''}",
                style="yellow",
            )
        budget = s.budget_usd
        if budget:
            frac = lv.total_usd / budget if budget > 0 else 1.0
            t.append(f" · budget {money(budget)} ")
            t.append(bar(frac, 20), style="red" if frac > 0.9 else "green")
            t.append(f" {frac:.1%}")

        played = playground_spend(self.app.runs_root)
        if played is not None:  # the Playground's live sessions, outside every run
            t.append(f"\nplayground (all runs): {played[0]:,} calls · {usd(played[1], 6)} · s: list them")
        return t

    def _fill_table(self, s: RunSnapshot) -> None:
        lv = s.ledger
        text = self.query_one(FilterBar).value.strip()
        idx = ledger_rows(lv, text, self.sort_col)  # newest first unless sorted
        n = len(idx)
        pages = max(1, -(-n // PAGE))
        self.page = min(self.page, pages - 1)
        key = (str(s.path), len(lv) if self.page == 0 else None, self.page, text, self.sort_col)
        if key == self._table_key:
            return
        self._table_key = key
        self.rows = idx
        table = self.query_one(DataTable)
        table.clear()
        lo, hi = self.page * PAGE, min(n, (self.page + 1) * PAGE)
        for i in idx[lo:hi].tolist():
            table.add_row(
                utc(float(lv.time[i]), "%m-%d %H:%M:%S"),
                lv.model_names[int(lv.model[i])].split("/")[-1],
                lv.purpose_names[int(lv.purpose[i])],
                f"{int(lv.prompt_tokens[i]):,}/{int(lv.completion_tokens[i]):,}",
                usd(int(lv.cost_micro[i]) / 1e6, 6),
                Text("estimated", style="yellow") if lv.estimated[i] else "reported",
            )
        order = "newest first" if self.sort_col is None else f"by {self.sort_col}, largest first"
        shown = f" matching '{text}' (of {len(lv):,})" if text else ""
        table.border_title = f"calls {lo + 1 if n else 0}–{hi} of {n:,}{shown} ({order}) · [ ] page · / filter"

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def on_input_changed(self, event) -> None:
        if event.input.id == "filter":
            self.page = 0
            if self.app.latest is not None:
                self.show(self.app.latest)

    def action_sort(self) -> None:
        order = (None, "cost", "tokens")
        self._sort_by(order[(order.index(self.sort_col) + 1) % len(order)])

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a header sorts by it: time (newest first), cost or tokens (largest first)."""
        if header_miss(event.data_table):
            return
        col = self._columns[event.column_index]
        by = LEDGER_SORT.get(col, "?")
        if by == "?":
            self.notify("calls sort by time, cost or tokens", severity="warning", timeout=3)
            return
        self._sort_by(by)

    def _sort_by(self, by: str | None) -> None:
        self.sort_col = by
        table = self.query_one(DataTable)
        for c in self._columns:
            table.columns[ColumnKey(c)].label = Text(c + (" ▼" if by is not None and LEDGER_SORT.get(c) == by else ""))
        table.refresh()
        self.page = 0
        self.notify(f"calls {'newest first' if self.sort_col is None else 'by ' + self.sort_col}", timeout=2)
        if self.app.latest is not None:
            self.show(self.app.latest)

    def action_page(self, delta: int) -> None:
        self.page = max(0, self.page + delta)
        if self.app.latest:
            self.show(self.app.latest)

    def action_verify(self) -> None:
        s = self.app.current
        folder = self.source_dir(s)
        if folder is None:
            self.notify("no run selected", severity="warning")
            return
        if not (folder / "ledger.jsonl").exists():
            self.notify(
                f"{SOURCE_TITLES[self.source]}: no ledger.jsonl (no paid calls), nothing to verify", severity="warning"
            )
            return
        self._verified = None
        self._verified_at = 0.0
        self._report, self._report_error = None, None  # the head says "verifying…" until it is done
        self._asked = True
        self.notify("verifying the ledger's hash chain…", timeout=3)
        if self.source == "run" and s is not None:
            self._maybe_verify(s)
        else:
            self._maybe_verify_dir(folder, -1)
        self.show(self.app.latest) if self.app.latest is not None else None

    def _maybe_verify(self, s: RunSnapshot) -> None:
        self._maybe_verify_dir(s.path, len(s.ledger))

    def _maybe_verify_dir(self, path: Path, n: int) -> None:
        key = (str(path), n)
        if key == self._verified:
            return
        if (
            self._verified is not None
            and self._verified[0] == key[0]
            and time.monotonic() - self._verified_at < self.VERIFY_EVERY_S
        ):
            return  # a live run appends constantly; re-verify at most every few seconds
        if self._verified is None or self._verified[0] != key[0]:
            self._report, self._report_error = None, None
        self._verified, self._verified_at = key, time.monotonic()
        self._verify(path)

    @work(thread=True, exclusive=True, group="ledger-verify", exit_on_error=False)
    def _verify(self, run_dir: Path) -> None:
        try:  # the same verdict as `trinity ledger verify RUN_DIR` (heads of summary + checkpoint)
            # lazy: a missing module is reported, not raised at import
            from trinity.pool.ledger import verify_run_ledger

            report, error = verify_run_ledger(run_dir), None
        except ImportError as e:
            report, error = None, f"verifier unavailable: {e}"
        except Exception as e:  # a TrinityError, or an unreadable file
            report, error = None, str(e)
        self.app.call_from_thread(self._verified_result, report, error)

    def _verified_result(self, report, error) -> None:
        self._report, self._report_error = report, error
        if getattr(self, "_asked", False):  # v was pressed: say the outcome, not only in the head
            self._asked = False
            text = chain_text(report, error).plain
            ok = report is not None and report.ok
            self.notify(text, title="ledger", severity="information" if ok else "error", timeout=8)
        if self.app.latest is not None and self.is_current:
            self.show(self.app.latest)

    def action_export(self) -> None:
        """Every call of the ledger (newest first), to CSV and JSON."""
        s = self.app.current
        if self.source != "run":
            self._export_calls(s)
            return
        if s is None:
            self.notify("no run selected", severity="warning")
            return
        lv = s.ledger
        rows = [
            (
                utc(float(lv.time[i]), "%Y-%m-%d %H:%M:%S"),
                lv.model_names[int(lv.model[i])],
                lv.purpose_names[int(lv.purpose[i])],
                f"{int(lv.prompt_tokens[i])}/{int(lv.completion_tokens[i])}",
                int(lv.cost_micro[i]) / 1e6,
                "estimated" if lv.estimated[i] else "reported",
            )
            for i in ledger_rows(lv, self.query_one(FilterBar).value.strip(), self.sort_col).tolist()
        ]
        try:
            csv_path, json_path = export_table("ledger", CALL_COLUMNS, rows)
        except OSError as e:
            self.notify(f"export failed: {e}", severity="error")
            return
        self.notify(f"{len(rows):,} calls exported: {csv_path} and {json_path.name}", timeout=8)

    def _export_calls(self, s: RunSnapshot | None) -> None:
        folder = self.source_dir(s)
        view = load_calls(folder) if folder is not None else None
        if view is None:
            self.notify(f"{SOURCE_TITLES[self.source]}: no calls to export", severity="warning")
            return
        rows = [
            (
                utc(r.time, "%Y-%m-%d %H:%M:%S") if np.isfinite(r.time) else "",
                r.model,
                r.role,
                "" if r.turn is None else r.turn,
                f"{r.prompt_tokens}/{r.completion_tokens}",
                r.cost_micro / 1e6,
                "cached" if r.cached else ("estimated" if r.estimated else "reported"),
            )
            for r in (
                view.rows[i] for i in call_rows(view.rows, self.query_one(FilterBar).value.strip(), self.sort_col)
            )
        ]
        try:
            csv_path, json_path = export_table(f"ledger-{self.source}", SERVED_COLUMNS, rows)
        except OSError as e:
            self.notify(f"export failed: {e}", severity="error")
            return
        self.notify(f"{len(rows):,} calls exported: {csv_path} and {json_path.name}", timeout=8)
