"""What a new user hit in the app, each pinned by a pilot test over real run directories: the
demo's note stays with the demo's run; pause / resume say what is happening while the engine
catches up (pausing…, paused, resuming…)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from textual.widgets import DataTable

from minertui.app import MinerApp
from minertui.supervisor import Launched, Supervisor
from minertui.synth import make_run
from minertui.widgets.runbar import RunBar

# a stand-in engine for the run-directory contract: it holds the run's lock, and on SIGTERM it
# checkpoints (here: waits for the test's go) and writes "stopped", as `trinity train` does
ENGINE = """
import signal, sys, time
from pathlib import Path
from trinity.runs.rundir import RunDir
run = RunDir(sys.argv[1]); lock = run.lock().acquire(); run.set_status("running")
asked = []
signal.signal(signal.SIGTERM, lambda *a: asked.append(1))
Path(sys.argv[1], "engine-ready").write_text("1")
while not (asked and Path(sys.argv[1], "go").exists()):
    time.sleep(0.02)
run.set_status("stopped", "stopped: interrupted by SIGTERM; continue with `trinity resume`")
"""


def bar_text(app) -> str:
    return app.screen.query_one(RunBar)._shown.plain


async def test_demo_note_only_with_the_demo_run(tmp_path):
    root = tmp_path / "runs"
    live = make_run(root / "demo-live", status="running").path
    cached = make_run(root / "cached-run", status="finished", seed=2).path
    app = MinerApp(runs_root=root, poll=False, start_mode="train")
    async with app.run_test(size=(80, 24)) as pilot:
        app.demo_note, app.demo_run = "practice (simulated pool): live run", live
        app.select_run(cached)
        await app.refresh_now()
        await pilot.pause()
        assert "cached-run" in bar_text(app) and "live run" not in bar_text(app)
        app.select_run(live)
        await app.refresh_now()
        await pilot.pause()
        assert bar_text(app).endswith("· live run")


def _wait(pred, secs=30.0):
    t0 = time.monotonic()
    while not pred():
        assert time.monotonic() - t0 < secs, "timed out"
        time.sleep(0.02)


async def test_pause_shows_pausing_then_paused(tmp_path):
    root = tmp_path / "runs"
    run = make_run(root / "r1", status="running").path
    engine = subprocess.Popen([sys.executable, "-c", ENGINE, str(run)])
    try:
        _wait(lambda: (run / "engine-ready").exists())
        app = MinerApp(runs_root=root, poll=False)
        async with app.run_test(size=(120, 30)) as pilot:
            await app.refresh_now()
            await pilot.pause()
            table = app.screen.query_one(DataTable)
            assert str(table.get_row_at(0)[1]) == "running"
            await pilot.press("p")
            await app.refresh_now()
            await pilot.pause()
            assert str(table.get_row_at(0)[1]) == "pausing…" and "pausing…" in bar_text(app)
            (run / "go").write_text("1")
            engine.wait(30)
            await app.refresh_now()
            await pilot.pause()
            assert str(table.get_row_at(0)[1]) == "paused" and "paused" in bar_text(app)
            assert "interrupted by SIGTERM" not in str(app.screen.query_one("#runs-detail").render())
    finally:
        engine.kill()


def test_resuming_until_the_engine_runs(tmp_path):
    run = make_run(tmp_path / "r1", status="stopped").path.resolve()
    sup = Supervisor(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        sup.launched[run] = Launched(run, proc, [], time.time())
        sup.phases[run] = ("resuming", time.time())
        assert sup.phase(run, locked=False, status="stopped") == "resuming…"  # loading, no lock yet
        assert sup.phase(run, locked=True, status="stopped") == "resuming…"  # locked, not yet running
        assert sup.phase(run, locked=True, status="running") == ""  # running: the phase is over
        sup.phases[run] = ("resuming", time.time())
        proc.kill()
        proc.wait()
        assert sup.phase(run, locked=False, status="stopped") == ""  # the resume failed: the engine's error shows
    finally:
        proc.kill()


async def test_event_log_dialog_wraps_whole_words_at_80_columns(tmp_path):
    """`l` in Train: every word of a long event is on screen at 80 columns (none cut by the border)."""
    root = tmp_path / "runs"
    run = make_run(root / "r1", generations=2, planned=30)
    msg = (
        "router text: tinyrouter's format (encoder input, transcript, question rendering and the "
        "verdict parse exactly as the validator writes them) for every one of the three roles"
    )
    run.log(msg)
    app = MinerApp(runs_root=root, open_run=run.path, start_mode="train", poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.refresh_now()
        await pilot.press("l")
        await pilot.pause()
        log = app.screen.query_one("#log")
        width = log.scrollable_content_region.width
        lines = [strip.text.rstrip() for strip in log.lines]
        assert all(len(x) <= width for x in lines), (width, lines)
        words = " ".join(lines).split()
        for w in msg.split():
            assert w in words


async def test_j_scrolls_help_and_home_scrolls_runs_back_left(tmp_path):
    root = tmp_path / "runs"
    make_run(root / "run-with-a-rather-long-name-20261201-101010-abcdef", generations=2, planned=30)
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.refresh_now()
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        for _ in range(50):  # on a loaded box the table's width may not be laid out yet
            table.scroll_to(x=40, animate=False, immediate=True)
            await pilot.pause()
            if table.scroll_x > 0:
                break
        assert table.scroll_x > 0
        await pilot.press("home")
        await pilot.pause()
        assert table.scroll_x == 0 and table.cursor_row == 0
        await pilot.press("question_mark")
        await pilot.pause()
        scroll = app.screen.query_one("#help")
        assert scroll.max_scroll_y > 0 and scroll.scroll_y == 0
        await pilot.press("j", "j", "j")
        await pilot.pause()
        assert scroll.scroll_y == 3
        await pilot.press("k")
        await pilot.pause()
        assert scroll.scroll_y == 2


async def test_runs_detail_shows_what_a_narrow_table_leaves_out(tmp_path):
    root = tmp_path / "runs"
    make_run(root / "r1", generations=2, planned=30)
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.refresh_now()
        await pilot.pause()
        detail = str(app.screen.query_one("#runs-detail").render())
        assert "live · pool practice · started 2026-01-01 00:00 UTC" in detail


async def test_traces_show_every_step_of_the_path_at_80_columns(tmp_path):
    from minertui.screens.traces import compact_path

    assert compact_path("✓ B·Thinker → A·Worker → C·Verifier") == "BT→AW→CV"
    root = tmp_path / "runs"
    make_run(root / "r1", generations=3, planned=30, traces_per_gen=8)
    for size, compact in (((80, 24), True), ((140, 40), False)):
        app = MinerApp(runs_root=root, start_mode="traces", poll=False)
        async with app.run_test(size=size) as pilot:
            for _ in range(3):
                await app.refresh_now()
                await pilot.pause()
            table = app.screen.query_one(DataTable)
            tv = app.latest.current.traces
            for r in range(min(8, table.row_count)):
                i = int(table.coordinate_to_cell_key((r, 0)).row_key.value)
                full = tv.path_names[int(tv.path[i])]
                cell = str(table.get_row_at(r)[-1])
                assert cell == (compact_path(full) if compact else full)
            # the path column ends inside the screen: nothing of it is cut
            widths = sum(c.get_render_width(table) for c in table.columns.values())
            assert widths <= size[0] - 1 or not compact


async def test_submit_at_80_columns_keeps_both_ends_of_the_bundle_path(tmp_path):
    root = tmp_path / "runs"
    run = make_run(root / "r1", generations=2, planned=2)
    app = MinerApp(runs_root=root, open_run=run.path, start_mode="submit", poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.refresh_now()
        await pilot.pause()
        screen = app.screen
        assert screen.query_one("#sub-bridge").placeholder == "owner_id key_id"
        bundle = tmp_path / ("deep/" * 12) / "submissions" / "miner" / "bundle-gen2"
        screen.bundle = bundle
        screen._refresh_head()
        await pilot.pause()
        lines = str(screen.query_one("#submit-help").render()).splitlines()
        line = next(x for x in lines if x.startswith("bundle "))
        assert len(line) <= 80 and line.endswith("miner/bundle-gen2") and str(tmp_path)[:8] in line


async def test_compare_legend_names_every_run_at_80_columns(tmp_path):
    from minertui.messages import CompareChanged

    root = tmp_path / "runs"
    paths = [
        make_run(root / f"run-20261201-10101{i}-abcde{i}", generations=4, planned=30, seed=i).path for i in range(3)
    ]
    app = MinerApp(runs_root=root, open_run=paths[0], start_mode="train", poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.refresh_now()
        app.post_message(CompareChanged(tuple(paths)))
        await pilot.pause()
        await app.refresh_now()
        await pilot.pause()
        legend = str(app.screen.query_one("#train-legend").render())
        assert legend.count("━") == 3
        for i in range(3):
            assert f"abcde{i}" in legend  # each run's distinctive end survives


def test_ledger_head_explains_records_against_calls():
    from minertui.screens.ledger import chain_lag

    assert chain_lag(37, 46, 5.0).plain == " · 9 newer calls not verified yet (re-checked every 5 s)"
    assert chain_lag(46, 40, 5.0).plain == " · the table has read 40 of them so far"


async def test_a_small_budget_is_shown_as_it_is(tmp_path):
    """$0.025 is $0.025 (not $0.03) in Train's stats and Ledger's head."""
    root = tmp_path / "runs"
    run = make_run(root / "r1", generations=3, planned=30, calls_per_gen=2)
    meta = json.loads((run.path / "run.json").read_text())
    meta["budget_usd"] = meta["config"]["budget_usd"] = 0.025
    (run.path / "run.json").write_text(json.dumps(meta))
    app = MinerApp(runs_root=root, open_run=run.path, start_mode="train", poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.refresh_now()
        await pilot.pause()
        assert "/ $0.025 " in str(app.screen.query_one("#train-stats").render())
        await pilot.press("3")
        await app.refresh_now()
        await pilot.pause()
        assert "budget $0.025 " in str(app.screen.query_one("#ledger-head").render())


async def test_quit_with_a_prepared_plan_asks_and_draws_the_question(tmp_path):
    root = tmp_path / "runs"
    make_run(root / "r1", generations=2, planned=2)
    app = MinerApp(runs_root=root, start_mode="submit", poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.refresh_now()
        app.unsaved["submit"] = "the prepared submission plan"
        await pilot.press("q")
        await pilot.pause()
        from minertui.screens.help import ConfirmScreen

        assert isinstance(app.screen, ConfirmScreen)
        assert "Quit? the prepared submission plan will be lost." in str(app.screen.query_one("Static").render())
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen) and app.is_running


def test_closing_the_demo_stops_an_engine_still_starting(tmp_path):
    """Quit or a closed terminal while the demo's engine still loads (no lock yet): it is
    stopped, not left training on its own."""
    from types import SimpleNamespace

    from minertui.demo import stop_demo_servers

    sup = Supervisor(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        run = (tmp_path / "demo-live-x").resolve()
        sup.launched[run] = Launched(run, proc, [], time.time())
        app = SimpleNamespace(supervisor=sup, demo=True, exit_note="")
        stop_demo_servers(app)
        assert proc.wait(10) != 0 and "minertui demo" in app.exit_note
    finally:
        proc.kill()
