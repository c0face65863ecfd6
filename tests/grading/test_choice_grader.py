"""Multiple-choice extraction: the committed letter that ends last wins; English is not a letter."""

from __future__ import annotations

import pytest

from trinity.errors import InputError
from trinity.grading import extract_choice, grade
from trinity.grading.choice import normalize_gold_letter

EXTRACTIONS = [
    # answer phrases
    ("The answer is (C)", "C"),
    ("The answer is C.", "C"),
    ("Answer: C", "C"),
    ("answer: d", "D"),
    ("final answer: c", "C"),
    ("Final Answer: B", "B"),
    ("The final answer is: (A)", "A"),
    ("The correct answer is **B**.", "B"),
    ("The correct option is (b).", "B"),
    ("The best choice is D", "D"),
    ("So the answer would be E.", "E"),
    ("Answer = J", "J"),
    ("The answer is option C.", "C"),
    ("The answer is $C$.", "C"),
    ("The answer is \\text{C}.", "C"),
    ("I choose D", "D"),
    ("I pick option b", "B"),
    ("the answer is A because the others fail", "A"),
    # boxed and bold
    ("\\boxed{C}", "C"),
    ("$\\boxed{\\text{B}}$", "B"),
    ("\\boxed{(D)}", "D"),
    ("so \\boxed{c}", "C"),
    ("**C**", "C"),
    ("Therefore: **(A)**", "A"),
    ("**D.**", "D"),
    # a line that is only the letter
    ("Reasoning...\n\nB", "B"),
    ("Reasoning...\n(C)\n", "C"),
    ("C", "C"),
    # the last commitment wins
    ("Answer: (A) 42\nActually, the answer is C", "C"),
    ("The answer is B. Wait, no: \\boxed{D}", "D"),
    ("\\boxed{D} ... on reflection the answer is A.", "A"),
    ("Option B is wrong, option C is weak. The answer is D.", "D"),
    ("Answer: I think B is right. So the answer is **B**", "B"),
    # article / pronoun are not answers
    ("The answer is a bit tricky", None),
    ("Answer: I think it depends", None),
    ("I think the answer is a combination of factors", None),
    ("the answer is I.", "I"),
    ("final answer: a", "A"),
    # no commitment
    ("Option B is wrong.", None),
    ("Because of this, the result follows.", None),
    ("A) Venus\nB) Mars", None),
    ("The answer is Cat", None),
    ("", None),
    ("I don't know.", None),
]


def test_enough_extraction_cases():
    assert len(EXTRACTIONS) >= 40


@pytest.mark.parametrize("text,want", EXTRACTIONS, ids=[f"{i}" for i in range(len(EXTRACTIONS))])
def test_extract_choice(text, want):
    assert extract_choice(text) == want


def test_letters_outside_the_options_are_not_answers():
    assert extract_choice("The answer is E", letters="ABCD") is None
    assert extract_choice("The answer is B. Hmm, or E", letters="ABCD") == "B"


@pytest.mark.parametrize(
    "response,gold,correct,reason",
    [
        ("The answer is (C)", "C", True, "match"),
        ("The answer is (C)", "B", False, "answered C, gold B"),
        ("Answer: b", "(B)", True, "match"),
        ("Answer: B", 1, True, "match"),
        ("no idea", "A", False, "no committed answer letter"),
    ],
)
def test_grade_mc(response, gold, correct, reason):
    v = grade("mc", response, gold)
    assert (v.correct, v.reason) == (correct, reason)


def test_bad_gold_is_an_input_error():
    with pytest.raises(InputError, match="multiple-choice gold"):
        grade("mc", "Answer: A", "Z")
    with pytest.raises(InputError, match="multiple-choice gold"):
        grade("mc", "Answer: A", True)
    assert normalize_gold_letter(" c ") == "C"
    assert normalize_gold_letter(10) is None


def test_unknown_kind_is_an_input_error():
    with pytest.raises(InputError, match="unknown grading kind"):
        grade("essay", "text", "x")


def test_hostile_text_does_not_backtrack():
    import time

    t = time.process_time()
    for text in (
        "answer is " + "*" * 5000 + "!",
        "answer is" + " " * 20000 + "x",
        "answer is: " * 5000,
        "**" * 20000,
        "\n".join(" " * 1000 for _ in range(100)),
    ):
        assert extract_choice(text) is None
    assert extract_choice("answer is " + "*" * 40 + "B") is None  # too much decoration to be a commitment
    assert time.process_time() - t < 2.0
