"""Issue 12 figures: the pool client against the hostile stand-in (see docs/perf/hostile.md)."""

import asyncio
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "pool"))
from hostile import PRICE_IN, PRICE_OUT, HostileServer

from trinity.pool.budget import Budget
from trinity.pool.cache import ResponseCache
from trinity.pool.client import PoolClient
from trinity.pool.faults import RetryPolicy
from trinity.pool.journal import CallJournal
from trinity.pool.ledger import Ledger, verify_ledger
from trinity.pool.providers import Price, load_pool

P = {"m-a": Price(PRICE_IN, PRICE_OUT), "m-b": Price(PRICE_IN, PRICE_OUT)}


def pool(h, **kw):
    return load_pool(
        "local", base_url=h.base_url, models=["m-a", "m-b"], prices=P, retry=RetryPolicy(3, 0.01, 0.05, 1), **kw
    )


async def run(h, n, cap, d, **kw):
    led = Ledger(f"{d}/l.jsonl", "r")
    j = CallJournal(f"{d}/j.jsonl")
    c = ResponseCache(f"{d}/c.sqlite")
    async with PoolClient(pool(h, **kw), run_id="r", ledger=led, journal=j, cache=c, budget=Budget(cap)) as cl:
        rs = await asyncio.gather(
            *(
                cl.chat("m-a", [{"role": "user", "content": f"q{i}"}], purpose="train", journal_key=str(i))
                for i in range(n)
            ),
            return_exceptions=True,
        )
    led.close()
    j.close()
    c.close()
    return cl, rs, verify_ledger(f"{d}/l.jsonl")


which = sys.argv[1]
h = HostileServer()
with tempfile.TemporaryDirectory() as d:
    if which == "big":
        h.mode = "big"
        cl, rs, rep = asyncio.run(run(h, 1, 1.0, d))
        print(
            json.dumps(
                {
                    "ok": rs[0].ok,
                    "error": rs[0].error[:80],
                    "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                    "journal_bytes": os.path.getsize(f"{d}/j.jsonl"),
                    "cache_rows": len(ResponseCache(f"{d}/c.sqlite")),
                }
            )
        )
    elif which == "budget":
        h.mode, h.slow_s = "slow", 0.02
        cl, rs, rep = asyncio.run(run(h, 512, 0.01, d, decoding={"max_tokens": 200}, max_concurrency=512))
        print(
            json.dumps(
                {
                    "cap_usd": 0.01,
                    "server_billed_usd": h.billed_micro_usd / 1e6,
                    "ledger_usd": rep.total_usd,
                    "requests": h.requests,
                }
            )
        )
    elif which.startswith("usage"):
        h.mode = "usage"
        h.usage = {
            "neg": {"prompt_tokens": -(10**6), "completion_tokens": -5, "cost": -1.93},
            "inf": {"prompt_tokens": 10, "completion_tokens": 5, "cost": float("inf")},
            "str": {"prompt_tokens": 10, "completion_tokens": 5, "cost": "0.001"},
            "absurd": {"prompt_tokens": 10**15, "completion_tokens": 10},
        }[which[6:]]
        cl, rs, rep = asyncio.run(run(h, 1, 1.0, d))
        r = rs[0]
        print(
            json.dumps(
                {
                    "result": (type(r).__name__ + ": " + str(r)[:140]) if isinstance(r, Exception) else r.cost_source,
                    "ledger_usd": rep.total_usd,
                    "verifies": rep.ok,
                }
            )
        )
    elif which in ("500", "429", "malformed"):
        h.mode = which
        cl, rs, rep = asyncio.run(run(h, 20, 1.0, d))
        print(
            json.dumps(
                {"failed": sum(not r.ok for r in rs), "requests": h.requests, "failing": str(cl.failing())[:120]}
            )
        )
h.stop()
