"""Property tests: extraction never raises, grading is deterministic, integers compare exactly."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from trinity.grading import extract_math_answer, grade

FAST = settings(max_examples=150, deadline=None)
latexish = st.lists(
    st.sampled_from(list("0123456789{}\\$ ,./-^x=abcfrqtxbo\n") + ["\\boxed{", "\\frac", "\\sqrt", "}", "\\text{"]),
    max_size=60,
)


@FAST
@given(st.text(max_size=300))
def test_extract_never_raises_on_arbitrary_text(text):
    out = extract_math_answer(text)
    assert out is None or (isinstance(out, str) and out.strip())


@FAST
@given(latexish)
def test_extract_never_raises_on_latex_fragments(parts):
    text = "".join(parts)
    out = extract_math_answer(text)
    assert out is None or isinstance(out, str)


@settings(max_examples=60, deadline=None)
@given(latexish, st.sampled_from(["42", "\\frac{1}{2}", "x=3", "(1,2]", "2\\sqrt{2}"]))
def test_grading_is_deterministic(parts, gold):
    text = "".join(parts)
    first = grade("math", text, gold)
    assert grade("math", text, gold) == first


@FAST
@given(st.integers(-(10**12), 10**12), st.integers(-(10**12), 10**12))
def test_integers_are_equal_only_when_equal(a, b):
    v = grade("math", f"so \\boxed{{{a}}}", str(b))
    assert v.correct is (a == b)


@FAST
@given(st.integers(1, 999), st.integers(1, 999))
def test_fraction_spellings_agree_and_decimals_are_exact(p, q):
    frac = Fraction(p, q)
    assert grade("math", f"\\boxed{{\\dfrac{{{p}}}{{{q}}}}}", f"{frac.numerator}/{frac.denominator}").correct
    dec = f"{p / q:.3f}"
    assert grade("math", f"\\boxed{{{dec}}}", f"\\frac{{{p}}}{{{q}}}").correct is (Fraction(dec) == frac)
