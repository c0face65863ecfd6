"""`trinity status` and `trinity watch` on a real tiny cached run (trained here) and on run
directories an engine is still writing (its files appended to as the engine does)."""

import json
import shutil
from pathlib import Path

import pytest

from trinity.cli import main
from trinity.io import append_jsonl, atomic_write_json, read_json
from trinity.runs.cli import sparkline, status_table, watch_screen
from trinity.runs.fmt import money
from trinity.runs.rundir import RunDir
from trinity.runs.status import RunWatcher


@pytest.fixture(scope="session")
def real_run(tiny_run) -> Path:
    """A finished 3-generation cached run on the practice questions (tiny-qwen3; tests/conftest.py)."""
    return tiny_run


@pytest.fixture()
def runs_root(real_run, tmp_path) -> Path:
    root = tmp_path / "runs"
    root.mkdir()
    shutil.copytree(real_run, root / real_run.name, ignore=shutil.ignore_patterns(".lock"))
    return root


def _events(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines() if x.strip()]


def test_status_of_a_real_finished_run(runs_root, capsys):
    run = next(runs_root.iterdir())
    gens = [e for e in _events(run) if e["type"] == "generation"]
    assert main(["status", str(runs_root), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["state"] == "finished" and row["gen"] == 3 == row["generations"]
    vals = [e["val_acc"] for e in gens if isinstance(e.get("val_acc"), float)]
    warm = [e["val_acc"] for e in _events(run) if e["type"] == "warm_start" and "val_acc" in e]
    assert row["best_val"] == pytest.approx(max(vals + warm))
    assert row["best_fitness"] == pytest.approx(max(e["best"] for e in gens))
    assert row["eta_secs"] is None  # finished: nothing left
    assert row["last_event"].startswith("finished")
    assert main(["status", str(runs_root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["RUN", "STATE", "GEN"]
    assert run.name in out[1] and "finished" in out[1] and "3/3" in out[1]
    assert all(len(x) <= 80 for x in out)


def test_watch_once_on_a_real_run(runs_root, capsys):
    run = next(runs_root.iterdir())
    assert main(["watch", str(run), "--once"]) == 0
    out = capsys.readouterr().out
    assert "finished" in out and "generation 3/3" in out
    assert main(["watch", str(run), "--once", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["id"] == read_json(run / "run.json")["id"] and len(d["best_curve"]) == 3
    # not --once: a finished run prints once and exits 0 (a stopped one exits 1)
    assert main(["watch", str(run), "--interval", "0.01"]) == 0
    meta = read_json(run / "run.json")
    atomic_write_json(run / "run.json", {**meta, "status": "stopped", "status_message": "stopped: budget reached"})
    assert main(["watch", str(run), "--interval", "0.01"]) == 1
    assert "stopped: budget reached" in capsys.readouterr().out


def test_a_live_run_read_as_the_engine_appends(tmp_path):
    """A running run (its lock held, as an engine holds it): ETA, spend from the ledger, the
    generation in progress; the watcher reads only what was appended since its last poll."""
    rd = RunDir(tmp_path / "r1")
    rd.path.mkdir()
    rd.write_meta(
        {
            "id": "r1",
            "status": "running",
            "mode": "live",
            "budget_usd": 0.025,
            "config": {"generations": 10, "pool": "p"},
        }
    )
    with rd.lock():
        w = RunWatcher(rd.path)
        s = w.poll()
        assert s.state == "running" and s.gen == 0 and s.eta_secs is None and s.spend_usd == 0.0
        for g in (1, 2, 3):
            rd.append_event(
                "generation", gen=g, best=0.1 * g, mean=0.0, max=0.1 * g, evals=4 * g, secs=10.0, cost_usd=0.002 * g
            )
            append_jsonl(rd.ledger, {"cost_micro_usd": 2000, "model": "m"})
        rd.append_event("progress", gen=4, done=5, total=10)
        s = w.poll()
        assert s.gen == 3 and s.spend_usd == pytest.approx(0.006) and s.progress == (5, 10)
        assert s.eta_secs == pytest.approx(6.5 * 10) and s.eta_limit == "generations"
        assert s.last_event == "generation 3: best 0.300"  # progress ticks are not the last event
        # the budget runs out first: (0.025 - 0.020) / 0.002 = 2.5 generations left
        for _ in range(4, 11):
            append_jsonl(rd.ledger, {"cost_micro_usd": 2000, "model": "m"})
        rd.append_event("generation", gen=4, best=0.4, mean=0, max=0.4, evals=16, secs=10.0, cost_usd=0.020)
        s = w.poll()
        assert s.spend_usd == pytest.approx(0.020)
        assert s.eta_limit == "budget"
        assert "$0.02/$0.025" in "\n".join(status_table([s], 120))  # the budget as it is, not $0.03
    s = RunWatcher(rd.path).poll()  # the lock is gone, run.json still says running
    assert s.state == "interrupted" and s.eta_secs is None


@pytest.mark.parametrize("width,height", [(80, 24), (120, 40)])
def test_watch_screen_fits(real_run, width, height):
    s = RunWatcher(real_run).poll()
    lines = watch_screen(s, width, height)
    assert 3 < len(lines) <= height and all(len(x) <= width for x in lines)
    table = status_table([s, s], width)
    assert len(table) == 3 and all(len(x) <= width for x in table)
    if width == 80:  # the least needed columns go first
        assert "MODE" not in table[0] and "LAST EVENT" in table[0]


def test_bad_inputs_one_line(tmp_path, capsys):
    assert main(["status", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "no such directory" in err and len(err.splitlines()) == 1
    assert main(["watch", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err
    (tmp_path / "run.json").write_text("{torn")
    assert main(["watch", str(tmp_path), "--once"]) == 0  # a torn run.json is shown, not a traceback
    assert "run.json" in capsys.readouterr().out
    assert main(["status", str(tmp_path / "empty")]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["status", str(tmp_path / "empty")]) == 0
    assert "no runs under" in capsys.readouterr().out


def test_money_and_sparkline():
    assert money(0.025) == "$0.025" and money(1.5) == "$1.50" and money(0.000125) == "$0.000125"
    assert money(1234.5) == "$1,234.50" and money(None) == "—"
    assert sparkline([0.0, 0.5, 1.0], 10) == "▁▄█" and sparkline([1, 2, 3, 4], 2) == "▁█"


def test_the_engine_records_the_box_per_generation(real_run, capsys):
    """Each generation event carries a system sample (not the checkpointed history: a resume
    stays bit-identical); `watch --json` shows the newest."""
    gens = [e for e in _events(real_run) if e["type"] == "generation"]
    for e in gens:
        s = e["system"]
        assert set(s) >= {"time", "gpus", "cpu", "ram_used", "ram_total", "rss", "disk_free"}
        assert s["rss"] > 0 and s["disk_free"] > 0
        assert s["gpus"] or s["gpu_note"].startswith("no GPU")
    history = json.loads((real_run / "history.json").read_text())
    assert not any("system" in h for h in (history if isinstance(history, list) else history.get("generations", [])))
    assert main(["watch", str(real_run), "--once", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["system"] == gens[-1]["system"]


def test_status_lists_a_sweeps_trials(tmp_path, capsys):
    from minertui.synth import make_sweep

    make_sweep(tmp_path / "sweep-s", ("finished", "running", "pending"))
    assert main(["status", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [x.split()[0] for x in out[1:]] == ["sweep-s/trials/t000", "sweep-s/trials/t001"]
    assert main(["status", str(tmp_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["state"] for r in rows] == ["finished", "interrupted"]  # no engine holds t001
