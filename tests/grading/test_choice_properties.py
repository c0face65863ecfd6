"""Property tests for multiple-choice extraction."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from trinity.grading import extract_choice, grade

FAST = settings(max_examples=200, deadline=None)
# filler that commits to nothing: lower-case words without the commitment phrases
filler = st.lists(
    st.sampled_from(
        [
            "the",
            "options",
            "seem",
            "close",
            "we",
            "compare",
            "them",
            "carefully",
            "because",
            "first",
            "second",
            "is",
            "not",
            "obvious",
            ".",
        ]
    ),
    max_size=30,
)


@FAST
@given(st.text(max_size=400))
def test_extract_never_raises(text):
    out = extract_choice(text)
    assert out is None or (len(out) == 1 and out in "ABCDEFGHIJ")


@FAST
@given(
    filler,
    st.sampled_from("ABCDEFGHIJ"),
    st.sampled_from(["The answer is ({})", "Answer: {}", "\\boxed{{{}}}", "**{}**", "final answer: {}"]),
)
def test_a_commitment_after_filler_is_found(words, letter, template):
    text = " ".join(words) + "\n" + template.format(letter)
    assert extract_choice(text) == letter


@FAST
@given(filler, st.sampled_from("ABCD"), st.sampled_from("ABCD"))
def test_the_later_commitment_wins(words, first, last):
    text = f"Answer: {first}\n" + " ".join(words) + f"\nOn reflection, the answer is {last}."
    assert extract_choice(text) == last


@FAST
@given(st.text(max_size=200), st.sampled_from("ABCD"))
def test_grading_is_deterministic(text, gold):
    assert grade("mc", text, gold) == grade("mc", text, gold)
