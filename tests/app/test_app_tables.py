"""Issue 15, the rest: the Analysis report tables are DataTables (sort, `/` filter, export of what
is shown), a click on the key bar runs the key's action, the Runs filter searches inside sweeps."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets import DataTable, Static

from minertui.app import MinerApp
from minertui.synth import make_run

SMALL = (80, 24)
BIG = (120, 40)


def plain(w) -> str:
    c = w.content if isinstance(w, Static) else w.render()
    return c.plain if isinstance(c, Text) else str(c)


async def settle(app, pilot, times: int = 2) -> None:
    for _ in range(times):
        await app.refresh_now()
        await pilot.pause()


def two_runs(root: Path) -> None:
    make_run(root / "run-a-finished", generations=24, planned=24, status="finished", seed=1)
    make_run(root / "run-b-live", generations=9, planned=30, status="stopped", seed=2)


async def click_key(pilot, description: str) -> None:
    """Click the key bar where `description`'s key is drawn (the content starts after 1 cell of padding)."""
    bar = pilot.app.screen.query_one("KeyBar")
    span = next(((lo, hi) for lo, hi, i in bar._spans if i.description == description), None)
    assert span is not None, [i.description for _, _, i in bar._spans]
    assert bar.item_at(span[0]).description == description
    await pilot.click(bar, offset=(1 + span[0], 0))
    await pilot.pause()


# ---- the key bar: a click runs the key's action -----------------------------------------------
async def test_clicking_a_key_bar_label_runs_its_action(tmp_path):
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        assert screen.MODE == "Runs"
        before = screen.sort_col
        await click_key(pilot, "Sort")
        assert screen.sort_col != before  # o's action ran: the next column
        await click_key(pilot, "Filter")
        assert app.screen.focused is app.screen.query_one("#filter")  # the / filter opened
        # a text field has the letters now: the bar offers Esc, and a click on it leaves the field
        await click_key(pilot, "leave field")
        assert app.screen.focused is None
        await click_key(pilot, "New")
        assert type(app.screen).__name__ == "NewRunScreen"
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        await click_key(pilot, "Help")  # the always-shown keys at the right edge too
        assert type(app.screen).__name__ == "HelpScreen"


async def test_a_click_between_keys_does_nothing(tmp_path):
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        bar = app.screen.query_one("KeyBar")
        hi, lo2 = bar._spans[0][1], bar._spans[1][0]
        assert hi < lo2 and bar.item_at(hi) is None  # the two spaces between keys
        await pilot.click(bar, offset=(1 + hi, 0))
        await pilot.pause()
        assert app.screen.MODE == "Runs" and app.screen.focused is not app.screen.query_one("#filter")


# ---- Analysis: the report tables sort, filter and export what they show ------------------------
async def test_a_sortable_table_sorts_numbers_as_numbers_missing_last():
    from textual.app import App
    from textual.widgets.data_table import ColumnKey

    from minertui.widgets.tables import SortableTable

    rows = [
        ((name, v), (name, shown))
        for name, v, shown in (("a", 9.0, "9"), ("b", 10.0, "10"), ("c", None, "—"), ("d", 100.0, "100"))
    ]

    class One(App):
        def compose(self):
            yield SortableTable("t", "numbers", ["name", "n"], rows)

    app = One()
    async with app.run_test(size=(40, 10)) as pilot:
        t = app.query_one(SortableTable)
        await pilot.pause()
        assert [r[0] for r in t.shown()] == ["a", "b", "c", "d"]  # as given until sorted
        await pilot.click(SortableTable, offset=(6, 0))  # the "n" header: numbers, largest first
        await pilot.pause()
        assert t.sort_col == 1 and [r[1] for r in t.shown()] == ["100", "10", "9", "—"]
        await pilot.click(SortableTable, offset=(6, 0))  # again: smallest first, "—" still last
        await pilot.pause()
        assert [r[1] for r in t.shown()] == ["9", "10", "100", "—"]
        assert t.columns[ColumnKey("1")].label.plain == "n ▲"
        await pilot.click(SortableTable, offset=(30, 0))  # the header row right of the columns
        await pilot.pause()
        assert t.sort_col == 1 and not t.sort_reverse  # Textual calls that column 0: no sort
        t.set_filter("n:10")  # column:word, on what the cells show
        assert [r[1] for r in t.shown()] == ["10", "100"] and "2 of 4 rows" in str(t.border_title)


async def test_analysis_report_tables_sort_filter_and_export(runs_root, tmp_path):
    import csv
    import json

    from minertui.widgets.tables import SortableTable

    app = MinerApp(runs_root=runs_root, poll=False, start_mode="analysis")
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        await pilot.press("b")  # the baselines job, in its child process
        await app.workers.wait_for_complete()
        await settle(app, pilot)
        screen = app.screen
        res = screen.results[str((runs_root / "run-real").resolve())]["baselines"]
        assert "error" not in res, res
        rep = res["report"]
        tables = list(screen.query_one("#analysis-baselines").query(SortableTable))
        assert len(tables) == 1
        t = tables[0]
        assert t.names == ["system", "accuracy [95%]", "turns", "cost", "$/correct"]
        # the findings above the table, the table's rows from the report
        assert "best single: " + rep["best_single"] in plain(screen.query_one("#analysis-baselines-prose"))
        acc = {v[0]: v[1] for v in t.shown_values()}
        for s in rep["always"]:
            assert acc[s["name"]] == s["accuracy"]["point"]
        assert len(t.shown()) == len(rep["always"]) + 1 + len(rep.get("features") or [])  # + random
        await pilot.press("s")  # the first table gets the focus and is sorted by its first column
        assert screen.focused is t and t.sort_col == 0 and not t.sort_reverse
        await pilot.press("s")  # accuracy: a number column, best first
        vals = [v[1] for v in t.shown_values()]
        assert t.sort_col == 1 and t.sort_reverse and vals == sorted(vals, reverse=True)
        await pilot.press("s")  # turns: random routing has none and stays last, either way
        assert t.shown()[-1][0].startswith("random routing")
        await pilot.press("S")
        assert not t.sort_reverse and t.shown()[-1][0].startswith("random routing")
        # the filter: every table, on what the cells show
        await pilot.press("slash")
        await pilot.press(*"scholar")
        await pilot.pause()
        shown = t.shown()
        assert shown and all("scholar" in r[0] for r in shown) and len(shown) < len(t._all)
        await pilot.press("enter")
        # export: what is shown, in its order (the filtered rows, the sort)
        await pilot.press("x")
        await pilot.pause()
        files = [p for p in screen.exported if "baselines" in p.name]
        csv_file = next(p for p in files if p.suffix == ".csv")
        with open(csv_file, newline="", encoding="utf-8") as f:
            got = list(csv.reader(f))
        assert got[0] == t.names and [tuple(r) for r in got[1:]] == shown
        records = json.loads(next(p for p in files if p.suffix == ".json").read_text())
        assert [r["system"] for r in records] == [r[0] for r in shown]
        # Esc in the filter clears it: all rows back
        await pilot.press("slash", "escape")
        await pilot.pause()
        assert len(t.shown()) == len(t._all)


# ---- Runs: the filter looks inside sweeps ------------------------------------------------------
def _keys(table) -> list[str]:
    return [str(k.value) for k in table.rows]


async def test_the_runs_filter_finds_trials_inside_a_collapsed_sweep_and_clearing_restores_it(tmp_path):
    from textual.widgets.data_table import ColumnKey

    from minertui.synth import make_sweep

    root = tmp_path / "runs"
    make_run(root / "run-a", generations=6, planned=6, status="finished", seed=1)
    sweep = make_sweep(root / "sweep-s", ("finished", "stopped", "finished", "pending"), budget_usd=0.5).resolve()
    trials = sweep / "trials"
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        screen = app.screen
        table = screen.query_one(DataTable)
        before = _keys(table)
        assert sorted(before) == sorted([str((root / "run-a").resolve()), str(sweep)])  # collapsed
        width = table.columns[ColumnKey("run")].content_width
        # t001 is the stopped trial (sigma0=0.2): a word of its row, not of the sweep's
        await pilot.press("slash", *"stopped")
        await pilot.pause()
        keys = _keys(table)
        assert keys == [str(sweep), str((trials / "t001").resolve())]
        assert table.get_row(str(sweep))[0].plain == "▾ sweep-s"  # shown expanded
        assert screen.expanded == set()  # the filter expands nothing for good
        # a column-scoped word: the trials whose label holds sigma0=0.05, the others hidden
        screen.query_one("#filter").value = "run:sigma0=0.05"
        await pilot.pause()
        keys = _keys(table)
        assert keys[0] == str(sweep) and {Path(k).name for k in keys[1:]} == {"t000", "t002"}
        # a word of the sweep's own row only: the sweep as it was (collapsed), no trial
        screen.query_one("#filter").value = "sweep-s"
        await pilot.pause()
        assert _keys(table) == [str(sweep)] and table.get_row(str(sweep))[0].plain == "▸ sweep-s"
        screen.query_one("#filter").value = "nothing-matches-this"
        await pilot.pause()
        assert _keys(table) == []
        await pilot.press("escape")  # clears the filter: the rows as before, collapsed
        await pilot.pause()
        assert _keys(table) == before and table.get_row(str(sweep))[0].plain == "▸ sweep-s"
        assert table.columns[ColumnKey("run")].content_width == width  # not the trials' long names


async def test_the_runs_filter_keeps_an_expanded_sweep_expanded(tmp_path):
    from minertui.synth import make_sweep

    root = tmp_path / "runs"
    sweep = make_sweep(root / "sweep-s", ("finished", "stopped", "finished"), budget_usd=0.5).resolve()
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        screen = app.screen
        table = screen.query_one(DataTable)
        await pilot.press("x")  # expand it: the sweep and its 3 trials
        await pilot.pause()
        full = _keys(table)
        assert len(full) == 4 and screen.expanded == {str(sweep)}
        await pilot.press("slash", *"stopped")
        await pilot.pause()
        assert [Path(k).name for k in _keys(table)] == ["sweep-s", "t001"]  # only the matching trial
        await pilot.press("escape")
        await pilot.pause()
        assert _keys(table) == full  # all its trials again


async def test_a_filter_that_hides_the_selected_run_selects_the_row_under_the_cursor(tmp_path):
    root = tmp_path / "runs"
    two_runs(root)
    a, b = (root / "run-a-finished").resolve(), (root / "run-b-live").resolve()
    app = MinerApp(runs_root=root, poll=False, open_run=a)
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        assert app.current.path == a
        await pilot.press("slash", *"run-b")
        await settle(app, pilot)
        table = app.screen.query_one(DataTable)
        assert _keys(table) == [str(b)]
        assert app.current.path == b  # what Runs highlights is what Train, Ledger, Analysis show
        await pilot.press("escape")
        await settle(app, pilot)
        assert len(_keys(table)) == 2 and app.current.path == b  # the cursor stays on it


# ---- Traces and Ledger: a click on a header sorts by it -----------------------------------------
async def header_click(pilot, table: DataTable, name: str) -> None:
    """What DataTable posts for a click on the header `name` (where a click lands is Textual's
    business and depends on when the frame was last drawn; the SortableTable test clicks)."""
    from textual.widgets.data_table import ColumnKey

    key = ColumnKey(name)
    table.post_message(DataTable.HeaderSelected(table, key, table.get_column_index(key), table.columns[key].label))
    await pilot.pause()


async def test_traces_and_ledger_sort_by_a_clicked_header(tmp_path):
    from textual.widgets.data_table import ColumnKey

    root = tmp_path / "runs"
    make_run(root / "run-a", generations=6, planned=6, status="finished", seed=1)
    app = MinerApp(runs_root=root, poll=False, start_mode="traces", open_run=root / "run-a")
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot, 3)
        screen = app.screen
        table = screen.query_one("#traces-table", DataTable)
        assert table.row_count > 1
        await header_click(pilot, table, "cost")
        await settle(app, pilot)
        assert screen.sort_col == "cost" and screen.sort_reverse  # dearest first
        tv = app.current.traces
        costs = [float(tv.cost[i]) for i in screen.rows.tolist()]
        assert costs == sorted(costs, reverse=True) and len(set(costs)) > 1
        assert table.columns[ColumnKey("cost")].label.plain == "cost ▼"
        await header_click(pilot, table, "cost")  # again: cheapest first
        await settle(app, pilot)
        costs = [float(tv.cost[i]) for i in screen.rows.tolist()]
        assert not screen.sort_reverse and costs == sorted(costs)
        assert table.columns[ColumnKey("cost")].label.plain == "cost ▲"
        await header_click(pilot, table, "path")  # not a sort column: says so, keeps the order
        await settle(app, pilot)
        assert screen.sort_col == "cost"

        await pilot.press("3")  # Ledger: the cost header, largest first
        await settle(app, pilot)
        screen = app.screen
        table = screen.query_one("#ledger-table", DataTable)
        await header_click(pilot, table, "cost")
        await settle(app, pilot)
        lv = app.current.ledger
        got = [int(lv.cost_micro[i]) for i in screen.rows.tolist()]
        assert screen.sort_col == "cost" and got == sorted(got, reverse=True) and len(set(got)) > 1
        assert table.columns[ColumnKey("cost")].label.plain == "cost ▼"
        await header_click(pilot, table, "time (UTC)")  # back to newest first
        await settle(app, pilot)
        assert screen.sort_col is None and table.columns[ColumnKey("cost")].label.plain == "cost"
