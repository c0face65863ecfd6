"""`trinity train --workers N`: a generation's candidates over Ray actors (local Ray with 2
logical CPUs, one per worker; one torch thread in the driver and each actor)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from trinity.config import load_config
from trinity.optim.engine import start_run
from trinity.optim.population import FAULT_ENV

ray = pytest.importorskip("ray", reason="the [ray] extra (pip install -e '.[ray]') runs these tests")
# one xdist worker runs every Ray module (pyproject: --dist loadgroup): one Ray instance at a time,
# and a module fixture (the in-process reference run) computed once, not once per worker
pytestmark = [pytest.mark.usefixtures("torch_one_thread"), pytest.mark.xdist_group("ray")]
ROOT = Path(__file__).resolve().parents[2]
PRACTICE = ROOT / "configs" / "practice.yaml"


def _cfg(**over):
    # max_batch_tokens 256: the practice questions' warm-up makes 12 layer-input batches (not one),
    # so each worker holds a real share and a generation's questions fall into several groups;
    # MiniRouter's router text (no marker, not the default): the workers encode the run's text
    return load_config(
        PRACTICE,
        {
            "encoder": "tiny-qwen3",
            "generations": 2,  # generation 2 starts from generation 1's update; the fault test kills in it
            "popsize": 8,
            "m": 16,
            "traces": "best",
            "max_batch_tokens": 256,
            "competition": "minirouter",
            **over,
        },
    )


def _results(run: Path):
    hist = json.loads((run / "history.json").read_text())
    traces = (run / "traces.jsonl").read_text().splitlines()
    return (
        (run / "best_theta.npy").read_bytes(),
        [{k: v for k, v in h.items() if k != "secs"} for h in hist],
        [{k: v for k, v in json.loads(t).items() if k != "time"} for t in traces],
    )


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
    resolved = {"competition": meta["competition"], "protocol": meta["config"]["protocol"]}
    assert meta["config_hash"] == _cfg(**resolved).hash()  # as resolved by start_run


@pytest.mark.slow  # end to end: a worker process killed and replaced mid-run
def test_worker_killed_mid_generation_is_recovered(ray_local, single, tmp_path, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "2:1")  # worker 1's process exits on its first chunk of generation 2
    res = start_run(_cfg(workers=2), run_dir=tmp_path / "run")
    assert res.status == "finished", res.message
    assert _results(tmp_path / "run") == single  # the generation was evaluated again, same numbers
    logs = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    lost = [e for e in logs if e["type"] == "log" and "lost" in e.get("message", "")]
    assert len(lost) == 1 and lost[0]["level"] == "warning" and "generation 2" in lost[0]["message"]
    # the replacement re-encoded worker 1's share only: what the ready line says worker 1 holds
    ready = next(e["message"] for e in logs if e["type"] == "log" and "their shares" in e.get("message", ""))
    total, *shares = map(int, re.search(r"of (\d+) train\+val texts: (\d+) \([^)]*\), (\d+) \(", ready).groups())
    assert sum(shares) == int(total) and 0 < shares[1] < int(total)
    assert f"their share ({shares[1]} texts)" in lost[0]["message"]


def test_each_worker_holds_its_share_and_the_logits_equal_one_process(ray_local):
    """Shares: every train+val text cached by exactly one worker (one copy in all); the
    generation's logits (chunk by chunk) and the validation's equal one process's bit for bit."""
    import numpy as np

    from trinity.optim.fitness import CachedFitness, GenerationHooks, build_router
    from trinity.optim.population import PopulationFitness
    from trinity.optim.runinputs import inputs_from_config

    cfg = _cfg(workers=2)
    inputs = inputs_from_config(cfg)
    models = list(inputs.matrix.models)
    router = build_router(cfg, len(models))
    one = CachedFitness(router, inputs.matrix, models, traces="none")  # the default text here
    by_id = {q.id: q for q in inputs.questions}
    qs = [by_id[i] for i in inputs.splits["train"] + inputs.splits["val"]]
    one.warm_up(qs, lambda *a: None)
    texts = one.texts(qs)
    fit = PopulationFitness(cfg, None, router, inputs.matrix, models, texts)
    try:
        stats = fit.cache_stats()
        assert sum(s["entries"] for s in stats) == len(set(texts)) == len(router.cache)
        assert all(0 < s["entries"] < len(set(texts)) for s in stats)
        assert sum(s["bytes"] for s in stats) == router.cache.bytes  # one copy in all, not one per worker
        rng = np.random.RandomState(0)
        thetas = router.initial_mean()[None] + 0.05 * rng.randn(8, router.n_params)
        batch = texts[:16]
        seen: list[tuple[int, int]] = []
        hooks = GenerationHooks(
            progress=lambda d, t: seen.append((d, t)), choices=lambda *a: None, trace=lambda r: None
        )
        ref = one.population_logits(thetas, batch, GenerationHooks(lambda d, t: None, lambda *a: None, lambda r: None))
        assert np.array_equal(fit.population_logits(thetas, batch, hooks), ref)
        assert seen == [(b * 16, 8 * 16) for b in fit.chunk_bounds(8)[1:]]  # whole chunks, in order
        val = texts[-12:]
        assert np.array_equal(
            fit.population_logits_one(thetas[:3], val),
            np.asarray(router.population_logits(thetas[:3], val), dtype=np.float64),
        )
    finally:
        fit.close()


def test_more_cached_workers_than_the_cluster_holds_is_one_clear_line(ray_local, tmp_path):
    from trinity.errors import ConfigError

    # 3 actors of 1 CPU each on the 2-CPU instance would wait for a CPU that never comes
    with pytest.raises(ConfigError) as e:
        start_run(_cfg(workers=3), run_dir=tmp_path / "run")
    assert "--workers 3 needs 3 CPUs" in str(e.value) and "\n" not in str(e.value)
