"""Notifications when a run ends: which ends count, the terminal sequences (tmux passthrough
included), the notify command (no shell, event JSON on stdin, a timeout), the settings, and the
app delivering them for a run it watched end."""

from __future__ import annotations

import json
import sys

import pytest

from minertui.app import MinerApp
from minertui.notify import RunEnded, classify, osc_sequences, parse_settings, run_command
from minertui.settings import save_settings
from minertui.synth import make_run
from trinity.runs.rundir import RunDir

EV = RunEnded("finished", "run-1", "/runs/run-1", "finished", "finished 30 generations", 30, 0.025)


@pytest.mark.parametrize(
    "status,message,kind",
    [
        ("finished", "finished 30 generations", "finished"),
        ("failed", "RuntimeError: boom", "failed"),
        ("interrupted", "", "failed"),
        ("stopped", "stopped: budget reached (spent $0.05 of $0.05)", "budget"),
        ("stopped", "stopped: out of credit (402)", "budget"),
        ("stopped", "stopped: provider failing (32 of 32 calls failed)", "provider"),
        ("stopped", "stopped: interrupted by SIGTERM; continue with `trinity resume r`", None),
        ("running", "", None),
    ],
)
def test_which_ends_are_notified(status, message, kind):
    assert classify(status, message) == kind


def test_osc_sequences_and_tmux_passthrough():
    plain = osc_sequences(EV, in_tmux=False)
    assert plain == (
        "\x1b]9;minertui: run finished: run-1: finished 30 generations\x07"
        "\x1b]777;notify;minertui: run finished;run-1: finished 30 generations\x07"
    )
    wrapped = osc_sequences(EV, in_tmux=True)
    assert wrapped.startswith("\x1bPtmux;\x1b\x1b]9;minertui") and wrapped.count("\x1bPtmux;") == 2
    assert wrapped.endswith("\x07\x1b\\")
    evil = RunEnded("failed", "r;\x1b]52;c;x\x07", "/r", "failed", "a;b\x1b", 1, 0.0)
    seq = osc_sequences(evil, in_tmux=False)
    assert seq.count("\x1b") == 2 and "52" not in seq.split("\x07")[0].split(";", 1)[0]  # no injected OSC


def test_settings_defaults_and_errors():
    ns, errs = parse_settings(None)
    assert ns.bell and not ns.osc and ns.command == () and errs == []
    ns, errs = parse_settings(
        {"osc": True, "bell": False, "command": ["notify-send", "x"], "events": {"finished": False}}
    )
    assert ns.osc and not ns.bell and ns.command == ("notify-send", "x") and "finished" not in ns.events
    _, errs = parse_settings({"command": "notify-send x", "bell": "yes", "timeout_s": 0, "colour": 1})
    assert (
        len(errs) == 4 and any("without a shell" in e for e in errs) and any('unknown key "colour"' in e for e in errs)
    )


def test_notify_command_gets_the_event_on_stdin(tmp_path):
    out = tmp_path / "got.json"
    argv = (sys.executable, "-c", f"import sys; open({str(out)!r}, 'w').write(sys.stdin.read())")
    assert run_command(argv, EV, 30) == ""
    got = json.loads(out.read_text())
    assert got["event"] == "run_finished" and got["run_id"] == "run-1" and got["spend_usd"] == 0.025
    # no shell: a ';' stays an argument
    argv = (sys.executable, "-c", "import sys; sys.exit(0 if sys.argv[1] == 'a; rm -rf x' else 3)", "a; rm -rf x")
    assert run_command(argv, EV, 30) == ""


def test_notify_command_failures_are_one_line():
    assert "not found" in run_command(("no-such-notifier-xyz",), EV, 5)
    err = run_command((sys.executable, "-c", "import time; time.sleep(30)"), EV, 0.3)
    assert "took over 0.3 s" in err
    err = run_command((sys.executable, "-c", "import sys; print('bad token', file=sys.stderr); sys.exit(4)"), EV, 30)
    assert err.endswith("exited with 4: bad token")


async def test_the_app_notifies_runs_it_watched_end(tmp_path):
    out = tmp_path / "events.jsonl"
    cmd = [sys.executable, "-c", f"import sys; open({str(out)!r}, 'a').write(sys.stdin.read() + '\\n')"]
    save_settings(notifications={"osc": True, "command": cmd})
    root = tmp_path / "runs"
    live = make_run(root / "live", generations=5, planned=30, status="running", seed=1)
    make_run(root / "done-before", generations=5, status="finished", seed=2)  # ended before: no alert
    budget = make_run(root / "budget", generations=5, planned=30, status="running", seed=3)
    paused = make_run(root / "paused", generations=5, planned=30, status="running", seed=4)
    locks = {r.path: RunDir(r.path).lock().acquire() for r in (live, budget, paused)}
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        rang, wrote = [], []
        assert app.notifier is not None
        app.notifier.bell, app.notifier.write = (lambda: rang.append(1)), wrote.append
        await app.refresh_now()
        await pilot.pause()
        assert rang == [] and wrote == []
        live.set_status("finished", "finished 30 generations")
        budget.set_status("stopped", "stopped: budget reached (spent $0.025 of $0.025)")
        paused.set_status("stopped", "stopped: interrupted by SIGTERM; continue with `trinity resume`")
        for lock in locks.values():
            lock.release()
        await app.refresh_now()
        await pilot.pause()
        await app.workers.wait_for_complete()
        assert len(rang) == 2  # finished and budget; the miner's own pause rings nothing
        assert any("\x1b]9;minertui: run finished: live" in w for w in wrote)
        assert any("run stopped: budget" in w for w in wrote)
        got = [json.loads(x) for x in out.read_text().splitlines()]
        assert sorted(g["event"] for g in got) == ["run_budget", "run_finished"]
        await app.refresh_now()  # each end is notified once
        await app.workers.wait_for_complete()
        assert len(rang) == 2


async def test_bell_only_by_default_and_switchable(tmp_path):
    root = tmp_path / "runs"
    run = make_run(root / "r", generations=2, planned=30, status="running")
    lock = RunDir(run.path).lock().acquire()
    save_settings(notifications={"events": {"finished": False}})
    app = MinerApp(runs_root=root, poll=False)
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.notifier is not None and app.notifier.settings.bell and not app.notifier.settings.osc
        rang, wrote = [], []
        app.notifier.bell, app.notifier.write = (lambda: rang.append(1)), wrote.append
        await app.refresh_now()
        run.set_status("finished", "done")
        lock.release()
        await app.refresh_now()
        await pilot.pause()
        assert rang == [] and wrote == []  # "finished" switched off
