"""The practice server as a separate process for the benchmarks, and a process's CPU time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from trinity.errors import TrinityError


def proc_cpu_s(pid: int) -> float | None:
    """User+system CPU seconds of a process (Linux /proc), None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def spawn_practice_server(latency_ms: int, p99_ms: float | None = None) -> tuple[subprocess.Popen, str]:
    """`trinity pool serve-practice` on a free port: (the process, its base URL); `p99_ms`: a
    lognormal latency with median `latency_ms` and this 99th percentile."""
    tail = ["--latency-p99-ms", str(p99_ms)] if p99_ms is not None else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "trinity", "pool", "serve-practice", "--port", "0", "--latency-ms", str(latency_ms)]
        + tail,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    base = proc.stdout.readline().strip()
    if not base.startswith("http://"):
        proc.kill()
        raise TrinityError(
            "bench pool: the practice server did not start (run `trinity pool serve-practice` to see why)"
        )
    return proc, base
