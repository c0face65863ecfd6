"""The new-run form shows the live run's cost and wall-time forecast before Start: the very
numbers `trinity plan` computes for the same settings, computed off the UI thread, with the
over-budget line; a cached run or a missing file gives a one-line reason instead."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Select, Static

from minertui.app import MinerApp
from minertui.screens.newrun import NewRunScreen, forecast_lines, forecast_reason, form_data
from trinity.config import validate_config
from trinity.optim.forecast import hms
from trinity.optim.plan import forecast_for

ROOT = Path(__file__).resolve().parents[2]
SIZE = (100, 40)


async def _forecast_text(app, pilot, form, prefix: str) -> str:
    box = form.query_one("#newrun-forecast", Static)
    for _ in range(200):  # the debounce, then a worker thread
        await pilot.pause(0.05)
        text = str(box.content)
        if text.startswith(prefix) and "computing" not in text:
            return text
    raise AssertionError(f"no forecast shown; the form says {str(box.content)!r}")


async def test_form_shows_the_engines_forecast_and_the_over_budget_line(tmp_path):
    app = MinerApp(runs_root=tmp_path / "runs", poll=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, NewRunScreen)
        form.query_one("#f-config").value = str(ROOT / "configs" / "practice.yaml")
        form.query_one("#f-mode", Select).value = "live"
        form.query_one("#f-generations").value = "3"
        form.query_one("#f-popsize").value = "4"
        form.query_one("#f-m").value = "4"
        form.query_one("#f-budget_usd").value = "0.0001"
        text = await _forecast_text(app, pilot, form, "forecast: $")

        data, errors = form_data(*form._values())
        assert not errors
        f = forecast_for(validate_config(data))  # what `trinity plan` computes for these settings
        u, w = f["usd"], f["wall_s"]
        assert f["over_budget"] and u["p95"] > 0.0001
        assert text.splitlines()[:2] == [
            f"forecast: ${u['median']:.4f}, 90% interval ${u['p05']:.4f} .. ${u['p95']:.4f}",
            f"  wall time {hms(w['median'])}, 90% interval {hms(w['p05'])} .. {hms(w['p95'])}",
        ]
        assert text.splitlines() == forecast_lines(f)
        g = f["generations_budget_buys"]
        over = text.splitlines()[-1]
        assert over.startswith(f"over budget: the upper bound ${u['p95']:.4f} exceeds the budget $0.0001")
        assert f"buys about {g['median']} generations ({g['at_p95']} at the upper bound)" in over
        assert form.query_one("#newrun-forecast").has_class("over")

        # a cached run replays the matrix: no forecast to compute
        form.query_one("#f-mode", Select).value = "cached"
        text = await _forecast_text(app, pilot, form, "forecast: $0, replays the matrix")
        assert not form.query_one("#newrun-forecast").has_class("over")
        # a questions file that is not there: the reason, in one line
        form.query_one("#f-mode", Select).value = "live"
        form.query_one("#f-questions").value = str(tmp_path / "nope.jsonl")
        text = await _forecast_text(app, pilot, form, "forecast: needs a valid questions")
        assert "no such file" in text and len(text.splitlines()) == 1
        await pilot.press("escape")


def test_reason_without_a_pool():
    data, errors = form_data("", "live", {"questions": "practice"})
    assert forecast_reason(data, errors) == "forecast: needs a pool (practice, openrouter …) for a live run"
    data, errors = form_data("", "live", {"questions": "practice", "pool": "practice"})
    assert forecast_reason(data, errors) is None
