"""AIME 2024 + 2025: 60 problems, integer answers 0-999.

Sources on the Hub: `Maxwell-Jia/AIME_2024` (split train, 30 rows: ID "2024-I-1", Problem,
Solution, Answer) and `opencompass/AIME2025` (configs AIME2025-I and AIME2025-II, split test,
15 rows each: question, answer). A local file may hold rows of either schema (mixed too):
problem text in `Problem` / `problem` / `question`, answer in `Answer` / `answer`, and an `ID` /
`id` when it has one.

Question id `aime-<ID>` (e.g. `aime-2024-I-1`, `aime-2025-II-15`); rows without an ID get
`aime-<row>`. Gold = the integer as a string without leading zeros ("042" is 42); a row whose
answer is not an integer in 0-999 is an error. Graded by the math grader on the \\boxed{} answer.
"""

from __future__ import annotations

import re

from trinity.benchmarks.base import Benchmark
from trinity.benchmarks.sources import load_hub_rows, read_rows_file
from trinity.data.questions import Question
from trinity.errors import InputError

REPO_2024 = "Maxwell-Jia/AIME_2024"
REPO_2025 = "opencompass/AIME2025"
CONFIGS_2025 = ("AIME2025-I", "AIME2025-II")
PROBLEM_FIELDS = ("Problem", "problem", "question")
ANSWER_FIELDS = ("Answer", "answer")


def _first(row: dict, fields: tuple[str, ...]):
    return next((row[f] for f in fields if row.get(f) is not None), None)


def integer_answer(value, where: str) -> str:
    s = str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if isinstance(value, float) and value.is_integer():
        s = str(int(value))
    if not re.fullmatch(r"\d{1,3}", s):
        raise InputError(f"{where}: AIME answer {value!r} is not an integer 0-999")
    return str(int(s))


class AIME(Benchmark):
    name = "aime"
    kind = "math"
    source = f"{REPO_2024} (train) + {REPO_2025} ({', '.join(CONFIGS_2025)}, test)"
    size = "60 problems (2024 I/II, 2025 I/II)"
    licence = "MIT (both dataset cards); the problems are the MAA's"
    grader = "math: the \\boxed{} integer, by the math grader"

    def read_rows(self, data, **opts):
        if data:
            return read_rows_file(data, "AIME")
        rows = load_hub_rows(REPO_2024, None, "train", self.revision)
        for config in CONFIGS_2025:
            part = load_hub_rows(REPO_2025, config, "test", self.revision)
            for k, row in enumerate(part, start=1):
                row.setdefault("ID", f"2025-{config.rsplit('-', 1)[1]}-{k}")
            rows += part
        return rows

    def to_questions(self, rows, where, **opts):
        out, seen = [], set()
        for i, row in enumerate(rows):
            problem, answer = _first(row, PROBLEM_FIELDS), _first(row, ANSWER_FIELDS)
            if problem is None or answer is None:
                raise InputError(
                    f"{where}: row {i} lacks a problem ({'/'.join(PROBLEM_FIELDS)}) or an answer "
                    f"({'/'.join(ANSWER_FIELDS)}) — AIME rows in the datasets' own schema"
                )
            gold = integer_answer(answer, f"{where}: row {i}")
            rid = _first(row, ("ID", "id"))
            qid = f"aime-{str(rid).strip()}" if rid is not None and str(rid).strip() else f"aime-{i}"
            if qid in seen:
                raise InputError(f"{where}: question id {qid!r} appears twice")
            seen.add(qid)
            extra = {"year": int(m.group(0))} if rid is not None and (m := re.match(r"(19|20)\d\d", str(rid))) else {}
            out.append(Question(qid, self.name, str(problem).strip(), gold, "math", extra))
        return out

    def answer_instruction(self, q: Question | None = None) -> str:
        return (
            "Reason step by step, then give the final answer — an integer from 0 to 999 — in "
            "\\boxed{...} at the end (only the number inside the box)."
        )
