"""The practice benchmark: the small shipped set of math / multiple-choice / code questions
(`trinity.practice.simulation.practice_questions`), for the offline demo and the tests. Its pool is
SIMULATED; the questions themselves are ordinary and graded by the real graders."""

from __future__ import annotations

from trinity.benchmarks.base import Benchmark
from trinity.data.questions import load_questions


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
        if data:
            qs = load_questions(data)  # our Questions JSONL
        else:
            from trinity.practice.simulation import practice_questions

            qs = practice_questions()
        return qs[:limit] if limit else qs
