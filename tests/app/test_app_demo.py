"""`minertui demo`: no network, no key — a practice run starts and its curves move; when live
practice training is not available the app says so and shows a cached practice run."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from minertui.app import MinerApp
from trinity.runs.rundir import RunDir


async def test_demo_starts_a_practice_run_and_the_curves_move(tmp_path):
    app = MinerApp(runs_root=tmp_path / "demo-runs", poll=True, start_mode="train", demo=True)
    async with app.run_test(size=(100, 30)) as pilot:
        deadline = time.monotonic() + 240
        seen: list[int] = []
        while time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            s = app.current
            if s is not None and len(s.gens) and (not seen or len(s.gens) != seen[-1]):
                seen.append(len(s.gens))
            if len(seen) >= 2:
                break
        assert len(seen) >= 2, f"the demo run did not move (generations seen: {seen})"
        s = app.current
        # live practice training, never a stand-in: the demo has no cached fallback
        assert s.record.mode == "live" and s.record.pool == "practice"
        assert s.config.encoder == "tiny-qwen3"
        bar = app.screen.query_one("#runbar", Static).content
        bar = bar.plain if isinstance(bar, Text) else str(bar)
        assert "practice (simulated pool)" in bar
        # the plot has the generations that are in the file
        gens = [e for e in RunDir(s.path).read_events() if e.get("type") == "generation"]
        assert len(gens) >= len(s.gens) >= 2
        # Submit is pre-filled with a throwaway local "competition repo"
        repo = app.submit_defaults["repo"]
        assert (Path(repo) / ".git").is_dir() and app.submit_defaults["miner"] == "demo-miner"
        await pilot.press("6")
        await pilot.pause()
        assert app.screen.query_one("#sub-repo").value == repo
        servers = list(app.supervisor.servers)
        app.supervisor.stop(s.path, grace_s=5)  # do not leave it training after the test
    # the practice server goes away with the engine it served: no orphan
    (server,) = servers
    assert server.wait(timeout=60) == 0
