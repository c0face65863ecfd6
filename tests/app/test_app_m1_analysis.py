"""Analysis mode for a Milestone-1 run: e runs what `trinity m1 eval` computes on the run's own
files, in the analysis job; the systems, the per-domain figures and the domain confusion are
sortable, filterable, exportable tables whose values are that report's."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import Static

from minertui.app import MinerApp
from minertui.widgets.tables import SortableTable
from trinity.m1.evaluate import RunEval
from trinity.m1.run import TrainConfig, create_run, run_training

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks" / "tinyrouter_m1" / "5-domain"
SIZE = (120, 40)


def _plain(w) -> str:
    c = w.content
    return c.plain if isinstance(c, Text) else str(c)


def tiny_m1_run(root: Path, name: str = "m1-run") -> Path:
    cfg = TrainConfig(
        encoder="tiny-qwen3",
        train_data=str(FIX / "train.jsonl"),
        test_data=str(FIX / "test.jsonl"),
        limit=60,
        epochs=2,
        iters=3,
    )
    rd = create_run(cfg, root, root / "runs" / name)
    run_training(rd)
    return rd.path


async def _settle(app, pilot) -> None:
    for _ in range(2):
        await app.refresh_now()
        await pilot.pause()


@pytest.mark.slow
async def test_m1_analysis_tables_come_from_the_m1_eval_report(tmp_path):
    run = tiny_m1_run(tmp_path)
    app = MinerApp(runs_root=tmp_path / "runs", poll=False, start_mode="analysis")
    async with app.run_test(size=SIZE) as pilot:
        await _settle(app, pilot)
        screen = app.screen
        await pilot.press("o")  # no pool: no oracle; said, nothing started
        await pilot.pause()
        assert screen.running is None and not screen.results
        await pilot.press("e")
        await app.workers.wait_for_complete()
        await _settle(app, pilot)
        res = screen.results[str(run.resolve())]["m1"]
        assert "error" not in res, res
        rep = res["report"]
        want = RunEval(run).evaluate()  # `trinity m1 eval`'s numbers, from the same files
        assert rep["per_domain"] == want["per_domain"] and rep["confusion"] == want["confusion"]
        assert rep["systems"]["head"]["composite"] == want["systems"]["head"]["composite"]

        tables = {t.table_name: t for t in screen.query_one("#analysis-m1").query(SortableTable)}
        assert len(tables) == 3
        systems, per, conf = tables.values()
        assert per.names == ["domain", "n", "predicted", "accuracy", "precision", "F1"]
        assert [v[0] for v in per.shown_values()] == [d["domain"] for d in want["per_domain"]]
        for v, d in zip(per.shown_values(), want["per_domain"]):
            assert v[1:] == (d["n"], d["predicted"], d["accuracy"], d["precision"], d["f1"])
        labels = want["confusion"]["labels"]
        assert conf.names == ["true \\ predicted", *labels, "n"]
        for v, lab, row in zip(conf.shown_values(), labels, want["confusion"]["rows_true_cols_pred"]):
            assert v == (lab, *row, sum(row))
        assert [v[0] for v in systems.shown_values()] == ["head", "majority", "knn", "centroid"]
        assert "Milestone 1" in _plain(screen.query_one("#analysis-verdict", Static))
        assert "head composite" in _plain(screen.query_one("#analysis-m1-prose", Static))

        per.focus()
        await pilot.press("s", "s")  # by n, largest first
        ns = [v[1] for v in per.shown_values()]
        assert per.sort_col == 1 and per.sort_reverse and ns == sorted(ns, reverse=True)
        dom = labels[0]
        await pilot.press("slash", *dom, "enter")
        await pilot.pause()
        assert [r[0] for r in per.shown()] == [dom] and [r[0] for r in conf.shown()] == [dom]
        await pilot.press("x")
        await pilot.pause()
        got = next(p for p in screen.exported if per.table_name in p.name and p.suffix == ".csv")
        with open(got, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        assert rows[0] == per.names and [tuple(r) for r in rows[1:]] == per.shown()
        full = next(p for p in screen.exported if p.name.endswith("-reports.json"))
        assert json.loads(full.read_text())["m1"]["confusion"] == want["confusion"]
