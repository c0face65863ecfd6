"""Grade a benchmark's own reference solutions, and its prompt-only stubs, with its grader.

    selfcheck("humaneval") -> {"problems", "canonical_pass", "stub_pass", "ok", "wall_s", ...}

HumanEval: every `canonical_solution` (the body, after the prompt) must pass its
`check(candidate)` in the sandbox, and every prompt alone (a function with only its docstring,
which returns None) must fail. Problems run `workers` sandboxes at a time (threads: each grade
is a child process).
"""

from __future__ import annotations

import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from trinity.benchmarks import get_benchmark
from trinity.errors import InputError
from trinity.grading.humaneval import grade_check_run
from trinity.grading.sandbox import bwrap_status


def selfcheck(name: str, data: str | None = None, workers: int | None = None) -> dict:
    if name != "humaneval":
        raise InputError(f"selfcheck knows humaneval only (its rows ship reference solutions), not {name!r}")

    qs = get_benchmark(name).load(data=data)
    missing = [q.id for q in qs if not q.extra.get("canonical_solution")]
    if missing:
        raise InputError(f"{name}: {len(missing)} row(s) without canonical_solution ({', '.join(missing[:3])})")
    workers = workers or os.cpu_count() or 1
    if workers < 1:
        raise InputError(f"--workers must be >= 1, got {workers}")
    jobs = [(q, q.extra["canonical_solution"], True) for q in qs] + [(q, q.question, False) for q in qs]

    def one(job):
        q, response, _ = job
        return grade_check_run(response, q.answer)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as ex:
        results = list(ex.map(one, jobs))
    wall = time.perf_counter() - t0
    failures = []
    canonical = stub = 0
    runs = []
    for (q, _, is_canonical), (v, run) in zip(jobs, results):
        if run is not None:
            runs.append(run)
        if is_canonical:
            canonical += v.correct
            if not v.correct:
                failures.append(f"{q.id} canonical solution failed: {v.reason}")
        else:
            stub += v.correct
            if v.correct:
                failures.append(f"{q.id} prompt-only stub passed")
    n = len(qs)
    return {
        "benchmark": name,
        "problems": n,
        "canonical_pass": canonical,
        "stub_pass": stub,
        "ok": canonical == n and stub == 0,
        "failures": failures,
        "workers": workers,
        "wall_s": round(wall, 3),
        "grades_per_s": round(len(jobs) / wall, 2) if wall > 0 else None,
        "sandbox_ms_median": round(1000 * statistics.median(r.wall_s for r in runs), 1) if runs else 0.0,
        "startup_ms_median": round(1000 * statistics.median(r.startup_s for r in runs), 1) if runs else 0.0,
        "bwrap": bool(bwrap_status()[0]),
    }
