"""BIG-Bench Hard (lukaemon/bbh: one config per task, split test; 27 tasks, 6,511 rows).

Row schema: input, target. The Hub's rows do not name their task (each config is one task), so a
local source says it one of three ways:
  - a folder of per-task files named after the task: `<task>.json` in the original repository's
    form (`{"examples": [{"input", "target"}, …]}`) or `<task>.jsonl` / `.parquet` HF rows;
  - one file whose rows carry a `task` field (e.g. an export of several configs);
  - one file named after its task (`date_understanding.jsonl`).

Question id `bbh-<task>-<row>` (the row's index within its task). Gold = {"target", "form"}: the
target as BBH writes it and the task's answer form (`trinity.grading.exact.BBH_TASK_FORMS`),
graded by exact match in that form.
"""

from __future__ import annotations

import json
from pathlib import Path

from trinity.benchmarks.base import Benchmark
from trinity.benchmarks.sources import load_hub_rows, read_rows_file
from trinity.data.questions import Question
from trinity.errors import InputError
from trinity.grading.exact import BBH_TASK_FORMS

REPO = "lukaemon/bbh"
TASKS = tuple(sorted(BBH_TASK_FORMS))

FORM_INSTRUCTIONS = {
    "choice": "the option in parentheses, e.g. (B)",
    "true_false": "True or False",
    "yes_no": "Yes or No",
    "valid_invalid": "valid or invalid",
    "integer": "an integer",
    "brackets": "only the closing brackets that complete the sequence, separated by spaces",
    "words": "the words in sorted order, separated by spaces",
}


def _task_of(name: str, where: str) -> str:
    if name not in BBH_TASK_FORMS:
        raise InputError(f"{where}: unknown BBH task {name!r} (one of {', '.join(TASKS[:3])}, … — 27 in all)")
    return name


def _read_task_file(path: Path, task: str) -> list[dict]:
    if path.suffix == ".json":
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InputError(f"{path}: not valid JSON ({type(e).__name__})") from None
        if isinstance(obj, dict):  # the original repository's {"examples": [...]}
            obj = obj.get("examples")
        if not isinstance(obj, list) or not all(isinstance(r, dict) for r in obj):
            raise InputError(f'{path}: expected {{"examples": [{{"input", "target"}}, …]}} or a JSON array')
        rows = [dict(r) for r in obj]
    else:
        rows = read_rows_file(path, f"BBH {task}")
    for r in rows:
        r["task"] = task
    return rows


class BBH(Benchmark):
    name = "bbh"
    kind = "exact"
    source = f"{REPO} (27 task configs, test)"
    size = "6,511 questions in 27 tasks"
    licence = "MIT"
    grader = (
        "exact: the task's answer form (option letter, True/False, Yes/No, valid/invalid, integer, "
        "brackets, sorted words)"
    )
    required_fields = ("input", "target", "task")

    def read_rows(self, data, tasks: list[str] | None = None, **opts):
        wanted = [_task_of(t, "--tasks") for t in tasks] if tasks else list(TASKS)
        if data is None:
            rows = []
            for task in wanted:
                for r in load_hub_rows(REPO, task, "test", self.revision):
                    rows.append({**r, "task": task})
            return rows
        path = Path(data)
        if path.is_dir():
            rows = []
            for task in wanted:
                files = [path / f"{task}{ext}" for ext in (".json", ".jsonl", ".parquet")]
                found = [f for f in files if f.exists()]
                if found:
                    rows += _read_task_file(found[0], task)
            if not rows:
                raise InputError(f"{path}: no BBH task files (<task>.json / .jsonl / .parquet, e.g. {TASKS[0]}.json)")
            return rows
        if path.stem in BBH_TASK_FORMS:
            return _read_task_file(path, path.stem)
        rows = read_rows_file(path, "BBH")
        return [r for r in rows if not tasks or r.get("task") in wanted]

    def to_questions(self, rows, where, **opts):
        out: list[Question] = []
        index: dict[str, int] = {}
        for i, row in enumerate(rows):
            if "task" not in row:
                raise InputError(
                    f"{where}: row {i} has no task: give each row a 'task' field, name the file "
                    "after its task, or pass a folder of <task>.json files"
                )
            self.check_fields(row, i, where)
            task = _task_of(str(row["task"]), f"{where}: row {i}")
            target = str(row["target"]).strip()
            if not target:
                raise InputError(f"{where}: row {i} has an empty target")
            k = index.get(task, 0)
            index[task] = k + 1
            gold = {"target": target, "form": BBH_TASK_FORMS[task]}
            out.append(Question(f"bbh-{task}-{k}", self.name, str(row["input"]).strip(), gold, "exact", {"task": task}))
        return out

    def answer_instruction(self, q: Question | None = None) -> str:
        if q is None:
            return "Think step by step, then end with a line of the form 'Answer: <answer>'."
        form = q.answer["form"] if isinstance(q.answer, dict) else "choice"
        return (
            f"Think step by step, then end with a line of the form 'Answer: <answer>', where "
            f"<answer> is {FORM_INSTRUCTIONS[form]}."
        )
