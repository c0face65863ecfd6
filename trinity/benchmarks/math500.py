"""MATH-500 (HuggingFaceH4/MATH-500, split test, 500 rows).

Row schema: problem, solution, answer, subject, level, unique_id. Question id `math500-<row>`
(the row's index in the test split, as the TinyRouter matrices use).
"""

from __future__ import annotations

from trinity.benchmarks.base import Benchmark
from trinity.benchmarks.sources import load_hub_rows, read_rows_file
from trinity.data.questions import Question
from trinity.errors import InputError

REPO = "HuggingFaceH4/MATH-500"


class Math500(Benchmark):
    name = "math500"
    kind = "math"
    source = f"{REPO} (test)"
    size = "500 problems"
    licence = "MIT"
    grader = "math: math-verify + sympy equivalence of the \\boxed{} answer"
    required_fields = ("problem", "answer")

    def read_rows(self, data, **opts):
        return read_rows_file(data, "MATH-500") if data else load_hub_rows(REPO, None, "test")

    def to_questions(self, rows, where, **opts):
        out = []
        for i, row in enumerate(rows):
            self.check_fields(row, i, where)
            answer = row["answer"]
            if not isinstance(answer, (str, int, float)) or isinstance(answer, bool) or str(answer).strip() == "":
                raise InputError(f"{where}: row {i} has an empty or non-text 'answer'")
            extra = {k: row[k] for k in ("subject", "level", "unique_id") if row.get(k) is not None}
            out.append(Question(f"math500-{i}", self.name, str(row["problem"]), str(answer).strip(), "math", extra))
        return out
