"""A HumanEval answer cannot forge its own grade: `check(candidate)` runs in a process the
candidate's code does not share, so walking the stack (or the heap) to the reporter and sending
"done, ok" for a wrong function is graded wrong; a right answer still passes."""

from __future__ import annotations

import json
from pathlib import Path

from trinity.grading import grade

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks" / "humaneval_test.jsonl"
ROWS = [json.loads(line) for line in FIX.read_text().splitlines()]
ADD = {k: ROWS[0][k] for k in ("prompt", "test", "entry_point")}

# Finds the harness's reporter on the stack or the heap and reports a pass, then exits.
FORGERY = """
import sys, gc, os

def _forge():
    seen = []
    f = sys._getframe()
    while f is not None:
        seen += list(f.f_locals.values()) + list(f.f_globals.values())
        f = f.f_back
    seen += gc.get_objects()
    for o in seen:
        if type(o).__name__ == "Reporter" and hasattr(o, "send"):
            try:
                o.send("done", b"true", test=0, status="ok", error=None, secs=0.0)
                o.send("end")
            except BaseException:
                continue
            os._exit(0)

def add(a, b):
    _forge()
    return a - b  # wrong

_forge()
"""


def test_a_stack_walking_forgery_is_graded_wrong():
    v = grade("code", FORGERY, ADD)
    assert not v.correct, v.reason


def test_right_answers_cross_the_process_boundary():
    assert grade("code", "def add(a, b):\n    return a + b\n", ADD).correct
    # plain data of every kind comes back as the same value
    assert grade("code", "def add(a, b):\n    return float(a + b)\n", ADD).correct
    assert not grade("code", "def add(a, b):\n    return [a + b]\n", ADD).correct
    v = grade("code", "def add(a, b):\n    raise ValueError('no')\n", ADD)
    assert not v.correct and "ValueError" in v.reason
