"""Issue 15: the bugs found using the app as a monitoring workstation, one test each, and the
workstation features (sort, filter, compare, export, resume with a budget, keymap, palette)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from rich.text import Text
from textual.widgets import DataTable, Input, Static
from trinity_main import trinity_main

from minertui.app import MinerApp
from minertui.synth import make_run
from trinity.runs.rundir import RunDir

ROOT = Path(__file__).resolve().parents[2]
SMALL = (80, 24)
BIG = (120, 40)


def plain(w) -> str:
    if isinstance(w, (str, Text)):
        c = w
    else:
        c = w.content if isinstance(w, Static) else w.render()
    return c.plain if isinstance(c, Text) else str(c)


def snapshot(run: Path):
    from minertui.runmodel import RunModel

    m = RunModel(run)
    m.poll()
    return m.snapshot()


async def settle(app, pilot, times: int = 2) -> None:
    for _ in range(times):
        await app.refresh_now()
        await pilot.pause()


def two_runs(root: Path) -> None:
    make_run(root / "run-a-finished", generations=24, planned=24, status="finished", seed=1)
    make_run(root / "run-b-live", generations=9, planned=30, status="stopped", seed=2)


def meta_edit(run: Path, **changes) -> None:
    m = json.loads((run / "run.json").read_text())
    for k, v in changes.items():
        if k == "config":
            m["config"].update(v)
        else:
            m[k] = v
    (run / "run.json").write_text(json.dumps(m))


# ---- 1. the practice label follows the pool ------------------------------------------------
def test_practice_label_follows_the_pool_not_the_questions():
    from minertui.widgets.runbar import is_practice

    paid = SimpleNamespace(
        pool="openrouter", config={"pool": "openrouter", "questions": "practice", "matrix": "practice"}
    )
    sim = SimpleNamespace(pool="practice", config={"pool": "practice"})
    assert not is_practice(paid) and is_practice(sim)
    from minertui.widgets import runbar
    from trinity.config import PRACTICE

    assert runbar.PRACTICE == PRACTICE


# ---- 2. the spend column keeps a small budget's digits ---------------------------------------
def test_spend_against_a_small_budget():
    from minertui.widgets.format import spend_of, usd_cap

    assert spend_of(0.05, 0.05) == "$0.0500/$0.05"
    assert spend_of(0.0, 0.05) == "$0.0000/$0.05" and usd_cap(10) == "$10" and usd_cap(2.5) == "$2.5"


# ---- 3. a start that fails before the run exists ---------------------------------------------
async def test_a_failed_start_names_the_real_log_and_leaves_no_ghost_run(tmp_path):
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        # an engine that fails on its input before it creates the run directory
        run_dir = app.supervisor.start_train(["--config", str(tmp_path / "missing.yaml")], run_id="run-c-bad")
        app.select_run(run_dir)
        app.supervisor.launched[run_dir].proc.wait(timeout=120)
        seen = []
        app.notify = lambda msg, **kw: seen.append(msg)  # type: ignore[method-assign]
        poll = await app.refresh_now()
        await pilot.pause()
        assert seen and str(root.resolve() / ".run-c-bad.engine.log") in seen[0]
        assert "before it created its run" in seen[0]
        assert poll.current is not None and poll.current.path != run_dir  # not a "created" ghost
        assert all(s.path != run_dir for s in poll.runs)


# ---- 4. a run that failed at start from the CLI says why -------------------------------------
def test_a_cli_run_without_a_key_fails_before_its_run_exists(tmp_path, monkeypatch):
    """No key: `trinity train` refuses before the run directory exists (issue 12's preflight), so
    no `created` ghost can appear in the app."""
    root = tmp_path / "runs"
    cfg = tmp_path / "paid.yaml"
    cfg.write_text(
        "mode: live\nencoder: tiny-qwen3\nquestions: practice\npool: openrouter\n"
        "popsize: 4\ngenerations: 1\nm: 2\nbudget_usd: 0.05\n"
    )
    for k in [k for k in os.environ if k.endswith("_API_KEY")]:
        monkeypatch.delenv(k)
    rc, _, err = trinity_main(["train", "--config", cfg, "--run-dir", root / "run-nokey"])
    assert rc != 0 and "no API key" in err and "Traceback" not in err
    assert not (root / "run-nokey").exists()


async def test_a_run_that_failed_at_start_shows_failed_and_the_reason(tmp_path):
    """A run whose engine failed after its directory existed (status failed + the reason in
    run.json, as `start_run` writes it) shows as failed, with the reason, in Runs."""
    root = tmp_path / "runs"
    run = make_run(root / "run-bad", generations=0, planned=1, status="running", seed=2)
    RunDir(run.path).set_status("failed", "failed at start: no API key for openrouter (set OPENROUTER_API_KEY)")
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one(DataTable)
        assert plain(table.get_row_at(0)[1]) == "failed"
        assert "no API key" in plain(app.screen.query_one("#runs-detail", Static))


def test_a_created_run_no_engine_holds_is_interrupted(tmp_path):
    run = make_run(tmp_path / "run-x", generations=0, planned=5, status="created", seed=1).path
    assert snapshot(run).status == "interrupted"


# ---- 5. resume with a new budget / more generations ------------------------------------------
def test_resume_args_and_the_resume_argv(tmp_path):
    from minertui.screens.runops import resume_args
    from minertui.supervisor import Supervisor

    assert resume_args("0.5", "+10", 20) == ({"budget_usd": 0.5, "generations": 30}, None)
    assert resume_args("", "40", 20) == ({"generations": 40}, None)
    # +N extends the plan: a run stopped at 23/30 with +5 goes to 35, not 28
    assert resume_args("", "+5", 23, 30) == ({"generations": 35}, None)
    assert resume_args("", "+5", 32, 30) == ({"generations": 37}, None)
    assert resume_args("x", "", 0)[1].startswith("budget:")
    assert "more than" in resume_args("", "10", 20)[1]
    run = make_run(tmp_path / "runs" / "run-s", generations=3, planned=3, status="stopped", seed=1).path
    sup = Supervisor(tmp_path / "runs")
    sup.resume(run, budget_usd=1.5, generations=8)
    launched = sup.launched[run.resolve()]
    assert launched.argv[-4:] == ["--budget-usd", "1.5", "--generations", "8"]
    launched.proc.wait(timeout=120)


async def test_r_on_a_budget_stopped_run_asks_for_a_higher_budget(tmp_path):
    root = tmp_path / "runs"
    run = make_run(root / "run-b", generations=4, planned=30, status="stopped", seed=2).path
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        s = app.latest.runs[0]
        meta_edit(run, budget_usd=round(s.spend_usd, 6), status_message="stopped: budget reached")
        await settle(app, pilot)
        await pilot.press("r")
        await pilot.pause()
        from minertui.screens.runops import ResumeScreen

        assert isinstance(app.screen, ResumeScreen)
        assert not app.supervisor.launched  # nothing restarted that would stop at once
        await pilot.press("escape")


# ---- 6. the analysis job's status line while the oracle computes ------------------------------
def test_oracle_job_says_what_it_computes(real_run):
    r = subprocess.run(
        [sys.executable, "-m", "minertui.jobs.analysis", "oracle", str(real_run)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=240,
    )
    whats = [json.loads(l)["progress"][2] for l in r.stdout.splitlines() if '"progress"' in l]
    i = next(k for k, w in enumerate(whats) if w.startswith("routing") and "with the trained router" in w)
    assert whats[i + 1] == "computing the cross-fit oracle ceiling", whats


# ---- 7. Submit: the plan scrolls into view; c after a push without a URL ---------------------
async def test_submit_copy_after_a_push_to_a_non_github_remote(tmp_path):
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False, start_mode="submit")
    copied = []
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        app.copy_to_clipboard = lambda text: copied.append(text)  # type: ignore[method-assign]
        scr = app.screen
        scr._executed(
            SimpleNamespace(
                ok=True,
                message="pushed",
                pr_url=None,
                compare_url=None,
                pushed=True,
                commit="abcdef1234567890",
                branch="miner/demo-1",
                continue_command=None,
            )
        )
        await pilot.press("c")
        assert copied == ["miner/demo-1@abcdef123456"]
        # at 80×24 the body (gates + plan) gets the middle and scrolls with PgDn
        body = scr.query_one("#submit-body")
        assert body.size.height >= 6
        scr.query_one("#submit-plan", Static).update("\n".join(f"line {i}" for i in range(60)))
        await pilot.pause()
        await pilot.press("pagedown")
        await pilot.pause()
        assert body.scroll_y > 0


# ---- 8. the demo keeps its own submission history --------------------------------------------
async def test_submit_uses_the_demo_history(tmp_path):
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False, start_mode="submit")
    app.submit_defaults = {"miner": "demo-miner", "repo": str(tmp_path), "history": str(tmp_path / "h.jsonl")}
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        assert app.screen._history() == str(tmp_path / "h.jsonl")
        assert not (Path(os.environ["MINERTUI_DATA_DIR"]) / "submissions.jsonl").exists()


# ---- 9. the demo's place, re-attach, pruning, and the word on quit ---------------------------
def test_demo_dir_prune_and_reattach(tmp_path):
    from minertui import demo

    root = demo.demo_runs_dir()
    assert root == Path(os.environ["XDG_STATE_HOME"]) / "minertui" / "demo"
    for i in range(5):
        make_run(root / f"demo-live-{i}", generations=1, planned=1, status="finished", seed=i)
        meta_edit(root / f"demo-live-{i}", created=f"2026-01-0{i + 1}T00:00:00+00:00")
    assert demo.running_demo(root) is None
    lock = RunDir(root / "demo-live-0").lock().acquire()  # the oldest is still training
    try:
        removed = demo.prune_demo_runs(root)
        assert sorted(p.name for p in removed) == ["demo-live-1"]
        assert demo.running_demo(root) == (root / "demo-live-0")
    finally:
        lock.release()
    note = demo.demo_exit_note(root)
    assert str(root) in note and f"minertui --runs-dir {root}" in note


# ---- 10. a screenshot without ~/Downloads ----------------------------------------------------
async def test_screenshot_without_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home-without-downloads"))
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        name = app.deliver_screenshot()
        assert name is not None and Path(name).is_file()
        assert Path(name).parent == Path(os.environ["XDG_STATE_HOME"]) / "minertui" / "exports"


# ---- 11. the Runs table does not re-sort under the cursor; Home goes to the top ---------------
async def test_runs_order_is_stable_and_home_goes_to_the_top(tmp_path):
    root = tmp_path / "runs"
    two_runs(root)
    make_run(root / "run-c", generations=3, planned=3, status="finished", seed=3)
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one(DataTable)
        order = [table.get_row_at(i)[0].plain for i in range(table.row_count)]
        await pilot.press("down")
        key = app.screen._selected_key()
        # an engine rewriting run.json (new mtime) used to move it to the top
        os.utime(root / order[-1] / "run.json")
        meta_edit(root / order[-1], status_message="touched")
        await settle(app, pilot)
        assert [table.get_row_at(i)[0].plain for i in range(table.row_count)] == order
        assert app.screen._selected_key() == key
        await pilot.press("home")
        assert table.cursor_row == 0


# ---- 12. Train: legend outside, σ in its own panel from 0, ETA, footer after finishing --------
async def test_train_legend_sigma_panel_and_footer(tmp_path):
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False, start_mode="train", open_run=root / "run-a-finished")
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot, 3)
        legend = plain(app.screen.query_one("#train-legend", Static))
        assert "max" in legend and "best" in legend and "EMA" in legend
        sigma = app.screen.query_one("#train-sigma")
        assert sigma.plt._active.monitor.ylim[0][0] == 0.0 if hasattr(sigma.plt, "_active") else True
        bar = plain(app.screen.query_one("KeyBar"))
        assert "Pause" not in bar and "Stop" not in bar and "Resume" not in bar  # finished
        assert bar.rstrip().endswith("? Help  q Quit")


def test_eta_is_smoothed_and_bounded_by_the_budget(tmp_path):
    run = make_run(tmp_path / "run-e", generations=10, planned=100, status="running", seed=4).path
    lock = RunDir(run).lock().acquire()
    try:
        s = snapshot(run)
        per = float(np.median(s.gens.secs[-20:]))
        eta = s.eta
        assert eta is not None and eta.limit == "generations"
        assert 89 <= eta.generations <= 90  # 90 planned generations left, less the one under way
        assert abs(eta.secs - eta.generations * per) < 1e-6 * max(1, per)
        meta_edit(run, budget_usd=s.spend_usd + 2.5 * s.usd_per_gen)
        s = snapshot(run)
        assert s.eta.limit == "budget" and abs(s.eta.generations - 2.5) < 1e-6
    finally:
        lock.release()


# ---- 13. forms -------------------------------------------------------------------------------
async def test_typing_on_a_checkbox_fires_no_global_keys(tmp_path):
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False, start_mode="submit")
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        assert app.screen.focused is None  # arriving, k/g/l work: nothing takes the letters
        app.screen.query_one("#sub-miner").focus()
        await pilot.pause()
        assert plain(app.screen.query_one("KeyBar")).startswith("Esc leave field")
        box = app.screen.query_one("#sub-force")
        box.focus()
        await pilot.pause()
        assert "✓" not in plain(box) and "X" not in plain(box)  # off: an empty box
        await pilot.press("1", "q")
        await pilot.pause()
        assert app.screen.MODE == "Submit" and app.is_running
        head = plain(app.screen.query_one("#submit-help", Static))
        assert "refused unless 'force'" in head
        await pilot.press("space")
        await pilot.pause()
        head = plain(app.screen.query_one("#submit-help", Static))
        assert "force is ticked" in head and "refused" not in head
        await pilot.press("escape", "1")
        await pilot.pause()
        assert app.screen.MODE == "Runs"


async def test_new_run_form_placeholders_errors_and_draft(runs_root):
    app = MinerApp(runs_root=runs_root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        await pilot.press("n")
        await pilot.pause()
        form = app.screen
        form.query_one("#f-config", Input).value = str(ROOT / "configs" / "practice.yaml")
        await pilot.pause()
        assert form.query_one("#f-popsize", Input).placeholder == "16"  # practice.yaml's, not trinity.yaml's
        form.query_one("#f-popsize", Input).value = "zero"
        form.validate_form()
        await pilot.pause()
        assert form.query_one("#e-popsize", Static).display
        form.query_one("#f-popsize", Input).value = "12"
        await pilot.pause()
        assert not form.query_one("#e-popsize", Static).display  # gone once fixed
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        assert app.screen.query_one("#f-popsize", Input).value == "12"  # Esc kept the draft


async def test_submit_remembers_miner_and_repo(tmp_path):
    from minertui.settings import load_settings, save_settings

    save_settings(submit_miner="alice", submit_repo=str(tmp_path))
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False, start_mode="submit")
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        assert app.screen.query_one("#sub-miner", Input).value == "alice"
        assert app.screen.query_one("#sub-repo", Input).value == str(tmp_path)
    assert load_settings().submit_miner == "alice"


# ---- 14. 80 columns: Help and Quit visible, key names readable, ledger v says something -------
@pytest.mark.parametrize("mode", ["runs", "train", "ledger", "traces", "analysis", "submit"])
async def test_footer_keeps_help_and_quit_at_80_columns(tmp_path, mode):
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False, start_mode=mode)
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        bar = plain(app.screen.query_one("KeyBar"))
        assert bar.rstrip().endswith("? Help  q Quit"), bar
        assert len(bar) <= 78


async def test_help_shows_keys_as_people_read_them_and_the_keymap(tmp_path):
    from minertui.settings import save_settings

    save_settings(keymap={"runs.new": "N"})
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        from minertui.screens.help import bindings_table

        await pilot.press("question_mark")
        await pilot.pause()
        t = bindings_table(app)
        keys = list(t.columns[0]._cells)
        assert "/" in keys and "slash" not in keys and not any("escape" in k for k in keys)
        whats = list(t.columns[1]._cells)
        assert keys[whats.index("New")] == "N"  # rebound in settings.json
        await pilot.press("escape")
        await pilot.press("N")
        await pilot.pause()
        from minertui.screens.newrun import NewRunScreen

        assert isinstance(app.screen, NewRunScreen)


async def test_ledger_verify_says_the_outcome(tmp_path):
    root = tmp_path / "runs"
    make_run(root / "run-ledger", generations=5, calls_per_gen=3)
    app = MinerApp(runs_root=root, poll=False, start_mode="ledger")
    seen = []
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        await app.workers.wait_for_complete()
        app.notify = lambda msg, **kw: seen.append(msg)  # type: ignore[method-assign]
        await pilot.press("v")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert seen[0].startswith("verifying") and any(m.startswith("chain OK") for m in seen[1:])


# ---- tables, compare, palette ----------------------------------------------------------------
def test_sort_filter_and_export(tmp_path):
    from minertui.widgets.tables import export_table, filter_rows, sort_rows

    rows = [("a", ("run-a", 0.5, None)), ("b", ("run-b", 0.7, "x")), ("c", ("run-c", None, "y"))]
    assert [k for k, _ in sort_rows(rows, 1, reverse=True)] == ["b", "a", "c"]  # missing stays last
    assert [k for k, _ in filter_rows(rows, "run-b")] == ["b"]
    assert [k for k, _ in filter_rows(rows, "c:y", ("run", "b", "c"))] == ["c"]
    csv_path, json_path = export_table("t", ("run", "b", "c"), [r for _, r in rows], where=tmp_path)
    assert csv_path.read_text().splitlines()[0] == "run,b,c"
    assert json.loads(json_path.read_text())[2] == {"run": "run-c", "b": None, "c": "y"}


async def test_runs_sort_filter_mark_compare_and_export(tmp_path):
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        scr = app.screen
        table = scr.query_one(DataTable)
        scr._set_sort(3, True)  # best, descending
        await settle(app, pilot)
        bests = [float(plain(table.get_row_at(i)[3])) for i in range(table.row_count)]
        assert bests == sorted(bests, reverse=True)
        await pilot.press("slash")
        for ch in "run-b":
            await pilot.press(ch if ch != "-" else "minus")
        await pilot.press("enter")
        await settle(app, pilot)
        assert table.row_count == 1 and "run-b-live" in plain(table.get_row_at(0)[0])
        await pilot.press("space")
        await pilot.pause()
        assert app.compare == (root.resolve() / "run-b-live",) or [p.name for p in app.compare] == ["run-b-live"]
        await pilot.press("e")
        exports = list((Path(os.environ["XDG_STATE_HOME"]) / "minertui" / "exports").glob("runs-*.json"))
        assert len(exports) == 1 and [r["run"] for r in json.loads(exports[0].read_text())] == ["run-b-live"]
        await pilot.press("c")
        await settle(app, pilot, 3)
        assert app.screen.MODE == "Train"
        assert "run-b-live" in plain(app.screen.query_one("#train-legend", Static))


def test_palette_lists_every_mode_action(tmp_path):
    from minertui.keymap import palette_commands

    app = MinerApp(runs_root=tmp_path, poll=False)
    titles = [c.title for c in palette_commands(app, None)]
    for want in (
        "Submit: Pack",
        "Submit: Gates",
        "Submit: Plan",
        "Submit: Execute",
        "Ledger: Verify",
        "Runs: New",
        "Runs: Resume+",
        "Runs: Compare",
        "Runs: Export",
        "Traces: Export",
        "Analysis: Oracle",
        "Train: Zoom in",
        "Mode: Runs",
    ):
        assert want in titles, want


def test_keymap_rejects_unknown_ids():
    from minertui.keymap import load_keymap

    keymap, errors = load_keymap({"runs.new": "N", "nope.x": "y", "runs.stop": ""}, MinerApp)
    assert keymap == {"runs.new": "N"} and len(errors) == 2


def test_traces_role_filter_and_sort(tmp_path):
    from minertui.runmodel import filter_traces, sort_traces

    run = make_run(tmp_path / "run-t", generations=6, planned=6, status="finished", seed=5).path
    tv = snapshot_traces(run)
    paths = [tv.path_names[int(p)] for p in tv.path]
    got = filter_traces(tv, role="Verifier").tolist()
    assert got == [i for i, p in enumerate(paths) if "·Verifier" in p] and got
    idx = sort_traces(tv, filter_traces(tv), "cost", reverse=True)
    costs = tv.cost[idx]
    assert (np.diff(costs) <= 0).all()
    idx = sort_traces(tv, filter_traces(tv), "question")
    names = [tv.qid_names[int(q)] for q in tv.qid[idx]]
    assert names == sorted(names)


def snapshot_traces(run: Path):
    from minertui.runmodel import RunModel

    m = RunModel(run, want_traces=True)
    while m.poll(budget_s=1e9):
        if not m.snapshot().catching_up:
            break
    return m.snapshot().traces


def test_ledger_filter_by_model_purpose_and_day(tmp_path):
    from minertui.runmodel import RunModel
    from minertui.screens.ledger import ledger_rows
    from trinity.io import read_jsonl

    run = make_run(tmp_path / "run-l", generations=6, calls_per_gen=4).path
    m = RunModel(run)
    m.poll(budget_s=1e9)
    lv = m.snapshot().ledger
    recs = read_jsonl(run / "ledger.jsonl")
    model = recs[0]["model"].split("/")[-1]
    want = [i for i in range(len(recs) - 1, -1, -1) if model in recs[i]["model"]]
    assert ledger_rows(lv, model).tolist() == want
    purpose = recs[0]["purpose"]
    want = [i for i in want if recs[i]["purpose"] == purpose]
    assert ledger_rows(lv, f"{model} {purpose}").tolist() == want
    assert ledger_rows(lv, "2026-01-01").tolist() == list(range(len(recs) - 1, -1, -1))  # synth's day
    assert ledger_rows(lv, "1999-01-01").tolist() == []
    by_cost = ledger_rows(lv, "", "cost")
    assert (np.diff(lv.cost_micro[by_cost]) <= 0).all()


@pytest.mark.parametrize("s", [0.0001, 0.3, 0.6, 0.95, 0.99])
def test_ema_matches_the_recurrence(s):
    import math

    from minertui.runmodel import ema

    rng = np.random.default_rng(int(s * 100))
    y = rng.random(3000)
    y[rng.random(3000) < 0.2] = np.nan
    acc, want = math.nan, []
    for v in y:
        if v != v:
            want.append(math.nan)
            continue
        acc = v if acc != acc else s * acc + (1 - s) * v
        want.append(acc)
    got = ema(y, s)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.nanmax(np.abs(got - np.array(want))) < 1e-12


def test_every_run_colour_draws_in_the_legend_and_the_plot():
    from rich.console import Console

    from minertui.widgets.curves import RUN_COLOURS, Series, View, legend_text

    x = np.arange(3.0)
    t = legend_text([Series(c, x, x, c) for c in RUN_COLOURS], View())
    Console(file=open(os.devnull, "w")).print(t)  # a colour Rich cannot parse raised MissingStyle here


HOLDER = """
import signal, sys, time
from trinity.runs.rundir import RunDir
lock = RunDir(sys.argv[1]).lock().acquire()
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
print("holding", flush=True)
while True:
    time.sleep(0.05)
"""


def test_quitting_the_demo_stops_its_engine_and_says_where_the_run_is(tmp_path):
    """An engine stand-in holds a demo run the way `trinity train` does (the run's flock, its pid in
    .lock); quitting the demo app signals it, and the note for the terminal names the runs dir."""
    import time as _time

    from minertui.demo import stop_demo_servers
    from minertui.supervisor import Launched, Supervisor

    root = tmp_path / "demo"
    run = make_run(root / "demo-live-x", generations=2, planned=9, status="running", seed=1).path
    sup = Supervisor(root)
    proc = sup.spawn([sys.executable, "-c", HOLDER, str(run)], root / "holder.log", cwd=ROOT)
    sup.launched[run.resolve()] = Launched(run.resolve(), proc, [], _time.time())
    deadline = _time.monotonic() + 60
    while not RunDir(run).is_locked() and _time.monotonic() < deadline:
        _time.sleep(0.05)
    assert RunDir(run).is_locked()
    app = SimpleNamespace(supervisor=sup, demo=True, exit_note="")
    stop_demo_servers(app)
    assert proc.wait(timeout=30) == 0  # it got SIGTERM (pause: checkpoint and stop)
    assert str(root) in app.exit_note and "--runs-dir" in app.exit_note


async def test_palette_actions_run_in_their_mode(tmp_path):
    from minertui.keymap import run_in_mode

    root = tmp_path / "runs"
    make_run(root / "run-ledger", generations=5, calls_per_gen=3)
    app = MinerApp(runs_root=root, poll=False)
    seen = []
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        app.notify = lambda msg, **kw: seen.append(msg)  # type: ignore[method-assign]
        run_in_mode(app, "ledger", "verify")
        for _ in range(5):
            await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen.MODE == "Ledger"
        assert any(m.startswith("verifying") for m in seen) and any(m.startswith("chain OK") for m in seen)


async def test_archive_delete_and_clone(tmp_path):
    root = tmp_path / "runs"
    two_runs(root)
    make_run(root / "run-c", generations=3, planned=3, status="finished", seed=3)
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        scr = app.screen
        scr._set_sort(0, False)  # by run id: run-a, run-b, run-c
        await settle(app, pilot)
        await pilot.press("home", "A")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot, 3)
        assert (root / ".archive" / "run-a-finished" / "run.json").is_file() and not (root / "run-a-finished").exists()
        await pilot.press("home")  # now run-b-live
        await pilot.press("D")
        await pilot.pause()
        await pilot.press("n")  # keep it
        await pilot.pause()
        assert (root / "run-b-live").exists()
        await pilot.press("D")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot, 3)
        assert not (root / "run-b-live").exists()
        assert [
            plain(scr.query_one(DataTable).get_row_at(i)[0]) for i in range(scr.query_one(DataTable).row_count)
        ] == ["run-c"]
        await pilot.press("C")
        await pilot.pause()
        from minertui.screens.newrun import NewRunScreen

        form = app.screen
        assert isinstance(form, NewRunScreen)
        cfg = json.loads((root / "run-c" / "run.json").read_text())["config"]
        assert form.query_one("#f-popsize", Input).value == str(cfg["popsize"])
        assert Path(form.query_one("#f-config", Input).value).name == "clone-run-c.yaml"
        data, errors = form.validate_form()
        assert not errors and data["popsize"] == cfg["popsize"] and data["seed"] == cfg["seed"]


async def test_a_score_as_baseline(tmp_path):
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False, start_mode="train", open_run=root / "run-a-finished")
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        await pilot.press("B")
        await pilot.pause()
        for ch in "0.5":
            await pilot.press(ch if ch != "." else "full_stop")
        await pilot.press("enter")
        await settle(app, pilot, 3)
        assert app.baseline == 0.5
        assert "baseline score 0.500" in plain(app.screen.query_one("#train-legend", Static))
        best = app.current.best
        assert f"vs base  {best - 0.5:+.3f}" in plain(app.screen.query_one("#train-stats", Static))


async def test_the_key_bar_names_enter_open_in_runs(tmp_path):
    root = tmp_path / "runs"
    two_runs(root)
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=BIG) as pilot:
        await settle(app, pilot)
        bar = plain(app.screen.query_one("KeyBar"))
        assert bar.lstrip().startswith("⏎ Open"), bar  # the table's own Enter binding hid it


def test_analysis_prose_is_not_wrapped_by_the_job_but_by_the_pane():
    # the job used to wrap the findings at the pane's width; the pane (a few cells narrower with
    # its scrollbar) wrapped them again, cutting a run path into "run." / "js" / "on"
    from rich.console import Group
    from rich.text import Text

    from minertui.jobs.analysis import _render

    note = "note: questions: the test split recorded in /tmp/x/" + "y" * 60 + "/run.json"
    out = _render(Group(Text(note), Text("note: only 12 questions: intervals are wide")), 40)
    lines = Text.from_ansi(out).plain.rstrip("\n").split("\n")
    assert lines == [note, "note: only 12 questions: intervals are wide"]
