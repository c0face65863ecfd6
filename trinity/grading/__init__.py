"""trinity.grading — one entry point for every grader (DESIGN §6).

    grade(kind, response, gold) -> Verdict        kind in math | mc | code
    grade_question(question, response) -> Verdict uses question.kind (and its choices for mc)

Importing this package is cheap: sympy / math-verify load on the first math comparison and the
code sandbox on the first code grade.
"""

from __future__ import annotations

from typing import Any

from trinity.errors import InputError, TrinityError
from trinity.grading.choice import LETTERS, extract_choice, grade_choice, normalize_gold_letter
from trinity.grading.mathgrade import extract_math_answer, grade_math
from trinity.grading.verdict import Verdict

KINDS = ("math", "mc", "code")

__all__ = ["KINDS", "Verdict", "grade", "grade_question", "extract_math_answer", "extract_choice"]


def _grade_code(response: str, gold: Any) -> Verdict:
    if not isinstance(gold, dict):
        raise InputError('code gold must be {"tests": [{"input", "output", "testtype"}, ...], '
                         '"fn_name"?: str} (or a LiveCodeBench row)')
    try:
        from trinity.grading.code import grade_code
    except ModuleNotFoundError as e:
        if e.name == "trinity.grading.code":
            raise TrinityError("code grading is unavailable: trinity.grading.code is missing "
                               "(reinstall minertui)") from None
        raise
    return grade_code(response, gold)


def grade(kind: str, response: str, gold: Any, letters: str = LETTERS) -> Verdict:
    """Grade one response. `gold`: the answer string (math), the letter (mc), the tests (code)."""
    if response is None:
        response = ""
    if not isinstance(response, str):
        raise InputError(f"response must be a string, got {type(response).__name__}")
    if kind == "math":
        if gold is None or isinstance(gold, (dict, list, bool)):
            raise InputError(f"math gold must be an answer string, got {gold!r}")
        return grade_math(response, str(gold))
    if kind == "mc":
        if normalize_gold_letter(gold) is None:
            raise InputError(f"multiple-choice gold must be one letter A-J (or an index 0-9), got {gold!r}")
        return grade_choice(response, gold, letters)
    if kind == "code":
        return _grade_code(response, gold)
    raise InputError(f"unknown grading kind {kind!r}: use one of {', '.join(KINDS)}")


def grade_question(question, response: str) -> Verdict:
    """Grade a response to a `trinity.data.questions.Question` with the grader its kind names."""
    letters = LETTERS
    if question.kind == "mc":
        choices = question.extra.get("choices")
        if isinstance(choices, list) and 2 <= len(choices) <= len(LETTERS):
            letters = LETTERS[: len(choices)]
    return grade(question.kind, response, question.answer, letters)
