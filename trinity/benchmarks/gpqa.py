"""GPQA-Diamond (Idavidrein/gpqa, config `gpqa_diamond`, split train, 198 rows; gated on the Hub:
accept its terms and log in with `huggingface-cli login`, or pass --data).

Row schema (the dataset's CSV columns): Question, Correct Answer, Incorrect Answer 1,
Incorrect Answer 2, Incorrect Answer 3, Subdomain, High-level domain, Record ID, … Question id
`gpqa-<row>` (the row's index, as the TinyRouter loader numbers them).

The four options are shuffled per row with `random.Random(seed_of_row)` where the row's seed is
its index plus `shuffle_seed` (default 0 — the order TinyRouter's loader produces, so matrices
line up); the question records `shuffle_seed`, `option_order` (the original index of each
shown option: 0 = the correct answer) and the resulting gold letter. The published questions
never show the correct answer in a fixed place.
"""

from __future__ import annotations

import random

from trinity.benchmarks.mmlu import MMLU
from trinity.benchmarks.sources import load_hub_rows, read_rows_file
from trinity.data.questions import Question
from trinity.errors import InputError
from trinity.grading.choice import LETTERS

REPO = "Idavidrein/gpqa"
CONFIG = "gpqa_diamond"
ANSWER_COLUMNS = ("Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")


def option_order(row_index: int, shuffle_seed: int = 0) -> list[int]:
    """The original option indices in the order shown (0 is the correct answer)."""
    order = list(range(len(ANSWER_COLUMNS)))
    random.Random(row_index + shuffle_seed).shuffle(order)
    return order


class GPQA(MMLU):
    name = "gpqa"
    kind = "mc"
    source = f"{REPO} ({CONFIG}, train; gated)"
    size = "198 questions (Diamond)"
    licence = "CC BY 4.0"
    grader = "mc: the committed option letter (A-D, options shuffled per row, seeded)"
    required_fields: tuple[str, ...] = ("Question", *ANSWER_COLUMNS)

    def read_rows(self, data, **opts):
        return read_rows_file(data, "GPQA") if data else load_hub_rows(REPO, CONFIG, "train", self.revision)

    def to_questions(self, rows, where, shuffle_seed: int = 0, **opts):
        if not isinstance(shuffle_seed, int) or isinstance(shuffle_seed, bool):
            raise InputError(f"GPQA shuffle_seed must be an integer, got {shuffle_seed!r}")
        out = []
        for i, row in enumerate(rows):
            self.check_fields(row, i, where)
            options = [str(row[c]).strip() if row[c] is not None else "" for c in ANSWER_COLUMNS]
            if any(not o for o in options):
                raise InputError(f"{where}: row {i} has an empty answer option")
            order = option_order(i, shuffle_seed)
            extra = {"choices": [options[j] for j in order], "option_order": order, "shuffle_seed": shuffle_seed}
            for src, dst in (("Subdomain", "subdomain"), ("High-level domain", "domain"), ("Record ID", "record_id")):
                if row.get(src):
                    extra[dst] = str(row[src])
            out.append(
                Question(f"gpqa-{i}", self.name, str(row["Question"]).strip(), LETTERS[order.index(0)], "mc", extra)
            )
        return out

    def render_question(self, q: Question) -> str:
        options = "\n".join(f"{LETTERS[j]}) {c}" for j, c in enumerate(q.extra.get("choices") or []))
        return f"{q.question}\n\n{options}"
