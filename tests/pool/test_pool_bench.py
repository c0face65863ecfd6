"""`trinity bench pool` runs end to end (a short run; the figures themselves live in docs/perf)."""

from __future__ import annotations

import contextlib
import io
import json

from trinity.cli import main


def test_bench_pool_short_run_reports_real_figures():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["bench", "pool", "--seconds", "0.6", "--concurrency", "4", "--latencies", "0,20", "--json"])
    assert rc == 0
    res = json.loads(out.getvalue())
    assert set(res["runs"]) == {"c4/0ms", "c4/20ms"} and res["ledger"] is True
    for name, r in res["runs"].items():
        assert r["calls"] > 0 and r["failed"] == 0 and r["calls_per_s"] > 0
        assert 0 < r["latency_ms"]["p50"] <= r["latency_ms"]["p99"]
        assert r["client_cpu_ms_per_call"] > 0
    # the simulated 20 ms shows up in the latency but not in the overhead
    slow = res["runs"]["c4/20ms"]
    assert slow["latency_ms"]["p50"] >= 20 and slow["overhead_ms"]["p50"] < slow["latency_ms"]["p50"] - 15
