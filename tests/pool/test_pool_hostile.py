"""A hostile provider (issue 12): misreported usage, huge bodies, failing pools, malformed 200s,
resets mid-body, echoed keys, identical concurrent requests, unpriced models — real loopback HTTP
against `hostile.HostileServer`, never a patched httpx."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from pool_helpers import FAST_RETRY, hostile, hostile_prices  # noqa: F401 (hostile: a fixture)
from pool_helpers import hostile_pool as _pool
from pool_helpers import question_messages as _msgs
from trinity_main import trinity_main

from trinity.errors import AbsurdCharge, BudgetExceeded, ConfigError
from trinity.pool.budget import Budget
from trinity.pool.cache import ResponseCache
from trinity.pool.client import PoolClient
from trinity.pool.journal import CallJournal
from trinity.pool.ledger import Ledger, verify_ledger
from trinity.pool.providers import load_pool, price_overrides

PRICES = hostile_prices()


async def _one(pool, tmp_path, **kw):
    ledger = Ledger(tmp_path / "ledger.jsonl", "r")
    journal = CallJournal(tmp_path / "journal.jsonl")
    cache = ResponseCache(tmp_path / "cache.sqlite")
    try:
        async with PoolClient(pool, run_id="r", ledger=ledger, journal=journal, cache=cache, **kw) as c:
            try:
                res = await c.chat("m-a", _msgs(), purpose="train", journal_key="g1/0")
            except AbsurdCharge as e:
                res = e
            return c, res
    finally:
        ledger.close()
        journal.close()
        cache.close()


@pytest.mark.parametrize(
    "usage, why",
    [
        ({"prompt_tokens": -1_000_000, "completion_tokens": -5, "cost": -1.93}, "not a non-negative"),
        ({"prompt_tokens": 10, "completion_tokens": 5, "cost": float("inf")}, "not a finite"),
        ({"prompt_tokens": 10, "completion_tokens": 5, "cost": "0.001"}, "not a finite"),
        ({"prompt_tokens": 10.5, "completion_tokens": "5"}, "not a non-negative integer"),
    ],
)
async def test_invalid_usage_is_billed_from_the_table_and_kept_raw(hostile, tmp_path, usage, why):
    hostile.mode, hostile.usage = "usage", usage
    c, res = await _one(_pool(hostile), tmp_path, budget=Budget(1.0))
    assert res.ok and res.cost_source == "invalid" and why in res.usage_note
    assert 0 <= res.cost_usd < 0.01 and res.prompt_tokens >= 0 and res.completion_tokens >= 0
    rep = verify_ledger(tmp_path / "ledger.jsonl")
    assert rep.ok and rep.n_records == 1 and rep.total_micro_usd >= 0
    assert rep.per_source["invalid"]["calls"] == 1 and "raw usage" in rep.invalid[0]["note"]
    assert c.stats.invalid_usage == 1


async def test_absurd_usage_stops_naming_provider_and_figure(hostile, tmp_path):
    hostile.mode, hostile.usage = "usage", {"prompt_tokens": 10**15, "completion_tokens": 10}
    c, res = await _one(_pool(hostile), tmp_path, budget=Budget(1.0))
    assert isinstance(res, AbsurdCharge)
    assert "provider local" in str(res) and "prompt_tokens=1000000000000000" in str(res)
    rep = verify_ledger(tmp_path / "ledger.jsonl")
    assert rep.ok and rep.total_micro_usd < 10_000  # not $750,000,000
    with pytest.raises(AbsurdCharge):  # every later paid call stops the same way
        async with PoolClient(_pool(hostile), run_id="r") as c2:
            c2.stopped = c.stopped
            await c2.chat("m-a", _msgs(1), purpose="train")


def test_a_ledger_with_negative_figures_does_not_verify(tmp_path):
    led = Ledger(tmp_path / "l.jsonl", "r")
    led._make(
        led._appender.submit,
        provider="p",
        model="m",
        prompt_tokens=1,
        completion_tokens=1,
        cost_micro_usd=-1_930_000,
        cost_source="reported",
        purpose="train",
    )[1].result()
    led.close()
    rep = verify_ledger(tmp_path / "l.jsonl")
    assert not rep.ok and "non-negative" in rep.problem


@pytest.mark.parametrize("mode", ["big", "big_chunked"])
async def test_50mb_body_is_a_failed_call_and_reaches_nothing(hostile, tmp_path, mode):
    hostile.mode = mode
    c, res = await _one(_pool(hostile), tmp_path, budget=Budget(1.0))
    assert not res.ok and "cap" in res.error and res.fault == "too large"
    assert hostile.requests == 1  # not retried
    assert (tmp_path / "journal.jsonl").stat().st_size == 0
    assert len(ResponseCache(tmp_path / "cache.sqlite")) == 0
    lost = [json.loads(x) for x in (tmp_path / "journal.sent.jsonl").read_text().splitlines()]
    assert any("lost" in x for x in lost)  # possibly billed: a trace remains


@pytest.mark.parametrize("body", [b"<html>502</html>", b"", b"not json", b"[1, 2]"])
async def test_malformed_200s_get_bounded_retries(hostile, tmp_path, body):
    hostile.mode, hostile.malformed_body = "malformed", body
    c, res = await _one(_pool(hostile), tmp_path)
    assert not res.ok and res.fault == "malformed 200"
    assert hostile.requests == FAST_RETRY.max_retries + 1 and c.stats.n_malformed == hostile.requests


async def test_reset_mid_body_leaves_a_trace_of_possible_spend(hostile, tmp_path):
    hostile.mode = "reset"
    c, res = await _one(_pool(hostile), tmp_path, budget=Budget(1.0))
    assert not res.ok and c.stats.lost_mid_body == hostile.requests >= 1
    lines = [json.loads(x) for x in (tmp_path / "journal.sent.jsonl").read_text().splitlines()]
    lost = [x for x in lines if "lost" in x]
    assert len(lost) == hostile.requests and lost[0]["lost"] == "g1/0" and lost[0]["worst_micro_usd"] > 0
    assert CallJournal(tmp_path / "journal.jsonl").lost_at_open == len(lost)


async def test_a_reply_echoing_the_key_is_redacted_everywhere(hostile, tmp_path, monkeypatch):
    monkeypatch.setenv("LOCAL_LLM_API_KEY", "sk-hostile-secret-1234")
    hostile.mode = "echo"
    c, res = await _one(_pool(hostile), tmp_path)
    assert res.ok and "sk-hostile-secret-1234" not in res.text and "***" in res.text
    for f in tmp_path.iterdir():
        assert b"sk-hostile-secret-1234" not in f.read_bytes(), f


async def test_identical_concurrent_requests_are_paid_once(hostile, tmp_path):
    hostile.mode, hostile.slow_s = "slow", 0.3
    ledger = Ledger(tmp_path / "ledger.jsonl", "r")
    cache = ResponseCache(tmp_path / "cache.sqlite")
    async with PoolClient(_pool(hostile), run_id="r", ledger=ledger, cache=cache) as c:
        rs = await asyncio.gather(*(c.chat("m-a", _msgs(), purpose="train") for _ in range(8)))
    ledger.close()
    cache.close()
    assert all(r.ok and r.text == rs[0].text for r in rs)
    assert hostile.requests == 1 and c.stats.single_flight == 7
    assert verify_ledger(tmp_path / "ledger.jsonl").n_records == 1


async def test_failing_window_names_the_causes(hostile, tmp_path):
    hostile.mode = "500"
    async with PoolClient(_pool(hostile), run_id="r") as c:
        c.start_window()
        await asyncio.gather(*(c.chat("m-a", _msgs(i), purpose="train") for i in range(5)))
        e = c.failing(0.5)
    assert e is not None and str(e).startswith("provider failing (5 of 5 calls failed: 500 ×5)")
    hostile.mode, hostile.rate_429 = "429", 0.9
    async with PoolClient(_pool(hostile, retry=FAST_RETRY.__class__(1, 0.0, 0.0, 0.0)), run_id="r") as c:
        await asyncio.gather(*(c.chat("m-a", _msgs(i), purpose="train") for i in range(10)))
        e = c.failing(0.5)
        assert e is not None and "429 ×" in str(e)
        assert c.failing(1.0) is None  # the threshold is the caller's


def test_unpriced_models_are_refused_naming_both_fixes(hostile):
    pool = load_pool("local", base_url=hostile.base_url, models=["m-a", "m-b"])
    with pytest.raises(ConfigError) as e:
        pool.require_prices()
    msg = str(e.value)
    assert "m-a, m-b" in msg and "prices:" in msg and "--price-in" in msg and "\n" not in msg
    over = price_overrides(None, 1.0, 2.0, pool.models, pool.prices)
    load_pool("local", base_url=hostile.base_url, models=["m-a", "m-b"], prices=over).require_prices()


async def test_budget_on_a_priced_local_pool_holds_against_what_the_server_billed(hostile, tmp_path):
    hostile.mode, hostile.slow_s = "slow", 0.02
    pool = _pool(hostile, decoding={"max_tokens": 40}, max_concurrency=64)
    cap_micro = 500
    ledger = Ledger(tmp_path / "ledger.jsonl", "r")
    async with PoolClient(pool, run_id="r", ledger=ledger, budget=Budget(cap_micro / 1e6)) as c:
        rs = await asyncio.gather(
            *(c.chat("m-a", _msgs(i), purpose="train") for i in range(512)), return_exceptions=True
        )
    ledger.close()
    assert any(isinstance(r, BudgetExceeded) for r in rs)
    assert 0 < hostile.billed_micro_usd <= cap_micro, hostile.billed_micro_usd
    assert verify_ledger(tmp_path / "ledger.jsonl").total_micro_usd <= cap_micro


def test_a_budget_cap_on_unpriced_models_is_refused_by_the_client(hostile):
    pool = load_pool("local", base_url=hostile.base_url, models=["m-a", "m-b"])
    with pytest.raises(ConfigError, match="no price for m-a, m-b"):
        PoolClient(pool, run_id="r", budget=Budget(0.01))
    PoolClient(pool, run_id="r", budget=Budget(None))  # no cap: nothing to reserve against


async def test_billing_above_the_reserved_worst_case_is_counted(hostile, tmp_path):
    # a reported cost 3x the worst case: plausible (a stale price table), not absurd; the excess is kept
    hostile.mode = "usage"
    pool = _pool(hostile, decoding={"max_tokens": 10})
    async with PoolClient(pool, run_id="r") as c:
        worst = c._worst_case_usd("m-a", _msgs(), pool.decoding)
    hostile.usage = {"prompt_tokens": 5, "completion_tokens": 5, "cost": round(worst * 3, 9)}
    c, res = await _one(pool, tmp_path, budget=Budget(1.0))
    assert res.cost_source == "reported" and c.stats.excess_calls == 1
    assert abs(c.stats.excess_micro_usd - (round(worst * 3 * 1e6) - round(worst * 1e6))) <= 1
    # ... and recorded: on the ledger record (hashed into the chain), in the report per provider/model
    from trinity.pool.ledger import excess_totals

    rep = verify_ledger(tmp_path / "ledger.jsonl")
    assert rep.ok and rep.excess == {"local m-a": {"calls": 1, "micro_usd": c.stats.excess_micro_usd}}
    assert excess_totals(tmp_path / "ledger.jsonl") == (c.stats.excess_micro_usd, 1)
    rc, out, err = trinity_main(["ledger", "report", tmp_path / "ledger.jsonl"])
    assert rc == 0, err
    assert "billed above the reserved worst case: $" in out and "on 1 calls" in out
    assert "local m-a" in out.split("billed above the reserved worst case")[1].splitlines()[1]
    rc, out, err = trinity_main(["ledger", "report", "--json", tmp_path / "ledger.jsonl"])
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["excess_calls"] == 1 and doc["excess"]["local m-a"]["micro_usd"] == c.stats.excess_micro_usd


def test_a_forged_excess_figure_does_not_verify(tmp_path):
    from trinity.pool.ledger import GENESIS, record_hash

    rec = {
        "seq": 0,
        "run_id": "r",
        "time": "2026-01-01T00:00:00.000Z",
        "provider": "p",
        "model": "m",
        "prompt_tokens": 1,
        "completion_tokens": 1,
        "cost_micro_usd": 5,
        "cost_source": "reported",
        "purpose": "train",
        "prev_h": GENESIS,
        "excess_micro_usd": -4,
    }
    rec["h"] = record_hash(rec)
    from trinity.io import canonical_json

    (tmp_path / "l.jsonl").write_text(canonical_json(rec) + "\n")
    rep = verify_ledger(tmp_path / "l.jsonl")
    assert not rep.ok and "excess_micro_usd" in rep.problem


async def test_the_read_timeout_is_settable(hostile, tmp_path):
    hostile.mode, hostile.slow_s = "slow", 2.0
    pool = load_pool(
        "local",
        base_url=hostile.base_url,
        models=["m-a", "m-b"],
        prices=PRICES,
        retry=FAST_RETRY.__class__(0, 0.0, 0.0, 0.0),
        read_timeout_s=0.2,
    )
    assert pool.timeouts.read_s == 0.2
    assert load_pool("local", models=["m-a"]).timeouts.read_s == 900  # configs/models.yaml's
    c, res = await _one(pool, tmp_path)
    assert not res.ok and res.fault == "timeout" and res.latency_s < 1.5
    with pytest.raises(ConfigError):
        load_pool("local", models=["m-a"], read_timeout_s=0)


async def test_ledger_report_lists_invalid_usage_with_the_raw_figures(hostile, tmp_path):
    hostile.mode, hostile.usage = "usage", {"prompt_tokens": -3, "completion_tokens": 5, "cost": -1.93}
    await _one(_pool(hostile), tmp_path, budget=Budget(1.0))
    rc, out, err = trinity_main(["ledger", "report", tmp_path / "ledger.jsonl"])
    assert rc == 0, err
    assert "invalid provider usage: 1 records" in out and "-1.93" in out and "prompt_tokens=-3" in out


async def test_the_body_cap_is_configurable_per_provider(hostile, tmp_path):
    import yaml

    from trinity.pool.providers import MODELS_YAML

    doc = yaml.safe_load(MODELS_YAML.read_text())
    doc["providers"]["local"]["max_body_bytes"] = 2048
    y = tmp_path / "models.yaml"
    y.write_text(yaml.safe_dump(doc))
    hostile.reply = "x" * 4000  # an ordinary answer, but over this provider's 2 KiB cap
    pool = load_pool("local", y, base_url=hostile.base_url, models=["m-a", "m-b"], prices=PRICES, retry=FAST_RETRY)
    assert pool.max_body_bytes == 2048
    c, res = await _one(pool, tmp_path)
    assert not res.ok and "2048-byte cap" in res.error


@pytest.mark.parametrize(
    "text, says",
    [
        ("- a\n- b\n", "missing 'providers' section"),
        ("providers:\n  p: hello\n", "providers.p must be a mapping, got str"),
        ("providers:\n  p: {}\npools: [p]\n", "pools must be a mapping, got list"),
        ("providers:\n  p: {}\npools: {q: [p]}\n", "pools.q must name a provider"),
        *[
            (
                f"providers:\n  p:\n    base_url: http://127.0.0.1:1\n    models: {{m: {{price_in: 1, price_out: 1}}}}\n"
                f"    {key}: [1]\n",
                f"providers.p.{key} must be a mapping, got list",
            )
            for key in ("timeouts", "retry", "decoding", "headers")
        ],
    ],
)
def test_a_models_file_of_the_wrong_shape_is_a_config_error(tmp_path, text, says):
    y = tmp_path / "models.yaml"
    y.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(says)):
        load_pool("q" if "pools: {q" in text else "p", y)


def test_pool_list_names_a_provider_section_of_the_wrong_shape_and_lists_the_rest(tmp_path, capsys):
    from trinity.cli import main

    y = tmp_path / "models.yaml"
    y.write_text(
        "providers:\n  p: hello\n  q: {base_url: 'http://127.0.0.1:1', models: {m: {price_in: 1, price_out: 1}}}\n"
        "pools: {alias: [p]}\n"
    )
    assert main(["pool", "list", "--models-yaml", str(y)]) == 0
    out = capsys.readouterr().out
    assert "p: (" in out and "providers.p must be a mapping, got str" in out
    assert "q: m\n" in out
    y.write_text("providers:\n  p: {}\npools: [p]\n")
    assert main(["pool", "list", "--models-yaml", str(y)]) != 0
    assert "pools must be a mapping, got list" in capsys.readouterr().err
