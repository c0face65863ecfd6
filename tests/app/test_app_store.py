"""The app's data layer (no UI): incremental reading, torn lines, compact columns, filters,
derived figures; themes and settings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from minertui.runmodel import RunModel, filter_traces
from minertui.settings import Settings, load_settings, load_themes, parse_theme, save_settings
from minertui.store import Column
from minertui.synth import make_run
from trinity.errors import ConfigError
from trinity.io import JsonlTail, read_jsonl, read_line_at


def test_column_views_stay_valid_after_growth():
    c = Column(np.int64, capacity=2)
    for i in range(3):
        c.append(i)
    v = c.view()
    for i in range(3, 1000):
        c.append(i)  # reallocates several times
    assert v.tolist() == [0, 1, 2]
    assert c.view()[-1] == 999 and len(c) == 1000
    with pytest.raises(ValueError):
        v[0] = 5  # snapshots are read-only


def test_jsonl_tail_waits_for_the_newline_of_a_torn_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": 2}\n{"a": ')
    tail = JsonlTail(p)
    got = tail.read_new_at()
    assert [o for _, o in got] == [{"a": 1}, {"a": 2}]
    assert [read_line_at(p, at) for at, _ in got] == [{"a": 1}, {"a": 2}]
    assert tail.read_new_at() == []  # the torn line is not parsed yet
    with open(p, "ab") as f:
        f.write(b'3}\nnot json\n{"a": 4}\n')
    got = tail.read_new_at()
    assert [o for _, o in got] == [{"a": 3}, {"a": 4}] and tail.bad_lines == [4]
    p.write_bytes(b'{"a": 9}\n')  # replaced by a shorter file: start over
    assert tail.read_new() == [{"a": 9}] and tail.reset


def test_jsonl_tail_small_chunks_read_everything(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text("".join(json.dumps({"i": i, "pad": "x" * (i % 50)}) + "\n" for i in range(500)))
    tail = JsonlTail(p)
    seen = []
    while tail.pending:
        seen += [o["i"] for _, o in tail.read_new_at(max_bytes=300)]
    assert seen == list(range(500))


def test_run_model_numbers_equal_the_files(tmp_path):
    run = make_run(tmp_path / "r", generations=15, planned=40, traces_per_gen=7, calls_per_gen=3, status="running")
    m = RunModel(run.path, want_traces=True)
    while m.poll() and m.snapshot().catching_up:
        pass
    s = m.snapshot()
    events = read_jsonl(run.path / "events.jsonl")
    gens = [e for e in events if e["type"] == "generation"]
    ledger = read_jsonl(run.path / "ledger.jsonl")
    traces = read_jsonl(run.path / "traces.jsonl")
    assert len(s.gens) == 15 and s.gens.gen.tolist() == [g["gen"] for g in gens]
    assert s.best == max(g["best"] for g in gens)
    assert s.spend_usd == pytest.approx(sum(r["cost_micro_usd"] for r in ledger) / 1e6)
    assert len(s.traces) == len(traces) == 15 * 7
    assert int((s.traces.correct == 1).sum()) == sum(t["correct"] is True for t in traces)
    assert s.traces.cost.sum() == pytest.approx(sum(t["cost_usd"] for t in traces))
    assert s.generations_total == 40 and s.status == "interrupted"  # says running, no engine holds it
    assert s.progress is not None and (s.progress.done, s.progress.total) == (40, 128)
    # the ETA is the mean of the last 10 generation times × what is left (minus the part done)
    left = 40 - 15 - 40 / 128
    assert s.eta_secs is None  # no engine: no ETA
    with m.run.lock():
        m.poll()
        s2 = m.snapshot()
        assert s2.status == "running" and s2.locked
        assert s2.eta_secs == pytest.approx(20.0 * left)
    # trace drill-down reads the right line
    i = 37
    assert m.trace_record(int(s.traces.offset[i]))["qid"] == traces[i]["qid"]


def test_filters(tmp_path):
    run = make_run(tmp_path / "r", generations=6, traces_per_gen=20, calls_per_gen=0)
    m = RunModel(run.path, want_traces=True)
    m.poll(budget_s=10)
    tv = m.snapshot().traces
    traces = read_jsonl(run.path / "traces.jsonl")
    want = [i for i, t in enumerate(traces) if t["correct"] is False and t["gen"] == 3]
    assert filter_traces(tv, correct=0, gen=3).tolist() == want
    model = "simulated/coder"
    want = [i for i, t in enumerate(traces) if any(u["model"] == model for u in t["turns"])]
    assert filter_traces(tv, model=model).tolist() == want
    qid = traces[5]["qid"]
    want = [i for i, t in enumerate(traces) if qid.upper().lower() in t["qid"]]
    assert filter_traces(tv, qid_search=qid.upper()).tolist() == want
    assert filter_traces(tv, bench="nope").tolist() == []


def test_cumulative_engine_cost_without_a_ledger(tmp_path):
    run = make_run(tmp_path / "r", generations=5, calls_per_gen=2)
    (run.path / "ledger.jsonl").unlink()
    m = RunModel(run.path)
    m.poll()
    gens = [e for e in read_jsonl(run.path / "events.jsonl") if e["type"] == "generation"]
    assert m.snapshot().spend_usd == pytest.approx(gens[-1]["cost_usd"])  # cumulative, not summed


def test_shipped_themes_load_and_bad_files_are_named(tmp_path, monkeypatch):
    themes, errors = load_themes()
    names = {t.name for t in themes}
    assert {"minertui-dark", "minertui-light"} <= names and not errors
    user = tmp_path / "config" / "minertui" / "themes"
    user.mkdir(parents=True)
    (user / "bad.toml").write_text('name = "bad"\nprimary = "not-a-colour"\n')
    (user / "typo.toml").write_text('name = "typo"\nprimary = "#ffffff"\nprimery = "#000000"\n')
    (user / "broken.toml").write_text('name = "broken\n')
    themes, errors = load_themes()
    assert len(errors) == 3
    assert any("bad.toml" in e and "'primary'" in e and "not a colour" in e for e in errors)
    assert any("typo.toml" in e and "primery" in e for e in errors)
    assert any("broken.toml" in e for e in errors)
    with pytest.raises(ConfigError):
        parse_theme(user / "bad.toml")


def test_settings_round_trip():
    assert load_settings() == Settings()
    save_settings(theme="minertui-light")
    assert load_settings().theme == "minertui-light"


async def test_theme_is_remembered_and_a_bad_one_falls_back(tmp_path):
    from minertui.app import MinerApp

    app = MinerApp(runs_root=tmp_path / "runs", poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.theme == "minertui-dark"
        app.theme = "minertui-light"
        await pilot.pause()
    assert load_settings().theme == "minertui-light"
    app = MinerApp(runs_root=tmp_path / "runs", poll=False)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.theme == "minertui-light"
    app = MinerApp(runs_root=tmp_path / "runs", poll=False, theme="no-such-theme")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.theme == "minertui-dark"
        assert any("no-such-theme" in n.message for n in app._notifications)


def test_no_torch_in_the_app_process():
    import subprocess
    import sys

    code = (
        "import sys, minertui.app, minertui.screens.train, minertui.screens.analysis, "
        "minertui.screens.submit, minertui.screens.traces, minertui.screens.ledger, "
        "minertui.screens.newrun, minertui.screens.trace_detail, minertui.demo, "
        # what the Submit, Ledger and new-run workers call in the app process
        "trinity.submission.pack, trinity.submission.gates, trinity.submission.gitsubmit, "
        "trinity.pool.ledger, trinity.config, trinity.data.questions;"
        "print(','.join(m for m in ('torch', 'transformers', 'datasets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_an_internal_error_is_one_line_and_a_crash_log(tmp_path):
    import subprocess
    import sys

    code = (
        "from minertui.app import MinerApp\n"
        "class Boom(MinerApp):\n"
        "    def on_mount(self):\n"
        "        raise RuntimeError('boom for the test')\n"
        f"app = Boom(runs_root={str(tmp_path / 'runs')!r})\n"
        "app.run(headless=True)\n"
        "raise SystemExit(app.return_code)\n"
    )
    env = {**__import__("os").environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr + out.stdout
    assert "error: minertui stopped on an internal error (RuntimeError: boom for the test)" in out.stderr
    (log,) = (tmp_path / "state" / "minertui").glob("crash-*.log")
    assert "boom for the test" in log.read_text() and "Traceback" in log.read_text()


def test_the_first_frame_imports_nothing_heavy(tmp_path):
    """What `minertui` imports before its first frame (the entry point, the app, the Runs screen,
    the settings read) brings no pydantic, numpy, PyYAML, run records or demo: they load after
    the first frame, on first use."""
    import os
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import minertui.__main__, minertui.app, minertui.screens.runs\n"
        "from minertui.settings import read_settings, save_settings\n"
        "save_settings(theme='minertui-light', smoothing=0.5, system_pane=True)\n"
        "assert read_settings()[0].theme == 'minertui-light'\n"
        "heavy = ('pydantic', 'numpy', 'yaml', 'trinity.runs.records', 'minertui.demo')\n"
        "print(' '.join(m for m in heavy if m in sys.modules))\n"
    )
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == []
