"""Extraction and comparison properties of the code grader (hypothesis), and determinism."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trinity.grading.code import extract_code, grade_code, json_equal, stdout_matches, tokens_equal

# Prose and code lines that cannot themselves open or close a fence.
_line = st.text(st.characters(blacklist_characters="\n`~", blacklist_categories=("Cs",)), max_size=40)
_prose = st.lists(_line, max_size=4).map("\n".join)
_code = st.lists(_line, min_size=1, max_size=8).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(before=_prose, code=_code, after=_prose, tag=st.sampled_from(["python", "py", "Python3", ""]))
def test_prose_fence_prose_yields_exactly_the_code(before, code, after, tag):
    text = f"{before}\n```{tag}\n{code}\n```\n{after}"
    assert extract_code(text) == code


@settings(max_examples=200, deadline=None)
@given(first=_code, last=_code, other=_code)
def test_the_last_python_block_wins(first, last, other):
    text = f"try:\n```python\n{first}\n```\nbetter:\n```python\n{last}\n```\nin C:\n```cpp\n{other}\n```\n"
    assert extract_code(text) == last


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_extraction_never_raises(text):
    out = extract_code(text)
    assert isinstance(out, str) and (out == text or out in text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["```", "```python", "~~~", "~~~py", "code", "", "  ```", "````"]), max_size=12))
def test_extraction_of_fence_soup_never_raises(lines):
    assert isinstance(extract_code("\n".join(lines)), str)


def test_unclosed_fence_runs_to_the_end_and_no_fence_is_the_whole_text():
    assert extract_code("Answer:\n```python\nprint(1)\nprint(2)") == "print(1)\nprint(2)"
    assert extract_code("print(3)") == "print(3)"
    assert extract_code("```cpp\nint main(){}\n```") == "```cpp\nint main(){}\n```"  # no python block
    assert extract_code(None) == ""
    assert extract_code("```{.python}\nx = 1\n```") == "x = 1"
    assert extract_code("```py:solution.py\ny = 2\n```\n```text\nout\n```") == "y = 2"


def test_stdout_comparison():
    assert stdout_matches("3  \n4\n\n", "3\n4")  # trailing whitespace and blank lines
    assert stdout_matches("0.3333333\n", "0.333333333")  # tolerance for non-integer answers
    assert stdout_matches("1 2\r\n", "1 2\n")
    assert not stdout_matches("3\n", "3\n4\n")
    assert not stdout_matches("0.34\n", "0.333333333")
    assert not stdout_matches("100000000000000000001\n", "100000000000000000000\n")  # integers exact
    assert tokens_equal("2.0", "2") and not tokens_equal("1.5511210043330986e+25", "15511210043330985984000000")
    assert not tokens_equal("nan", "nan ") and not tokens_equal("inf", "1e999")
    assert tokens_equal("YES", "YES") and not tokens_equal("yes", "YES")


def test_json_comparison_has_exact_types():
    assert json_equal([1, 2.0, "a", None, {"k": [True]}], [1, 2, "a", None, {"k": [True]}])
    assert not json_equal(1, True) and not json_equal(True, 1) and not json_equal(0, False)
    assert not json_equal("1", 1) and not json_equal(["a"], "a") and not json_equal(None, 0)
    assert not json_equal({"a": 1}, {"a": 1, "b": 2}) and not json_equal([1, 2], [2, 1])
    assert json_equal(0.1 + 0.2, 0.3) and not json_equal(0.31, 0.3)


GOLD = {
    "fn_name": "f",
    "tests": [{"input": json.dumps(x), "output": json.dumps(x * 2), "testtype": "functional"} for x in (1, 5, -3)],
}


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.sampled_from(
        [
            "return x * 2",
            "return x + x",
            "return x * 3",
            "return str(x * 2)",
            "raise ValueError(x)",
            "return 2 * x if x > 0 else x",
        ]
    )
)
def test_grading_is_deterministic(body):
    response = f"```python\ndef f(x):\n    {body}\n```"
    first, second = grade_code(response, GOLD), grade_code(response, GOLD)
    assert first == second
