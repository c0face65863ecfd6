"""BBH exact match: the final answer, read in the task's own form, against the target."""

from __future__ import annotations

import pytest

from trinity.errors import InputError
from trinity.grading import extract_answer, grade
from trinity.grading.exact import BBH_TASK_FORMS, extract_exact, normalize_target

# (response, target, form, correct)
CASES = [
    # choice: the option letter, however it is written
    ("Tomorrow is 03/06/2020. So the answer is (A).", "(A)", "choice", True),
    ("Answer: A", "(A)", "choice", True),
    ("The answer is **(C)**.", "(C)", "choice", True),
    ("\\boxed{B}", "(B)", "choice", True),
    ("Step 1 ... (R) pink is the last one.\nAnswer: (R)", "(R)", "choice", True),  # 18 options
    ("Option (A) looks right, but checking again the answer is (B).", "(A)", "choice", False),  # the last wins
    ("I cannot decide between the options.", "(A)", "choice", False),
    # true_false
    ("not True is False, and False and True is False. So the answer is False.", "False", "true_false", True),
    ("Answer: **True**", "True", "true_false", True),
    ("The answer is False", "True", "true_false", False),
    ("Answer: It is true that", "True", "true_false", True),
    # yes_no (sports_understanding's targets are lower case)
    ("A goalkeeper can catch the ball in the box. Answer: Yes", "yes", "yes_no", True),
    ("Answer: No, because the player is a tennis player.", "No", "yes_no", True),
    ("Answer: No", "Yes", "yes_no", False),
    ("Answer: maybe", "Yes", "yes_no", False),
    # valid_invalid: "invalid" is never read as "valid"
    ("The argument is deductively valid. Answer: valid", "valid", "valid_invalid", True),
    ("Answer: invalid", "valid", "valid_invalid", False),
    ("Answer: invalid", "invalid", "valid_invalid", True),
    # integer
    ("(-1 + 2) = 1, (3 - 5) = -2, 1 * -2 = -2. So the answer is -2.", "-2", "integer", True),
    ("I count 7 items.\nAnswer: 7", "7", "integer", True),
    ("\\boxed{1,024}", "1024", "integer", True),
    ("Answer: 7.0", "7", "integer", True),
    ("Answer: 7.5", "7", "integer", False),
    ("Answer: -2", "2", "integer", False),
    ("Answer: 12", "1", "integer", False),
    # brackets (dyck_languages): spacing ignored, order matters
    ("We must close ( then { then [. Answer: ) } ]", ") } ]", "brackets", True),
    ("Answer: )}]", ") } ]", "brackets", True),
    ("Answer: ] } )", ") } ]", "brackets", False),
    # words (word_sorting)
    ("Sorted: Answer: apple mango pear", "apple mango pear", "words", True),
    ("Answer: apple, mango, pear", "apple mango pear", "words", True),
    ("Answer: Apple Mango Pear", "apple mango pear", "words", True),
    ("Answer: apple pear mango", "apple mango pear", "words", False),
    ("", "apple", "words", False),
]


@pytest.mark.parametrize("response,target,form,correct", CASES)
def test_table(response, target, form, correct):
    v = grade("exact", response, {"target": target, "form": form})
    assert v.correct is correct, (response, v)


def test_every_bbh_task_has_a_form_and_targets_normalise():
    assert len(BBH_TASK_FORMS) == 27
    assert normalize_target("(b)", "choice") == "(B)"
    assert normalize_target("yes", "yes_no") == "Yes"
    assert normalize_target("] )", "brackets") == "] )"
    assert extract_exact("Answer: -0", "integer") == "0"


def test_bad_gold_and_extraction():
    with pytest.raises(InputError, match="exact-match gold"):
        grade("exact", "Answer: 1", {"target": "1", "form": "number"})
    with pytest.raises(InputError, match="exact-match gold"):
        grade("exact", "Answer: 1", "1")
    assert extract_answer("exact", "work...\nAnswer: (B)") == "(B)"
    assert extract_answer("exact", "   ") is None


def test_grade_cli_takes_the_new_kinds_and_benchmarks(tmp_path, capsys):
    import json

    from trinity.cli import main

    cases = tmp_path / "c.jsonl"
    lines = [
        {"benchmark": "bbh", "response": "Answer: (B)", "gold": {"target": "(B)", "form": "choice"}},
        {
            "kind": "funcall",
            "response": "f(a=1)",
            "gold": {
                "function": [
                    {"name": "f", "parameters": {"properties": {"a": {"type": "integer"}}, "required": ["a"]}}
                ],
                "ground_truth": [{"f": {"a": [2]}}],
            },
        },
        {
            "benchmark": "ifeval",
            "response": "no commas here",
            "gold": {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
        },
    ]
    cases.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "v.jsonl"
    assert main(["grade", str(cases), "--out", str(out)]) == 0
    got = [json.loads(x)["correct"] for x in out.read_text().splitlines()]
    assert got == [True, False, True]
