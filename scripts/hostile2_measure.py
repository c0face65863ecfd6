"""Round-2 hostile figures, counted at the server (see docs/perf/hostile2.md).

    PYTHONPATH=<tree> python scripts/hostile2_measure.py CASE

CASE: flat | inflight512 | reasoning | sse | bomb | trickle | sigterm. Prints one JSON line.
Runs against whichever trinity is on PYTHONPATH (the tree before or after), with the hostile
stand-in of this tree's tests/pool.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from email.utils import formatdate  # noqa: F401  (kept for HTTP-date runs by hand)
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "pool"))
from hostile import PRICE_IN, PRICE_OUT, HostileServer  # noqa: E402

from trinity.pool.budget import Budget  # noqa: E402
from trinity.pool.cache import ResponseCache  # noqa: E402
from trinity.pool.client import PoolClient  # noqa: E402
from trinity.pool.faults import RetryPolicy  # noqa: E402
from trinity.pool.journal import CallJournal  # noqa: E402
from trinity.pool.ledger import Ledger, verify_ledger  # noqa: E402
from trinity.pool.providers import Price, Timeouts, load_pool  # noqa: E402
from trinity.runs.records import read_run_meta  # noqa: E402

P = {"m-a": Price(PRICE_IN, PRICE_OUT), "m-b": Price(PRICE_IN, PRICE_OUT)}


def pool(h, timeouts=None, **kw):
    return load_pool(
        "local",
        base_url=h.base_url,
        models=["m-a", "m-b"],
        prices=P,
        retry=RetryPolicy(0 if timeouts else 3, 0.01, 0.05, 1),
        timeouts=timeouts,
        **kw,
    )


async def calls(h, n, cap, d, timeouts=None, **kw):
    led, j, c = Ledger(f"{d}/l.jsonl", "r"), CallJournal(f"{d}/j.jsonl"), ResponseCache(f"{d}/c.sqlite")
    t0 = time.monotonic()
    async with PoolClient(
        pool(h, timeouts, **kw), run_id="r", ledger=led, journal=j, cache=c, budget=Budget(cap)
    ) as cl:
        rs = await asyncio.gather(
            *(
                cl.chat("m-a", [{"role": "user", "content": f"q{i}"}], purpose="train", journal_key=str(i))
                for i in range(n)
            ),
            return_exceptions=True,
        )
    secs = time.monotonic() - t0
    led.close(), j.close(), c.close()
    return rs, verify_ledger(f"{d}/l.jsonl"), secs


def money(h, n, cap, d, **kw):
    rs, rep, _ = asyncio.run(calls(h, n, cap, d, **kw))
    return {
        "cap_usd": cap,
        "requests_at_server": h.requests,
        "billed_at_server_usd": h.billed_micro_usd / 1e6,
        "ledger_usd": rep.total_micro_usd / 1e6,
        "ledger_records": rep.n_records,
        "times_cap": round(h.billed_micro_usd / 1e6 / cap, 2),
    }


def vmhwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024


def main(case):
    h = HostileServer()
    d = tempfile.mkdtemp()
    try:
        if case == "flat":  # $0.05 a call under --budget-usd 0.05
            h.mode, h.bill_usd = "overbill", 0.05
            return money(h, 32, 0.05, d, max_concurrency=64)
        if case == "inflight512":  # 512 at once, each $0.0105 over its own price, $0.04 cap
            h.mode, h.overbill_plus_usd = "overbill", 0.0105
            return money(h, 512, 0.04, d, decoding={"max_tokens": 40}, max_concurrency=512)
        if case == "reasoning":  # 40,550 completion tokens against max_tokens 4096, $0.05 cap
            h.mode, h.over_tokens = "overtokens", 40_550
            return money(h, 16, 0.05, d, decoding={"max_tokens": 4096}, max_concurrency=64)
        if case == "sse":  # 64 event-stream replies with usage
            h.mode = "sse"
            out = money(h, 64, 1.0, d, max_concurrency=16)
            out.pop("times_cap")
            return out
        if case == "bomb":  # ~64 KB on the wire, 300 MB decoded
            h.mode, h.bomb_bytes = "gzip_bomb", 300 * 1024 * 1024
            wire = len(h.bomb())  # built here, before the peak is reset
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # reset VmHWM: the peak from here on is the call's
            before = vmhwm()
            rs, rep, _ = asyncio.run(calls(h, 1, 1.0, d))
            return {
                "wire_bytes": wire,
                "decoded_bytes": h.bomb_bytes,
                "ok": getattr(rs[0], "ok", None),
                "fault": getattr(rs[0], "fault", repr(rs[0])[:80]),
                "peak_rss_growth_mb": round(vmhwm() - before, 1),
                "journal_bytes": os.path.getsize(f"{d}/j.jsonl"),
                "cache_bytes": os.path.getsize(f"{d}/c.sqlite") if os.path.exists(f"{d}/c.sqlite") else 0,
            }
        if case == "trickle":  # a byte every 0.5 s, --read-timeout 5; a 10 s deadline where supported
            h.mode, h.trickle_s = "trickle", 0.5
            kw = {"connect_s": 2, "read_s": 5, "write_s": 5}
            if "total_s" in Timeouts.__dataclass_fields__:
                kw["total_s"] = 10
            try:
                rs, rep, secs = asyncio.run(asyncio.wait_for(calls(h, 1, 1.0, d, Timeouts(**kw)), 60))
                return {"ended_after_s": round(secs, 2), "fault": rs[0].fault}
            except asyncio.TimeoutError:
                return {"ended_after_s": None, "note": "still running after 60 s (stopped by the script)"}
        if case == "sigterm":  # a live run in a 429 cool-down (Retry-After 100000), SIGTERM
            h.mode, h.retry_after = "retry_after", "100000"
            q = Path(d) / "q.jsonl"
            from trinity.benchmarks.practice import practice_questions

            q.write_text("".join(json.dumps(x.to_json()) + "\n" for x in practice_questions() if x.kind == "math"))
            env = {**os.environ, "OMP_NUM_THREADS": "1", "XDG_CACHE_HOME": f"{d}/xdg"}
            args = [
                *("train", "--mode", "live", "--pool", "local", "--base-url", h.base_url, "--pool-models", "m-a,m-b"),
                *("--questions", str(q), "--encoder", "tiny-qwen3", "--generations", "2", "--popsize", "2"),
                *("--m", "2", "--price-in", "1", "--price-out", "2", "--budget-usd", "1", "--run-dir", f"{d}/run"),
            ]
            p = subprocess.Popen(
                [sys.executable, "-m", "trinity", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            while h.requests < 1:
                time.sleep(0.01)
            time.sleep(1.0)
            t0 = time.monotonic()
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=60)
                secs = round(time.monotonic() - t0, 2)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                secs = None
            status = read_run_meta(Path(d) / "run").status
            return {"exit_after_sigterm_s": secs, "status": status, "requests_at_server": h.requests}
        raise SystemExit(f"unknown case {case}")
    finally:
        h.stop()


if __name__ == "__main__":
    print(json.dumps({"case": sys.argv[1], **main(sys.argv[1])}))
