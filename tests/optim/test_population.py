"""`trinity train --workers N`: a generation's candidates over Ray actors (local Ray, 2 CPUs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trinity.config import load_config
from trinity.optim.engine import start_run
from trinity.optim.population import FAULT_ENV

ray = pytest.importorskip("ray", reason="the [ray] extra (pip install -e '.[ray]') runs these tests")
ROOT = Path(__file__).resolve().parents[2]
PRACTICE = ROOT / "configs" / "practice.yaml"


@pytest.fixture(scope="module")
def ray_local():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _cfg(**over):
    return load_config(PRACTICE, {"encoder": "tiny-qwen3", "generations": 4, "popsize": 8, "m": 16,
                                  "traces": "best", **over})


def _results(run: Path):
    hist = json.loads((run / "history.json").read_text())
    traces = (run / "traces.jsonl").read_text().splitlines()
    return ((run / "best_theta.npy").read_bytes(), [{k: v for k, v in h.items() if k != "secs"} for h in hist],
            [{k: v for k, v in json.loads(t).items() if k != "time"} for t in traces])


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    run = tmp_path_factory.mktemp("w1") / "run"
    assert start_run(_cfg(), run_dir=run).status == "finished"
    return _results(run)


def test_workers_2_equals_workers_1_bit_for_bit(ray_local, single, tmp_path):
    res = start_run(_cfg(workers=2), run_dir=tmp_path / "run")
    assert res.status == "finished", res.message
    assert _results(tmp_path / "run") == single
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["config"]["workers"] == 2  # recorded, and not part of the config hash
    assert meta["config_hash"] == _cfg(competition=meta["competition"]).hash()  # as resolved by start_run


def test_worker_killed_mid_generation_is_recovered(ray_local, single, tmp_path, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "2:1")  # worker 1's process exits on its first chunk of generation 2
    res = start_run(_cfg(workers=2), run_dir=tmp_path / "run")
    assert res.status == "finished", res.message
    assert _results(tmp_path / "run") == single  # the generation was evaluated again, same numbers
    logs = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    lost = [e for e in logs if e["type"] == "log" and "lost" in e.get("message", "")]
    assert len(lost) == 1 and lost[0]["level"] == "warning" and "generation 2" in lost[0]["message"]

