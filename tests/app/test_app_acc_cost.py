"""Accuracy against money: bootstrap intervals per validated generation, the Pareto front
across compared runs in Train (`a`), and the odds of clearing the king in Submit."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from minertui.accuracy import acc_cost, king_odds, pareto_front
from minertui.app import MinerApp
from minertui.messages import BaselinePinned, CompareChanged
from minertui.reader import Reader
from minertui.synth import make_run

N_VAL = 120


def _runs(root, n=3):
    paths = []
    for i in range(n):
        r = make_run(root / f"run-{'abc'[i]}", generations=15, planned=30, seed=i + 1, calls_per_gen=2 + 3 * i)
        m = json.loads((r.path / "run.json").read_text())
        m["splits"]["val"] = [f"q{j}" for j in range(N_VAL)]
        (r.path / "run.json").write_text(json.dumps(m))
        paths.append(r.path)
    return paths


def _binom_ge(n: int, p: float, k_min: int) -> float:
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(k_min, n + 1))


def test_pareto_front():
    pts = [(0.01, 0.60), (0.02, 0.70), (0.03, 0.65), (0.05, 0.72), (0.02, 0.55), (0.06, 0.72)]
    assert pareto_front(pts) == [0, 1, 3]


def test_intervals_match_the_binomial(tmp_path):
    (path,) = _runs(tmp_path, 1)
    s = Reader(tmp_path).model(path.resolve())
    s.poll()
    d = acc_cost(s.snapshot())
    ev = [json.loads(x) for x in (path / "events.jsonl").read_text().splitlines()]
    gens = [e for e in ev if e["type"] == "generation"]
    assert np.allclose(d.acc, [e["val_acc"] for e in gens]) and np.allclose(d.spend, [e["cost_usd"] for e in gens])
    assert d.n_val == N_VAL and np.all(d.lo <= d.acc) and np.all(d.acc <= d.hi)
    # the width is the binomial's: 2 × 1.96 × sqrt(p(1-p)/n), within the bootstrap's noise
    se = np.sqrt(d.acc * (1 - d.acc) / N_VAL)
    assert np.allclose(d.hi - d.lo, 2 * 1.96 * se, atol=0.03)


def test_king_odds_against_the_exact_binomial():
    o = king_odds(0.75, 200, 0.70, 0.02)
    exact = _binom_ge(200, 0.75, math.ceil(0.72 * 200))
    assert o.need == pytest.approx(0.72) and abs(o.p_clear - exact) < 0.03
    assert king_odds(0.75, 200, 0.80, 0.02).p_clear < 0.05
    strict = king_odds(0.80, 100, 0.80, 0.0, strict=True)  # MiniRouter: strictly above the king
    assert abs(strict.p_clear - _binom_ge(100, 0.80, 81)) < 0.03


async def test_train_acc_cost_single_and_compare(tmp_path):
    paths = _runs(tmp_path / "runs")
    app = MinerApp(runs_root=tmp_path / "runs", open_run=paths[0], start_mode="train", poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.refresh_now()
        await pilot.press("a")
        await app.refresh_now()
        await pilot.pause()
        plot = app.screen.query_one("#train-acc-cost")
        assert plot.display and not app.screen.query_one("#train-plot").display
        legend = str(app.screen.query_one("#train-legend").render())
        assert "run-a" in legend and f"95% CI n={N_VAL}" in legend and "Pareto" not in legend
        app.post_message(CompareChanged(tuple(paths)))
        await pilot.pause()
        await app.refresh_now()
        await pilot.pause()
        legend = str(app.screen.query_one("#train-legend").render())
        snaps = {p.name: app.latest.runs[[r.path.name for r in app.latest.runs].index(p.name)] for p in paths}
        pts, names = [], []
        for name, s in snaps.items():
            d = acc_cost(s)
            i = int(np.argmax(d.acc))
            pts.append((float(d.spend[i]), float(d.acc[i])))
            names.append(name)
        want = [names[i] for i in pareto_front(pts)]
        assert legend.split("● Pareto: ")[1].count("@") == len(want)
        for name in want:
            assert name in legend.split("● Pareto: ")[1]
        await pilot.press("a")
        await pilot.pause()
        assert app.screen.query_one("#train-plot").display


async def test_submit_shows_the_odds_of_clearing_the_king(tmp_path):
    (path,) = _runs(tmp_path / "runs", 1)
    app = MinerApp(runs_root=tmp_path / "runs", open_run=path, start_mode="submit", poll=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.refresh_now()
        await pilot.pause()
        head = str(app.screen.query_one("#submit-help").render())
        assert "set the king's score with B in Train" in head
        app.post_message(BaselinePinned(0.70))
        await pilot.pause()
        await app.refresh_now()
        await pilot.pause()
        head = str(app.screen.query_one("#submit-help").render())
        best = max(
            e["val_acc"]
            for e in map(json.loads, (path / "events.jsonl").read_text().splitlines())
            if e["type"] == "generation"
        )
        o = king_odds(best, N_VAL, 0.70, 0.02)
        assert f"best val {best:.3f} [{o.lo:.3f}, {o.hi:.3f}] (n={N_VAL})" in head
        assert "≥ king 0.700 + 0.02" in head and f"P(clears) {o.p_clear:.0%}" in head
