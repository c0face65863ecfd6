"""Analysis mode: the oracle ceiling, baselines and evaluation of the selected run.

Analyses run `python -m minertui.jobs.analysis` in a child process (a run's router needs
torch, which the app process never imports; `a` runs all three in one), driven by a thread worker
that reads its JSON-line progress into a progress bar. Results are kept per run for the session.

Each report shows its findings (verdict, claim, notes) above its tables, which are sortable
DataTables (`SortableTable`: s sorts by the next column, S reverses, a click on a header sorts by
it; numbers as numbers, missing values last); `/` filters every table, x exports what they show."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import ProgressBar, Static

from minertui.reader import Poll
from minertui.screens.common import ModeScreen
from minertui.widgets.curves import CachedPlot
from minertui.widgets.tables import FilterBar, SortableTable, export_table

VERDICT_WORDS = {
    "POOL_BOUND": ("the pool is the limit", "yellow"),
    "ROUTER_BOUND": ("the router is the limit: there is headroom left to capture", "cyan"),
    "NEAR_CEILING": ("near the ceiling: the router captures most of the headroom", "green"),
    "INCONCLUSIVE": ("inconclusive: too little data to tell", "yellow"),
}
ORDER = ("oracle", "baselines", "eval", "m1")
NARROW = 100  # columns


def chart_bars(results: dict[str, dict]) -> list[tuple[str, float]]:
    """(label, accuracy) for the chart, all read from the reports."""
    bars: list[tuple[str, float]] = []
    m1 = results.get("m1", {}).get("report")
    if m1:  # a Milestone-1 run: each system's domain accuracy, from `trinity m1 eval`'s report
        return [(str(k), float(r["domain_accuracy"])) for k, r in m1["systems"].items()]
    ev, ba, orc = (results.get(k, {}).get("report") for k in ("eval", "baselines", "oracle"))
    singles = (ev or {}).get("singles") or (ba or {}).get("always") or []
    for s in singles:
        bars.append((str(s["name"]).removeprefix("always ").split("/")[-1][:14], float(s["accuracy"]["point"])))
    rnd = (ev or ba or {}).get("random")
    if rnd:
        bars.append(("random", float(rnd["point"])))
    if ev:
        bars.append(("router", float(ev["router"]["accuracy"]["point"])))
    elif orc and orc.get("router"):
        bars.append(("router", float(orc["router"]["accuracy"])))
    if orc and orc.get("crossfit"):
        bars.append(("oracle (x-fit)", float(orc["crossfit"]["oracle"])))
    return bars


def verdict_text(results: dict[str, dict]) -> Text:
    t = Text()
    orc = results.get("oracle", {}).get("report")
    if orc:
        words, style = VERDICT_WORDS.get(orc.get("verdict"), (orc.get("verdict", "?"), ""))
        t.append("verdict: ", style="bold")
        t.append(f"{orc.get('verdict')} — {words}", style=f"bold {style}")
        t.append(f"\n{orc.get('verdict_reason', '')}\n")
    ev = results.get("eval", {}).get("report")
    if ev:
        t.append("router ", style="bold")
        t.append(f"{ev.get('claim', '')}\n")
    m1 = results.get("m1", {}).get("report")
    if m1:
        t.append("Milestone 1 ", style="bold")
        t.append(
            f"{m1['m1_config']} · {m1['n_test']} test prompts · the head, its baselines, per domain and confusion\n"
        )
    if not t:
        t.append("Press o (oracle ceiling), b (baselines), e (evaluate the router) or a (all three).", style="dim")
    return t


class AccuracyChart(CachedPlot):
    def set_bars(self, bars: list[tuple[str, float]]) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title("accuracy on the test split")
        if bars:
            plt.bar([b[0] for b in bars], [round(b[1], 4) for b in bars], orientation="horizontal", width=0.3)
            plt.xlim(0, 1)
        self.data_changed(tuple(bars))


def table_name(kind: str, title: str, taken: set[str]) -> str:
    """A short file-safe name for a report table: 'oracle-ceiling-practice', 'each-benchmark-alone'."""
    words = ["".join(ch for ch in w.lower() if ch.isalnum()) for w in title.split()]
    name = "-".join([w for w in words if w][:3]) or kind
    while name in taken:
        name += "-2"
    return name


def table_rows(spec: dict) -> list[tuple[tuple, tuple]]:
    """(values, cells) of a table from `trinity.analysis.render.table_data`: cells keep their
    styles and the columns' alignment, values are what the cells sort by."""
    cols = spec["columns"]
    out = []
    for row in spec["rows"]:
        cells = []
        for col, c in zip(cols, row):
            t = Text.from_markup(c["text"], justify=col.get("justify") or "left")
            if col.get("style"):
                t.stylize(col["style"])
            cells.append(t)
        out.append((tuple(c["value"] for c in row), tuple(cells)))
    return out


class AnalysisScreen(ModeScreen):
    MODE = "Analysis"
    CSS_PATH = "analysis.tcss"
    BINDINGS = [
        Binding("o", "run('oracle')", "Oracle", id="analysis.oracle"),
        Binding("b", "run('baselines')", "Baselines", id="analysis.baselines"),
        Binding("e", "run('eval')", "Eval", id="analysis.eval"),
        Binding("a", "run_all", "All", id="analysis.all"),
        Binding("s", "sort", "Sort", id="analysis.sort"),
        Binding("S", "sort_reverse", "Reverse", show=False, id="analysis.sort_reverse"),
        Binding("slash", "filter", "Filter", id="analysis.filter"),
        Binding("x", "export", "Export", id="analysis.export"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.results: dict[str, dict[str, dict]] = {}  # run path -> kind -> {"report", "view"}
        self.running: str | None = None
        self._shown: tuple | None = None
        self._built: dict[str, int] = {}  # kind -> id() of the result its section shows
        self._sorts: dict[str, tuple[int | None, bool]] = {}  # table name -> (column, descending)
        self.exported: list[Path] = []  # the files the last export wrote

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="analysis-status"):
            yield Static("", id="analysis-job")
            yield ProgressBar(total=1, show_eta=False, id="analysis-progress")
        yield Static(id="analysis-verdict")
        with Horizontal(id="analysis-main"):
            with VerticalScroll(id="analysis-reports"):
                for kind in ORDER:
                    with Vertical(id=f"analysis-{kind}", classes="report"):
                        yield Static(id=f"analysis-{kind}-prose", classes="prose")
                # below 100 columns the chart is the last thing in the scroll: the tables get the height
                yield AccuracyChart(id="analysis-chart-narrow")
            yield AccuracyChart(id="analysis-chart")
        yield FilterBar()

    def on_resize(self, event) -> None:
        # below 100 columns the chart goes under the reports, in their scroll: side by side, the
        # report tables would be squeezed into ~48 columns
        self.set_class(event.size.width < NARROW, "-narrow")

    def update_body(self, poll: Poll) -> None:
        s = poll.current
        key = (
            str(s.path) if s else None,
            s.status if s else None,
            self.running,
            tuple(self.results.get(str(s.path), {})) if s else (),
        )
        if key == self._shown:
            return
        self._shown = key
        res = self.results.get(str(s.path), {}) if s else {}
        job = self.query_one("#analysis-job", Static)
        if s is None:
            job.update(Text("No run selected.", style="dim"))
        elif self.running:
            job.update(Text(f"running {self.running}…", style="bold"))
        elif s.status in ("running", "created"):
            job.update(Text("still training: results use its best θ so far", style="yellow"))
        else:
            job.update(Text(f"{s.id}: {s.status}", style="dim"))
        self.query_one("#analysis-verdict", Static).update(verdict_text(res))
        for kind in ORDER:
            self._section(kind, res.get(kind))
        bars = chart_bars(res)
        for chart in self.query(AccuracyChart):
            chart.set_bars(bars)

    def _section(self, kind: str, r: dict | None) -> None:
        """The findings of one report, then its tables (rebuilt only when the result changes;
        each table keeps its sort by name)."""
        if self._built.get(kind) == id(r):
            return
        self._built[kind] = id(r)
        box = self.query_one(f"#analysis-{kind}", Vertical)
        prose = self.query_one(f"#analysis-{kind}-prose", Static)
        for old in box.query(SortableTable):
            self._sorts[old.table_name] = (old.sort_col, old.sort_reverse)
        box.query(".report-part").remove()
        box.display = r is not None  # a report not taken takes no lines
        if r is None:
            prose.update("")
            return
        if "error" in r:
            prose.update(Text(f"{kind}: {r['error']}", style="red"))
            return
        prose.update(Text.from_ansi(r["view"].rstrip("\n")))
        text = self.query_one(FilterBar).value
        taken = {
            t.table_name
            for k in ORDER
            if k != kind
            for t in self.query_one(f"#analysis-{k}", Vertical).query(SortableTable)
        }
        parts: list[Widget] = []
        for spec in r.get("tables", ()):
            name = table_name(kind, spec["title"], taken)
            taken.add(name)
            parts.append(
                SortableTable(
                    name,
                    spec["title"],
                    [c["name"] for c in spec["columns"]],
                    table_rows(spec),
                    sort=self._sorts.get(name, (None, False)),
                    filter_text=text,
                    classes="report-part",
                )
            )
            if spec.get("caption"):
                parts.append(Static(Text(spec["caption"], style="dim"), classes="report-part caption"))
        if parts:
            box.mount(*parts)

    # ---- tables: sort, filter ------------------------------------------------------------
    def _table(self) -> SortableTable | None:
        """The focused table, else the first one (focused then)."""
        if isinstance(self.focused, SortableTable):
            return self.focused
        tables = list(self.query(SortableTable))
        if not tables:
            self.notify("no tables yet: run o, b, e or a first", severity="warning")
            return None
        tables[0].focus()
        return tables[0]

    def action_sort(self) -> None:
        t = self._table()
        if t is not None:
            t.action_sort_next()

    def action_sort_reverse(self) -> None:
        t = self._table()
        if t is not None:
            t.action_sort_reverse()

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def on_input_changed(self, event) -> None:
        if event.input.id == "filter":
            for t in self.query(SortableTable):
                t.set_filter(event.value)

    # ---- jobs ----------------------------------------------------------------------------
    def action_run(self, kind: str) -> None:
        self._start([kind])

    def action_run_all(self) -> None:
        self._start(list(ORDER))

    def _start(self, kinds: list[str]) -> None:
        s = self.app.current
        if s is None:
            self.notify("no run selected: open one in Runs (1)", severity="warning")
            return
        if s.record is not None and s.record.mode == "m1":  # a triage head: no pool, so no oracle or pool baselines
            if "eval" not in kinds:
                self.notify(
                    f"{s.id} is a Milestone-1 run: it has no pool to take an oracle or baselines of; "
                    "e evaluates its head (with its own baselines)",
                    severity="warning",
                )
                return
            kinds = ["m1"]
        if self.running:
            self.notify(f"{self.running} is still running", severity="warning")
            return
        width = max(40, self.query_one("#analysis-reports").size.width - 2)  # tables fit the pane
        self.running = kinds[0]
        self._jobs(s.path, kinds, width)

    @work(thread=True, exclusive=True, group="analysis", exit_on_error=False)
    def _jobs(self, run_dir: Path, kinds: list[str], width: int) -> None:
        """All `kinds` in one child process, one after another (torch is imported once); each
        result is shown as it comes."""
        self.app.call_from_thread(self._begin, kinds[0])
        argv = [sys.executable, "-m", "minertui.jobs.analysis", ",".join(kinds), str(run_dir), "--width", str(width)]
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL
        )
        pending = list(kinds)
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "begin" in msg:
                if msg["begin"] != kinds[0]:
                    self.app.call_from_thread(self._begin, msg["begin"])
            elif "progress" in msg:
                done, total, what = msg["progress"]
                self.app.call_from_thread(self._progress, done, total, what)
            elif "result" in msg or "error" in msg:
                kind = msg.get("result") or msg.get("kind") or (pending[0] if pending else kinds[-1])
                result = (
                    {"report": msg["report"], "view": msg["view"], "tables": msg.get("tables") or []}
                    if "result" in msg
                    else {"error": msg["error"]}
                )
                if kind in pending:
                    pending.remove(kind)
                self.app.call_from_thread(self._finish, run_dir, kind, result)
        err = proc.stderr.read() if proc.stderr else ""
        code = proc.wait()
        for kind in pending:
            error = f"the {kind} job ended without a result"
            if code != 0 and err.strip():
                error = f"{error} ({err.strip().splitlines()[-1]})"
            self.app.call_from_thread(self._finish, run_dir, kind, {"error": error})
        self.app.call_from_thread(self._done)

    def _begin(self, kind: str) -> None:
        self.running = kind
        bar = self.query_one(ProgressBar)
        bar.update(total=None, progress=0)
        self.query_one("#analysis-job", Static).update(Text(f"running {kind}…", style="bold"))

    def _progress(self, done: int, total: int, what: str) -> None:
        self.query_one(ProgressBar).update(total=max(total, 1), progress=done)
        self.query_one("#analysis-job", Static).update(Text(f"{self.running}: {what}", style="bold"))

    def _finish(self, run_dir: Path, kind: str, result: dict[str, Any]) -> None:
        self.results.setdefault(str(run_dir), {})[kind] = result
        if "error" in result:
            self.notify(f"{kind}: {result['error']}", severity="error", timeout=10)
        self._shown = None
        if self.app.latest is not None and self.is_current:
            self.show(self.app.latest)

    def _done(self) -> None:
        self.running = None
        self.query_one(ProgressBar).update(total=1, progress=1)
        self._shown = None
        if self.app.latest is not None and self.is_current:
            self.show(self.app.latest)

    def action_export(self) -> None:
        """Every table as shown (filtered, sorted) to CSV and JSON, the chart's accuracies
        (CSV and JSON) and each report in full (JSON), for this run."""
        s = self.app.current
        res = self.results.get(str(s.path), {}) if s else {}
        done = {k: r["report"] for k, r in res.items() if "report" in r}
        if s is None or not done:
            self.notify("nothing to export yet: run o, b, e or a first", severity="warning")
            return
        try:
            written = [
                export_table(f"analysis-{s.id}-{t.table_name}", t.names, t.shown()) for t in self.query(SortableTable)
            ]
            csv_path, json_path = export_table(f"analysis-{s.id}", ("name", "accuracy"), chart_bars(res))
            full = json_path.with_name(json_path.stem + "-reports.json")
            full.write_text(json.dumps(done, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        except OSError as e:
            self.notify(f"export failed: {e}", severity="error")
            return
        self.exported = [p for pair in written for p in pair] + [csv_path, json_path, full]
        self.notify(
            f"analysis exported to {csv_path.parent}: {len(written)} tables as shown (CSV and JSON), "
            f"the chart ({csv_path.name}) and the reports ({full.name})",
            timeout=8,
        )
