"""`trinity grade` on a small cases file, per-line error records, and `trinity doctor`."""

from __future__ import annotations

import json
from pathlib import Path

from trinity_main import trinity_main

from trinity.benchmarks import get_benchmark
from trinity.cli import main
from trinity.data.questions import Question
from trinity.grading import grade_question

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "benchmarks"

LCB_GOLD = next(
    q.answer
    for q in get_benchmark("livecodebench").load(data=str(FIX / "livecodebench"))
    if q.id == "livecodebench-3901"
)
LCB_WRONG = (
    "```python\nclass Solution:\n    def maxEven(self, nums):\n"
    "        return max(x for x in nums if x % 2 == 0)\n```"
)  # crashes when there is no even
CASES = [
    {"benchmark": "math500", "response": "so \\boxed{\\dfrac{1}{2}}", "gold": "\\frac12"},
    {"benchmark": "math500", "response": "so \\boxed{1000001}", "gold": "1000000"},
    {"benchmark": "mmlu", "response": "The answer is (C).", "gold": "B"},
    {"benchmark": "mmlu", "response": "Thinking...\nAnswer: b", "gold": "B"},
    {"benchmark": "practice", "kind": "math", "response": "\\boxed{391}", "gold": "391"},
    {"benchmark": "mc", "response": "**D**", "gold": "D", "choices": ["1", "2", "3", "4"]},
    # a LiveCodeBench functional problem as the adapter emits it (fn_name + JSON-argument tests)
    {"benchmark": "livecodebench", "response": LCB_WRONG, "gold": LCB_GOLD},
]
EXPECTED = [True, False, False, True, True, True, False]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_grade_cases_file_to_out(tmp_path, capsys):
    cases = _write(tmp_path / "cases.jsonl", [json.dumps(c) for c in CASES])
    out = tmp_path / "verdicts.jsonl"
    assert main(["grade", str(cases), "--out", str(out), "--jobs", "2"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["correct"] for r in rows] == EXPECTED
    for case, row in zip(CASES, rows):
        assert {k: row[k] for k in case} == case  # the input is kept as it was
        assert isinstance(row["reason"], str) and row["reason"]
    assert rows[0]["extracted"] == "\\dfrac{1}{2}" and rows[2]["extracted"] == "C"
    assert rows[1]["reason"] == "different number"
    assert rows[6]["reason"].startswith("test 2/2: runtime error")  # functional path ran; test 1 passed
    err = capsys.readouterr().err
    assert "graded 7 cases: 4 correct (57.1%)" in err
    assert "mmlu 1/2" in err


def test_bad_lines_become_error_records_and_a_nonzero_exit(tmp_path, capsys):
    lines = [
        json.dumps(CASES[0]),
        '{"benchmark": "math500", "resp',  # torn
        json.dumps({"benchmark": "practice", "response": "Answer: B", "gold": "B"}),  # no kind
        json.dumps({"benchmark": "mmlu", "response": "Answer: B", "gold": "Z"}),  # bad gold
        json.dumps({"benchmark": "math500", "gold": "1"}),  # no response
        json.dumps(["not", "an", "object"]),
        "",
        json.dumps(CASES[3]),
    ]
    cases = _write(tmp_path / "cases.jsonl", lines)
    out = tmp_path / "v.jsonl"
    assert main(["grade", str(cases), "--out", str(out)]) == 2
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 7
    assert rows[0]["correct"] and rows[-1]["correct"]
    errors = {r["line"]: r["error"] for r in rows if "error" in r}
    assert set(errors) == {2, 3, 4, 5, 6}
    assert "not valid JSON" in errors[2]
    assert 'needs a "kind" field' in errors[3]
    assert "multiple-choice gold" in errors[4]
    assert "missing field 'response'" in errors[5]
    assert "expected a JSON object" in errors[6]
    assert all(r["correct"] is False for r in rows if "error" in r)
    err = capsys.readouterr().err
    assert "error: 5 line(s) could not be graded (first: line 2: not valid JSON" in err


def test_grade_to_stdout_and_missing_file(tmp_path, capsys):
    cases = _write(tmp_path / "c.jsonl", [json.dumps(CASES[3])])
    assert main(["grade", str(cases)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and json.loads(out[0])["correct"] is True
    assert main(["grade", str(tmp_path / "nope.jsonl")]) == 2
    assert "error: cases file not found" in capsys.readouterr().err


def test_grade_question_uses_kind_and_choice_count():
    q = Question("mmlu-0", "mmlu", "Which?", "B", "mc", {"choices": ["a", "b", "c", "d"]})
    assert grade_question(q, "Answer: B").correct
    # E is not one of four options, so the earlier commitment to B stands
    assert grade_question(q, "Answer: B. Or maybe the answer is E").correct


def test_doctor_reports_the_facts():
    rc, out, err = trinity_main(["doctor"])
    assert rc == 0, err
    for topic in ("python", "torch", "math-verify", "bwrap", "sandbox: separate process", "HF hub", "HF cache"):
        assert topic in out
    hub = next(line for line in out.splitlines() if line.startswith("HF hub "))
    # without --network nothing is probed, and the line says so instead of claiming "online"
    assert "online mode" not in hub and ("was not checked" in hub or "offline" in hub), hub
    assert " OFF " not in out and "— " not in out.split("sandbox:")[1].splitlines()[0]


def test_a_kind_alone_names_the_grader(tmp_path, capsys):
    # CONTRACTS: a line carries "benchmark" or "kind"; a kind-only line is graded, not an error.
    lines = [
        json.dumps({"kind": "math", "response": "so x = \\boxed{5}", "gold": "5"}),
        json.dumps({"kind": "mc", "response": "Answer: C", "gold": "B"}),
        json.dumps({"response": "5", "gold": "5"}),
    ]
    out = tmp_path / "v.jsonl"
    assert main(["grade", str(_write(tmp_path / "c.jsonl", lines)), "--out", str(out)]) == 2
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["correct"] is True and rows[1]["correct"] is False and "error" not in rows[1]
    assert "missing field 'benchmark' (or 'kind'" in rows[2]["error"]
    assert "math 1/1, mc 0/1" in capsys.readouterr().err
