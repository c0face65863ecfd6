"""Playground mode (7) on a real tiny run: the free route equals the run's router on the same
text, a step re-routes on the grown transcript, and a live session on the simulated practice
pool shows its turns and grade and is recorded in <runs root>/playground/ledger.jsonl."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.widgets import DataTable, Input, Static

from minertui.app import MinerApp
from minertui.screens.ledger import CALL_COLUMNS, SERVED_COLUMNS
from trinity.io import read_jsonl

SIZE = (80, 24)
QUESTION = "What is 17 \\times 23?"  # a practice question: the simulated pool answers it


def text_of(app, selector: str) -> str:
    c = app.screen.query_one(selector, Static).content
    return c.plain if isinstance(c, Text) else str(c)


async def until(pilot, cond, what: str, steps: int = 3000) -> None:
    """Wait for a state (not for a time): the router host answers when it has loaded."""
    for _ in range(steps):
        if cond():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"never reached: {what}")


def expected_route(run, question: str, turns=()):
    from trinity.data.questions import Question
    from trinity.optim.routing import load_trained

    tr = load_trained(run)
    r = tr.route([Question("playground", "playground", question, None, "math")], [list(turns)])
    return tr.models, r


@pytest.fixture
def playground_env(runs_root, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # a response cache of its own
    return runs_root


async def test_playground_routes_steps_and_runs_a_session_live(playground_env):
    runs_root = playground_env
    run = runs_root / "run-real"
    models, r1 = expected_route(run, QUESTION)
    app = MinerApp(runs_root=runs_root, poll=False, start_mode="runs")
    async with app.run_test(size=SIZE) as pilot:
        await app.refresh_now()
        await pilot.pause()
        await pilot.press("7")
        await app.refresh_now()
        screen = app.screen
        assert screen.MODE == "Playground"
        await until(pilot, lambda: screen.ready is not None, "the router host is ready")
        screen.query_one("#pg-question", Input).value = QUESTION
        screen.query_one("#pg-question", Input).focus()
        await pilot.press("enter")
        await until(pilot, lambda: screen.panes[0].routes, "the turn-1 route")
        route = screen.panes[0].routes[0]
        assert route["model"] == models[int(r1.model_idx[0])]
        for m, p in zip(models, r1.model_probs[0]):
            assert route["model_probs"][m] == pytest.approx(p, abs=1e-4)
        shown = text_of(app, "#pg-pane-a")
        assert "turn 1 route (free)" in shown and f"{route['model_probs'][route['model']]:4.2f}" in shown
        assert not (runs_root / "playground").exists()  # routing is free: nothing opened, nothing paid

        # step: the picked turn joins the transcript with a typed output, turn 2 is routed on it
        screen.query_one("#pg-output", Input).value = "\\boxed{391}"
        screen.query_one("#pg-output", Input).focus()
        await pilot.press("enter")
        await until(pilot, lambda: len(screen.panes[0].routes) == 2, "the turn-2 route")
        _, r2 = expected_route(run, QUESTION, [(route["role"], route["model"], "\\boxed{391}")])
        for m, p in zip(models, r2.model_probs[0]):
            assert screen.panes[0].routes[1]["model_probs"][m] == pytest.approx(p, abs=1e-4)
        assert "turn 2 route" in text_of(app, "#pg-pane-a")

        # live, under the budget, into the playground ledger
        screen.query_one("#pg-question", Input).blur()
        screen.set_focus(None)
        await pilot.press("l")
        await until(pilot, lambda: screen.panes[0].session is not None and not screen.busy, "the live session")
        s = screen.panes[0].session
        assert s["n_turns"] == len(screen.panes[0].live) >= 1
        assert s["turns"][0]["model"] == route["model"] and s["turns"][0]["role"] == route["role"]
        pane = text_of(app, "#pg-pane-a")
        assert "live session" in pane and f"{s['n_turns']} turns" in pane
        assert "playground spent $" in screen.status_text().plain  # what it spent, from the ledger
        await pilot.press("3")  # Ledger shows it too
        await app.refresh_now()
        await pilot.pause()
        assert f"playground (all runs): {s['n_turns']} calls" in text_of(app, "#ledger-head")
        # s: the Playground's own calls, one row each (newest first), with role, turn and cost
        await pilot.press("s")
        await app.refresh_now()
        await pilot.pause()
        ledger_screen = app.screen
        assert ledger_screen.source == "playground"
        assert "the Playground's calls" in text_of(app, "#ledger-head")
        table = ledger_screen.query_one(DataTable)
        assert [str(c.label) for c in table.columns.values()] == list(SERVED_COLUMNS)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        paid = [t for t in s["turns"] if not t["cache_hit"]]
        assert len(rows) == len(s["turns"])
        for row, t in zip(rows, reversed(s["turns"])):
            _, model, role, turn, tokens, cost, cached = row
            assert (model, role, turn) == (t["model"].split("/")[-1], t["role"], str(t["turn"]))
            assert tokens == f"{t['prompt_tokens']:,}/{t['completion_tokens']:,}"
            assert (cached == "cached") == t["cache_hit"]
        assert len(paid) == sum(not r[-1] for r in rows)
        await pilot.press("s")  # back to the run's own ledger
        await app.refresh_now()
        assert ledger_screen.source == "run"
        assert [str(c.label) for c in table.columns.values()] == list(CALL_COLUMNS)
    ledger = read_jsonl(runs_root / "playground" / "ledger.jsonl")
    assert len(ledger) == s["n_turns"] and {r["purpose"] for r in ledger} == {"playground"}
    assert sum(r["cost_micro_usd"] for r in ledger) / 1e6 == pytest.approx(s["cost_usd"], abs=0.5e-6 * len(ledger))


async def test_playground_without_a_trained_run_says_what_to_do(tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    app = MinerApp(runs_root=root, poll=False, start_mode="playground")
    async with app.run_test(size=SIZE) as pilot:
        await app.refresh_now()
        await pilot.pause()
        assert "Select a trained run" in text_of(app, "#pg-pane-a")
        app.screen.set_focus(None)
        await pilot.press("l")
        await pilot.pause()
        assert app.screen.proc is None


def decisive_head(run) -> None:
    """Give the run a head whose turn-1 route of QUESTION is far from any tie (logits ±4 along the
    question's own feature), so the snapshot's probabilities do not depend on float noise."""
    import numpy as np

    from trinity.data.questions import Question
    from trinity.model.theta import join_theta, save_theta, split_theta
    from trinity.optim.routing import load_trained

    tr = load_trained(run)
    text = tr.texts([Question("playground", "playground", QUESTION, None, "math")])[0]
    f = tr.router.reference_features(tr.theta, [text])[0].astype(np.float64)
    head, svf = split_theta(tr.theta, len(tr.models), f.shape[0])
    rows = np.zeros_like(head)
    rows[0], rows[2] = 4 * f, -4 * f  # models: the first one
    rows[len(tr.models) + 0], rows[len(tr.models) + 1] = -4 * f, 4 * f  # roles: Worker
    save_theta(run / "best_theta.npy", join_theta(rows, svf))


def test_playground_snapshot_80x24(snap, playground_env):
    """The route of a typed question at 80×24 (the state is waited for, not a time)."""
    decisive_head(playground_env / "run-real")

    async def run_before(pilot) -> None:
        app = pilot.app
        await app.refresh_now()
        await pilot.pause()
        await pilot.press("7")
        await app.refresh_now()
        screen = app.screen
        await until(pilot, lambda: screen.ready is not None, "the router host is ready")
        field = screen.query_one("#pg-question", Input)
        field.value = QUESTION
        field.focus()
        await pilot.press("enter")
        await until(pilot, lambda: screen.panes[0].routes and not screen.busy, "the turn-1 route")
        screen.set_focus(None)
        for f in screen.query(Input):
            f.cursor_blink = False
        await pilot.pause()

    app = MinerApp(runs_root=playground_env, poll=False, start_mode="runs", theme="minertui-dark")
    assert snap(app, terminal_size=SIZE, run_before=run_before)


async def test_two_runs_side_by_side_route_the_same_question(playground_env):
    import shutil

    root = playground_env
    shutil.copytree(root / "run-real", root / "run-twin")
    decisive_head(root / "run-twin")  # a different head: the two panes must differ
    app = MinerApp(runs_root=root, poll=False, start_mode="runs")
    async with app.run_test(size=SIZE) as pilot:
        await app.refresh_now()
        await pilot.pause()
        await pilot.press("7")
        await app.refresh_now()
        screen = app.screen
        await until(pilot, lambda: screen.ready is not None, "the router host is ready")
        first, host_pid = screen.host_runs[0], screen.proc.pid
        await pilot.press("b")
        await until(pilot, lambda: screen.ready is not None and len(screen.ready["runs"]) == 2, "both routers")
        assert screen.host_runs[0] == first and len({*screen.host_runs}) == 2
        assert screen.proc.pid == host_pid  # the idle host took the second run in place (torch loaded once)
        screen.query_one("#pg-question", Input).value = QUESTION
        screen.query_one("#pg-question", Input).focus()
        await pilot.press("enter")
        await until(pilot, lambda: all(p.routes for p in screen.panes), "both routes")
        a, b = (p.routes[0] for p in screen.panes)
        twin = b if screen.panes[1].name == "run-twin" else a
        assert twin["model_probs"][twin["model"]] > 0.95 and twin["role"] == "Worker"  # the decisive head
        assert a["model_probs"] != b["model_probs"]
        assert screen.query_one("#pg-pane-b-scroll").display and "turn 1 route" in text_of(app, "#pg-pane-b")
