"""Pipelined sessions (trinity.session.pipeline): a session moves on as soon as its own call
returns, and a generation gives the barrier schedule's trajectories, rewards and ledger totals."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from trinity.benchmarks.practice import practice_questions
from trinity.data.questions import Question
from trinity.model import ROLES
from trinity.pool.client import ChatResult
from trinity.practice.server import lognormal_ms
from trinity.session.loop import SessionRunner, SessionSpec

RIGHT = "The final answer is $\\boxed{391}$."


class GatedClient:
    """Replies at once, except the first call of session `slow_qid`, which waits on `gate`."""

    def __init__(self, slow_qid: str):
        self.slow_qid = slow_qid
        self.gate = asyncio.Event()
        self.log: list[str] = []

    async def chat(self, model, messages, purpose="train", journal_key=None, **_):
        if f"/{self.slow_qid}/t1/" in journal_key:
            await self.gate.wait()
        self.log.append(journal_key)
        return ChatResult(
            text=RIGHT, ok=True, error=None, status=200, prompt_tokens=5, completion_tokens=5, cost_usd=0.0, model=model
        )


class WorkerLogits:
    """A stateful logits function (as `ShardedLogits`): always Worker on model 0; records calls."""

    def __init__(self):
        self.calls: list[list[int]] = []
        self.ended: list[int] = []

    def __call__(self, texts, cands, streams):
        self.calls.append(list(streams))
        row = np.zeros(3 + 3)
        row[0] = 5.0
        row[3 + ROLES.index("Worker")] = 5.0
        return np.tile(row, (len(texts), 1))

    def end_streams(self, streams):
        self.ended.extend(streams)


def test_a_slow_call_holds_up_only_its_own_session():
    qs = [Question(f"q{i}", "practice", "What is 17 \\times 23?", "391", "math") for i in range(3)]
    client = GatedClient("q1")
    fn = WorkerLogits()
    spec = SessionSpec(["m0", "m1", "m2"], key_prefix="g0", max_turns=3, schedule="pipelined", batch_wait_s=0.0)
    runner = SessionRunner(client, fn, spec)

    async def main():
        task = asyncio.ensure_future(runner.run([(0, q) for q in qs]))
        for _ in range(200):  # let the fast sessions play out while q1's first call hangs
            await asyncio.sleep(0)
        fast_done = [k for k in client.log if "/q1/" not in k]
        client.gate.set()
        return fast_done, await task

    fast_done, trajs = asyncio.run(main())
    # q0 and q2 finished all three turns before q1's first call came back
    assert sorted(fast_done) == sorted(f"g0/c0/{q}/t{t}/m0/Worker" for q in ("q0", "q2") for t in (1, 2, 3))
    assert all(len(t.turns) == 3 and t.correct for t in trajs)
    assert sorted(fn.ended) == [0, 1, 2]  # every stream was ended once
    assert any(1 not in c for c in fn.calls[1:])  # batches without the slow session


def test_a_logits_function_without_end_streams_keeps_the_barrier():
    qs = [Question(f"q{i}", "practice", "What is 17 \\times 23?", "391", "math") for i in range(2)]
    client = GatedClient("none")
    calls: list[list[int]] = []

    def fn(texts, cands, streams):
        calls.append(list(streams))
        return WorkerLogits()(texts, cands, streams)

    spec = SessionSpec(["m0", "m1", "m2"], key_prefix="g0", max_turns=2, schedule="pipelined")
    asyncio.run(SessionRunner(client, fn, spec).run([(0, q) for q in qs]))
    assert calls == [[0, 1], [0, 1]]  # one batch per turn step, every session in it


def test_lognormal_latency_has_the_asked_median_and_p99():
    us = (np.arange(20000) + 0.5) / 20000
    xs = np.array([lognormal_ms(2000, 12000, u) for u in us])
    assert np.median(xs) == pytest.approx(2000, rel=0.01)
    assert np.percentile(xs, 99) == pytest.approx(12000, rel=0.02)
    assert lognormal_ms(50, 10, 0.9) == 50  # no tail asked: the median


def _generation(schedule: str, base_url: str, tmp_path, router, thetas, questions):
    from trinity.pool.providers import load_pool
    from trinity.session.live import LiveRun
    from trinity.session.shards import ShardedLogits, shards_of_pairs

    pool = load_pool("practice", base_url=base_url, max_concurrency=64)
    pairs = [(c, q) for c in range(thetas.shape[0]) for q in questions]
    shard_of, n = shards_of_pairs(pairs)
    d = tmp_path / schedule
    d.mkdir()
    with LiveRun(
        pool,
        run_id=schedule,
        ledger_path=d / "ledger.jsonl",
        journal_path=d / "journal.jsonl",
        cache=False,
        budget="none",
    ) as live:
        spec = SessionSpec(
            list(pool.models), key_prefix="g0", policy="sample", seed=3, schedule=schedule, batch_wait_s=0.001
        )
        runner = SessionRunner(live.client, ShardedLogits(router, thetas, shard_of, n), spec)
        trajs = live.run(runner.run(pairs))
        return trajs, live.ledger.total_usd, live.ledger.n_records, getattr(runner, "pipeline_stats", None)


def test_pipelined_gives_the_barrier_results_on_a_fixed_seed(tmp_path):
    """Against the practice server over loopback with a heavy-tailed latency: every session's
    turns (model, role, output), correctness and the ledger's totals are the barrier's."""
    import torch

    from trinity.model.encoder import load_encoder
    from trinity.model.router import Router
    from trinity.practice.server import start_practice_server

    torch.set_num_threads(1)
    router = Router(load_encoder("tiny-qwen3", device="cpu"), 3)
    rng = np.random.RandomState(0)
    thetas = router.initial_mean()[None, :] + 0.3 * rng.randn(3, router.n_params)
    questions = [q for q in practice_questions() if q.kind in ("math", "mc")][:4]
    with start_practice_server(latency_ms=5) as server:
        server.server.latency_p99_ms = 60
        b, b_usd, b_n, _ = _generation("barrier", server.base_url, tmp_path, router, thetas, questions)
        p, p_usd, p_n, stats = _generation("pipelined", server.base_url, tmp_path, router, thetas, questions)
    assert stats is not None and stats["batches"] >= max(len(t.turns) for t in p)
    for x, y in zip(b, p):
        assert [(t.model, t.role, t.output) for t in x.turns] == [(t.model, t.role, t.output) for t in y.turns]
        assert x.correct == y.correct
    assert len({len(t.turns) for t in b}) > 1  # sessions of different lengths: the schedules differ
    assert (b_usd, b_n) == (p_usd, p_n) and b_n == sum(len(t.turns) for t in b)
