"""The adapter interface every benchmark implements.

b = get_benchmark("mmlu")
qs = b.load(data="mmlu_test.parquet")      # or data=None: the HF Hub through `datasets`
b.render_question(qs[0])                   # the question text a model sees
b.answer_instruction(qs[0])                # how the Worker must end its answer
b.prompt(qs[0], role="Worker")             # both (Thinker/Verifier: the question only)
b.grade(qs[0], response) -> Verdict
b.split(qs, seed) -> {"train", "val", "test"}
"""

from __future__ import annotations

from typing import Any

from trinity.data.questions import Question, split_ids
from trinity.errors import InputError
from trinity.grading import Verdict, grade_question

ANSWER_INSTRUCTIONS = {
    "math": "Reason step by step, then give the final answer in \\boxed{...} at the end "
    "(only the answer inside the box).",
    "mc": "End with a line of the form 'Answer: X', where X is the letter of the correct option.",
    "code": "Give the complete Python 3 solution in one fenced ```python code block at the end of your answer.",
}


class Benchmark:
    name: str = ""
    kind: str | None = None  # None: questions of several kinds (practice)
    source: str = ""  # where rows come from, for `trinity benchmarks list`
    size: str = ""  # the full dataset's size, in words
    licence: str = ""  # the dataset's licence
    grader: str = ""  # which grader decides, in words
    # The dataset repo's revision the Hub loads (None: its main branch — no commit of these
    # repos could be verified from a machine without the Hub; pass --data for a fixed copy).
    revision: str | None = None
    required_fields: tuple[str, ...] = ()

    # -- loading ---------------------------------------------------------------------------------
    def load(self, data: str | None = None, limit: int | None = None, **opts: Any) -> list[Question]:
        """All questions (ids stable across runs), from `data` (a local file) or the Hub."""
        rows = self.read_rows(data, **opts)
        questions = self.to_questions(rows, where=str(data) if data else self.source, **opts)
        if limit is not None:
            if limit < 1:
                raise InputError(f"--limit must be >= 1, got {limit}")
            questions = questions[:limit]
        return questions

    def read_rows(self, data: str | None, **opts: Any) -> list[dict]:
        raise NotImplementedError

    def to_questions(self, rows: list[dict], where: str, **opts: Any) -> list[Question]:
        raise NotImplementedError

    def check_fields(self, row: dict, index: int, where: str) -> None:
        missing = [f for f in self.required_fields if f not in row]
        if missing:
            raise InputError(
                f"{where}: row {index} lacks {', '.join(missing)} — {self.name} rows have "
                f"{', '.join(self.required_fields)} (the dataset's own schema)"
            )

    # -- prompting -------------------------------------------------------------------------------
    def render_question(self, q: Question) -> str:
        return q.question

    def answer_instruction(self, q: Question | None = None) -> str:
        kind = q.kind if q is not None else self.kind
        if kind is None:
            raise ValueError(f"{self.name} mixes kinds: pass the question to answer_instruction()")
        return ANSWER_INSTRUCTIONS[kind]

    def prompt(self, q: Question, role: str = "Worker") -> str:
        """The question, then (for the role that answers: the Worker) how to end the answer.
        A Thinker plans and a Verifier checks; neither is asked for the final-answer format."""
        if role in ("Thinker", "Verifier"):
            return self.render_question(q)
        how = self.answer_instruction(q)
        return f"{self.render_question(q)}\n\n{how}" if how else self.render_question(q)

    # -- grading and splits ----------------------------------------------------------------------
    def gold(self, q: Question) -> Any:
        return q.answer

    def grade(self, q: Question, response: str) -> Verdict:
        return grade_question(q, response)

    def split(self, questions: list[Question], seed: int) -> dict[str, list[str]]:
        return split_ids(questions, seed)

    def preflight(self, questions: list[Question]) -> None:
        """Raise a TrinityError now if these questions cannot be graded on this machine (so a
        collect or a live run fails before its first paid call). Default: nothing to check."""

    def offline(self) -> tuple[bool, str]:
        """(usable on this machine without the Hub and without --data, how / what to pass)."""
        return False, "pass --data FILE (the dataset's own rows)"

    def describe(self) -> dict[str, Any]:
        ok, how = self.offline()
        return {
            "name": self.name,
            "kind": self.kind or "mixed",
            "source": self.source,
            "revision": self.revision,
            "licence": self.licence,
            "size": self.size,
            "grader": self.grader,
            "offline": ok,
            "offline_note": how,
        }
