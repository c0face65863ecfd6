"""A sweep as one thing: its trials' validation curves overlaid, a table of trials sorted by
smoothed validation accuracy, and the sweep's spend against its budget.

Self-contained (issue 16): `read_sweep(path)` builds an immutable `SweepSnapshot` (call it from a
reader thread: it reads sweep.json, each trial's run.json, history.json and ledger), and
`SweepPanel.show(snapshot)` redraws inside one `batch_update()`. Colours are stable per trial
(by its index in the sweep), whatever the sort order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from minertui.widgets.curves import CachedPlot

COLOURS = ("cyan", "green", "yellow", "magenta", "blue", "red", "white", "orange")
SMOOTH = 5  # generations in the moving average the table sorts by


@dataclass(frozen=True)
class TrialRow:
    index: int
    id: str
    label: str
    state: str
    generations: int
    best_val_acc: float | None
    smoothed_val_acc: float | None
    cost_usd: float
    gens: tuple[int, ...]
    val: tuple[float, ...]
    error: str | None = None

    @property
    def colour(self) -> str:
        return COLOURS[self.index % len(COLOURS)]


@dataclass(frozen=True)
class SweepSnapshot:
    path: str
    id: str
    status: str
    budget_usd: float | None
    spent_usd: float
    trials: tuple[TrialRow, ...]
    error: str | None = None

    def sorted_trials(self) -> list[TrialRow]:
        return sorted(self.trials, key=lambda t: (t.smoothed_val_acc is None, -(t.smoothed_val_acc or 0.0), t.index))


def smoothed(values: list[float], n: int = SMOOTH) -> float | None:
    return float(np.mean(values[-n:])) if values else None


def read_sweep(path: str | Path) -> SweepSnapshot:
    """The sweep's state now (never raises: a broken sweep dir is a snapshot with `error`)."""
    from trinity.errors import TrinityError
    from trinity.sweep.runner import sweep_status

    p = Path(path)
    try:
        doc = sweep_status(p)
    except TrinityError as e:
        return SweepSnapshot(str(p), p.name, "unreadable", None, 0.0, (), error=str(e))
    rows = []
    for i, t in enumerate(doc["trials"]):
        gens: list[int] = []
        val: list[float] = []
        try:
            hist = json.loads((p / t["dir"] / "history.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            hist = []
        for h in hist if isinstance(hist, list) else []:
            if isinstance(h, dict) and isinstance(h.get("val_acc"), (int, float)):
                gens.append(int(h.get("gen", 0)))
                val.append(float(h["val_acc"]))
        rows.append(TrialRow(i, t["id"], str(t.get("label", "")), str(t.get("state", "?")),
                             int(t.get("generations") or 0), t.get("best_val_acc"), smoothed(val),
                             float(t.get("cost_usd") or 0.0), tuple(gens), tuple(val), t.get("error")))
    return SweepSnapshot(str(p), str(doc.get("id", p.name)), str(doc.get("status", "?")), doc.get("budget_usd"),
                         float(doc.get("spent_usd") or 0.0), tuple(rows))


def spend_line(s: SweepSnapshot) -> str:
    counts: dict[str, int] = {}
    for t in s.trials:
        counts[t.state] = counts.get(t.state, 0) + 1
    states = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    if s.budget_usd:
        frac = min(1.0, s.spent_usd / s.budget_usd)
        bar = "█" * int(round(frac * 20)) + "░" * (20 - int(round(frac * 20)))
        money = f"spent ${s.spent_usd:.4f} of ${s.budget_usd:.4f} {bar} {100 * frac:.0f}%"
    else:
        money = f"spent ${s.spent_usd:.4f} (no sweep budget)"
    return f"sweep {s.id} — {s.status} — {len(s.trials)} trials ({states}) — {money}"


class SweepCurves(CachedPlot):
    """Every trial's validation accuracy per generation, one stable colour per trial."""

    _snap: SweepSnapshot | None = None

    def set_snapshot(self, snap: SweepSnapshot) -> None:
        key = tuple((t.id, t.gens[-1] if t.gens else 0) for t in snap.trials)
        if key == getattr(self, "_key", None):
            return
        self._key, self._snap = key, snap
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title("validation accuracy per generation (all trials)")
        plt.xlabel("generation")
        for t in snap.sorted_trials():
            if t.gens:
                plt.plot(list(t.gens), list(t.val), label=t.id, marker="braille", color=t.colour)
        self.data_changed(key)


class SweepPanel(Vertical):
    """Header (states, spend vs budget), overlaid curves, trials table (best smoothed val first)."""

    DEFAULT_CSS = """
    SweepPanel { height: 1fr; }
    SweepPanel > #sweep-head { height: 1; }
    SweepPanel > SweepCurves { height: 1fr; min-height: 8; }
    SweepPanel > DataTable { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Static("", id="sweep-head")
        yield SweepCurves(id="sweep-curves")
        table: DataTable = DataTable(id="sweep-trials", cursor_type="row", zebra_stripes=True)
        table.add_columns("trial", "state", "gen", f"val (avg {SMOOTH})", "best val", "$", "config")
        yield table

    def show(self, snap: SweepSnapshot) -> None:
        with self.app.batch_update():
            head = self.query_one("#sweep-head", Static)
            head.update(f"[red]{snap.error}[/]" if snap.error else spend_line(snap))
            self.query_one(SweepCurves).set_snapshot(snap)
            table = self.query_one(DataTable)
            table.clear()
            for t in snap.sorted_trials():
                acc = "–" if t.smoothed_val_acc is None else f"{t.smoothed_val_acc:.3f}"
                best = "–" if t.best_val_acc is None else f"{t.best_val_acc:.3f}"
                table.add_row(f"[{t.colour}]●[/] {t.id}", t.state, str(t.generations), acc, best,
                              f"{t.cost_usd:.4f}", t.label + (f"  {t.error}" if t.error else ""), key=t.id)
