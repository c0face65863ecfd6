"""`trinity bench grading`: code-sandbox overhead per test, math-grader throughput.

Sandbox: a fixed stdin problem (read a number, print it) with 1 and with `--tests` tests, graded
`--repeats` times with bubblewrap on and off (where usable). Per problem: wall time from spawn to
verdict; the child reports the time it spent running the code, so
    overhead per test = (problem wall time − compute) / tests.
The CPU the sandbox's processes used per problem is reported too: on a busy machine the wall
time mostly measures waiting for a core.
Math: `trinity.grading.grade("math", …)` over a fixed list of cases: the first pass (memo cold),
then repeated passes (the grader memoises symbolic results).
Per benchmark (issue 17): cases/s of each benchmark's grader over a fixed list of right and wrong
responses (`BENCH_CASES`; the first call, which imports the grader's libraries, is timed apart).
HumanEval: the first `--humaneval-problems` shipped problems, each canonical solution and each
prompt-only stub graded in the sandbox, one at a time (overhead per problem = wall − the time
the child spent in check()) and `--workers` at a time (throughput).
"""

from __future__ import annotations

import json
import math
import os
import platform
import resource
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from trinity.benchmarks import get_benchmark
from trinity.errors import InputError
from trinity.grading import grade

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

_TRI = {
    "function": [
        {
            "name": "area",
            "parameters": {
                "type": "dict",
                "properties": {"base": {"type": "integer"}, "height": {"type": "integer"}, "unit": {"type": "string"}},
                "required": ["base", "height"],
            },
        }
    ],
    "ground_truth": [{"area": {"base": [10], "height": [5], "unit": ["cm", ""]}}],
}
_IF = [
    (["punctuation:no_comma"], [{}]),
    (
        ["length_constraints:number_words", "change_case:english_lowercase"],
        [{"relation": "at least", "num_words": 8}, {}],
    ),
    (["detectable_format:json_format"], [{}]),
    (["startend:end_checker", "keywords:existence"], [{"end_phrase": "Any questions?"}, {"keywords": ["plan"]}]),
    (["detectable_format:number_highlighted_sections", "detectable_format:title"], [{"num_highlights": 2}, {}]),
]
_IF_TEXT = [
    "a plan for the week with no commas at all",
    "Here is my plan, step by step.",
    '```json\n{"plan": ["rest", "work"]}\n```',
    "<<Plan>>\nthe *first* part and the *second* part. Any questions?",
]

# What a model writes before its answer (about 1,600 characters), so that extraction scans a
# response of a realistic length; prefixed to every case but IFEval's (whose text is the point).
_REASONING = (
    "Let me work through this carefully. First, restate what is being asked and list the facts "
    "given. Each option (or step) can be checked against those facts in turn; where two of them "
    "seem to agree, compare them on the detail that differs. "
) * 6 + "\n\n"

# benchmark -> (kind, [(response, gold, letters or None)]): right and wrong answers in each form.
BENCH_CASES: dict[str, tuple[str, list]] = {
    "gpqa": (
        "mc",
        [
            (r, g, "ABCD")
            for r, g in [
                ("Answer: B", "B"),
                ("The answer is (C).", "C"),
                ("**D**", "A"),
                ("I cannot tell.", "B"),
                ("\\boxed{A}", "A"),
                ("Answer: D", "C"),
            ]
        ],
    ),
    "mmlu_pro": (
        "mc",
        [
            (r, g, "ABCDEFGHIJ")
            for r, g in [
                ("Answer: J", "J"),
                ("the answer is (G)", "G"),
                ("Answer: E", "F"),
                ("Option I is right: Answer: I", "I"),
                ("no idea", "A"),
                ("\\boxed{H}", "H"),
            ]
        ],
    ),
    "aime": (
        "math",
        [
            (r, g, None)
            for r, g in [
                ("\\boxed{376}", "376"),
                ("\\boxed{025}", "25"),
                ("so \\boxed{70}.", "70"),
                ("\\boxed{71}", "70"),
                ("The answer is 9.", "9"),
                ("\\boxed{\\frac{1}{2}}", "1"),
            ]
        ],
    ),
    "bbh": (
        "exact",
        [
            (r, {"target": t, "form": f}, None)
            for r, t, f in [
                ("So the answer is (A).", "(A)", "choice"),
                ("Answer: False", "True", "true_false"),
                ("Answer: Yes", "yes", "yes_no"),
                ("Answer: invalid", "invalid", "valid_invalid"),
                ("... = -2. So the answer is -2.", "-2", "integer"),
                ("Answer: ) } ]", ") } ]", "brackets"),
                ("Answer: apple mango pear", "apple mango pear", "words"),
                ("Answer: pear apple", "apple pear", "words"),
            ]
        ],
    ),
    "ifeval": (
        "ifeval",
        [(t, {"instruction_id_list": ids, "kwargs": kw, "prompt": "p"}, None) for ids, kw in _IF for t in _IF_TEXT],
    ),
    "bfcl_simple": (
        "funcall",
        [
            (r, _TRI, None)
            for r in [
                "area(base=10, height=5)",
                '{"name": "area", "arguments": {"base": 10, "height": 5, "unit": "cm"}}',
                "```python\narea(base=10, height=6)\n```",
                "area(10, 5)",
                "area(base=10)",
                "The area is 25.",
                "[area(base=10, height=5), area(base=1, height=1)]",
                "area(base=10.0, height=5)",
            ]
        ],
    ),
}


def register(sub) -> None:
    p = sub.add_parser(
        "grading",
        help="code-sandbox overhead per test (bwrap on/off), math grader throughput, "
        "per-benchmark grading rates, HumanEval sandbox overhead",
    )
    p.add_argument("--tests", type=int, default=10, help="tests per problem in the multi-test case")
    p.add_argument("--repeats", type=int, default=12, help="problems timed per configuration")
    p.add_argument("--math-passes", type=int, default=5, help="passes over the math cases after the first")
    p.add_argument("--bench-passes", type=int, default=20, help="passes over each benchmark's cases (default 20)")
    p.add_argument(
        "--humaneval-problems",
        type=int,
        default=40,
        help="shipped HumanEval problems graded (canonical + stub each; default 40, 164 = all)",
    )
    p.add_argument("--workers", type=int, default=2, help="sandboxes at once for the HumanEval throughput (default 2)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _p90(xs: list[float]) -> float:
    """Nearest-rank 90th percentile (the largest of fewer than 10 samples)."""
    return sorted(xs)[math.ceil(0.9 * len(xs)) - 1]


def _sandbox_figures(use_bwrap: bool, n_tests: int, repeats: int) -> dict:
    from trinity.grading.code import grade_code_run  # lazy: brings the code sandbox, kept off the CLI start

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
        if run is None or not verdict.correct:  # None: no code was found to run
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
        from trinity.grading import grade, mathgrade  # lazy: a missing module is reported, not raised at import
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


def _benchmark_rates(passes: int) -> dict:
    out = {}
    for name, (kind, cases) in BENCH_CASES.items():

        def one_pass(kind=kind, cases=cases):
            return [
                grade(kind, _REASONING + r, g, letters).correct
                if letters
                else grade(kind, (_REASONING if kind != "ifeval" else "") + r, g).correct
                for r, g, letters in cases
            ]

        t0 = time.perf_counter()
        first = one_pass()  # imports the grader's libraries (if-verifiable, sympy …)
        first_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(passes):
            if one_pass() != first:
                raise RuntimeError(f"{name}: the grader gave different verdicts on a repeat")
        rep_s = time.perf_counter() - t0
        out[name] = {
            "kind": kind,
            "cases": len(cases),
            "right": sum(first),
            "first_pass_s": round(first_s, 3),
            "cases_per_s": round(passes * len(cases) / rep_s, 1) if passes and rep_s > 0 else None,
        }
    return out


def _humaneval_figures(n_problems: int, workers: int) -> dict:
    qs = get_benchmark("humaneval").load()[:n_problems]
    jobs = [(q, q.extra["canonical_solution"], True) for q in qs] + [(q, q.question, False) for q in qs]

    def one(job):
        from trinity.grading.humaneval import grade_check_run  # lazy: brings the code sandbox, kept off the CLI start

        return grade_check_run(job[1], job[0].answer)

    one(jobs[0])  # warm the page cache
    t0 = time.perf_counter()
    serial = [one(j) for j in jobs]
    serial_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as ex:
        parallel = list(ex.map(one, jobs))
    parallel_s = time.perf_counter() - t0
    runs = [r for _, r in serial if r is not None]
    overheads = [r.wall_s - r.compute_s for r in runs]
    right = [v.correct == want for (v, _), (_, _, want) in zip(serial, jobs)]
    return {
        "problems": len(qs),
        "grades": len(jobs),
        "verdicts_as_expected": sum(right),
        "parallel_verdicts_same": [v.correct for v, _ in parallel] == [v.correct for v, _ in serial],
        "serial_grades_per_s": round(len(jobs) / serial_s, 2),
        "parallel_grades_per_s": round(len(jobs) / parallel_s, 2),
        "workers": workers,
        "sandbox_overhead_ms_per_problem_median": round(1000 * statistics.median(overheads), 1),
        "sandbox_overhead_ms_per_problem_p90": round(1000 * _p90(overheads), 1),
        "startup_ms_median": round(1000 * statistics.median(r.startup_s for r in runs), 1),
        "check_compute_ms_median": round(1000 * statistics.median(r.compute_s for r in runs), 2),
    }


def run(args) -> int:
    from trinity.grading.sandbox import bwrap_status  # lazy: the code sandbox, kept off the CLI start

    if args.tests < 1 or args.repeats < 1 or args.math_passes < 0:
        raise InputError("--tests and --repeats must be >= 1, --math-passes >= 0")
    if args.bench_passes < 0 or not 1 <= args.humaneval_problems <= 164 or args.workers < 1:
        raise InputError("--bench-passes must be >= 0, --humaneval-problems in 1..164, --workers >= 1")
    usable, why = bwrap_status()
    result: dict = {
        "machine": {
            "cpus": os.cpu_count(),
            "loadavg_1m": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
            "root": os.geteuid() == 0,
        },
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
    result["benchmarks"] = _benchmark_rates(args.bench_passes)
    result["humaneval"] = _humaneval_figures(args.humaneval_problems, args.workers)
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
            print(
                f"sandbox {label:5s} {f['tests_per_problem']:3d} tests: problem {f['problem_wall_ms_median']} ms, "
                f"overhead/test {f['overhead_per_test_ms_median']} ms (p90 {f['overhead_per_test_ms_p90']}), "
                f"start-up {f['startup_ms_median']} ms"
                + (
                    f", child CPU {f['child_cpu_ms_per_problem_median']} ms/problem"
                    if f["child_cpu_ms_per_problem_median"] is not None
                    else ""
                )
            )
    m = result["math"]
    if m["available"]:
        print(
            f"math: {m['cold_cases_per_s']} cases/s cold, {m['memoised_cases_per_s']} cases/s memoised, "
            f"first call {m['first_call_s']} s, {m['verdicts_matching_expected']}/{m['cases']} as expected"
        )
    else:
        print(f"math: unavailable ({m['why']})")
    for name, b in result["benchmarks"].items():
        print(
            f"{name:12s} ({b['kind']}): {b['cases_per_s']} cases/s over {b['cases']} cases "
            f"({b['right']} right), first pass {b['first_pass_s']} s"
        )
    h = result["humaneval"]
    print(
        f"humaneval: {h['problems']} problems x (canonical + stub), {h['verdicts_as_expected']}/{h['grades']} as "
        f"expected; sandbox overhead {h['sandbox_overhead_ms_per_problem_median']} ms/problem "
        f"(p90 {h['sandbox_overhead_ms_per_problem_p90']}, start-up {h['startup_ms_median']} ms, check() "
        f"{h['check_compute_ms_median']} ms); {h['serial_grades_per_s']} grades/s serial, "
        f"{h['parallel_grades_per_s']} with {h['workers']} workers"
    )
    return 0
