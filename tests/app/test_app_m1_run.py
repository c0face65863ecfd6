"""A Milestone-1 triage run in the app: an ordinary row in Runs, and Train shows its epochs
(best validation composite, the loss and both accuracies in the log)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import DataTable, Static

from minertui.app import MinerApp
from trinity.m1.run import TrainConfig, create_run, run_training

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks" / "tinyrouter_m1" / "5-domain"
SIZE = (120, 40)


def _text(app, selector: str) -> str:
    c = app.screen.query_one(selector, Static).content
    return c.plain if isinstance(c, Text) else str(c)


@pytest.mark.slow
async def test_m1_run_in_runs_and_train(tmp_path):
    cfg = TrainConfig(encoder="tiny-qwen3", train_data=str(FIX / "train.jsonl"), limit=60, epochs=2, iters=5)
    rd = create_run(cfg, tmp_path, tmp_path / "runs" / "m1-run")
    run_training(rd)
    gens = [json.loads(l) for l in rd.events.read_text().splitlines() if '"generation"' in l]
    app = MinerApp(runs_root=tmp_path / "runs", poll=False)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(2):
            await app.refresh_now()
            await pilot.pause()
        table = app.screen.query_one(DataTable)
        row = [c.plain if isinstance(c, Text) else str(c) for c in table.get_row_at(0)]
        assert row[0] == "m1-run" and row[1] == "finished" and row[2] == "2/2" and row[7] == "m1"
        assert row[3] == f"{max(g['best'] for g in gens):.3f}"
    app = MinerApp(runs_root=tmp_path / "runs", poll=False, start_mode="train")
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(2):
            await app.refresh_now()
            await pilot.pause()
        assert f"best     {gens[-1]['best']:.3f}" in _text(app, "#train-stats")
        log = _text(app, "#train-log")
        assert "epoch 2: loss" in log and "val domain" in log
