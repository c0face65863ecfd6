"""Encoder batching across concurrent sessions, pinned without timing: what is queued when the
worker wakes is one encoder call; the stream-keeping encoder keeps a waiting session's state."""

import asyncio
import time

import numpy as np
import pytest

from trinity.serve.batcher import EncoderBatcher, StreamKeepingEncoder


class Recorder:
    def __init__(self, fail: bool = False):
        self.calls: list[tuple[list[str], list]] = []
        self.fail = fail

    def __call__(self, texts, cands, streams):
        self.calls.append((list(texts), list(streams)))
        if self.fail:
            raise RuntimeError("encoder broke")
        assert list(cands) == [0] * len(texts)
        return np.array([[float(len(t)), float(i)] for i, t in enumerate(texts)])


def test_what_is_queued_is_one_encoder_call():
    async def go():
        rec = Recorder()
        b = EncoderBatcher(rec, run_in_thread=False)
        asks = [asyncio.ensure_future(b.logits("x" * (k + 1), f"s{k}")) for k in range(5)]
        await asyncio.sleep(0)  # every ask is queued; the worker task has not run yet
        assert len(b._queue) == 5 and rec.calls == []
        rows = await asyncio.gather(*asks)
        await b.stop()
        return rec, b, rows

    rec, b, rows = asyncio.run(go())
    assert len(rec.calls) == 1 and rec.calls[0][1] == [f"s{k}" for k in range(5)]
    assert [r[0] for r in rows] == [1.0, 2.0, 3.0, 4.0, 5.0]  # each caller gets its own row
    assert b.stats.sizes == [5] and b.stats.calls == 1
    assert len(b.stats.waits) == 5 and min(b.stats.waits) >= 0  # each text's wait for its call
    assert len(b.stats.cpu_seconds) == 1 and b.stats.cpu_seconds[0] >= 0


def test_logits_at_says_when_the_row_was_handed_over():
    async def go():
        b = EncoderBatcher(Recorder(), run_in_thread=False)
        t0 = time.perf_counter()
        row, done_at = await b.logits_at("abc", "s")
        t1 = time.perf_counter()
        await b.stop()
        return row, t0, done_at, t1

    row, t0, done_at, t1 = asyncio.run(go())
    assert row[0] == 3.0 and t0 <= done_at <= t1


def test_a_second_ask_of_a_stream_waits_for_the_next_batch_and_max_batch_splits():
    async def go():
        rec = Recorder()
        b = EncoderBatcher(rec, run_in_thread=False, max_batch=3)
        b._wake = asyncio.Event()  # queue by hand: run_once is driven below, no worker task
        loop = asyncio.get_running_loop()
        futs = []
        for text, stream in [("a", 1), ("b", 1), ("c", 2), ("d", 3), ("e", 4)]:
            from trinity.serve.batcher import _Ask

            f = loop.create_future()
            b._queue.append(_Ask(text, stream, f))
            futs.append(f)
        sizes = []
        while (n := await b.run_once()) > 0:
            sizes.append(n)
        return rec, sizes, [f.result()[0] for f in futs]

    rec, sizes, firsts = asyncio.run(go())
    assert sizes == [3, 2]
    assert rec.calls[0][1] == [1, 2, 3] and rec.calls[1][1] == [1, 4]
    assert firsts == [1.0] * 5


def test_an_encoder_error_reaches_every_caller_of_the_batch_and_the_worker_goes_on():
    async def go():
        rec = Recorder(fail=True)
        b = EncoderBatcher(rec, run_in_thread=False)
        asks = [asyncio.ensure_future(b.logits("q", k)) for k in range(3)]
        out = await asyncio.gather(*asks, return_exceptions=True)
        rec.fail = False
        again = await b.logits("q", 9)
        await b.stop()
        return out, again

    out, again = asyncio.run(go())
    assert all(isinstance(e, RuntimeError) and "encoder broke" in str(e) for e in out)
    assert again[0] == 1.0


@pytest.fixture(scope="module")
def router():
    from trinity.model.encoder import load_encoder
    from trinity.model.router import Router

    return Router(load_encoder("tiny-qwen3", device="cpu", dtype="float32", seed=0), n_models=3)


def test_stream_keeping_encoder_keeps_a_waiting_stream_and_matches_the_reference(router):
    rng = np.random.default_rng(0)
    theta = rng.normal(0, 0.1, router.n_params)
    enc = StreamKeepingEncoder(router, theta[None, :])
    a1, b1 = "QUERY:\nWhat is 2+2?\n<Head Input>", "QUERY:\nName a prime.\n<Head Input>"
    a2 = "QUERY:\nWhat is 2+2?\n\n[Turn 1 | worker | m]\n4\n<Head Input>"
    enc.logits([a1, b1], [0, 0], ["A", "B"])
    enc.logits([b1 + " more"], [0], ["B"])  # A waits for its pool call: not in this batch
    assert "A" in enc.streams  # the base encoder would have dropped it
    read = enc.tokens_read
    got = enc.logits([a2], [0], ["A"])
    ids_a1 = len(router.token_ids([a1])[0]) - 1
    ids_a2 = len(router.token_ids([a2])[0]) - 1
    assert enc.tokens_read - read < ids_a2 and ids_a1 > 0  # A's turn 2 read only its new tokens
    np.testing.assert_allclose(got, router.reference_logits(theta, [a2]), atol=1e-5)
    enc.end("A")
    assert "A" not in enc.streams and "A" not in enc.live


def test_a_batch_routes_like_each_session_alone(router):
    """A burst of sessions of very different lengths in one encoder call (its attention split in
    parts, layer L merged under the served θ) gives every session the logits, probabilities and
    (model, role) it gets alone, turn after turn."""
    from trinity.model import policy

    rng = np.random.default_rng(1)
    theta = rng.normal(0, 0.1, router.n_params)
    n = 20
    questions = [f"QUERY:\nQuestion {i}: " + "add the numbers 3 and 4 then " * (1 + (i * 7) % 11) for i in range(n)]
    worker = [f"\n\n[Turn 1 | worker | m]\nThe sum is {i}." + " Checked." * (i % 5) for i in range(n)]
    turns = [[q + "\n<Head Input>" for q in questions], [q + w + "\n<Head Input>" for q, w in zip(questions, worker)]]

    batched = StreamKeepingEncoder(router, theta[None, :])
    parts: list[int] = []
    attend = batched._attend

    def spy(q, k, v, pasts, plan):
        parts.append(len(plan.parts))
        return attend(q, k, v, pasts, plan)

    batched._attend = spy
    alone = StreamKeepingEncoder(router, theta[None, :])
    for texts in turns:
        got = batched.logits(texts, np.zeros(n, dtype=np.int64), list(range(n)))
        want = np.concatenate([alone.logits([t], [0], [i]) for i, t in enumerate(texts)])
        np.testing.assert_allclose(got, want, atol=1e-5)
        for a, b in zip(policy.group_probs(got, 3), policy.group_probs(want, 3)):
            np.testing.assert_allclose(a, b, atol=1e-5)
        for a, b in zip(policy.choose(got, 3), policy.choose(want, 3)):
            assert (a == b).all()
    assert max(parts) > 1  # the burst's attention did run in parts
    np.testing.assert_allclose(got[:3], router.reference_logits(theta, turns[1][:3]), atol=1e-5)
