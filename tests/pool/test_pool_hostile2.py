"""A hostile provider, round 2: over-billing against the cap, event-stream replies, `cost: 0`,
a gzip bomb, a trickling server and a huge Retry-After — real loopback HTTP against
`hostile.HostileServer`, every figure counted at the server, never a patched httpx."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from email.utils import formatdate
from pathlib import Path

import pytest
from hostile import PRICE_OUT
from pool_helpers import FAST_RETRY, hostile, hostile_prices  # noqa: F401 (hostile: a fixture)
from pool_helpers import hostile_pool as _pool
from pool_helpers import question_messages as _msgs

from trinity.errors import AbsurdCharge, BudgetExceeded, StopRequested, clear_stop, request_stop
from trinity.pool.budget import SANE_MULTIPLE, SANE_SLACK_USD, Budget, to_micro
from trinity.pool.cache import ResponseCache
from trinity.pool.client import PoolClient
from trinity.pool.faults import RetryPolicy
from trinity.pool.ledger import Ledger, verify_ledger
from trinity.pool.providers import Timeouts, load_pool

PRICES = hostile_prices()
ROOT = Path(__file__).resolve().parents[2]


def _bound_micro(reservation_usd: float) -> int:
    """The stated overshoot bound (trinity.pool.budget): one lone call's guard minus its reservation."""
    return (SANE_MULTIPLE - 1) * to_micro(reservation_usd) + to_micro(SANE_SLACK_USD)


async def _many(pool, tmp_path, n, cap_usd):
    ledger = Ledger(tmp_path / "ledger.jsonl", "r")
    try:
        async with PoolClient(pool, run_id="r", ledger=ledger, budget=Budget(cap_usd)) as c:
            worst = c._worst_case_usd("m-a", _msgs(), pool.decoding)
            rs = await asyncio.gather(
                *(c.chat("m-a", _msgs(i), purpose="train") for i in range(n)), return_exceptions=True
            )
    finally:
        ledger.close()
    return c, rs, worst, verify_ledger(tmp_path / "ledger.jsonl")


# ---- money ------------------------------------------------------------------------------------
async def test_a_flat_overbill_under_an_equal_cap_buys_one_call(hostile, tmp_path):
    # $0.05 a call under --budget-usd 0.05 (before: 12 calls, $0.60)
    hostile.mode, hostile.bill_usd = "overbill", 0.05
    c, rs, worst, rep = await _many(_pool(hostile, max_concurrency=64), tmp_path, 32, 0.05)
    assert any(isinstance(r, BudgetExceeded) for r in rs)
    assert hostile.requests == 1 and hostile.billed_micro_usd == 50_000
    assert rep.ok and rep.total_micro_usd == hostile.billed_micro_usd  # the ledger = the server


async def test_512_in_flight_overbilled_stay_within_the_stated_bound(hostile, tmp_path):
    # every call billed its own price + $0.0105 (inside the old 10x + $0.01 allowance), 512 at
    # once under a $0.04 cap (before: $5.19 billed, 130x the cap)
    hostile.mode, hostile.overbill_plus_usd = "overbill", 0.0105
    pool = _pool(hostile, decoding={"max_tokens": 40}, max_concurrency=512)
    cap = 0.04
    c, rs, worst, rep = await _many(pool, tmp_path, 512, cap)
    assert any(isinstance(r, BudgetExceeded) for r in rs)
    assert not any(isinstance(r, AbsurdCharge) for r in rs)
    billed = hostile.billed_micro_usd
    # the client reserved later calls at the learned ratio, so its last lone call is the largest
    assert 0 < billed <= to_micro(cap) + _bound_micro(c._worst_case_usd("m-a", _msgs(), pool.decoding)), billed
    assert rep.ok and abs(rep.total_micro_usd - billed) <= rep.n_records  # µ$ rounding per call
    assert rep.n_records == hostile.requests


async def test_reasoning_tokens_past_max_tokens_are_bounded_and_learned(hostile, tmp_path):
    # 40,550 completion tokens billed against max_tokens 4096 (before: 9.7x the cap)
    hostile.mode, hostile.over_tokens = "overtokens", 40_550
    pool = _pool(hostile, decoding={"max_tokens": 4096}, max_concurrency=64)
    c, rs, worst, rep = await _many(pool, tmp_path, 16, 0.05)
    assert hostile.requests == 1 and rep.total_micro_usd == hostile.billed_micro_usd
    assert hostile.billed_micro_usd <= to_micro(0.05) + _bound_micro(worst)
    # the model is reserved at what it really bills from now on
    assert c._worst_case_usd("m-a", _msgs(), pool.decoding) >= hostile.billed_micro_usd / 1e6


async def test_once_overbilled_calls_are_reserved_at_the_learned_ratio(hostile, tmp_path):
    hostile.mode, hostile.over_tokens = "overtokens", 4000
    pool = _pool(hostile, decoding={"max_tokens": 400}, max_concurrency=64)
    cap = 0.5
    c, rs, worst, rep = await _many(pool, tmp_path, 64, cap)
    assert rep.excess_calls >= 1 and c._bill_ratio["m-a"] > 5
    learned = c._worst_case_usd("m-a", _msgs(), pool.decoding)
    assert learned >= 4000 * PRICE_OUT / 1e6  # reserved at what it bills now
    # the last lone call, reserved at the learned ratio, overshoots by less than its own bill
    assert rep.ok and rep.total_micro_usd == hostile.billed_micro_usd <= to_micro(cap) + to_micro(learned)


async def test_event_stream_replies_with_usage_reach_the_ledger(hostile, tmp_path):
    hostile.mode = "sse"
    c, rs, worst, rep = await _many(_pool(hostile, max_concurrency=16), tmp_path, 64, 1.0)
    assert all(r.ok and r.text.strip() == hostile.reply for r in rs)
    assert hostile.by_kind["sse"] == 64 and rep.n_records == 64
    assert rep.total_micro_usd == hostile.billed_micro_usd > 0
    assert sum(v["calls"] for v in rep.per_source.values()) == 64 and "invalid" not in rep.per_source


async def test_an_event_stream_without_usage_is_billed_at_its_reservation(hostile, tmp_path):
    hostile.mode, hostile.sse_usage = "sse", False
    c, rs, worst, rep = await _many(_pool(hostile, max_concurrency=8), tmp_path, 8, 1.0)
    assert all(r.ok and r.cost_source == "invalid" for r in rs)
    assert rep.n_records == 8 and rep.per_source["invalid"]["calls"] == 8
    assert rep.total_micro_usd == 8 * to_micro(worst) >= hostile.billed_micro_usd
    assert "without usage" in rep.invalid[0]["note"]


async def test_a_reported_cost_of_zero_is_priced_from_the_table_and_flagged(hostile, tmp_path):
    hostile.mode = "cost0"
    c, rs, worst, rep = await _many(_pool(hostile), tmp_path, 4, 1.0)
    assert all(r.cost_source == "invalid" and r.cost_usd > 0 for r in rs)
    assert rep.total_micro_usd == hostile.billed_micro_usd and rep.per_source["invalid"]["calls"] == 4
    assert "cost 0 reported" in rep.invalid[0]["note"] and c.stats.invalid_usage == 4


# ---- transport --------------------------------------------------------------------------------
_BOMB_CHILD = r"""
import asyncio, json, sys
from pathlib import Path
from trinity.pool.cache import ResponseCache
from trinity.pool.client import PoolClient
from trinity.pool.faults import RetryPolicy
from trinity.pool.journal import CallJournal
from trinity.pool.ledger import Ledger
from trinity.pool.providers import Price, load_pool

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

url, d = sys.argv[1], Path(sys.argv[2])
pool = load_pool("local", base_url=url, models=["m-a"], prices={"m-a": Price(1, 2)},
                 retry=RetryPolicy(max_retries=0, backoff_base_s=0.01, backoff_max_s=0.01))
async def main():
    led, jr, ca = Ledger(d / "ledger.jsonl", "r"), CallJournal(d / "journal.jsonl"), ResponseCache(d / "cache.sqlite")
    async with PoolClient(pool, run_id="r", ledger=led, journal=jr, cache=ca) as c:
        before = hwm()
        r = await c.chat("m-a", [{"role": "user", "content": "hi"}], purpose="train", journal_key="k")
    led.close(); jr.close(); ca.close()
    print(json.dumps({"before": before, "after": hwm(), "ok": r.ok, "fault": r.fault, "error": r.error}))
asyncio.run(main())
"""


def test_a_gzip_bomb_stops_at_the_decoded_cap(hostile, tmp_path):
    hostile.mode = "gzip_bomb"  # ~64 KB on the wire, 64 MB decoded, a 4 MiB cap
    assert len(hostile.bomb()) < 100_000
    r = subprocess.run(
        [sys.executable, "-c", _BOMB_CHILD, hostile.base_url, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert not out["ok"] and out["fault"] == "too large" and "cap" in out["error"]
    # the child's own peak: the decoded 64 MB never reached memory (the cap is 4 MiB)
    assert out["after"] - out["before"] < 24 * 1024 * 1024, out
    assert hostile.by_kind["bomb"] == 1
    assert (tmp_path / "journal.jsonl").stat().st_size == 0
    assert len(ResponseCache(tmp_path / "cache.sqlite")) == 0


async def test_an_honest_gzip_body_is_decoded(hostile, tmp_path):
    hostile.mode, hostile.bomb_bytes = "gzip_bomb", 1000  # a small gzip body: '{' + spaces + '}'
    c, rs, worst, rep = await _many(_pool(hostile), tmp_path, 1, 1.0)
    assert hostile.by_kind["bomb"] == 1 and rs[0].fault == "200 error"  # {} decodes: no choices


async def test_a_trickling_server_meets_the_deadline_per_attempt(hostile, tmp_path):
    # a byte every 50 ms never lets the 1 s read timeout fire; the 1.5 s deadline does (the
    # deadline is never shorter than the read timeout: a read timeout above it widens it)
    hostile.mode, hostile.trickle_s = "trickle", 0.05
    pool = _pool(
        hostile,
        timeouts=Timeouts(connect_s=2, read_s=1, write_s=5, total_s=1.5),
        retry=RetryPolicy(max_retries=1, backoff_base_s=0.01, backoff_max_s=0.01),
    )
    c, rs, worst, rep = await _many(pool, tmp_path, 1, 1.0)
    assert not rs[0].ok and rs[0].fault == "timeout" and "1.5 s deadline" in rs[0].error
    assert hostile.by_kind["trickle"] == 2 and rs[0].attempts == 2  # each attempt ended by its deadline
    assert c.stats.lost_mid_body == 2


def test_the_deadline_per_attempt_is_read_from_the_pool_config(tmp_path):
    y = tmp_path / "models.yaml"
    y.write_text(
        "providers:\n  p:\n    base_url: http://127.0.0.1:9/v1\n    timeouts: {read_s: 5, total_s: 42}\n"
        "    models: {m: {price_in: 1, price_out: 2}}\n"
    )
    assert load_pool("p", models_yaml=y).timeouts.total_s == 42
    y.write_text(y.read_text().replace("42", "-1"))
    with pytest.raises(Exception, match="total_s"):
        load_pool("p", models_yaml=y)


@pytest.mark.parametrize("retry_after", ["100000", "a year ahead"])
async def test_a_stop_request_cancels_a_long_retry_after(hostile, tmp_path, retry_after):
    if retry_after == "a year ahead":
        retry_after = formatdate(time.time() + 365 * 86400, usegmt=True)
    hostile.mode, hostile.retry_after = "retry_after", retry_after
    pool = _pool(hostile, retry=RetryPolicy(max_retries=3, backoff_base_s=0.01, backoff_max_s=0.05))
    clear_stop()
    try:
        async with PoolClient(pool, run_id="r", budget=Budget(1.0)) as c:
            task = asyncio.ensure_future(c.chat("m-a", _msgs(), purpose="train"))
            while hostile.requests < 1:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)  # now in the cool-down (60 s by the default policy's cap)
            assert c.cooldown.until - time.monotonic() > 30
            request_stop("SIGTERM")
            with pytest.raises(StopRequested):
                await asyncio.wait_for(task, 10)  # not 60 s
    finally:
        clear_stop()
    assert hostile.requests == 1
