"""`trinity bench pool`: the pool client against the practice server (benchmark (a)).

For each simulated latency (default 0 and 50 ms) it starts `trinity pool serve-practice` as a
SEPARATE process (as a real provider would be), then keeps `--concurrency` calls in flight through
one `PoolClient` (with its ledger, fsync'd by group commit; no response cache, so every call is
real HTTP) for `--seconds`, and reports:

  calls_per_s      sustained completed calls per second
  latency p50/p99  wall time of `client.chat()` (ms)
  overhead p50/p99 latency minus the server's own time for the request (its Server-Timing, which
                   includes the simulated latency): the client, the loopback hop and the time the
                   request queued before the server read it (ms)

Part (b), the wall time of one live generation (P 32 × m 16 sessions of up to 5 turns, 2 s per
call, concurrency 512), needs the session loop and the router: it is
`trinity.perf.live_generation.live_generation(args) -> dict`.

`trinity bench pool` runs (a) then (b); `--no-live-generation` only (a), `--live-generation`
only (b).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from trinity.errors import ConfigError
from trinity.perf.server import proc_cpu_s, spawn_practice_server


def register(sub) -> None:
    p = sub.add_parser("pool", help="pool client throughput and latency overhead against the practice server")
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds per latency setting (default 5)")
    p.add_argument("--concurrency", default="64", help="calls in flight, comma separated for several runs (default 64)")
    p.add_argument("--latencies", default="0,50", help="simulated latencies in ms, comma separated (default 0,50)")
    p.add_argument("--no-ledger", action="store_true", help="measure without the fsync'd ledger")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--live-generation", action="store_true", help="only part (b): the wall time of one live generation"
    )
    which.add_argument("--no-live-generation", action="store_true", help="only part (a)")
    p.add_argument("--lg-popsize", dest="popsize", type=int, default=32, help="part (b): candidates (default 32)")
    p.add_argument("--lg-m", dest="m", type=int, default=16, help="part (b): questions (default 16)")
    p.add_argument(
        "--lg-latency-ms",
        dest="latency_ms",
        type=int,
        default=2000,
        help="part (b): simulated latency per call (default 2000)",
    )
    p.add_argument(
        "--lg-latency-p99-ms",
        dest="p99_ms",
        type=float,
        default=None,
        help="part (b): heavy-tailed latency, lognormal with median --lg-latency-ms and this 99th percentile",
    )
    p.add_argument(
        "--lg-schedules",
        dest="schedules",
        default="pipelined,barrier",
        help="part (b): session schedules to run, comma separated (default pipelined,barrier)",
    )
    p.add_argument(
        "--lg-encoder",
        dest="encoder",
        default="tiny-qwen3",
        help="part (b): the router's encoder (default tiny-qwen3; qwen3-0.6b-random on a GPU box)",
    )
    p.add_argument("--lg-device", dest="device", default="cpu", help="part (b): cpu or cuda (default cpu)")
    p.add_argument(
        "--full-reencode",
        action="store_true",
        help="part (b): re-encode every whole transcript each turn (the paired "
        "path) instead of reading only each turn's new tokens, for comparison",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_bench_pool)


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    i = min(len(xs) - 1, max(0, int(round(q / 100.0 * (len(xs) - 1)))))
    return xs[i]


async def _measure(base_url: str, seconds: float, concurrency: int, ledger_dir: Path | None) -> dict[str, Any]:
    from trinity.benchmarks.practice import practice_questions  # lazy: kept off the CLI start (adds numpy here)
    from trinity.benchmarks.prompts import system_prompt, user_message  # lazy: kept off the CLI start (adds numpy here)
    from trinity.pool.client import PoolClient  # lazy: kept off the CLI start (adds httpx + PyYAML here)
    from trinity.pool.ledger import Ledger  # lazy: brings sqlite3 and the ledger, kept off the CLI start
    from trinity.pool.providers import load_pool  # lazy: kept off the CLI start (adds PyYAML here)

    pool = load_pool("practice", base_url=base_url, max_concurrency=concurrency)
    qs = [q for q in practice_questions() if q.kind in ("math", "mc")]  # no grading work in the server
    prompts = [
        [
            {"role": "system", "content": system_prompt("Worker", q)},
            {"role": "user", "content": user_message(q.question, "")},
        ]
        for q in qs
    ]
    ledger = Ledger(ledger_dir / "ledger.jsonl", "bench") if ledger_dir else None
    lat: list[float] = []
    over: list[float] = []
    failed = 0
    counter = 0
    warm_until = time.perf_counter() + min(1.0, seconds / 5)
    stop_at = warm_until + seconds
    cpu0 = None

    async def worker(c: PoolClient, wid: int) -> None:
        nonlocal counter, failed, cpu0
        while True:
            counter += 1
            i = counter
            t0 = time.perf_counter()
            if t0 >= stop_at:
                return
            r = await c.chat(pool.models[i % 3], prompts[i % len(prompts)], purpose="train", seed=i)
            t1 = time.perf_counter()
            if t0 < warm_until:
                continue
            if cpu0 is None:
                cpu0 = time.process_time()
            if t1 > stop_at:
                return
            if not r.ok:
                failed += 1
                continue
            lat.append((t1 - t0) * 1000.0)
            if r.server_ms is not None:
                over.append((t1 - t0) * 1000.0 - r.server_ms)

    try:
        async with PoolClient(pool, run_id="bench", ledger=ledger) as c:
            await asyncio.gather(*(worker(c, w) for w in range(concurrency)))
            cpu = time.process_time() - (cpu0 or time.process_time())
    finally:
        if ledger:
            ledger.close()
    return {
        "calls": len(lat),
        "failed": failed,
        "calls_per_s": round(len(lat) / seconds, 1),
        "latency_ms": {"p50": round(_pct(lat, 50), 2), "p99": round(_pct(lat, 99), 2)},
        "overhead_ms": {"p50": round(_pct(over, 50), 2), "p99": round(_pct(over, 99), 2)},
        "client_cpu_ms_per_call": round(cpu * 1000.0 / max(len(lat), 1), 3),
    }


def cmd_bench_pool(args) -> int:
    if args.live_generation:
        out = _run_live_generation(args)
        print(json.dumps(out, indent=2) if args.json else _describe_live(out))
        return 0
    results = _run_part_a(args)
    if not args.no_live_generation:
        results["live_generation"] = _run_live_generation(args)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(
            f"pool client vs practice server (separate process), {args.seconds:g} s each, "
            f"ledger {'on' if results['ledger'] else 'off'}, {os.cpu_count()} CPUs"
        )
        for name, r in results["runs"].items():
            print(
                f"  concurrency/latency {name:>10}: {r['calls_per_s']:8.1f} calls/s   latency p50 {r['latency_ms']['p50']:.1f} "
                f"p99 {r['latency_ms']['p99']:.1f} ms   overhead p50 {r['overhead_ms']['p50']:.1f} "
                f"p99 {r['overhead_ms']['p99']:.1f} ms   failed {r['failed']}"
            )
        if "live_generation" in results:
            print(_describe_live(results["live_generation"]))
    return 0


def _describe_live(r: dict) -> str:
    if "schedules" in r:
        lines = [_describe_live(x) for x in r["schedules"].values()]
        if "pipelined_vs_barrier" in r:
            lines.append(f"pipelined / barrier wall time: {r['pipelined_vs_barrier']}")
        return "\n".join(lines)
    tail = f" (lognormal, p99 {r['latency_p99_ms']:g} ms)" if r.get("latency_p99_ms") else ""
    return (
        f"[{r.get('schedule', 'barrier')}{tail}] "
        f"live generation: {r['sessions']} sessions ({r['popsize']} candidates x {r['m']} questions), "
        f"{r['calls']} calls at {r['latency_ms']} ms, concurrency {r['concurrency']}: wall {r['wall_s']} s "
        f"(ideal {r['ideal_s']} s, target {r['target_s']} s), encoder {r['encoder_s']} s; "
        f"candidates one after another with 8 in flight: {r['sequential_8_in_flight_s']} s"
    )


def _run_live_generation(args) -> dict:
    from trinity.perf.live_generation import live_generation  # lazy: kept off the CLI start (adds numpy here)

    return live_generation(args)


def _run_part_a(args) -> dict:
    try:
        latencies = [int(x) for x in args.latencies.split(",") if x.strip()]
        concurrencies = [int(x) for x in str(args.concurrency).split(",") if x.strip()]
    except ValueError:
        raise ConfigError("--latencies and --concurrency must be comma-separated integers") from None
    if not latencies or not concurrencies or min(concurrencies) < 1 or args.seconds <= 0:
        raise ConfigError("--concurrency must be >= 1, --seconds > 0, and --latencies non-empty")
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "seconds": args.seconds,
        "ledger": not args.no_ledger,
        "runs": {},
    }
    for conc, ms in [(c, m) for c in concurrencies for m in latencies]:
        proc, base = spawn_practice_server(ms)
        try:
            with tempfile.TemporaryDirectory(prefix="bench-pool-") as tmp:
                cpu0 = proc_cpu_s(proc.pid)
                res = asyncio.run(_measure(base, args.seconds, conc, None if args.no_ledger else Path(tmp)))
                cpu1 = proc_cpu_s(proc.pid)
            if cpu0 is not None and cpu1 is not None:
                # includes the warm-up calls, so it slightly over-states the cost per measured call
                res["server_cpu_ms_per_call_upper"] = round((cpu1 - cpu0) * 1000.0 / max(res["calls"], 1), 3)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        results["runs"][f"c{conc}/{ms}ms"] = res
    return results
