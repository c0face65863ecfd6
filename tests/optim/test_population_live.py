"""`trinity train --mode live --workers N`: the sessions' encoder work on Ray actors, the pool
stack (client, ledger, journal, cache, budget) in the driver. Against a practice server this
test starts (loopback HTTP), whose request counts are the ground truth of what was paid."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from trinity.benchmarks.practice import practice_questions
from trinity.config import load_config
from trinity.io import read_jsonl
from trinity.optim.engine import start_run
from trinity.optim.population import FAULT_ENV
from trinity.pool.ledger import verify_ledger
from trinity.practice.server import start_practice_server
from trinity.session.shards import LIVE_SHARDS, shards_of_pairs

ray = pytest.importorskip("ray", reason="the [ray] extra (pip install -e '.[ray]') runs these tests")
# one xdist worker runs every Ray module (pyproject: --dist loadgroup): one Ray instance at a time,
# and a module fixture (the in-process reference run) computed once, not once per worker
pytestmark = [pytest.mark.usefixtures("torch_one_thread"), pytest.mark.xdist_group("ray")]


@pytest.fixture(scope="module")
def server():
    h = start_practice_server(port=0)
    yield h
    h.stop()


@pytest.fixture(scope="module")
def questions_file(tmp_path_factory):
    """Math + multiple choice only: graded in-process, fast on 2 cores."""
    p = tmp_path_factory.mktemp("q") / "mathmc.jsonl"
    p.write_text("".join(json.dumps(q.to_json()) + "\n" for q in practice_questions() if q.kind != "code"))
    return p


def _cfg(server, questions_file, cache: Path, **over):
    # its own response cache per run: the server then sees every call a run pays for
    return load_config(
        None,
        {
            "mode": "live",
            "pool": "practice",
            "questions": str(questions_file),
            "encoder": "tiny-qwen3",
            "generations": 2,
            "popsize": 4,
            "m": 4,
            "max_turns": 3,
            "seed": 1,
            "warm_start": "none",
            # one evaluation per generation (a race runs one per stage): the recovery arithmetic below
            "live_recipe": "plain",
            "traces": "all",
            "base_url": server.base_url,
            "cache_path": str(cache / "responses.sqlite"),
            **over,
        },
    )


def _results(run: Path):
    hist = json.loads((run / "history.json").read_text())
    drop = ("secs", "time")
    traces = [{k: v for k, v in t.items() if k not in drop} for t in read_jsonl(run / "traces.jsonl")]
    paid = sorted(
        (r["model"], r["prompt_tokens"], r["completion_tokens"], r["cost_micro_usd"])
        for r in read_jsonl(run / "ledger.jsonl")
    )
    return (
        (run / "best_theta.npy").read_bytes(),
        [{k: v for k, v in h.items() if k not in drop} for h in hist],
        sorted(traces, key=lambda t: (t["gen"], t["candidate"], t["qid"])),
        paid,
    )


def _served(server, before) -> int:
    return server.stats.completions - before.completions


@pytest.fixture(scope="module")
def single(server, questions_file, tmp_path_factory):
    """The in-process run (`--workers 1`): results and the completions the server served for it."""
    tmp = tmp_path_factory.mktemp("w1")
    before = server.stats
    res = start_run(_cfg(server, questions_file, tmp), run_dir=tmp / "run")
    assert res.status == "finished", res.message
    return _results(tmp / "run"), _served(server, before)


def test_shards_cut_by_question_in_blocks():
    qs = [q for q in practice_questions() if q.kind != "code"][:6]
    pairs = [(c, q) for c in range(3) for q in qs]
    shard_of, n = shards_of_pairs(pairs)
    assert n == LIVE_SHARDS
    by_q = {q.id: {s for (_, qq), s in zip(pairs, shard_of) if qq.id == q.id} for q in qs}
    assert all(len(s) == 1 for s in by_q.values())  # every session of a question in one shard
    assert [next(iter(by_q[q.id])) for q in qs] == sorted(next(iter(by_q[q.id])) for q in qs)  # blocks, in order
    assert shards_of_pairs(pairs, workers=8)[1] == 6  # one per worker, never more than the questions


def test_actor_path_gives_the_in_process_bits():
    """The driver's cut (shards by question, shard s on actor s % N) and the actors' encoders
    (`LiveWorker`, plain Python here) give the in-process `ShardedLogits` bits over growing
    transcripts, for 1 and 2 actors."""
    from trinity.competition.text import router_text
    from trinity.optim.fitness import build_router
    from trinity.optim.livepopulation import LiveWorker, actor_parts, assemble
    from trinity.session.shards import ShardedLogits

    cfg = load_config(None, {"encoder": "tiny-qwen3", "device": "cpu"})
    router = build_router(cfg, 3)
    qs = [q for q in practice_questions() if q.kind != "code"][:5]
    P = 3
    pairs = [(c, q) for c in range(P) for q in qs]
    thetas = router.initial_mean()[None] + 0.1 * np.random.default_rng(0).standard_normal((P, router.n_params))
    rt = router_text("tinyrouter")
    queries = [rt.render_question(q) for _, q in pairs]
    shard_of, n = shards_of_pairs(pairs)
    workers = [LiveWorker(cfg.resolved(), 3, None) for _ in range(2)]

    def steps():  # turn steps: transcripts grow; some sessions end after turn 1
        for t in range(3):
            active = [i for i in range(len(pairs)) if t == 0 or i % 4 != 1]
            turns = {
                i: [(f"model-{(pairs[i][0] + k) % 2}", "Worker", f"step {k} of {pairs[i][1].id}") for k in range(t)]
                for i in active
            }
            yield (
                [rt.encoder_input(queries[i], turns[i]) for i in active],
                np.array([pairs[i][0] for i in active]),
                active,
            )

    local = ShardedLogits(router, thetas, shard_of, n)
    want = [local(*step) for step in steps()]
    for n_actors in (1, 2):
        for w in workers[:n_actors]:
            w.begin(f"k{n_actors}", thetas, n)
        for step, ref in zip(steps(), want):
            split = actor_parts(shard_of, *step, n_actors)
            res = [workers[a].logits(f"k{n_actors}", parts)[0] for a, (parts, _) in enumerate(split)]
            assert np.array_equal(assemble(len(step[0]), [w for _, w in split], res), ref), n_actors


def test_live_workers_2_equal_workers_1_and_a_lost_worker_pays_nothing_twice(
    ray_local, server, questions_file, single, tmp_path, monkeypatch
):
    """Worker 1 is killed in generation 1, which is then evaluated again from its first turn on
    two workers (fresh encoder states); generation 2 runs on two workers undisturbed. Equal to the
    in-process run in θ, history, every session and every call: `--workers 2` == `--workers 1`."""
    monkeypatch.setenv(FAULT_ENV, "1:1")  # worker 1 exits at its second turn step of generation 1
    before = server.stats
    res = start_run(_cfg(server, questions_file, tmp_path, workers=2), run_dir=tmp_path / "run")
    assert res.status == "finished", res.message
    ref, served_ref = single
    got = _results(tmp_path / "run")
    assert got[0] == ref[0] and got[1] == ref[1] and got[2] == ref[2]  # θ, history, every session
    assert got[3] == ref[3] and len(got[3]) > 0  # the same calls at the same cost
    # no call went to the server twice: between two turn steps none is in flight
    assert _served(server, before) == served_ref == len(ref[3])
    assert verify_ledger(tmp_path / "run" / "ledger.jsonl").ok
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["config"]["workers"] == 2 and meta["mode"] == "live"
    logs = [e for e in read_jsonl(tmp_path / "run" / "events.jsonl") if e["type"] == "log"]
    lost = [e for e in logs if e["level"] == "warning" and "lost" in e.get("message", "")]
    assert len(lost) == 1 and "generation 1: Ray worker(s) [1] lost" in lost[0]["message"]
    again = [e["message"] for e in logs if "evaluated again:" in e.get("message", "")]
    assert len(again) == 1, again
    m = re.search(r"(\d+) call\(s\) replayed .* (\d+) paid \(the lost attempt had paid (\d+)\)", again[0])
    assert m, again[0]
    replayed, paid_after, paid_before = (int(x) for x in m.groups())
    gen1_calls = json.loads((tmp_path / "run" / "history.json").read_text())[0]["calls"]
    assert 0 < paid_before <= replayed and paid_before + paid_after == gen1_calls  # each call paid once


@pytest.mark.slow  # end to end: a sweep trial (a Ray task) whose run holds two actors
def test_live_trial_with_workers_in_a_sweep_keeps_the_sweep_budget(ray_local, server, questions_file, tmp_path):
    """A sweep trial (a Ray task) whose live run spreads its sessions over 2 actors: its pool
    client still reserves from the sweep's one budget holder (counted at the server)."""
    import yaml

    from trinity.sweep.runner import new_sweep, run_sweep

    cap = 0.007  # the priciest model's worst case (max_tokens of output) is ~$0.005 a call
    spec = tmp_path / "live.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "config": {
                    "mode": "live",
                    "pool": "practice",
                    "base_url": server.base_url,
                    "questions": str(questions_file),
                    "encoder": "tiny-qwen3",
                    "generations": 6,
                    "popsize": 4,
                    "m": 4,
                    "max_turns": 2,
                    "concurrency": 4,
                    "workers": 2,
                    "traces": "none",
                    "cache_path": str(tmp_path / "c.sqlite"),
                    "live_recipe": "plain",  # every candidate on every question: the cap is reached in 6 generations
                }
            }
        ),
        encoding="utf-8",
    )
    before = server.stats.billed_usd
    sd = new_sweep(spec, tmp_path / "sweep", budget_usd=cap)
    doc = run_sweep(sd.path, timeout_s=240)
    billed = server.stats.billed_usd - before
    assert 0 < billed <= cap, (billed, cap)
    (trial,) = doc["trials"]
    assert trial["state"] == "stopped" and "sweep budget" in trial.get("message", ""), trial
    logs = [e["message"] for e in read_jsonl(sd.path / trial["dir"] / "events.jsonl") if e["type"] == "log"]
    assert any("2 Ray workers" in m and "stay in this process" in m for m in logs)
    ledger = verify_ledger(sd.path / trial["dir"] / "ledger.jsonl")
    # the ledger keeps whole micro-dollars per call, the server sums floats: up to half a
    # micro-dollar apart per call (44 calls came to 1.1e-6 apart once)
    assert abs(ledger.total_micro_usd / 1e6 - billed) <= ledger.n_records * 0.5e-6 + 1e-9


def test_more_workers_than_the_cluster_holds_is_one_clear_line(ray_local, server, questions_file, tmp_path):
    from trinity.errors import ConfigError

    with pytest.raises(ConfigError) as e:  # 3 actors of 1 CPU on a 2-CPU instance would wait forever
        start_run(_cfg(server, questions_file, tmp_path, workers=3), run_dir=tmp_path / "run")
    assert "--workers 3 needs 3 CPUs" in str(e.value) and "\n" not in str(e.value)


def test_live_workers_without_ray_one_line_names_the_extra(server, questions_file, tmp_path, monkeypatch):
    import sys

    from trinity.errors import ConfigError

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    with pytest.raises(ConfigError, match=r'pip install -e "\.\[ray\]"') as e:
        start_run(_cfg(server, questions_file, tmp_path, workers=2), run_dir=tmp_path / "run")
    assert "\n" not in str(e.value)
    assert not (tmp_path / "run").exists()  # checked before the run dir is created
