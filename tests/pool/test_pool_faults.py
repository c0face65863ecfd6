"""The fault policy and the budget, over real loopback HTTP against the practice server."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from pool_helpers import FAST_RETRY, Faults, messages, practice_pool, questions, server  # noqa: F401

from trinity.errors import BudgetExceeded, OutOfCredit, ProviderError
from trinity.pool.budget import Budget
from trinity.pool.client import PoolClient
from trinity.pool.faults import RetryPolicy, http_date, parse_retry_after
from trinity.pool.ledger import Ledger, verify_ledger
from trinity.pool.providers import Timeouts

MATH = questions("math")


async def _run(pool, calls, *, ledger=None, budget=None, seed=0):
    async with PoolClient(pool, run_id="r1", ledger=ledger, budget=budget, seed=seed) as c:
        results = await asyncio.gather(*(c.chat(m, msgs, purpose="train") for m, msgs in calls), return_exceptions=True)
        return c, results


def _calls(pool, n):
    return [(pool.models[i % 3], messages(MATH[i % len(MATH)])) for i in range(n)]


def test_parse_retry_after_forms():
    now = 1_700_000_000.0
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.5") == 0.5
    assert abs(parse_retry_after(http_date(now + 7), now=now) - 7) < 1.0
    assert parse_retry_after(http_date(now - 100), now=now) == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


async def test_429_retry_after_is_honoured_and_cools_the_whole_pool(server, tmp_path):
    server.set_faults(Faults(rate_429=0.3, retry_after_s=0.2))
    pool = practice_pool(server.base_url, retry=RetryPolicy(8, 0.01, 0.05, 2.0))
    ledger = Ledger(tmp_path / "ledger.jsonl", "r1")
    t0 = time.perf_counter()
    c, results = await _run(pool, _calls(pool, 40), ledger=ledger)
    elapsed = time.perf_counter() - t0
    ledger.close()
    st = server.stats
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    assert st.by_status[429] == c.stats.n_429 > 0
    assert st.by_status[200] == 40 == c.stats.calls
    # Each 429 said "wait 0.2 s" and the whole pool waited: the run cannot be faster than that.
    assert elapsed >= 0.2 and c.stats.cooldown_s >= 0.2
    assert sum(r.attempts for r in results) == st.requests
    rep = verify_ledger(tmp_path / "ledger.jsonl")
    assert rep.ok and rep.n_records == 40  # a 429 is never billed
    assert rep.total_micro_usd == c.stats.cost_micro_usd > 0


async def test_429_with_http_date_and_without_header(server):
    server.set_faults(Faults(rate_429=0.5, retry_after_s=1, retry_after_as_date=True))
    pool = practice_pool(server.base_url, retry=RetryPolicy(10, 0.01, 0.05, 1.5))
    c, results = await _run(pool, _calls(pool, 6))
    assert all(r.ok for r in results) and c.stats.n_429 > 0
    server.set_faults(Faults(rate_429=0.5, retry_after_s=None))  # no header: own backoff
    c, results = await _run(pool, _calls(pool, 10))
    assert all(r.ok for r in results) and c.stats.n_429 > 0 and c.stats.cooldown_s < 1.0


async def test_500s_get_bounded_retries_then_a_failed_result(server, tmp_path):
    server.set_faults(Faults(rate_500=1.0))
    pool = practice_pool(server.base_url)
    ledger = Ledger(tmp_path / "ledger.jsonl", "r1")
    c, results = await _run(pool, _calls(pool, 5), ledger=ledger)
    ledger.close()
    assert [r.ok for r in results] == [False] * 5
    assert all(r.status == 500 and r.attempts == FAST_RETRY.max_retries + 1 for r in results)
    assert all("HTTP 500" in r.error and "simulated/" in r.error for r in results)
    assert server.stats.by_status[500] == 5 * (FAST_RETRY.max_retries + 1)
    assert c.stats.retries == 5 * FAST_RETRY.max_retries and c.stats.calls == 0
    assert verify_ledger(tmp_path / "ledger.jsonl").n_records == 0  # nothing billed


async def test_some_500s_are_recovered_by_retries(server):
    server.set_faults(Faults(rate_500=0.3))
    pool = practice_pool(server.base_url, retry=RetryPolicy(10, 0.005, 0.02, 1))
    c, results = await _run(pool, _calls(pool, 30))
    assert all(r.ok for r in results) and c.stats.n_5xx == server.stats.by_status[500] > 0


async def test_200_with_error_body_is_a_failed_but_billed_call(server, tmp_path):
    server.set_faults(Faults(rate_error_body=1.0))
    pool = practice_pool(server.base_url)
    ledger = Ledger(tmp_path / "ledger.jsonl", "r1")
    c, results = await _run(pool, _calls(pool, 4), ledger=ledger)
    ledger.close()
    assert all(not r.ok and r.status == 200 and "carrying an error" in r.error for r in results)
    assert all(r.attempts == 1 for r in results)  # not retried: it was billed
    assert all(r.prompt_tokens > 0 and r.completion_tokens == 0 and r.cost_usd > 0 for r in results)
    rep = verify_ledger(tmp_path / "ledger.jsonl")
    assert rep.ok and rep.n_records == 4
    assert rep.total_micro_usd == c.stats.cost_micro_usd
    assert c.stats.failed == 4 and c.stats.ok == 0


async def test_200_without_choices_is_a_failed_call_billed_as_reported(server, tmp_path):
    server.set_faults(Faults(rate_no_choices=1.0))
    pool = practice_pool(server.base_url)
    ledger = Ledger(tmp_path / "ledger.jsonl", "r1")
    c, results = await _run(pool, _calls(pool, 3), ledger=ledger)
    ledger.close()
    assert all(not r.ok and "without choices" in r.error and r.cost_source == "reported" for r in results)
    assert all(r.completion_tokens > 0 and r.attempts == 1 for r in results)
    rep = verify_ledger(tmp_path / "ledger.jsonl")
    assert rep.n_records == 3 and rep.total_micro_usd == c.stats.cost_micro_usd > 0
    assert server.stats.completions == 0


async def test_402_stops_the_run_with_out_of_credit(server, tmp_path):
    server.set_faults(Faults(credit_after=3))
    pool = practice_pool(server.base_url)
    ledger = Ledger(tmp_path / "ledger.jsonl", "r1")
    async with PoolClient(pool, run_id="r1", ledger=ledger) as c:
        done = [await c.chat(pool.models[0], messages(MATH[i]), purpose="train") for i in range(3)]
        with pytest.raises(OutOfCredit, match="402.*simulated/mathlete"):
            await c.chat(pool.models[0], messages(MATH[3]), purpose="train")
    ledger.close()
    assert all(r.ok for r in done)
    assert server.stats.by_status[402] == 1  # not retried
    rep = verify_ledger(tmp_path / "ledger.jsonl")
    assert rep.ok and rep.n_records == 3  # every completed generation is in the ledger


async def test_400_and_401_raise_provider_error_naming_provider_and_model(server, monkeypatch):
    pool = practice_pool(server.base_url)
    bad = [{"role": "user", "content": "QUERY:\nnot a practice question"}]
    async with PoolClient(pool, run_id="r1") as c:
        with pytest.raises(ProviderError, match=r"practice answered HTTP 400 for model simulated/scholar"):
            await c.chat("simulated/scholar", bad, purpose="eval")
    assert server.stats.by_status[400] == 1  # no retry
    server.server.api_key = "right-key"
    monkeypatch.setenv("PRACTICE_TEST_KEY", "wrong-key")
    keyed = practice_pool(server.base_url)
    from dataclasses import replace

    keyed = replace(keyed, key_env="PRACTICE_TEST_KEY")
    async with PoolClient(keyed, run_id="r1") as c:
        with pytest.raises(ProviderError, match=r"HTTP 401 for model simulated/coder") as ei:
            await c.chat("simulated/coder", messages(MATH[0]), purpose="eval")
    assert "wrong-key" not in str(ei.value)
    assert server.stats.by_status[401] == 1


async def test_timeouts_are_retried_then_fail(server):
    server.set_faults(Faults(rate_slow=1.0, slow_ms=400))
    pool = practice_pool(
        server.base_url, timeouts=Timeouts(connect_s=1, read_s=0.1, write_s=1), retry=RetryPolicy(2, 0.01, 0.02, 1)
    )
    c, results = await _run(pool, _calls(pool, 2))
    assert all(not r.ok and r.status == 0 and "ReadTimeout" in r.error and r.attempts == 3 for r in results)
    assert c.stats.timeouts == 6


async def test_connection_errors_are_retried_then_fail():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    pool = practice_pool(f"http://127.0.0.1:{port}/v1", retry=RetryPolicy(2, 0.01, 0.02, 1))
    c, results = await _run(pool, _calls(pool, 2))
    assert all(not r.ok and r.status == 0 and "ConnectError" in r.error for r in results)
    assert c.stats.timeouts == 6 and c.stats.retries == 4


async def test_budget_stops_before_the_cap_and_settles_to_actual_cost(server, tmp_path):
    pool = practice_pool(server.base_url)
    # Worst case of one call = max_tokens (4096) × $0.80/1M ≈ $0.0033 + prompt; a real reply costs
    # ~$0.00005, so a $0.01 cap allows many calls, sent one after another, until the reservation
    # of the next one would not fit.
    budget = Budget(0.01)
    ledger = Ledger(tmp_path / "ledger.jsonl", "r1")
    done = 0
    async with PoolClient(pool, run_id="r1", ledger=ledger, budget=budget) as c:
        with pytest.raises(BudgetExceeded, match=r"budget of \$0\.0100 reached"):
            for i in range(10_000):
                await c.chat(pool.models[0], messages(MATH[i % len(MATH)]), purpose="train", seed=i)
                done += 1
    ledger.close()
    rep = verify_ledger(tmp_path / "ledger.jsonl")
    assert rep.n_records == done == server.stats.completions > 10
    assert budget.reserved_micro == 0  # every reservation was settled
    assert budget.spent_micro == rep.total_micro_usd == c.stats.cost_micro_usd
    assert rep.total_micro_usd <= 10_000  # the cap was never passed
    worst = c._worst_case_usd(pool.models[0], messages(MATH[0]), pool.decoding)
    assert budget.spent_usd + worst > 0.01  # and it stopped only when the next call might pass it


async def test_budget_holds_under_concurrency(server, tmp_path):
    pool = practice_pool(server.base_url)
    # Room for one worst-case reservation at a time: 64 concurrent calls must queue behind the
    # calls in flight (not stop), and stop only when the cap itself is near.
    budget = Budget(0.006)
    async with PoolClient(pool, run_id="r1", budget=budget) as c:
        worst = c._worst_case_usd(pool.models[1], messages(MATH[0]), dict(pool.decoding))
        assert worst < 0.006 < 2 * worst
        results = await asyncio.gather(
            *(c.chat(pool.models[1], messages(MATH[i % 20]), purpose="train", seed=i) for i in range(64)),
            return_exceptions=True,
        )
    over = [r for r in results if isinstance(r, BudgetExceeded)]
    ok = [r for r in results if not isinstance(r, BaseException)]
    assert over and len(ok) > 1 and len(over) + len(ok) == 64
    assert server.stats.completions == len(ok)
    assert budget.spent_micro <= 6_000 and budget.reserved_micro == 0
    assert budget.spent_usd + worst > 0.006 - 0.0002  # it stopped near the cap, not because it was busy


async def test_busy_pool_waits_for_calls_in_flight_instead_of_stopping(server, tmp_path):
    pool = practice_pool(server.base_url)
    budget = Budget(0.02)  # 64 worst cases would not fit at once; their actual costs easily do
    async with PoolClient(pool, run_id="r1", budget=budget) as c:
        results = await asyncio.gather(
            *(c.chat(pool.models[1], messages(MATH[i % 20]), purpose="train", seed=i) for i in range(64)),
            return_exceptions=True,
        )
    assert not [r for r in results if isinstance(r, BaseException)]
    assert server.stats.completions == 64
    assert budget.spent_micro <= 20_000 and budget.reserved_micro == 0


async def test_after_a_402_no_further_paid_call_is_sent_but_free_answers_still_come(server, tmp_path):
    from trinity.pool.cache import ResponseCache

    pool = practice_pool(server.base_url)
    cache = ResponseCache(tmp_path / "c.sqlite")
    async with PoolClient(pool, run_id="r1", cache=cache) as c:
        first = await c.chat(pool.models[2], messages(MATH[0]), purpose="train")
        server.set_faults(Faults(credit_after=0))
        with pytest.raises(OutOfCredit):
            await c.chat(pool.models[2], messages(MATH[1]), purpose="train")
        with pytest.raises(OutOfCredit):
            await c.chat(pool.models[0], messages(MATH[2]), purpose="train")
        again = await c.chat(pool.models[2], messages(MATH[0]), purpose="train")  # cached: free
    assert server.stats.by_status[402] == 1 and again.cache_hit and again.text == first.text


async def test_reservations_follow_reported_costs_when_the_price_table_is_stale(server):
    from dataclasses import replace

    from trinity.pool.providers import Price

    real = practice_pool(server.base_url)
    stale = replace(real, prices={m: Price(p.input_per_1m / 10, p.output_per_1m / 10) for m, p in real.prices.items()})
    async with PoolClient(stale, run_id="r1", budget=Budget(1.0)) as c:
        m = stale.models[0]
        before = c._worst_case_usd(m, messages(MATH[0]), stale.decoding)
        r = await c.chat(m, messages(MATH[0]), purpose="train")
        after = c._worst_case_usd(m, messages(MATH[0]), stale.decoding)
    table = stale.price(m).cost_usd(r.prompt_tokens, r.completion_tokens)
    assert r.cost_source == "reported" and abs(r.cost_usd / table - 10) < 0.5
    assert abs(after / before - r.cost_usd / table) < 1e-9  # the reservation grew with the real price


async def test_request_bodies_follow_each_providers_conventions(server, monkeypatch):
    """The practice server stands in for OpenRouter and for a local vLLM/llama.cpp server here:
    what matters is the body the client sends."""
    from trinity.pool.providers import load_pool

    ids = ["simulated/mathlete"]
    cases = [
        (
            load_pool("openrouter", base_url=server.base_url, models=ids),
            {"reasoning": {"effort": "low"}, "usage": {"include": True}},
            ("reasoning_effort",),
        ),
        (load_pool("local", base_url=server.base_url, models=ids), {}, ("reasoning", "usage")),
    ]
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test-not-real")
    monkeypatch.delenv("LOCAL_LLM_API_KEY", raising=False)
    for pool, want, absent in cases:
        # OpenRouter must send its key (the server refuses without it); local has none to send.
        server.server.api_key = "sk-or-test-not-real" if pool.name == "openrouter" else None
        async with PoolClient(pool, run_id="r1") as c:
            r = await c.chat(ids[0], messages(MATH[0]), purpose="eval", seed=3)
        body = server.recent_requests[-1]
        assert r.ok and body["temperature"] == 0 and body["max_tokens"] == 4096 and body["seed"] == 3
        assert all(body[k] == v for k, v in want.items()) and not any(k in body for k in absent), body
    local = load_pool("local", base_url=server.base_url, models=ids)
    async with PoolClient(local, run_id="r1") as c:
        await c.chat(ids[0], messages(MATH[0]), purpose="eval", reasoning_effort="high", max_tokens=64)
    assert server.recent_requests[-1]["reasoning_effort"] == "high"
    assert server.recent_requests[-1]["max_tokens"] == 64


async def test_calls_that_cannot_connect_make_the_pool_unreachable_until_one_connects():
    from trinity.errors import PoolUnreachable
    from trinity.pool.client import UNREACHABLE_AFTER
    from trinity.practice.server import start_practice_server

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there yet
    pool = practice_pool(f"http://127.0.0.1:{port}/v1", retry=RetryPolicy(1, 0.01, 0.02, 1))
    async with PoolClient(pool, run_id="r1") as c:
        calls = _calls(pool, UNREACHABLE_AFTER)
        for k, (m, msgs) in enumerate(calls):
            assert c.unreachable() is None, k  # one or two failed calls may be a flaky network
            assert not (await c.chat(m, msgs, purpose="train")).ok
        err = c.unreachable()
        assert isinstance(err, PoolUnreachable) and f"127.0.0.1:{port}" in str(err) and "ConnectError" in str(err)
        srv = start_practice_server(port=port)  # the server comes (back) up: the first answer clears it
        try:
            assert (await c.chat(*calls[0], purpose="train")).ok
            assert c.unreachable() is None
        finally:
            srv.stop()
