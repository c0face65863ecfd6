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
        (lo, hi, first), (lo2, _, _) = bar._spans[0], bar._spans[1]
        assert hi < lo2 and bar.item_at(hi) is None  # the two spaces between keys
        await pilot.click(bar, offset=(1 + hi, 0))
        await pilot.pause()
        assert app.screen.MODE == "Runs" and app.screen.focused is not app.screen.query_one("#filter")
