"""IFEval (google/IFEval, split train, 541 prompts).

Row schema: key, prompt, instruction_id_list, kwargs (one object per instruction; the Hub's rows
list every argument name, mostly null). Question id `ifeval-<key>`. Gold =
{"instruction_id_list", "kwargs", "prompt"}: graded by Google's instruction checkers
(`trinity.grading.ifeval`, prompt-level strict accuracy).
"""

from __future__ import annotations

from trinity.benchmarks.base import Benchmark
from trinity.benchmarks.sources import load_hub_rows, read_rows_file
from trinity.data.questions import Question
from trinity.errors import InputError, TrinityError
from trinity.grading.ifeval import NEEDS_PUNKT, PUNKT_HINT, check_gold, punkt_available

REPO = "google/IFEval"


class IFEval(Benchmark):
    name = "ifeval"
    kind = "ifeval"
    source = f"{REPO} (train)"
    size = "541 prompts, 25 instruction types"
    licence = "Apache-2.0"
    grader = "ifeval: Google's instruction checkers (if-verifiable), all instructions followed (strict)"
    required_fields = ("key", "prompt", "instruction_id_list", "kwargs")

    def read_rows(self, data, **opts):
        return read_rows_file(data, "IFEval") if data else load_hub_rows(REPO, None, "train", self.revision)

    def to_questions(self, rows, where, **opts):
        out, seen = [], set()
        for i, row in enumerate(rows):
            self.check_fields(row, i, where)
            ids, kwargs = row["instruction_id_list"], row["kwargs"]
            if not isinstance(ids, list) or not isinstance(kwargs, list):
                raise InputError(f"{where}: row {i} instruction_id_list and kwargs must be lists")
            gold = {
                "instruction_id_list": [str(x) for x in ids],
                "kwargs": [
                    {k: v for k, v in (kw or {}).items() if v is not None} if isinstance(kw, dict) else kw
                    for kw in kwargs
                ],
                "prompt": str(row["prompt"]),
            }
            try:
                check_gold(gold)
            except InputError as e:
                raise InputError(f"{where}: row {i}: {e}") from None
            qid = f"ifeval-{row['key']}"
            if qid in seen:
                raise InputError(f"{where}: key {row['key']!r} appears twice")
            seen.add(qid)
            out.append(Question(qid, self.name, str(row["prompt"]), gold, "ifeval", {}))
        return out

    def answer_instruction(self, q: Question | None = None) -> str:
        return (
            "Your reply is checked, exactly as written, against every instruction in the request: "
            "write only the response itself."
        )

    def preflight(self, questions):
        needing = [
            q.id
            for q in questions
            if isinstance(q.answer, dict) and NEEDS_PUNKT & set(q.answer.get("instruction_id_list") or [])
        ]
        if needing and not punkt_available():
            raise TrinityError(
                f"{len(needing)} IFEval question(s) ({', '.join(needing[:3])}"
                f"{' …' if len(needing) > 3 else ''}) use a checker that needs NLTK's punkt_tab "
                f"data, which is not installed: {PUNKT_HINT}"
            )

    def offline(self):
        note = "pass --data FILE (google/IFEval rows)"
        if not punkt_available():
            note += f"; {len(NEEDS_PUNKT)} of the 25 checkers need NLTK punkt_tab, not installed here"
        return False, note
