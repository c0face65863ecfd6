"""Submit mode for a Milestone-1 run: k packs submissions/<miner>/m1/ in the clone (what
`trinity m1 pack` writes), the gate table shows the track's gates in their order with the
competition module's verdicts and the +0.02 merge rule, a second attempt the same day fails the
rate limit, and the PR goes through `trinity m1 submit`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rich.table import Table
from rich.text import Text
from textual.widgets import Input, Static

from minertui.app import MinerApp
from trinity.competition import m1
from trinity.m1.run import TrainConfig, create_run, pack_of_run, run_training
from trinity.runs.rundir import RunDir

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks" / "tinyrouter_m1" / "5-domain"
SIZE = (120, 40)


def tiny_m1_run(root: Path) -> Path:
    cfg = TrainConfig(encoder="tiny-qwen3", train_data=str(FIX / "train.jsonl"), limit=60, epochs=2, iters=3)
    rd = create_run(cfg, root, root / "runs" / "m1-run")
    run_training(rd)
    return rd.path


async def _settle(app, pilot) -> None:
    for _ in range(2):
        await app.refresh_now()
        await pilot.pause()


def _gate_rows(app) -> tuple[list[tuple[str, str, str]], str]:
    t = app.screen.query_one("#submit-gates", Static).content
    assert isinstance(t, Table)
    cols = [[c.plain if isinstance(c, Text) else str(c) for c in col._cells] for col in t.columns]
    return list(zip(*cols)), str(t.caption)


@pytest.mark.slow
async def test_m1_submit_packs_gates_and_points_at_m1_submit(tmp_path):
    run = tiny_m1_run(tmp_path)
    repo = tmp_path / "clone"
    repo.mkdir()
    app = MinerApp(runs_root=tmp_path / "runs", poll=False, start_mode="submit")
    async with app.run_test(size=SIZE) as pilot:
        await _settle(app, pilot)
        screen = app.screen
        assert "Milestone 1" in str(screen.query_one("#submit-help", Static).content)
        screen.query_one("#sub-miner", Input).value = "alice"
        screen.query_one("#sub-repo", Input).value = str(repo)
        await pilot.press("k")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        out = m1.submission_dir(repo, "alice")
        assert screen.bundle == out and (out / "config.json").is_file()
        got, want = m1.load_pack(out), pack_of_run(RunDir(run), "alice")
        assert np.array_equal(got.W_domain, want.W_domain) and np.array_equal(got.W_diff, want.W_diff)

        rows, caption = _gate_rows(app)
        verdicts = m1.run_gates(got, "alice", repo)
        assert [r[0] for r in rows] == [n for n, _ in m1.GATES] == [g.name for g in verdicts]
        assert [(r[1], r[2]) for r in rows] == [("PASS" if g.ok else "FAIL", g.detail) for g in verdicts]
        assert all(r[1] == "PASS" for r in rows)
        assert "all gates pass" in caption and f"composite ≥ king + {m1.WIN_MARGIN}" in caption

        # the first attempt is on record (their validator writes it): a second one today is refused
        m1.append_attempt(repo, "alice", "submissions/alice/m1", ok=True)
        await pilot.press("g")
        await app.workers.wait_for_complete()
        await pilot.pause()
        rows, caption = _gate_rows(app)
        assert rows[-1][0] == "rate_limit" and rows[-1][1] == "FAIL" and "alice" in rows[-1][2]
        assert [r[1] for r in rows[:2]] == ["PASS", "PASS"] and "1 gate(s) fail" in caption

        await pilot.press("l")
        await pilot.pause()
        plan = str(screen.query_one("#submit-plan", Static).content)
        assert f"trinity m1 submit {out} --miner alice --repo {repo}" in plan
        assert m1.PROFILE.branch("alice", got.config) in plan
        await pilot.press("x")  # nothing executes here: the command does it
        await pilot.pause()
        assert screen.plan is None and not screen.busy
