"""trinity.grading — one entry point for every grader (docs/CONTRACTS.md, Grading).

    grade(kind, response, gold) -> Verdict        kind in math | mc | code | exact | ifeval | funcall
    grade_question(question, response) -> Verdict uses question.kind (and its choices for mc)
    extract_answer(kind, text) -> str | None      what the grader would look at (None: no answer)
    describe_gold(kind, gold) -> str              the gold as a miner reads it (traces, the app)

code gold: LiveCodeBench tests ({"tests": [...]}) or HumanEval's {"prompt", "test", "entry_point"};
exact: {"target", "form"} (BBH); ifeval: {"instruction_id_list", "kwargs"}; funcall:
{"function": [schema], "ground_truth": [...]} (BFCL simple).

Importing this package is cheap: sympy / math-verify load on the first math comparison and the
code sandbox on the first code grade.
"""

from __future__ import annotations

import json
from typing import Any

from trinity.data.kinds import KINDS  # one list of kinds (a module with no imports)
from trinity.errors import InputError, TrinityError
from trinity.grading.choice import LETTERS, extract_choice, grade_choice, normalize_gold_letter
from trinity.grading.exact import FORMS, final_segment, grade_exact
from trinity.grading.funcall import extract_calls, grade_funcall
from trinity.grading.ifeval import grade_ifeval
from trinity.grading.mathgrade import extract_math_answer, grade_math
from trinity.grading.verdict import Verdict

__all__ = ["KINDS", "Verdict", "grade", "grade_question", "extract_answer", "extract_math_answer", "extract_choice"]


def _grade_code(response: str, gold: Any) -> Verdict:
    # lazy: brings the code sandbox (+0.7 s import under load), kept off the CLI start
    from trinity.grading.humaneval import grade_check

    if not isinstance(gold, dict):
        raise InputError(
            'code gold must be {"tests": [{"input", "output", "testtype"}, ...], '
            '"fn_name"?: str} (or a LiveCodeBench row)'
        )
    if "entry_point" in gold:  # HumanEval: its own check(candidate) tests
        return grade_check(response, gold)
    try:
        # lazy: a missing module is reported, not raised at import
        from trinity.grading.code import grade_code
    except ModuleNotFoundError as e:
        if e.name == "trinity.grading.code":
            raise TrinityError(
                "code grading is unavailable: trinity.grading.code is missing (reinstall minertui)"
            ) from None
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
    if kind == "exact":
        if not isinstance(gold, dict) or gold.get("form") not in FORMS or not str(gold.get("target", "")).strip():
            raise InputError(
                f'exact-match gold must be {{"target": str, "form": one of {", ".join(FORMS)}}}, got {gold!r}'[:300]
            )
        return grade_exact(response, gold)
    if kind == "ifeval":
        return grade_ifeval(response, gold)
    if kind == "funcall":
        return grade_funcall(response, gold)
    raise InputError(f"unknown grading kind {kind!r}: use one of {', '.join(KINDS)}")


def grade_question(question, response: str) -> Verdict:
    """Grade a response to a `trinity.data.questions.Question` with the grader its kind names."""
    letters = LETTERS
    if question.kind == "mc":
        choices = question.extra.get("choices")
        if isinstance(choices, list) and 2 <= len(choices) <= len(LETTERS):
            letters = LETTERS[: len(choices)]
    return grade(question.kind, response, question.answer, letters)


def extract_answer(kind: str, text: str) -> str | None:
    """The answer a grader would look at in `text` for the newer kinds (exact, ifeval, funcall;
    math, mc and code extraction live with the session loop's), or None when there is none."""
    if not isinstance(text, str) or not text.strip():
        return None
    if kind == "exact":
        return final_segment(text) or None
    if kind == "ifeval":  # the whole response is what the instructions are checked on
        return text
    if kind == "funcall":
        calls = extract_calls(text)
        return (
            json.dumps([{"name": n, "arguments": a} for n, a in calls], ensure_ascii=False, default=str)
            if calls
            else None
        )
    raise InputError(f"extract_answer: unknown kind {kind!r}")


def describe_gold(kind: str | None, gold: Any) -> str:
    """The gold in a line a miner reads: BBH's target, IFEval's instruction ids, BFCL's expected
    call; anything else as text (a string as is, other values as JSON)."""
    if kind == "exact" and isinstance(gold, dict) and "target" in gold:
        return f"{gold['target']} ({str(gold.get('form', '')).replace('_', '/')})"
    if kind == "ifeval" and isinstance(gold, dict) and isinstance(gold.get("instruction_id_list"), list):
        return "follow: " + ", ".join(map(str, gold["instruction_id_list"]))
    if (
        kind == "funcall"
        and isinstance(gold, dict)
        and isinstance(gold.get("ground_truth"), list)
        and gold["ground_truth"]
        and isinstance(gold["ground_truth"][0], dict)
    ):
        ((name, params),) = list(gold["ground_truth"][0].items())[:1]
        parts = []
        for p, options in params.items() if isinstance(params, dict) else []:
            shown = [
                json.dumps(o, ensure_ascii=False)
                for o in (options if isinstance(options, list) else [options])
                if o != ""
            ]
            optional = isinstance(options, list) and "" in options
            parts.append(f"{p}={'|'.join(shown)}" + ("?" if optional else ""))
        return f"{name}({', '.join(parts)})"
    if kind == "code" and isinstance(gold, dict) and "entry_point" in gold:
        return f"check({gold['entry_point']}) tests"
    return gold if isinstance(gold, str) else json.dumps(gold, ensure_ascii=False)
