"""A sweep in the app (issue 16): one row in Runs (its trials' states, its spend against the sweep
budget, its best trial's validation accuracy) that expands into its trials, each an ordinary run
(open, pause, resume — a trial through its sweep, under the sweep's budget); c overlays the trials in Train with stable colours. The sweep dirs are
written by `minertui.synth.make_sweep` in trinity.sweep.runner's layout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from textual.widgets import DataTable

from minertui.app import MinerApp
from minertui.reader import Reader
from minertui.synth import make_run, make_sweep
from minertui.widgets.curves import RICH_COLOUR, RUN_COLOURS

BIG = (120, 40)


def _root(tmp_path):
    root = tmp_path / "runs"
    make_run(root / "run-a", generations=6, planned=6, status="finished", seed=1)
    sweep = make_sweep(root / "sweep-s", ("finished", "stopped", "finished", "pending"), budget_usd=0.5)
    return root, sweep.resolve()


def _plain(cell):
    return getattr(cell, "plain", cell)


def _keys(table):
    return [str(k.value) for k in table.rows]


async def _settle(app, pilot, times=2):
    for _ in range(times):
        await app.refresh_now()
        await pilot.pause()


def test_reader_posts_the_sweep_once_and_its_trials_are_not_top_level_runs(tmp_path):
    root, sweep = _root(tmp_path)
    reader = Reader(root)
    trial = sweep / "trials" / "t001"
    reader.open(trial)  # opened by path (e.g. `minertui open`): still only inside its sweep
    poll = reader.poll(True)
    assert len(poll.sweeps) == 1
    sw = poll.sweeps[0]
    assert [t.state for t in sw.trials] == ["finished", "stopped", "finished", "pending"]
    assert sw.counts == {"finished": 2, "stopped": 1, "pending": 1}
    paths = [s.path for s in poll.runs]
    assert len(paths) == len(set(paths)) == 5  # run-a + the 4 trials (the pending one: no run.json yet)
    # the spend is the trials' ledgers, summed; the best is the trials' best validation accuracy
    trials = [s for s in poll.runs if s.path in poll.in_sweeps()]
    assert abs(sw.spent_usd - sum(s.spend_usd for s in trials)) < 1e-12 and sw.spent_usd > 0
    best = max(float(v) for s in trials for v in s.gens.val_acc)
    assert sw.best is not None and abs(sw.best[1] - best) < 1e-12
    assert poll.current is not None and poll.current.path == trial


async def test_a_sweep_is_one_row_that_expands_into_runs_you_can_open(tmp_path):
    root, sweep = _root(tmp_path)
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await _settle(app, pilot)
        table = app.screen.query_one(DataTable)
        assert sorted(_keys(table)) == sorted([str((root / "run-a").resolve()), str(sweep)])
        row = table.get_row(str(sweep))
        assert row[0].plain == "▸ sweep-s" and _plain(row[1]) == "sweep ✓2 ■1 ○1"
        assert row[5].startswith("$") and row[5].endswith("/$0.5")  # the sweep's spend against its budget
        table.move_cursor(row=_keys(table).index(str(sweep)), animate=False)
        await pilot.pause()
        detail = str(app.screen.query_one("#runs-detail").render())
        assert "4 trials: 2 finished, 1 stopped, 1 pending" in detail and "of the sweep budget" in detail
        # highlighting the sweep selects its best trial; pause/stop/resume are the trials'
        assert app.current is not None and app.current.path.parent == sweep / "trials"
        assert app.screen.check_action("pause", ()) is False and app.screen.check_action("resume", ()) is False
        await pilot.press("enter")  # expands
        await _settle(app, pilot)
        keys = _keys(table)
        trials = [str(sweep / "trials" / f"t{i:03d}") for i in range(4)]
        assert keys[keys.index(str(sweep)) + 1 : keys.index(str(sweep)) + 5] == trials  # sweep order
        assert len(keys) == len(set(keys)) == 6
        assert _plain(table.get_row(trials[1])[1]) == "stopped" and _plain(table.get_row(trials[3])[1]) == "pending"
        table.move_cursor(row=keys.index(trials[1]), animate=False)
        await pilot.pause()
        assert app.screen.check_action("delete", ()) is False  # its dir belongs to the sweep
        app.screen._set_sort(4, True)  # val~ (smoothed validation accuracy), best first
        await _settle(app, pilot)
        keys = _keys(table)
        by_path = {str(s.path): s for s in app.latest.runs}
        from minertui.screens.runs import run_values

        vals = [run_values(by_path[k], app.smoothing)[4] for k in keys[keys.index(str(sweep)) + 1 :][:3]]
        assert vals == sorted(vals, reverse=True) and keys[keys.index(str(sweep)) + 4] == trials[3]
        app.screen._set_sort(9, True)  # back to start time: the sweep's own order
        await _settle(app, pilot)
        keys = _keys(table)
        table.move_cursor(row=keys.index(trials[2]), animate=False)
        await pilot.press("enter")  # a trial opens like any run
        await _settle(app, pilot)
        assert app.screen.MODE == "Train" and app.current.path == sweep / "trials" / "t002"
        await pilot.press("1", "x")  # x collapses it again
        await _settle(app, pilot)
        assert len(_keys(app.screen.query_one(DataTable))) == 2


async def test_c_on_a_sweep_overlays_its_trials_with_stable_colours(tmp_path):
    root, sweep = _root(tmp_path)
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await _settle(app, pilot)
        table = app.screen.query_one(DataTable)
        table.move_cursor(row=_keys(table).index(str(sweep)), animate=False)
        await pilot.press("c")
        await _settle(app, pilot)
        assert app.screen.MODE == "Train" and app.screen.metric == "val"  # a sweep compares validation accuracy
        poll = app.latest
        by_path = {s.path: s for s in poll.runs}
        from minertui.runmodel import ema, last_finite

        marked = list(app.compare)
        assert app.current.path.name == poll.sweeps[0].best[0]  # the side panel: the best trial
        assert len(marked) == 3  # the trials that have a run dir (not the pending one)
        smooth = [last_finite(ema(by_path[p].gens.val_acc, app.smoothing)) for p in marked]
        assert smooth == sorted(smooth, reverse=True)  # best smoothed validation accuracy first
        legend = str(app.screen.query_one("#train-legend").render())
        assert [w.lstrip("━") for w in legend.split()[:3]] == [p.name for p in marked]
        # each trial's colour is its place in the sweep's, whatever the order of the overlay
        text = app.screen.query_one("#train-legend").content
        styles = [str(sp.style) for sp in text.spans if text.plain[sp.start : sp.end] == "━"]
        assert styles == [RICH_COLOUR.get(RUN_COLOURS[int(p.name[1:])], RUN_COLOURS[int(p.name[1:])]) for p in marked]
        await pilot.press("v")  # the miner's choice holds…
        await _settle(app, pilot)
        assert app.screen.metric == "best"
        await pilot.press("1")
        await _settle(app, pilot)
        table = app.screen.query_one(DataTable)
        table.move_cursor(row=_keys(table).index(str(sweep)), animate=False)
        await pilot.press("c")  # …until the sweep is compared again
        await _settle(app, pilot)
        assert app.screen.metric == "val" and list(app.compare) == marked


async def test_a_trial_pauses_and_resumes_like_a_run_and_stays_inside_its_sweep(tmp_path):
    root, sweep = _root(tmp_path)
    trial = sweep / "trials" / "t001"
    # an "engine" that holds the trial's run dir (its pid in .lock) and exits on SIGTERM, as trinity does
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import signal, sys, time\n"
                "from trinity.runs.rundir import RunDir\n"
                f"lock = RunDir({str(trial)!r}).lock().acquire()\n"
                "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
                "print('ready', flush=True)\n"
                "time.sleep(60)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        app = MinerApp(runs_root=root, poll=False)
        async with app.run_test(size=BIG) as pilot:
            await _settle(app, pilot)
            table = app.screen.query_one(DataTable)
            assert _plain(table.get_row(str(sweep))[1]) == "sweep ✓2 ■1 ○1"  # stopped in run.json, but held…
            table.move_cursor(row=_keys(table).index(str(sweep)), animate=False)
            await pilot.press("x")
            await _settle(app, pilot)
            table.move_cursor(row=_keys(table).index(str(trial)), animate=False)
            await pilot.pause()
            assert app.screen.check_action("pause", ()) is True  # an engine holds it
            await pilot.press("p")
            assert holder.wait(timeout=20) == 0  # the SIGTERM reached the trial's engine
            await _settle(app, pilot)
            assert app.screen.check_action("resume", ()) is True
            # while a sweep driver runs (it holds the sweep's budget), resuming a trial is refused
            from trinity.runs.rundir import RunDir

            driver = RunDir(sweep).lock().acquire()
            try:
                await pilot.press("r")
                await pilot.pause()
                assert trial not in app.supervisor.launched
                said = [n.message for n in app._notifications]
                assert any("is being run by its driver" in m and "--trial t001" in m for m in said), said
            finally:
                driver.release()
            await pilot.press("r")  # the sweep has a budget: resumed by the sweep, under its budget
            launched = app.supervisor.launched[trial]
            os.killpg(launched.proc.pid, signal.SIGKILL)  # a synthetic trial: no training wanted here
            launched.proc.wait(timeout=20)
            assert launched.argv[3:] == ["sweep", "resume", str(sweep), "--trial", "t001"]
            await _settle(app, pilot)
            keys = _keys(app.screen.query_one(DataTable))
            assert keys.count(str(trial)) == 1 and len(keys) == 6  # launched, and still only inside
    finally:
        if holder.poll() is None:
            holder.send_signal(signal.SIGKILL)
            holder.wait()


async def test_resume_with_on_a_trial_sets_the_sweeps_budget(tmp_path):
    """R on a trial: the dialog's budget is the sweep's (its spend against its cap), and the
    resume goes through the sweep with that budget."""
    from textual.widgets import Input, Label

    from minertui.screens.runops import ResumeScreen

    root, sweep = _root(tmp_path)
    trial = sweep / "trials" / "t001"
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await _settle(app, pilot)
        table = app.screen.query_one(DataTable)
        table.move_cursor(row=_keys(table).index(str(sweep)), animate=False)
        await pilot.press("x")
        await _settle(app, pilot)
        table.move_cursor(row=_keys(table).index(str(trial)), animate=False)
        await pilot.pause()
        await pilot.press("R")
        await pilot.pause()
        dlg = app.screen
        assert isinstance(dlg, ResumeScreen) and dlg.sweep is not None and dlg.sweep.budget_usd == 0.5
        assert "sweep budget $" in [str(lb.render()) for lb in dlg.query(Label)]
        dlg.query_one("#r-budget", Input).value = "2"
        dlg.go()
        await pilot.pause()
        launched = app.supervisor.launched[trial]
        os.killpg(launched.proc.pid, signal.SIGKILL)  # a synthetic trial: no training wanted here
        launched.proc.wait(timeout=20)
        assert launched.argv[3:] == ["sweep", "resume", str(sweep), "--trial", "t001", "--budget-usd", "2.0"]


async def test_a_broken_sweep_json_is_a_row_that_says_so(tmp_path):
    root, sweep = _root(tmp_path)
    (sweep / "sweep.json").write_bytes(b"\xff\xfe{")
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await _settle(app, pilot)
        table = app.screen.query_one(DataTable)
        assert _plain(table.get_row(str(sweep))[1]) == "sweep unreadable"
        table.move_cursor(row=_keys(table).index(str(sweep)), animate=False)
        await pilot.pause()
        assert "sweep.json" in str(app.screen.query_one("#runs-detail").render())
