"""Pilot tests of every mode against real run directories: the numbers on screen are the
numbers in the files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from rich.text import Text
from textual.widgets import DataTable, Static

from minertui.app import MinerApp
from minertui.runmodel import ema
from minertui.synth import make_run
from trinity.io import read_jsonl
from trinity.runs.records import parse_run_meta, parse_trace

SIZE = (120, 40)


def text_of(app, selector: str) -> str:
    w = app.screen.query_one(selector, Static)
    c = w.content
    return c.plain if isinstance(c, Text) else str(c)


def cells(table: DataTable, row: int) -> list[str]:
    return [c.plain if isinstance(c, Text) else str(c) for c in table.get_row_at(row)]


async def settle(app, pilot, times: int = 2) -> None:
    for _ in range(times):
        await app.refresh_now()
        await pilot.pause()


def generation_events(run: Path) -> list[dict]:
    return [e for e in read_jsonl(run / "events.jsonl") if e["type"] == "generation"]


async def test_runs_mode_lists_the_real_run(runs_root):
    run = runs_root / "run-real"
    gens = generation_events(run)
    meta = json.loads((run / "run.json").read_text())
    app = MinerApp(runs_root=runs_root, poll=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one(DataTable)
        assert table.row_count == 1
        row = cells(table, 0)
        assert row[0] == meta["id"] and row[1] == "finished" and row[7] == "cached"
        assert row[2] == f"{len(gens)}/{meta['config']['generations']}"
        assert row[3] == f"{max(g['best'] for g in gens):.3f}"
        assert row[5] == "$0.00"  # a cached run pays nothing: no ledger, cost_usd 0
        vals = [g["val_acc"] for g in gens if g.get("val_acc") is not None]
        assert row[4] == f"{ema(np.array(vals, dtype=float), 0.6)[-1]:.3f}"  # smoothed validation


async def test_train_mode_shows_the_last_generation(runs_root):
    run = runs_root / "run-real"
    last = generation_events(run)[-1]
    app = MinerApp(runs_root=runs_root, poll=False, start_mode="train")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        stats = text_of(app, "#train-stats")
        assert f"best     {last['best']:.3f}" in stats
        assert f"max {last['max']:.3f} mean {last['mean']:.3f}" in stats
        assert f"{last['evals'] / last['secs']:,.1f}" in stats  # evals/s of the last generation
        assert f"val acc  {last['val_acc']:.3f}" in stats
        mix = text_of(app, "#train-mix")
        total = sum(last["model_mix"].values())
        for model, n in last["model_mix"].items():
            assert f"{n / total:4.0%}" in mix and model.split("/")[-1][:12] in mix
        assert "finished" in text_of(app, "#train-log")


async def test_ledger_mode_totals_and_chain(tmp_path):
    root = tmp_path / "runs"
    run = make_run(root / "run-ledger", generations=10, calls_per_gen=5).path
    records = read_jsonl(run / "ledger.jsonl")
    total = sum(r["cost_micro_usd"] for r in records) / 1e6
    app = MinerApp(runs_root=root, poll=False, start_mode="ledger")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await app.workers.wait_for_complete()
        await settle(app, pilot)
        head = text_of(app, "#ledger-head")
        assert "chain OK" in head and f"{len(records)} records" in head
        assert f"{len(records)} calls · total ${total:,.4f}" in head
        table = app.screen.query_one("#ledger-table", DataTable)
        assert table.row_count == len(records)
        newest = records[-1]
        assert cells(table, 0)[1] == newest["model"].split("/")[-1]
        assert cells(table, 0)[4] == f"${newest['cost_micro_usd'] / 1e6:,.6f}"
        per_model = {}
        for r in records:
            per_model[r["model"]] = per_model.get(r["model"], 0) + r["cost_micro_usd"]
        lv = app.current.ledger
        for name, _calls, _toks, usd in lv.totals_by(lv.model, lv.model_names):
            assert usd == pytest.approx(per_model[name] / 1e6)

    # tamper with line 3: the chain check names it, in red
    lines = (run / "ledger.jsonl").read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace('"prompt_tokens":', '"prompt_tokens": ')
    (run / "ledger.jsonl").write_text("".join(lines))
    app = MinerApp(runs_root=root, poll=False, start_mode="ledger")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await app.workers.wait_for_complete()
        await settle(app, pilot)
        assert "chain BROKEN at line 3" in text_of(app, "#ledger-head")


async def test_traces_mode_counts_filters_and_drill_down(runs_root):
    run = runs_root / "run-real"
    traces = read_jsonl(run / "traces.jsonl")
    wrong = [t for t in traces if t["correct"] is False]
    app = MinerApp(runs_root=runs_root, poll=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot, 3)
        status = text_of(app, "#traces-status")
        assert f"of {len(traces):,} traces" in status
        assert f"{sum(t['correct'] is True for t in traces):,} right" in status
        screen = app.screen
        screen.query_one("#flt-correct").value = "wrong"
        await settle(app, pilot)
        assert f"of {len(wrong):,} shown" in text_of(app, "#traces-status")
        table = screen.query_one(DataTable)
        row = cells(table, 0)
        first_wrong = wrong[(len(wrong) - 1) // 100 * 100]  # the newest page is shown
        assert row[2] == first_wrong["qid"] and row[3] == "✗ wrong"
        table.focus()
        table.move_cursor(row=0)
        await pilot.press("enter")
        await pilot.pause()
        detail = "\n".join(
            str(w.content.plain if hasattr(w.content, "plain") else w.content) for w in app.screen.query(Static)
        )
        assert first_wrong["qid"] in detail and "wrong ✗" in detail
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "TracesScreen"


async def test_trace_detail_shows_question_and_gold(runs_root):
    from rich.console import Console

    from minertui.screens.trace_detail import render_trace

    run = runs_root / "run-real"
    tr = read_jsonl(run / "traces.jsonl")[0]
    meta = json.loads((run / "run.json").read_text())
    console = Console(width=100, record=True, file=open("/dev/null", "w"))
    for part in render_trace(parse_trace(tr), parse_run_meta(meta)):
        console.print(part)
    out = console.export_text()
    from trinity.benchmarks.practice import practice_questions

    q = next(q for q in practice_questions() if q.id == tr["qid"])
    assert q.question.splitlines()[0][:40] in out
    gold = tr["gold"] if isinstance(tr["gold"], str) else json.dumps(tr["gold"], ensure_ascii=False)
    assert f"gold          {gold[:60]}" in out  # as written, not JSON-quoted
    assert "none extracted (cached mode records correctness" in out  # the real run is cached
    probs = tr["turns"][0]["model_probs"]
    assert f"{probs[0]:5.1%}" in out


async def test_new_run_form_shows_validation_next_to_the_field(runs_root):
    app = MinerApp(runs_root=runs_root, poll=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("n")
        await pilot.pause()
        form = app.screen
        form.query_one("#f-popsize").value = "1"
        form.query_one("#f-sigma0").value = "abc"
        await pilot.pause()
        form.validate_form()
        await pilot.pause()
        assert "greater than or equal to 2" in str(form.query_one("#e-popsize", Static).content)
        assert "not a valid float" in str(form.query_one("#e-sigma0", Static).content)
        assert str(form.query_one("#e-seed", Static).content) == ""
        assert "newrun" in app.unsaved
        # quitting now asks, because the form would be lost
        await pilot.press("escape")
        await pilot.pause()
        assert "newrun" not in app.unsaved


async def test_help_and_quit(runs_root):
    app = MinerApp(runs_root=runs_root, poll=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        app.unsaved["x"] = "the test's unsaved thing"
        await pilot.press("q")
        await pilot.pause()
        assert type(app.screen).__name__ == "ConfirmScreen"
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running
        app.unsaved.clear()
        assert app.return_code is None  # still running: the code is set only by exit()
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0  # `q` with nothing unsaved quits at once (None: it did nothing)


async def test_analysis_mode_runs_all_three_in_a_child_process(runs_root):
    from minertui.screens.analysis import chart_bars

    app = MinerApp(runs_root=runs_root, poll=False, start_mode="analysis")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("a")
        await app.workers.wait_for_complete()
        await settle(app, pilot)
        res = app.screen.results[str((runs_root / "run-real").resolve())]
        for kind in ("oracle", "baselines", "eval"):
            assert "error" not in res[kind], res[kind]
        orc, ev = res["oracle"]["report"], res["eval"]["report"]
        verdict = text_of(app, "#analysis-verdict")
        assert orc["verdict"] in verdict and ev["claim"] in verdict
        from minertui.widgets.tables import SortableTable

        oracle = app.screen.query_one("#analysis-oracle").query(SortableTable).first()
        assert ("best single", f"{orc['best_single_acc']:.3f}", orc["best_single"]) in oracle.shown()
        bars = dict(chart_bars(res))
        assert bars["router"] == ev["router"]["accuracy"]["point"]
        assert bars["random"] == ev["random"]["point"]
        assert bars["oracle (x-fit)"] == orc["crossfit"]["oracle"]
        # eval.json was written by the library, and says the same
        stored = json.loads((runs_root / "run-real" / "eval.json").read_text())["evaluations"]["cached/test"]
        assert stored["router"]["accuracy"] == ev["router"]["accuracy"]


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


async def test_submit_mode_packs_checks_plans_and_executes(runs_root, tmp_path):
    origin = tmp_path / "origin.git"
    repo = tmp_path / "repo"
    _git("init", "-q", "--bare", "-b", "main", str(origin), cwd=tmp_path)
    _git("init", "-q", "-b", "main", str(repo), cwd=tmp_path)
    for k, v in (("user.name", "Test Miner"), ("user.email", "miner@example.com")):
        _git("config", k, v, cwd=repo)
    (repo / "README.md").write_text("competition repo (throwaway)\n")
    _git("add", "README.md", cwd=repo)
    _git("commit", "-q", "-m", "init", cwd=repo)
    _git("remote", "add", "origin", str(origin), cwd=repo)
    _git("push", "-q", "origin", "main", cwd=repo)

    app = MinerApp(runs_root=runs_root, poll=False, start_mode="submit")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        s = app.screen
        s.query_one("#sub-miner").value = "testminer"
        s.query_one("#sub-repo").value = str(repo)
        s.query_one("#sub-push").value = True
        await pilot.pause()
        s.action_pack()
        await app.workers.wait_for_complete()
        await pilot.pause()
        # a cached run spent $0: TinyRouter's receipt_cost_zero_or_missing, said before packing
        assert s.bundle is None
        assert "receipt_cost_zero_or_missing" in "\n".join(str(line.text) for line in s.query_one("#submit-log").lines)
        _pay(runs_root / "run-real")
        s.action_pack()
        for _ in range(3):  # pack, then the gates it starts
            await app.workers.wait_for_complete()
            await pilot.pause()
        assert s.bundle is not None and s.bundle.is_dir()
        gates = s.query_one("#submit-gates", Static).content  # a Rich table: gate | result | why
        names = [str(c) for c in gates.columns[0]._cells]
        assert {"weight_sanity", "receipt", "schema"} <= set(names), names
        s.action_plan()
        await app.workers.wait_for_complete()
        await pilot.pause()
        # the tiny encoder's head is not TinyRouter's (6, 1024): the plan is refused, in red, and
        # the profile, its verdict wording and the PR text as it will be posted are on screen
        assert s.plan is not None and s.plan.branch == "submission/testminer-gen1"
        assert any("weight_sanity" in r and "param_count" in r for r in s.plan.refusals), s.plan.refusals
        plan_shown = s.query_one("#submit-plan", Static).content.plain
        assert "REFUSED" in plan_shown
        assert s.plan.pr_title in plan_shown and s.plan.pr_body in plan_shown
        assert s.plan.pr_title.startswith("[submission] testminer gen 1 — composite ")
        caption = str(s.query_one("#submit-gates", Static).content.caption)
        assert "TinyRouter would say: [preflight] REJECTED: param_count" in caption
        s.action_execute()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "refused" in "\n".join(str(line.text) for line in s.query_one("#submit-log").lines)
        # skipping the gates (recorded in the commit message by the library) lets it through
        s.query_one("#sub-skip").value = True
        s.action_plan()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not s.plan.refusals, s.plan.refusals
        assert "submit" in app.unsaved
        s.action_execute()
        await app.workers.wait_for_complete()
        await pilot.pause()
        log = "\n".join(str(line.text) for line in s.query_one("#submit-log").lines)
        assert "$ git" in log
        assert "done:" in str(s.query_one("#submit-url", Static).content)
        assert "submit" not in app.unsaved
    branches = _git("branch", "--list", "submission/testminer-gen1", cwd=origin)
    assert "submission/testminer-gen1" in branches
    files = _git("ls-tree", "-r", "--name-only", "submission/testminer-gen1", cwd=origin).split()
    assert any(f.startswith("submissions/testminer/") for f in files)


def _pay(run_dir: Path) -> None:
    """Paid calls on the run's ledger, as a live phase would append them (TinyRouter refuses a $0 run)."""
    from trinity.pool.ledger import Ledger

    with Ledger(run_dir / "ledger.jsonl", run_dir.name) as led:
        led.append(
            provider="practice",
            model="simulated/coder",
            prompt_tokens=400,
            completion_tokens=120,
            cost_micro_usd=2_500,
            cost_source="estimated",
            purpose="train",
        )


async def test_submit_refuses_an_unfinished_run_unless_force_is_ticked(runs_root, tmp_path):
    meta_path = runs_root / "run-real" / "run.json"
    meta = json.loads(meta_path.read_text())
    meta["status"] = "stopped"
    meta_path.write_text(json.dumps(meta))
    _pay(runs_root / "run-real")
    repo = tmp_path / "repo"
    repo.mkdir()
    app = MinerApp(runs_root=runs_root, poll=False, start_mode="submit")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        s = app.screen
        assert "refused unless 'force'" in text_of(app, "#submit-help")
        s.query_one("#sub-miner").value = "testminer"
        s.query_one("#sub-repo").value = str(repo)
        s.action_pack()
        await app.workers.wait_for_complete()
        await pilot.pause()
        log = "\n".join(str(line.text) for line in s.query_one("#submit-log").lines)
        assert "pack refused: run run-real is stopped, not finished" in log
        assert s.bundle is None and not (repo / "submissions").exists()
        s.query_one("#sub-force").value = True  # the deliberate, labelled choice
        s.action_pack()
        for _ in range(3):
            await app.workers.wait_for_complete()
            await pilot.pause()
        log = "\n".join(str(line.text) for line in s.query_one("#submit-log").lines)
        assert "force: packing unfinished run run-real (stopped)" in log
        assert s.bundle is not None and s.bundle.is_dir()
        receipt = json.loads((s.bundle / "receipt.json").read_text())
        assert receipt["run_status"] == "stopped"


async def test_new_run_form_starts_a_detached_engine(runs_root):
    from minertui.screens.newrun import NewRunScreen

    app = MinerApp(runs_root=runs_root, poll=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("n")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, NewRunScreen)
        root = Path(__file__).resolve().parents[2]
        form.query_one("#f-config").value = str(root / "configs" / "practice.yaml")
        form.query_one("#f-generations").value = "2"
        form.query_one("#f-popsize").value = "4"
        form.query_one("#f-m").value = "4"
        await pilot.pause()
        form.start()
        for _ in range(100):  # dismissing the modal takes a few frames on a busy machine
            await pilot.pause(0.05)
            if not isinstance(app.screen, NewRunScreen):
                break
        errors = {w.id: str(w.content) for w in form.query(".err") if str(w.content)}
        assert not isinstance(app.screen, NewRunScreen), errors
        (launched,) = app.supervisor.launched.values()
        cfg = launched.argv[launched.argv.index("--config") + 1]
        import yaml

        data = yaml.safe_load(Path(cfg).read_text())
        assert (data["generations"], data["popsize"], data["m"]) == (2, 4, 4)
        assert data["encoder"] == "tiny-qwen3" and data["questions"] == "practice"
        assert os.getpgid(launched.proc.pid) == launched.proc.pid  # its own session and group
        code = launched.proc.wait(timeout=240)
        assert code == 0, (launched.run_dir.parent / f".{launched.run_dir.name}.engine.log").read_text()[-2000:]
        await settle(app, pilot)
        assert (launched.run_dir / "engine.log").exists()  # adopted into the run dir
        row = cells(app.screen.query_one(DataTable), 0)
        assert row[0] == launched.run_dir.name and row[1] == "finished" and row[2] == "2/2"


def test_cli_open_rejects_a_non_run_directory(tmp_path):
    import sys

    out = subprocess.run([sys.executable, "-m", "minertui", "open", str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip().startswith("error:") and "not a run directory" in out.stderr
    assert "Traceback" not in out.stderr


def test_cli_rejects_a_runs_dir_that_is_a_file(tmp_path, capsys):
    from minertui.__main__ import main

    f = tmp_path / "runs"
    f.write_text("not a folder")
    assert main(["--runs-dir", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --runs-dir") and "is a file, not a directory" in err


async def test_open_selects_the_named_run_even_when_it_is_not_the_newest(runs_root):
    newer = make_run(runs_root / "run-newer", generations=2).path
    assert newer.exists()
    app = MinerApp(runs_root=runs_root, poll=False, open_run=runs_root / "run-real", start_mode="train")
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.current.path == (runs_root / "run-real").resolve()
        await pilot.press("1")
        await settle(app, pilot)
        assert app.current.path == (runs_root / "run-real").resolve()
        table = app.screen.query_one(DataTable)
        assert cells(table, table.cursor_row)[0] == json.loads((runs_root / "run-real" / "run.json").read_text())["id"]
