"""MMLU-Pro (TIGER-Lab/MMLU-Pro, split test, 12,032 rows; validation: 70).

Row schema: question_id, question, options (list of up to 10), answer (the letter), answer_index,
cot_content, category, src. Question id `mmlu_pro-<question_id>`; gold = the letter (checked
against answer_index when both are given). The adapter option `hub_split="validation"` loads the
70 validation rows (the few-shot pool) from the Hub instead.
"""

from __future__ import annotations

from trinity.benchmarks.mmlu import MMLU, gold_letter
from trinity.benchmarks.sources import load_hub_rows, read_rows_file
from trinity.data.questions import Question
from trinity.errors import InputError
from trinity.grading.choice import LETTERS

REPO = "TIGER-Lab/MMLU-Pro"
HUB_SPLITS = ("test", "validation")


class MMLUPro(MMLU):
    name = "mmlu_pro"
    kind = "mc"
    source = f"{REPO} (test)"
    size = "12,032 questions (10 options)"
    licence = "MIT"
    grader = "mc: the committed option letter (A-J)"
    required_fields: tuple[str, ...] = ("question_id", "question", "options", "answer")

    def read_rows(self, data, hub_split: str = "test", **opts):
        if hub_split not in HUB_SPLITS:
            raise InputError(f"MMLU-Pro split {hub_split!r}: use test or validation")
        return read_rows_file(data, "MMLU-Pro") if data else load_hub_rows(REPO, None, hub_split, self.revision)

    def to_questions(self, rows, where, **opts):
        out, seen = [], set()
        for i, row in enumerate(rows):
            self.check_fields(row, i, where)
            options = row["options"]
            if not isinstance(options, list) or not 2 <= len(options) <= len(LETTERS):
                raise InputError(f"{where}: row {i} 'options' must be a list of 2-{len(LETTERS)} options")
            gold = gold_letter(row["answer"], len(options), where, i)
            idx = row.get("answer_index")
            if isinstance(idx, int) and not isinstance(idx, bool) and LETTERS.find(gold) != idx:
                raise InputError(f"{where}: row {i} answer {row['answer']!r} disagrees with answer_index {idx}")
            qid = f"mmlu_pro-{row['question_id']}"
            if qid in seen:
                raise InputError(f"{where}: question_id {row['question_id']!r} appears twice")
            seen.add(qid)
            extra: dict[str, str | list[str]] = {"choices": [str(c) for c in options]}
            for k in ("category", "src"):
                if row.get(k):
                    extra[k] = str(row[k])
            out.append(Question(qid, self.name, str(row["question"]).strip(), gold, "mc", extra))
        return out

    def render_question(self, q: Question) -> str:
        category = str(q.extra.get("category") or "")
        head = f"The following is a multiple-choice question about {category}.\n\n" if category else ""
        options = "\n".join(f"{LETTERS[j]}) {c}" for j, c in enumerate(q.extra.get("choices") or []))
        return f"{head}{q.question}\n\n{options}"
