"""SVG snapshots for the GPU box: Train's system pane (a stand-in NVML on sys.path, fixed
samples), accuracy vs $ (one run, and three compared with their Pareto front), and
`trinity watch --once`, each at 80×24 and 120×40. Deterministic: synthetic runs with fixed times
and seeds in a fixed folder (the screens show paths), samples that do not read the clock.
Update with `--snapshot-update` after a deliberate change, and look at the report first."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from syrupy.extensions.image import SVGImageSnapshotExtension

from minertui.app import MinerApp
from minertui.synth import T0, make_run, system_sample
from trinity.runs.rundir import RunDir

SIZES = ((80, 24), (120, 40))
FAKE_NVML = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"


@pytest.fixture
def gpubox_root(request):
    from filelock import FileLock

    name = request.node.name.replace("[", "-").replace("]", "")
    base = Path("/tmp/minertui-snapshots") / name
    base.parent.mkdir(parents=True, exist_ok=True)
    guard = FileLock(str(base.parent / f"{name}.lock"))
    guard.acquire(timeout=600)
    shutil.rmtree(base, ignore_errors=True)
    root = base / "runs"
    for i, name_ in enumerate(("run-a-cheap", "run-b-mid", "run-c-pricey")):
        status = "running" if name_ == "run-b-mid" else "finished"  # watch shows a live one
        r = make_run(
            root / name_, generations=18, planned=30, seed=i + 1, calls_per_gen=2 + 3 * i, system=True, status=status
        )
        meta = json.loads((r.path / "run.json").read_text())
        meta["splits"]["val"] = [f"q{j}" for j in range(120)]
        (r.path / "run.json").write_text(json.dumps(meta))
    try:
        yield root
    finally:
        shutil.rmtree(base, ignore_errors=True)
        guard.release()


class FixedSamples:
    """The reader's sampler with fixed readings: the k-th sample is the synthetic engine's for
    generation k (two GPUs), stamped k seconds after T0."""

    def __init__(self) -> None:
        self.k = 0

    def sample(self, pid=None):
        self.k += 1
        return system_sample(self.k, T0 + self.k)


def settle(*keys: str, sampler: bool = False):
    async def run_before(pilot) -> None:
        app = pilot.app
        if sampler:
            app.reader._sampler = FixedSamples()
        for _ in range(3):
            await app.refresh_now()
            await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        for _ in range(4):  # a few samples of history
            await app.refresh_now()
            await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_system_pane(snap, gpubox_root, size, monkeypatch):
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    monkeypatch.syspath_prepend(str(FAKE_NVML))
    app = MinerApp(
        runs_root=gpubox_root,
        open_run=gpubox_root / "run-a-cheap",
        poll=False,
        start_mode="train",
        theme="minertui-dark",
    )
    assert snap(app, terminal_size=size, run_before=settle("y", sampler=True))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_accuracy_vs_dollars(snap, gpubox_root, size):
    app = MinerApp(
        runs_root=gpubox_root,
        open_run=gpubox_root / "run-a-cheap",
        poll=False,
        start_mode="train",
        theme="minertui-dark",
    )
    assert snap(app, terminal_size=size, run_before=settle("a"))


def test_accuracy_vs_dollars_compare(snap, gpubox_root):
    """Three runs marked in Runs and compared: the Pareto front marked and named in the legend."""
    app = MinerApp(runs_root=gpubox_root, poll=False, start_mode="runs", theme="minertui-dark")
    keys = ("space", "space", "space", "c", "a")  # space marks and moves down
    assert snap(app, terminal_size=(120, 40), run_before=settle(*keys))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_watch_once(gpubox_root, size, snapshot):
    """`trinity watch --once` as an SSH terminal shows it, on a running run (its lock held)."""
    from rich.console import Console
    from rich.text import Text

    from trinity.runs.cli import watch_screen
    from trinity.runs.status import RunWatcher

    run = gpubox_root / "run-b-mid"
    with RunDir(run).lock():
        s = RunWatcher(run).poll()
        lines = watch_screen(s, size[0], size[1], now=s.updated + 42)
    assert all(len(x) <= size[0] for x in lines) and len(lines) <= size[1]
    console = Console(record=True, width=size[0], height=size[1], color_system="truecolor", file=open("/dev/null", "w"))
    console.print(Text("\n".join(lines)))
    svg = console.export_svg(title="trinity watch --once", unique_id="watch")
    assert svg == snapshot(extension_class=SVGImageSnapshotExtension)
