"""BFCL simple: one Python function, one call (Berkeley Function-Calling Leaderboard, 400 rows).

Files: `BFCL_v3_simple.json` and `possible_answer/BFCL_v3_simple.json` on the Hub
(gorilla-llm/Berkeley-Function-Calling-Leaderboard); the `bfcl-eval` package ships the same
problems as `bfcl_eval/data/BFCL_v4_simple_python.json` (+ `possible_answer/`), which is read from
disk when that package is installed (it is never imported: see trinity.grading.funcall).

Question rows: id, question ([[{"role": "user", "content"}]]), function ([schema]). Answer rows:
id, ground_truth ([{name: {param: [possible values]}}]). A local source: the question file, with
its `possible_answer/<same name>` beside it (the repository's layout), a folder holding both, or
one file whose rows already carry `ground_truth`. Question id `bfcl_simple-<id>`.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from trinity.benchmarks.base import Benchmark
from trinity.benchmarks.sources import download_hub_file, read_rows_file
from trinity.data.questions import Question
from trinity.errors import InputError
from trinity.grading.funcall import check_gold

REPO = "gorilla-llm/Berkeley-Function-Calling-Leaderboard"
HUB_FILE = "BFCL_v3_simple.json"
PACKAGE_FILE = "BFCL_v4_simple_python.json"


def package_data() -> Path | None:
    """bfcl-eval's shipped question file, when that package is installed (not imported)."""
    try:
        spec = importlib.util.find_spec("bfcl_eval")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        f = Path(root) / "data" / PACKAGE_FILE
        if f.is_file() and (f.parent / "possible_answer" / PACKAGE_FILE).is_file():
            return f
    return None


class BFCLSimple(Benchmark):
    name = "bfcl_simple"
    kind = "funcall"
    source = f"{REPO} ({HUB_FILE} + possible_answer/), or the bfcl-eval package's {PACKAGE_FILE}"
    size = "400 problems"
    licence = "Apache-2.0"
    grader = "funcall: AST match of the one call (name, required/unknown params, types, possible values)"
    required_fields = ("id", "question", "function")

    def read_rows(self, data, **opts):
        if data is None:
            shipped = package_data()
            if shipped is not None:
                return self._join(shipped, shipped.parent / "possible_answer" / shipped.name)
            q = download_hub_file(REPO, HUB_FILE, self.revision)
            a = download_hub_file(REPO, f"possible_answer/{HUB_FILE}", self.revision)
            return self._join(q, a)
        path = Path(data)
        if path.is_dir():
            for name in (PACKAGE_FILE, HUB_FILE):
                if (path / name).is_file():
                    return self._join(path / name, path / "possible_answer" / name)
            raise InputError(f"{path}: no {HUB_FILE} or {PACKAGE_FILE} in this folder")
        rows = read_rows_file(path, "BFCL")
        if all("ground_truth" in r for r in rows):
            return rows
        return self._join(path, path.parent / "possible_answer" / path.name, rows)

    @staticmethod
    def _join(qfile: Path, afile: Path, rows: list[dict] | None = None) -> list[dict]:
        rows = rows if rows is not None else read_rows_file(qfile, "BFCL")
        if not afile.is_file():
            raise InputError(
                f"{qfile}: rows lack ground_truth and {afile} is missing — pass the question file "
                "with possible_answer/<same name> beside it"
            )
        answers = {str(a.get("id")): a for a in read_rows_file(afile, "BFCL possible answers")}
        for r in rows:
            a = answers.get(str(r.get("id")))
            if a is None:
                raise InputError(f"{afile}: no possible answer for {r.get('id')!r}")
            r["ground_truth"] = a.get("ground_truth")
        return rows

    def to_questions(self, rows, where, **opts):
        out, seen = [], set()
        for i, row in enumerate(rows):
            self.check_fields(row, i, where)
            text = _user_text(row["question"])
            if not text:
                raise InputError(f"{where}: row {i} has no user message in 'question'")
            gold = {"function": row["function"], "ground_truth": row.get("ground_truth")}
            try:
                check_gold(gold)
            except InputError as e:
                raise InputError(f"{where}: row {i} ({row['id']}): {e}") from None
            qid = f"bfcl_simple-{row['id']}"
            if qid in seen:
                raise InputError(f"{where}: id {row['id']!r} appears twice")
            seen.add(qid)
            out.append(Question(qid, self.name, text, gold, "funcall", {}))
        return out

    def render_question(self, q: Question) -> str:
        schema = json.dumps(
            q.answer.get("function") if isinstance(q.answer, dict) else [], indent=1, ensure_ascii=False
        )
        return f"{q.question}\n\nYou can call this function (JSON schema):\n```json\n{schema}\n```"

    def answer_instruction(self, q: Question | None = None) -> str:
        return (
            "End with the one function call that fulfils the request, with keyword arguments, in a "
            "fenced block: ```python\nfunction_name(param=value, ...)\n```"
        )

    def offline(self):
        f = package_data()
        return (
            (True, f"from the installed bfcl-eval package ({f})")
            if f
            else (False, "pass --data FILE (the question file, possible_answer/ beside it), or install bfcl-eval")
        )


def _user_text(question) -> str:
    """The user's message in BFCL's [[{"role", "content"}]] (a plain string is taken as is)."""
    if isinstance(question, str):
        return question.strip()
    turns = question[0] if isinstance(question, list) and question and isinstance(question[0], list) else question
    if not isinstance(turns, list):
        return ""
    texts = [str(m.get("content", "")) for m in turns if isinstance(m, dict) and m.get("role") == "user"]
    return "\n".join(t.strip() for t in texts if t.strip())
