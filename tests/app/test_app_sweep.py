"""The sweep widget: a sweep as one thing (curves, trials sorted by smoothed val accuracy, spend)."""

from __future__ import annotations

import json

from textual.app import App, ComposeResult
from textual.widgets import DataTable

from minertui.widgets.sweep import SweepPanel, read_sweep, spend_line


def _fake_sweep(root, accs, budget=0.5, costs=(0.1, 0.2, 0.0)):
    """A sweep dir as `trinity sweep` writes it (sweep.json + trial run dirs), no Ray needed."""
    trials = []
    for i, series in enumerate(accs):
        tid = f"t{i:03d}"
        run = root / "trials" / tid
        run.mkdir(parents=True)
        hist = [{"gen": g + 1, "best": 0.5, "mean": 0.4, "val_acc": a, "best_val_acc": max(series[:g + 1]),
                 "cost_usd": costs[i]} for g, a in enumerate(series)]
        (run / "history.json").write_text(json.dumps(hist))
        (run / "run.json").write_text(json.dumps({"id": tid, "status": "finished"}))
        trials.append({"id": tid, "dir": f"trials/{tid}", "label": f"seed={i}", "overrides": {"seed": i},
                       "state": "finished"})
    (root / "sweep.json").write_text(json.dumps({"kind": "sweep", "format": 1, "id": root.name,
                                                 "status": "finished", "budget_usd": budget, "trials": trials}))
    return root


def test_snapshot_sorts_by_smoothed_val_and_sums_spend(tmp_path):
    snap = read_sweep(_fake_sweep(tmp_path / "sw", [[0.2, 0.3, 0.9], [0.6, 0.6, 0.6], [0.1, 0.1, 0.2]]))
    assert [t.id for t in snap.sorted_trials()] == ["t001", "t000", "t002"]  # 0.6 > 0.467 > 0.133
    assert abs(snap.spent_usd - 0.3) < 1e-9 and "spent $0.3000 of $0.5000" in spend_line(snap)
    assert [t.colour for t in snap.trials] == ["cyan", "green", "yellow"]  # stable: by index


def test_broken_sweep_dir_is_a_message_not_a_crash(tmp_path):
    (tmp_path / "sweep.json").write_bytes(b"\xff\xfe")
    snap = read_sweep(tmp_path)
    assert snap.error and snap.trials == ()


async def test_panel_shows_rows_in_order(tmp_path):
    snap = read_sweep(_fake_sweep(tmp_path / "sw", [[0.2, 0.3, 0.9], [0.6, 0.6, 0.6]]))

    class One(App):
        def compose(self) -> ComposeResult:
            yield SweepPanel()

    async with One().run_test(size=(80, 24)) as pilot:
        panel = pilot.app.query_one(SweepPanel)
        panel.show(snap)
        await pilot.pause()
        table = pilot.app.query_one(DataTable)
        assert table.row_count == 2
        assert [str(k.value) for k in table.rows] == ["t001", "t000"]
