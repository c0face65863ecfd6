"""The run bar at 80 columns: the long run id gives way, never the status or the
"practice (simulated pool)" label; the demo's note does not repeat the label."""

from __future__ import annotations

from types import SimpleNamespace

from textual.app import App

from minertui.widgets.runbar import RunBar, shorten_middle


def test_shorten_middle_keeps_both_ends():
    rid = "demo-live-20261129-205609-eb00d3"
    assert shorten_middle(rid, 100) == rid
    short = shorten_middle(rid, 20)
    assert len(short) == 20 and short.startswith("demo-live") and short.endswith("eb00d3") and "…" in short


async def test_label_and_status_survive_80_columns():
    snap = SimpleNamespace(id="demo-live-20261129-205609-eb00d3", status="running", pool="practice", config={})
    snap.shown_status = snap.status

    class BarApp(App):
        def compose(self):
            yield RunBar()

    app = BarApp()
    async with app.run_test(size=(80, 24)) as pilot:
        bar = app.query_one(RunBar)
        bar.show("Train", snap, "practice (simulated pool): live run")
        await pilot.pause()
        text = bar._shown.plain
        assert len(text) <= 78, text  # 80 columns less the bar's padding
        assert "running · practice (simulated pool)" in text
        assert text.count("practice (simulated pool)") == 1 and text.endswith("· live run")
