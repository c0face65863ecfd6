"""The practice benchmark: the small shipped set of math / multiple-choice / code questions
(`practice_questions`), for the offline demo and the tests. Its pool is SIMULATED
(`trinity.practice`, which sits above this package and reads the questions from here); the
questions themselves are ordinary and graded by the real graders."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from trinity.benchmarks.base import Benchmark
from trinity.data.questions import Question, load_questions

QUESTIONS_FILE = Path(__file__).parents[1] / "data" / "practice_questions.jsonl"


@lru_cache(maxsize=1)
def _questions() -> tuple[Question, ...]:
    return tuple(load_questions(QUESTIONS_FILE))


def practice_questions() -> list[Question]:
    """The 60 shipped practice questions (20 math, 20 multiple choice, 20 coding)."""
    return list(_questions())


class Practice(Benchmark):
    name = "practice"
    kind = None  # mixed: each question says its kind
    source = "shipped with minertui (trinity/data/practice_questions.jsonl)"
    size = "60 questions (math, multiple choice, code)"
    licence = "minertui's own (written for it)"
    grader = "by each question's kind (math, mc, code)"

    def offline(self):
        return True, "shipped with minertui"

    def load(self, data=None, limit=None, **opts):
        qs = load_questions(data) if data else practice_questions()  # data: our Questions JSONL
        return qs[:limit] if limit else qs
