"""A live run stops on SIGTERM while its pool waits out a huge Retry-After (100000 s, or an HTTP
date a year ahead): the engine as a child `trinity train` over real loopback HTTP against the
hostile stand-in; the run ends `stopped`, naming the signal, without waiting the cool-down out."""

import json
import os
import signal
import subprocess
import sys
import time
from email.utils import formatdate
from pathlib import Path

import pytest
from train_argv import train_argv

from trinity.io import read_jsonl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pool"))
from hostile import HostileServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hostile():
    h = HostileServer()
    yield h
    h.stop()


@pytest.mark.parametrize("retry_after", ["100000", "a year ahead"])
def test_sigterm_during_a_long_retry_after_stops_the_run(hostile, questions_file, tmp_path, retry_after):
    if retry_after == "a year ahead":
        retry_after = formatdate(time.time() + 365 * 86400, usegmt=True)
    hostile.mode, hostile.retry_after = "retry_after", retry_after
    run = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    pool = ("--pool", "local", "--base-url", hostile.base_url, "--pool-models", "m-a,m-b")
    prices = ("--price-in", "1", "--price-out", "2", "--budget-usd", "1")
    args = train_argv(run, *pool, *prices, mode="live", questions=questions_file, generations=2, popsize=2, m=2)
    p = subprocess.Popen(
        [sys.executable, "-m", "trinity", *args], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 240
        while hostile.requests < 1 and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert hostile.requests >= 1, p.communicate(timeout=5)
        time.sleep(0.2)  # inside the cool-down now
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)  # the cool-down alone would take 300 s
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err.decode()[-1500:]
    st = [e for e in read_jsonl(run / "events.jsonl") if e["type"] == "status"][-1]
    assert st["status"] == "stopped" and "SIGTERM" in st["message"], st
    assert json.loads((run / "run.json").read_text())["status"] == "stopped"
    assert hostile.requests == hostile.by_kind["429"]  # nothing went out after the signal but 429s
