"""`trinity bench grading`: code-sandbox overhead per test, math-grader throughput.

Sandbox: a fixed stdin problem (read a number, print it) with 1 and with `--tests` tests, graded
`--repeats` times with bubblewrap on and off (where usable). Per problem: wall time from spawn to
verdict; the child reports the time it spent running the code, so
    overhead per test = (problem wall time − compute) / tests.
The CPU the sandbox's processes used per problem is reported too: on a busy machine the wall
time mostly measures waiting for a core.
Math: `trinity.grading.grade("math", …)` over a fixed list of cases: the first pass (memo cold),
then repeated passes (the grader memoises symbolic results).
"""

from __future__ import annotations

import json
import math
import os
import platform
import resource
import statistics
import time

# (response, gold, expected verdict): plain numbers, fractions, LaTeX forms, symbolic, wrong ones.
MATH_CASES = [
    (r"The answer is \boxed{42}.", "42", True),
    (r"So we get \boxed{\frac{1}{2}}", "1/2", True),
    (r"\boxed{0.5}", r"\frac12", True),
    (r"Therefore $x = \boxed{3}$.", "3", True),
    (r"\boxed{2\sqrt{2}}", r"\sqrt{8}", True),
    (r"\boxed{\dfrac{\pi}{4}}", r"\frac{\pi}{4}", True),
    (r"\boxed{(1, 2)}", "(1,2)", True),
    (r"The final answer is 1000.", "1000", True),
    (r"\boxed{1,000,000}", "1000000", True),
    (r"\boxed{x^2 + 2x + 1}", "(x+1)^2", True),
    (r"\boxed{\sqrt{3}/3}", r"\frac{1}{\sqrt{3}}", True),
    (r"\boxed{90^\circ}", "90", True),
    (r"\boxed{-7}", "-7", True),
    (r"\boxed{\frac{3}{4}}", "0.75", True),
    (r"\boxed{\frac{6}{8}}", r"\frac34", True),
    (r"\boxed{41}", "42", False),
    (r"\boxed{0.333}", r"\frac{1}{3}", False),
    (r"\boxed{\sqrt{2}}", r"\sqrt{3}", False),
    (r"\boxed{x^2 - 1}", "(x+1)^2", False),
    (r"I am not sure.", "5", False),
    (r"\boxed{1000001}", "1000000", False),
    (r"\boxed{(2, 1)}", "(1,2)", False),
    (r"\boxed{\frac{\pi}{3}}", r"\frac{\pi}{4}", False),
    (r"\boxed{12}", r"\text{twelve}", False),
]

ECHO = "import sys\nprint(sys.stdin.readline().strip())"


def register(sub) -> None:
    p = sub.add_parser("grading", help="code-sandbox overhead per test (bwrap on/off), math grader throughput")
    p.add_argument("--tests", type=int, default=10, help="tests per problem in the multi-test case")
    p.add_argument("--repeats", type=int, default=12, help="problems timed per configuration")
    p.add_argument("--math-passes", type=int, default=5, help="passes over the math cases after the first")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _p90(xs: list[float]) -> float:
    """Nearest-rank 90th percentile (the largest of fewer than 10 samples)."""
    return sorted(xs)[math.ceil(0.9 * len(xs)) - 1]


def _sandbox_figures(use_bwrap: bool, n_tests: int, repeats: int) -> dict:
    from trinity.grading.code import grade_code_run

    gold = {"tests": [{"input": f"{k}\n", "output": f"{k}\n", "testtype": "stdin"} for k in range(n_tests)]}
    grade_code_run(ECHO, gold, use_bwrap=use_bwrap)  # warm the page cache
    walls, overheads, startups, cpus = [], [], [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        verdict, run = grade_code_run(ECHO, gold, use_bwrap=use_bwrap)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if not verdict.correct:
            raise RuntimeError(f"benchmark problem failed: {verdict.reason}")
        walls.append(wall)
        overheads.append((wall - run.compute_s) / n_tests)
        startups.append(run.startup_s)
    return {
        "tests_per_problem": n_tests,
        "problems": repeats,
        "problem_wall_ms_median": round(1000 * statistics.median(walls), 1),
        "overhead_per_test_ms_median": round(1000 * statistics.median(overheads), 2),
        "overhead_per_test_ms_p90": round(1000 * _p90(overheads), 2),
        "startup_ms_median": round(1000 * statistics.median(startups), 1),
        # CPU the sandbox processes used (bwrap, interpreter, harness, code): what a problem
        # costs when it does not wait for a core on a busy machine
        # (not with bubblewrap: its pid-1 reaper does not pass its children's CPU time up)
        "child_cpu_ms_per_problem_median": None if use_bwrap else round(1000 * statistics.median(cpus), 1),
    }


def _math_figures(passes: int) -> dict:
    try:
        from trinity.grading import grade
        from trinity.grading import mathgrade
    except ImportError as e:  # the math grader belongs to another part; say so, don't fail
        return {"available": False, "why": f"trinity.grading math grader not importable: {e}"}
    cache = getattr(mathgrade, "_symbolic_cached", None)
    if cache is not None and hasattr(cache, "cache_clear"):
        cache.cache_clear()
    t0 = time.perf_counter()
    grade("math", r"\boxed{\sqrt{4}}", "2")  # first call: imports sympy / math-verify
    warm_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    verdicts = [grade("math", r, g).correct for r, g, _ in MATH_CASES]
    cold_s = time.perf_counter() - t0
    mismatches = [i for i, (v, (_, _, want)) in enumerate(zip(verdicts, MATH_CASES)) if v != want]
    t0 = time.perf_counter()
    for _ in range(passes):
        for r, g, _ in MATH_CASES:
            grade("math", r, g)
    rep_s = time.perf_counter() - t0
    return {
        "available": True,
        "cases": len(MATH_CASES),
        "first_call_s": round(warm_s, 3),  # includes importing sympy / math-verify
        "cold_cases_per_s": round(len(MATH_CASES) / cold_s, 1),
        "memoised_cases_per_s": round(passes * len(MATH_CASES) / rep_s, 1) if passes else None,
        "verdicts_matching_expected": len(MATH_CASES) - len(mismatches),
        "mismatched_cases": mismatches,
    }


def run(args) -> int:
    from trinity.errors import InputError
    from trinity.grading.sandbox import bwrap_status

    if args.tests < 1 or args.repeats < 1 or args.math_passes < 0:
        raise InputError("--tests and --repeats must be >= 1, --math-passes >= 0")
    usable, why = bwrap_status()
    result: dict = {
        "machine": {"cpus": os.cpu_count(), "loadavg_1m": round(os.getloadavg()[0], 2),
                    "python": platform.python_version(), "root": os.geteuid() == 0},
        "bwrap": {"usable": usable, "note": why},
        "sandbox": {},
    }
    for label, use in (("bwrap", True), ("plain", False)):
        if use and not usable:
            result["sandbox"][label] = {"skipped": why}
            continue
        result["sandbox"][label] = {
            "one_test": _sandbox_figures(use, 1, args.repeats),
            "many_tests": _sandbox_figures(use, args.tests, args.repeats),
        }
    result["math"] = _math_figures(args.math_passes)
    result["machine"]["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"machine: {result['machine']}")
    for label, figs in result["sandbox"].items():
        if "skipped" in figs:
            print(f"sandbox {label}: skipped ({figs['skipped']})")
            continue
        for f in figs.values():
            print(f"sandbox {label:5s} {f['tests_per_problem']:3d} tests: problem {f['problem_wall_ms_median']} ms, "
                  f"overhead/test {f['overhead_per_test_ms_median']} ms (p90 {f['overhead_per_test_ms_p90']}), "
                  f"start-up {f['startup_ms_median']} ms"
                  + (f", child CPU {f['child_cpu_ms_per_problem_median']} ms/problem"
                     if f["child_cpu_ms_per_problem_median"] is not None else ""))
    m = result["math"]
    if m["available"]:
        print(f"math: {m['cold_cases_per_s']} cases/s cold, {m['memoised_cases_per_s']} cases/s memoised, "
              f"first call {m['first_call_s']} s, {m['verdicts_matching_expected']}/{m['cases']} as expected")
    else:
        print(f"math: unavailable ({m['why']})")
    return 0
