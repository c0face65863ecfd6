"""MMLU (cais/mmlu, config `all`, split test, 14,042 rows).

Row schema: question, subject, choices (list of 4), answer (int 0–3). Question id `mmlu-<row>`
(the row's index in the `all` test split, as the TinyRouter matrices use — so pass the whole
split, not a subset, when ids must match a matrix). Gold = the letter.
"""

from __future__ import annotations

from trinity.benchmarks.base import Benchmark
from trinity.benchmarks.sources import load_hub_rows, read_rows_file
from trinity.data.questions import Question
from trinity.errors import InputError
from trinity.grading.choice import LETTERS

REPO = "cais/mmlu"


def gold_letter(answer, n_choices: int, where: str, i: int) -> str:
    if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < n_choices:
        return LETTERS[answer]
    if isinstance(answer, str):
        s = answer.strip().upper()
        if s.isdigit() and int(s) < n_choices:
            return LETTERS[int(s)]
        if len(s) == 1 and s in LETTERS[:n_choices]:
            return s
    raise InputError(f"{where}: row {i} has answer {answer!r}; expected an index 0-{n_choices - 1}")


class MMLU(Benchmark):
    name = "mmlu"
    kind = "mc"
    source = f"{REPO} (all, test)"
    size = "14,042 questions"
    licence = "MIT"
    grader = "mc: the committed option letter"
    required_fields: tuple[str, ...] = ("question", "choices", "answer")

    def read_rows(self, data, **opts):
        return read_rows_file(data, "MMLU") if data else load_hub_rows(REPO, "all", "test")

    def to_questions(self, rows, where, **opts):
        out = []
        for i, row in enumerate(rows):
            self.check_fields(row, i, where)
            choices = row["choices"]
            if not isinstance(choices, list) or not 2 <= len(choices) <= len(LETTERS):
                raise InputError(f"{where}: row {i} 'choices' must be a list of 2-{len(LETTERS)} options")
            gold = gold_letter(row["answer"], len(choices), where, i)
            extra = {"choices": [str(c) for c in choices]}
            if row.get("subject"):
                extra["subject"] = row["subject"]
            out.append(Question(f"mmlu-{i}", self.name, str(row["question"]), gold, "mc", extra))
        return out

    def render_question(self, q: Question) -> str:
        choices = q.extra.get("choices") or []
        subject = str(q.extra.get("subject") or "").replace("_", " ")
        head = f"The following is a multiple-choice question about {subject}.\n\n" if subject else ""
        options = "\n".join(f"{LETTERS[j]}) {c}" for j, c in enumerate(choices))
        return f"{head}{q.question}\n\n{options}"

    def answer_instruction(self, q: Question | None = None) -> str:
        n = len(q.extra.get("choices") or []) if q is not None else 4
        letters = LETTERS[: n or 4]
        listed = ", ".join(letters[:-1]) + f" or {letters[-1]}"
        return f"Think it through, then end with a line of the form 'Answer: X', where X is one letter ({listed})."
