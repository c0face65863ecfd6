"""Math grader: extraction, equivalence families, near misses that must stay wrong, deadlines."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from trinity.grading import extract_math_answer, grade
from trinity.grading.mathgrade import answers_equivalent, grade_math, last_boxed

B = "\\boxed"

# (gold, response, correct?)
EQUIVALENT = [
    # plain and exact
    ("42", "The answer is \\boxed{42}.", True),
    ("42", "so we get 42", True),
    ("-7", f"{B}{{-7}}", True),
    ("3.5", f"{B}{{3.50}}", True),
    ("0.5", f"{B}{{\\frac{{1}}{{2}}}}", True),
    ("0", f"{B}{{0}}", True),
    # fractions
    ("\\frac{1}{2}", f"{B}{{\\dfrac{{1}}{{2}}}}", True),
    ("\\frac{1}{2}", f"{B}{{\\tfrac12}}", True),
    ("\\frac{3}{4}", f"{B}{{3/4}}", True),
    ("\\frac{3}{4}", f"{B}{{0.75}}", True),
    ("\\frac{6}{8}", f"{B}{{\\frac{{3}}{{4}}}}", True),
    ("-\\frac{2}{3}", f"{B}{{-\\frac{{2}}{{3}}}}", True),
    ("-\\frac{2}{3}", f"{B}{{\\frac{{-2}}{{3}}}}", True),
    ("\\frac{14}{3}", "Thus the answer is 14/3", True),
    ("\\frac{1}{3}", "it equals $\\frac{1}{3}$", True),
    # roots
    ("2\\sqrt{2}", f"{B}{{\\sqrt{{8}}}}", True),
    ("3\\sqrt{13}", f"{B}{{3 \\sqrt{{13}}}}", True),
    ("\\frac{\\sqrt{3}}{2}", f"{B}{{\\frac{{1}}{{2}}\\sqrt{{3}}}}", True),
    ("\\sqrt{2}", f"{B}{{2^{{1/2}}}}", True),
    ("11\\sqrt2", f"{B}{{11\\sqrt{{2}}}}", True),
    # pi
    ("\\pi", f"{B}{{\\pi}}", True),
    ("2\\pi", f"{B}{{2 \\pi}}", True),
    ("\\frac{\\pi}{2}", f"{B}{{\\pi/2}}", True),
    ("4\\pi", f"{B}{{4\\pi \\text{{ square units}}}}", True),
    # degrees
    ("30^\\circ", f"{B}{{30}}", True),
    ("30", f"{B}{{30^\\circ}}", True),
    ("45", f"{B}{{45^{{\\circ}}}}", True),
    ("120", f"{B}{{120°}}", True),
    # percents
    ("50\\%", f"{B}{{50\\%}}", True),
    ("25\\%", f"{B}{{25}}", True),
    ("12.5", f"{B}{{12.5\\%}}", True),
    ("0.125", f"{B}{{12.5\\%}}", True),
    ("50\\%", f"{B}{{0.5}}", True),
    # text units
    ("10\\text{ cm}", f"{B}{{10}}", True),
    ("10", f"{B}{{10\\text{{ cm}}}}", True),
    ("5", f"{B}{{5 \\text{{ inches}}}}", True),
    ("\\text{Evelyn}", f"{B}{{\\text{{Evelyn}}}}", True),
    ("\\text{(C)}", f"{B}{{\\text{{(C)}}}}", True),
    # thousands separators
    ("1000000", f"{B}{{1,000,000}}", True),
    ("10{,}000", f"{B}{{10000}}", True),
    ("32348", f"{B}{{32,\\!348}}", True),
    ("1,234", "the total is 1234", True),
    # variables
    ("5", f"{B}{{x = 5}}", True),
    ("x=5", f"{B}{{5}}", True),
    ("x=5", f"{B}{{x=5}}", True),
    ("y = 2x + 3", f"{B}{{y=2x+3}}", True),
    # intervals and tuples
    ("(2,3)", f"{B}{{(2, 3)}}", True),
    ("[-2,7]", f"{B}{{[-2, 7]}}", True),
    ("(1,2]", f"{B}{{(1,2]}}", True),
    ("(-\\infty, 3)", f"{B}{{(-\\infty,3)}}", True),
    ("\\left( 3, \\frac{\\pi}{2} \\right)", f"{B}{{(3,\\frac{{\\pi}}{{2}})}}", True),
    ("(1, -2)", f"{B}{{(1,-2)}}", True),
    # dollars
    ("\\$5", f"{B}{{5}}", True),
    ("5", f"{B}{{\\$5}}", True),
    ("34", "The sale price is $\\$34$, so \\boxed{\\$34.00}", True),
    # algebraic forms
    ("x^2+7x+10", f"{B}{{(x+2)(x+5)}}", True),
    ("6 - 5i", f"{B}{{6-5i}}", True),
    ("p - q", f"{B}{{p-q}}", True),
    ("2^{10}", f"{B}{{1024}}", True),
    ("x^2", f"{B}{{x \\cdot x}}", True),
    ("2\\pi r", f"{B}{{2 r \\pi}}", True),
    (
        "\\begin{pmatrix} 2 \\\\ 4 \\end{pmatrix}",
        f"{B}{{\\begin{{pmatrix}}\\frac{{4}}{{2}}\\\\4\\end{{pmatrix}}}}",
        True,
    ),
    ("\\text{east}", f"{B}{{East}}", True),
    ("\\frac{1}{2},\\frac{3}{2}", f"{B}{{\\frac32, \\frac12}}", True),
    # several boxes: the last non-empty one counts
    ("7", f"first {B}{{3}} then corrected: {B}{{7}} {B}{{}}", True),
    ("\\{1,2\\}", f"{B}{{\\{{1,2\\}}}}", True),
]

NOT_EQUIVALENT = [
    # near misses on numbers
    ("1000000", f"{B}{{1000001}}", False),
    ("1000000", f"{B}{{999999}}", False),
    ("123456789", f"{B}{{123456788}}", False),
    ("\\frac{1}{3}", f"{B}{{0.333}}", False),
    ("\\frac{1}{3}", f"{B}{{0.3333333}}", False),
    ("\\frac{2}{3}", f"{B}{{0.67}}", False),
    ("\\sqrt{2}", f"{B}{{1.414}}", False),
    ("\\frac{\\sqrt{3}}{2}", f"{B}{{0.8660254}}", False),
    ("\\pi", f"{B}{{3.14159}}", False),
    ("2\\pi", f"{B}{{6.28}}", False),
    ("3.5", f"{B}{{3.05}}", False),
    ("50\\%", f"{B}{{5}}", False),
    ("-7", f"{B}{{7}}", False),
    ("\\frac{3}{4}", f"{B}{{\\frac{{4}}{{3}}}}", False),
    # wrong variable
    ("x=5", f"{B}{{y=5}}", False),
    ("x^2+1", f"{B}{{y^2+1}}", False),
    ("5x", f"{B}{{5y}}", False),
    # intervals / tuples
    ("(1,2]", f"{B}{{(1,2)}}", False),
    ("(2,3)", f"{B}{{(3,2)}}", False),
    ("[-2,7]", f"{B}{{(-2,7)}}", False),
    # roots and degrees
    ("2\\sqrt{2}", f"{B}{{2\\sqrt{{3}}}}", False),
    ("30^\\circ", f"{B}{{60}}", False),
    ("10\\text{ cm}", f"{B}{{100}}", False),
    # words, vectors, lists, symbols
    ("\\text{Evelyn}", f"{B}{{\\text{{Eve}}}}", False),
    ("\\text{east}", f"{B}{{\\text{{west}}}}", False),
    ("\\begin{pmatrix} 2 \\\\ 4 \\end{pmatrix}", f"{B}{{\\begin{{pmatrix}}4\\\\2\\end{{pmatrix}}}}", False),
    ("2,3", f"{B}{{2,4}}", False),
    ("x+1", f"{B}{{y+1}}", False),
    ("-\\infty", f"{B}{{\\infty}}", False),
    # no answer at all
    ("42", "I am not sure.", False),
    ("42", "", False),
    ("42", f"{B}{{}}", False),
]

CASES = EQUIVALENT + NOT_EQUIVALENT


def test_table_is_big_enough():
    assert len(CASES) >= 80
    assert len(EQUIVALENT) >= 40 and len(NOT_EQUIVALENT) >= 20


@pytest.mark.parametrize("gold,response,expected", CASES, ids=[f"{i}:{c[0][:20]}" for i, c in enumerate(CASES)])
def test_math_table(gold, response, expected):
    v = grade("math", response, gold)
    assert v.correct is expected, (gold, response, v)
    assert "timed out" not in v.reason  # a verdict, not a deadline, decided it
    if expected:
        assert v.extracted is not None


@pytest.mark.parametrize(
    "text,want",
    [
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("a \\boxed{1} b \\boxed{2}", "2"),
        ("\\boxed{2} and a truncated \\boxed{3", "2"),
        ("\\fbox{9}", "9"),
        ("\\boxed 5 is it", "5"),
        ("nested \\boxed{\\sqrt{\\frac{1}{2}}} end", "\\sqrt{\\frac{1}{2}}"),
        ("numbers 3 then 4.5 then -2", "-2"),
        ("x-5 = 3 so 7/8.", "7/8"),
        ("total: 1,000,000 items", "1,000,000"),
        ("equals $\\frac{3}{4}$", "\\frac{3}{4}"),
        ("no digits here", None),
        ("", None),
    ],
)
def test_extraction(text, want):
    assert extract_math_answer(text) == want


def test_reasons_are_short_and_specific():
    assert grade_math("\\boxed{y=5}", "x=5").reason.startswith("wrong variable")
    assert grade_math("nothing", "5").reason == "no \\boxed{} or number"
    assert grade_math("\\boxed{1000001}", "1000000").reason == "different number"
    assert grade_math("\\boxed{1.414}", "\\sqrt{2}").reason == "decimal approximation of an exact answer"


def test_pathological_input_hits_the_cpu_deadline():
    answers_equivalent("1", "1.0")  # warm the parser (not on the clock)
    t = time.process_time()
    ok, reason = answers_equivalent("5", "10^{10^{10}}", deadline_s=0.5)
    assert not ok and "timed out" in reason
    assert time.process_time() - t < 1.5  # CPU seconds: independent of how busy the box is


def test_huge_answer_is_compared_as_text_only():
    big = "+".join(["x"] * 500)
    t = time.monotonic()
    ok, reason = answers_equivalent("1", big)
    assert not ok and "too long" in reason
    assert time.monotonic() - t < 0.5


def test_grading_from_a_thread_uses_the_helper_and_agrees():
    """math-verify's signal alarm cannot work off the main thread: we must still grade there."""
    out = {}

    def run():
        out["eq"] = grade("math", "\\boxed{\\sqrt{8}}", "2\\sqrt{2}")
        out["ne"] = grade("math", "\\boxed{(x+2)(x+4)}", "x^2+7x+10")
        out["slow"] = answers_equivalent("5", "9999999^{9999999}", deadline_s=0.5)
        # a helper that died (OOM-killed, say) is replaced on the next comparison
        from trinity.grading import mathgrade

        mathgrade._HELPER.proc.kill()
        mathgrade._HELPER.proc.wait()
        out["after"] = grade("math", "\\boxed{\\frac{\\sqrt{12}}{2}}", "\\sqrt{3}")

    th = threading.Thread(target=run)
    th.start()
    th.join(timeout=120)
    assert out["eq"].correct and out["eq"].reason == "equivalent"
    assert not out["ne"].correct
    assert out["slow"][0] is False and "timed out" in out["slow"][1]
    assert out["after"].correct and out["after"].reason == "equivalent"


def test_deadline_restores_the_callers_handler_and_timer():
    import signal

    def mine(signum, frame):  # pragma: no cover — never fires
        pass

    old = signal.signal(signal.SIGVTALRM, mine)
    old_timer = signal.setitimer(signal.ITIMER_VIRTUAL, 100.0)
    try:
        answers_equivalent("x^2", "x \\cdot x")
        assert signal.getsignal(signal.SIGVTALRM) is mine
        assert 90.0 < signal.getitimer(signal.ITIMER_VIRTUAL)[0] <= 100.1  # kernel rounds to ticks
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, *old_timer)
        signal.signal(signal.SIGVTALRM, old)


def test_last_boxed_ignores_escaped_braces_when_balancing():
    assert last_boxed("\\boxed{\\{1,2\\}}") == "\\{1,2\\}"
    assert last_boxed("\\boxed{a\\}b}") == "a\\}b"


def test_extraction_stays_linear_on_hostile_text():
    t = time.process_time()
    assert extract_math_answer("\\boxed{" * 20000 + " 5") == "5"  # no box closes: last number
    assert extract_math_answer("\\boxed{1} " * 20000 + "\\boxed{2}") == "2"
    assert extract_math_answer("9" * 100000) == "9" * 100000
    assert time.process_time() - t < 2.0


def test_helper_process_gets_no_secrets(monkeypatch):
    from trinity.grading import mathgrade

    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test-secret")
    mathgrade._HELPER.stop()  # start a fresh one under this environment
    th = threading.Thread(target=lambda: grade("math", "\\boxed{\\sqrt{27}}", "3\\sqrt{3}"))
    th.start()
    th.join(timeout=120)
    proc = mathgrade._HELPER.proc
    assert proc is not None and proc.poll() is None
    env = Path(f"/proc/{proc.pid}/environ").read_bytes()
    assert b"sk-or-test-secret" not in env and b"OPENROUTER_API_KEY" not in env
