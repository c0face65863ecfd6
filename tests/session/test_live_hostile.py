"""Live training against a hostile provider (issue 12), the engine as a child `trinity` process
over real loopback HTTP: unpriced pools refused, failing pools stop without training, and a
ledger cut at the end (or deleted) is caught from the run directory."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from quick_providers import quick_providers
from train_argv import train_argv
from trinity_main import trinity_main

from trinity.io import read_jsonl
from trinity.practice.server import start_practice_server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pool"))
from hostile import HostileServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hostile():
    h = HostileServer()
    yield h
    h.stop()


def _env(tmp_path):
    return {**os.environ, "OMP_NUM_THREADS": "1", "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}


def _trinity(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "trinity", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def _local(h, q, run, *extra):
    pool = ("--pool", "local", "--base-url", h.base_url, "--pool-models", "m-a,m-b")
    return train_argv(run, *pool, *extra, mode="live", questions=q, generations=2, popsize=2, m=3)


def test_unpriced_models_refuse_to_start(hostile, questions_file, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    rc, _, err = trinity_main(_local(hostile, questions_file, tmp_path / "run"))  # in-process: it fails at start
    lines = err.strip().splitlines()
    assert rc != 0 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert "m-a, m-b" in lines[0] and "prices:" in lines[0] and "--price-in" in lines[0]
    assert not (tmp_path / "run").exists() and hostile.requests == 0


@pytest.mark.parametrize("mode", ["500", "429"])
def test_a_failing_pool_stops_without_training(hostile, questions_file, tmp_path, mode, monkeypatch):
    """The pool read from a providers file of the run's own (`--models-yaml`): it prices m-a and
    m-b, so no --price-in is needed, and backs off in milliseconds, so the retries are quick."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    hostile.mode = mode
    run = tmp_path / "run"
    providers = quick_providers(
        tmp_path / "models.yaml", {m: {"price_in": 1.0, "price_out": 2.0} for m in ("m-a", "m-b")}
    )
    rc, out, err = trinity_main(_local(hostile, questions_file, run, "--models-yaml", providers, "--budget-usd", "1"))
    assert rc != 0, out[-1500:] + err[-1500:]
    st = [e for e in read_jsonl(run / "events.jsonl") if e["type"] == "status"][-1]
    label = {"500": "500 ×", "429": "429 ×", "malformed": "malformed 200 ×"}[mode]
    assert st["status"] == "stopped" and st["message"].startswith("stopped: provider failing (")
    assert label in st["message"] and "calls failed" in st["message"], st["message"]
    assert not [e for e in read_jsonl(run / "events.jsonl") if e["type"] == "generation"]  # nothing trained
    meta = json.loads((run / "run.json").read_text())
    assert meta["status"] == "stopped" and meta["config"]["models_yaml"] == str(providers.resolve())
    assert hostile.requests > 0


def test_models_yaml_that_is_missing_or_broken_is_one_line(hostile, questions_file, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    broken = tmp_path / "broken.yaml"
    broken.write_text("providers: [\n", encoding="utf-8")
    for path in (tmp_path / "missing.yaml", broken):
        run = tmp_path / f"run-{path.stem}"
        rc, _, err = trinity_main(_local(hostile, questions_file, run, "--models-yaml", path, "--price-in", "1"))
        lines = err.strip().splitlines()
        assert rc != 0 and len(lines) == 1 and lines[0].startswith("error: ") and path.name in lines[0], err
        assert not run.exists() and hostile.requests == 0


def test_ledger_cut_or_deleted_is_caught_from_the_run_dir(questions_file, tmp_path):
    srv = start_practice_server(port=0)
    try:
        env = {**_env(tmp_path), "TRINITY_POOL_BASE_URL": srv.base_url}
        run = tmp_path / "run"
        argv = train_argv(
            run, "--pool", "practice", mode="live", questions=questions_file, generations=1, popsize=2, m=6
        )
        r = _trinity(*argv, env=env)
        assert r.returncode == 0, r.stderr[-1500:]
        summary = json.loads((run / "summary.json").read_text())
        man = json.loads((run / "checkpoint" / "manifest.json").read_text())
        led = run / "ledger.jsonl"
        lines = led.read_bytes().splitlines(keepends=True)
        assert summary["ledger_records"] == man["ledger_records"] == len(lines) > 10
        assert summary["ledger_head"] == man["ledger_head"] == json.loads(lines[-1])["h"]
        assert _trinity("ledger", "verify", run, env=env).returncode == 0

        full = led.read_bytes()
        led.write_bytes(b"".join(lines[:-10]))  # the last 10 records deleted
        v = _trinity("ledger", "verify", run, env=env)
        assert v.returncode == 1 and "BROKEN" in v.stdout, v.stdout
        led.write_bytes(b"")  # emptied
        v = _trinity("ledger", "verify", run, env=env)
        assert v.returncode == 1 and "BROKEN" in v.stdout, v.stdout
        led.unlink()  # deleted
        v = _trinity("ledger", "verify", run, env=env)
        assert v.returncode == 1 and "missing" in v.stdout, v.stdout
        r = _trinity("resume", run, "--generations", "2", env=env)
        lines_err = r.stderr.strip().splitlines()
        assert r.returncode != 0 and len(lines_err) == 1 and "ledger.jsonl is missing" in lines_err[0], r.stderr
        assert not led.exists()  # not silently restarted at $0
        led.write_bytes(full)
        assert _trinity("ledger", "verify", run, env=env).returncode == 0
    finally:
        srv.stop()
