"""`trinity bench pool` runs end to end (a short run; the figures themselves live in docs/perf)."""

from __future__ import annotations

import contextlib
import io
import json

from trinity.cli import main


def test_bench_pool_short_run_reports_real_figures():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(
            [
                "bench",
                "pool",
                "--seconds",
                "0.6",
                "--concurrency",
                "4",
                "--latencies",
                "0,20",
                "--json",
                "--no-live-generation",
            ]
        )
    assert rc == 0
    res = json.loads(out.getvalue())
    assert set(res["runs"]) == {"c4/0ms", "c4/20ms"} and res["ledger"] is True
    for r in res["runs"].values():
        assert r["calls"] > 0 and r["failed"] == 0 and r["calls_per_s"] > 0
        assert 0 < r["latency_ms"]["p50"] <= r["latency_ms"]["p99"]
        assert r["client_cpu_ms_per_call"] > 0
    # the simulated 20 ms shows up in the latency but not in the overhead
    slow = res["runs"]["c4/20ms"]
    assert slow["latency_ms"]["p50"] >= 20 and slow["overhead_ms"]["p50"] < slow["latency_ms"]["p50"] - 15


def test_bench_live_generation_small_run():
    """Part (b) on a small population: real sessions against the practice server process."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(
            [
                "bench",
                "pool",
                "--live-generation",
                "--lg-popsize",
                "2",
                "--lg-m",
                "3",
                "--lg-latency-ms",
                "20",
                "--lg-latency-p99-ms",
                "80",
                "--json",
            ]
        )
    assert rc == 0
    both = json.loads(out.getvalue())
    assert set(both["schedules"]) == {"pipelined", "barrier"} and both["pipelined_vs_barrier"] > 0
    p, r = both["schedules"]["pipelined"], both["schedules"]["barrier"]
    # the same population and questions: the same calls, answers and spend either way
    assert (p["calls"], p["correct"], p["ledger_cost_usd"]) == (r["calls"], r["correct"], r["ledger_cost_usd"])
    assert p["schedule"] == "pipelined" and r["schedule"] == "barrier" and r["latency_p99_ms"] == 80
    assert r["sessions"] == 6 and r["popsize"] == 2 and r["m"] == 3 and r["latency_ms"] == 20
    assert r["calls"] >= 6 and 1 <= r["max_turns"] <= 5 and len(r["steps"]) == r["max_turns"]
    assert r["encoder"].startswith("incremental") and 0 < r["encoder_tokens_read"] <= r["encoder_tokens_seen"]
    assert r["wall_s"] > 0 and r["sequential_8_in_flight_s"] > 0
    assert r["ledger_cost_usd"] > 0 and r["server_cpu_s"] is not None
