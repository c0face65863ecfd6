"""SVG snapshots of every mode at 80×24 and 120×40, and of both themes.

Deterministic: the runs are written by `minertui.synth` (fixed times and seeds) into a fixed
directory, nothing on screen reads the wall clock, and the "running" run is held by a lock this
test takes (so it shows as running with an ETA). Update with `--snapshot-update` after a
deliberate UI change, and look at the diff report before committing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from minertui.app import MinerApp
from minertui.synth import make_run
from trinity.runs.rundir import RunDir

MODES = ("runs", "train", "ledger", "traces", "analysis", "submit")
SIZES = ((80, 24), (120, 40))


@pytest.fixture
def snap_root(request):
    """`/tmp/minertui-snapshots/<test>/runs` — a fixed path, since the Runs mode shows it. A file
    lock next to it keeps two test runs on one machine (another checkout, another -n worker)
    from writing the same folder at once: the second waits for the first."""
    from filelock import FileLock

    name = request.node.name.replace("[", "-").replace("]", "")
    base = Path("/tmp/minertui-snapshots") / name
    base.parent.mkdir(parents=True, exist_ok=True)
    guard = FileLock(str(base.parent / f"{name}.lock"))
    guard.acquire(timeout=600)
    shutil.rmtree(base, ignore_errors=True)
    root = base / "runs"
    make_run(root / "run-a-finished", generations=24, planned=24, status="finished", seed=1)
    make_run(root / "run-b-live", generations=9, planned=30, status="running", seed=2)
    lock = RunDir(root / "run-b-live").lock().acquire()  # "an engine holds it": running, with an ETA
    try:
        yield root
    finally:
        lock.release()
        shutil.rmtree(base, ignore_errors=True)
        guard.release()


def settle(*extra_keys: str):
    async def run_before(pilot) -> None:
        app = pilot.app
        for _ in range(3):
            await app.refresh_now()
            await pilot.pause()
        await app.workers.wait_for_complete()
        for key in extra_keys:
            await pilot.press(key)
            await pilot.pause()
        for _ in range(20):  # a loaded box: read until the reader has caught up with the files
            poll = await app.refresh_now()
            if poll.current is None or not poll.current.catching_up:
                break
        from textual.widgets import Input

        for field in app.screen.query(Input):  # a blinking cursor is drawn or not by the clock
            field.cursor_blink = False
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("mode", MODES)
def test_mode_dark(snap, snap_root, mode, size):
    app = MinerApp(runs_root=snap_root, poll=False, start_mode=mode, theme="minertui-dark")
    assert snap(app, terminal_size=size, run_before=settle())


@pytest.mark.parametrize("mode", MODES)
def test_mode_light(snap, snap_root, mode):
    app = MinerApp(runs_root=snap_root, poll=False, start_mode=mode, theme="minertui-light")
    assert snap(app, terminal_size=(80, 24), run_before=settle())


def test_trace_drill_down(snap, snap_root):
    app = MinerApp(runs_root=snap_root, poll=False, start_mode="traces", theme="minertui-dark")
    assert snap(app, terminal_size=(120, 40), run_before=settle("enter"))


def test_help(snap, snap_root):
    app = MinerApp(runs_root=snap_root, poll=False, start_mode="runs", theme="minertui-dark")
    assert snap(app, terminal_size=(80, 24), run_before=settle("question_mark"))


def test_new_run_form(snap, snap_root):
    app = MinerApp(runs_root=snap_root, poll=False, start_mode="runs", theme="minertui-dark")
    assert snap(app, terminal_size=(80, 24), run_before=settle("n"))


def test_compare_overlay(snap, snap_root):
    """Two runs marked in Runs (space, space) and compared (c): their best curves overlaid in Train,
    each in its own colour, the legend under the plot."""
    app = MinerApp(runs_root=snap_root, poll=False, start_mode="runs", theme="minertui-dark")
    assert snap(app, terminal_size=(120, 40), run_before=settle("space", "space", "c"))


def test_resume_dialog(snap, snap_root):
    app = MinerApp(runs_root=snap_root, poll=False, start_mode="runs", theme="minertui-dark")
    assert snap(app, terminal_size=(80, 24), run_before=settle("down", "R"))


def test_runs_with_a_sweep(snap, snap_root):
    """A sweep dir under the runs root: one row (its trials' states, its spend against the sweep
    budget, its best trial's val~), expanded (home, x) into its trials; the detail is the sweep's."""
    from minertui.synth import make_sweep

    make_sweep(snap_root / "sweep-sigma", ("finished", "stopped", "finished", "pending"))
    app = MinerApp(runs_root=snap_root, poll=False, start_mode="runs", theme="minertui-dark")
    assert snap(app, terminal_size=(80, 24), run_before=settle("home", "x"))
