"""Fixtures for the app tests: settings in a temp dir, a real tiny training run (made once per
test session, shared by the xdist workers), and deterministic synthetic runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock
from train_argv import train_argv

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("MINERTUI_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)


def train_cmd(run_dir: Path, generations: int = 3, *extra: str) -> list[str]:
    argv = train_argv(
        run_dir, *extra, config=ROOT / "configs" / "practice.yaml", generations=generations, popsize=4, m=4
    )
    return [sys.executable, "-m", "trinity", *argv]


@pytest.fixture(scope="session")
def real_run(tmp_path_factory) -> Path:
    """A finished cached-mode practice run on tiny-qwen3 made by the real trainer (`trinity
    train`), once per session; every test gets it read-only (copy it to change it)."""
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's basetemp sits in the session's dir: share the run between them;
    # without xdist, basetemp is the session's own dir (never reuse a run from an older session)
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    run_dir = shared / "real-runs" / "run-real"
    with FileLock(str(shared / "real-run.lock")):
        if (
            not (run_dir / "run.json").exists()
            or json.loads((run_dir / "run.json").read_text()).get("status") != "finished"
        ):
            shutil.rmtree(run_dir, ignore_errors=True)
            env = dict(os.environ, OMP_NUM_THREADS="1")
            # ES from a zero head: a mix of right and wrong traces (the label warm start routes
            # the practice set almost perfectly from generation 1)
            out = subprocess.run(
                train_cmd(run_dir, 3, "--warm-start", "none"),
                capture_output=True,
                text=True,
                cwd=ROOT,
                env=env,
                timeout=240,
            )
            assert out.returncode == 0, out.stderr[-2000:]
    return run_dir


@pytest.fixture
def runs_root(tmp_path, real_run) -> Path:
    """A runs root holding a copy of the real run."""
    root = tmp_path / "runs"
    root.mkdir()
    shutil.copytree(real_run, root / real_run.name)
    return root


def svg_text(svg: str) -> list[str]:
    """The text rows of a Textual SVG screenshot (cells joined by x, rows by y)."""
    import html
    import re

    rows: dict[float, list[tuple[float, str]]] = {}
    for m in re.finditer(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', svg):
        rows.setdefault(float(m.group(2)), []).append((float(m.group(1)), html.unescape(m.group(3))))
    return ["".join(t for _, t in sorted(cells)).rstrip() for _, cells in sorted(rows.items())]


@pytest.fixture
def snap(snap_compare, request):
    """`snap_compare`, and on a mismatch the differing text rows printed (CI's log shows what
    changed without the HTML report); colour-only differences print "(styles only)"."""
    import difflib

    import textual._doc

    def compare(app, **kw) -> bool:
        taken: list[str] = []
        real = textual._doc.take_svg_screenshot

        def capture(*a, **k):
            taken.append(real(*a, **k))
            return taken[-1]

        textual._doc.take_svg_screenshot = capture
        before = kw.pop("run_before", None)

        async def settled(pilot) -> None:
            if before is not None:
                await before(pilot)
            from textual.widgets import DataTable

            # A loaded box shot tables whose columns were as wide as their headers (the cause inside
            # Textual is not found). Have every table measure all its rows again, as its idle handler
            # would, and draw every line again; then, since rows can still arrive in a later message,
            # go on once no table has had anything to measure for three pauses in a row.
            for t in pilot.app.screen.query(DataTable):
                t._new_rows.update(t.rows)
                t._require_update_dimensions = True
                await t._on_idle(None)
                t._clear_caches()
                t.refresh(layout=True)
            quiet = 0
            for _ in range(200):
                pending = [
                    t
                    for t in pilot.app.screen.query(DataTable)
                    if t._require_update_dimensions or t._new_rows or t._updated_cells
                ]
                for t in pending:
                    await t._on_idle(None)
                    t.refresh(layout=True)
                quiet = 0 if pending else quiet + 1
                if quiet >= 3:
                    break
                await pilot.pause(0.02)

        try:
            ok = snap_compare(app, run_before=settled, **kw)
        finally:
            textual._doc.take_svg_screenshot = real
        if not ok and taken:
            name = request.node.name
            want = Path(request.node.path).parent / "__snapshots__" / Path(request.node.path).stem / f"{name}.svg"
            old = svg_text(want.read_text()) if want.is_file() else []
            diff = list(difflib.unified_diff(old, svg_text(taken[-1]), "expected", "actual", lineterm="", n=1))
            print(f"snapshot {name} differs:\n" + ("\n".join(diff) if diff else "(styles only)"))
        return ok

    return compare
