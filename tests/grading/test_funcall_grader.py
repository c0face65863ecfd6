"""BFCL simple: the one function call, matched by AST against the possible answers."""

from __future__ import annotations

import pytest

from trinity.errors import InputError
from trinity.grading import extract_answer, grade
from trinity.grading.funcall import extract_calls

TRIANGLE = {
    "function": [
        {
            "name": "calculate_triangle_area",
            "parameters": {
                "type": "dict",
                "properties": {"base": {"type": "integer"}, "height": {"type": "integer"}, "unit": {"type": "string"}},
                "required": ["base", "height"],
            },
        }
    ],
    "ground_truth": [{"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}],
}
FACTORIAL = {
    "function": [
        {
            "name": "math.factorial",
            "parameters": {"type": "dict", "properties": {"number": {"type": "integer"}}, "required": ["number"]},
        }
    ],
    "ground_truth": [{"math.factorial": {"number": [5]}}],
}
WEATHER = {
    "function": [
        {
            "name": "get_weather",
            "parameters": {
                "type": "dict",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string"},
                    "days": {"type": "array", "items": {"type": "integer"}},
                    "scale": {"type": "float"},
                    "detailed": {"type": "boolean"},
                    "filters": {"type": "dict", "properties": {"rain": {"type": "boolean"}}},
                },
                "required": ["city"],
            },
        }
    ],
    "ground_truth": [
        {
            "get_weather": {
                "city": ["San Francisco, CA", "San Francisco"],
                "unit": ["celsius", ""],
                "days": [[0, 1], ""],
                "scale": [2.0, ""],
                "detailed": [True, ""],
                "filters": [{"rain": [True]}, ""],
            }
        }
    ],
}

# (response, gold, correct, reason fragment)
CASES = [
    # right, in every accepted shape
    ("calculate_triangle_area(base=10, height=5)", TRIANGLE, True, "match"),
    ("[calculate_triangle_area(base=10, height=5, unit='units')]", TRIANGLE, True, "match"),
    ("Sure.\n```python\ncalculate_triangle_area(height=5, base=10)\n```", TRIANGLE, True, "match"),
    ('{"name": "calculate_triangle_area", "arguments": {"base": 10, "height": 5}}', TRIANGLE, True, "match"),
    (
        '[{"function": {"name": "calculate_triangle_area", "arguments": "{\\"base\\": 10, \\"height\\": 5}"}}]',
        TRIANGLE,
        True,
        "match",
    ),
    ('{"calculate_triangle_area": {"base": 10, "height": 5}}', TRIANGLE, True, "match"),
    ("math.factorial(number=5)", FACTORIAL, True, "match"),
    ("math_factorial(number=5)", FACTORIAL, True, "match"),  # BFCL allows . written as _
    ('get_weather(city="san francisco")', WEATHER, True, "match"),  # strings: case, punctuation ignored
    (
        'get_weather(city="San Francisco, CA", unit="Celsius", days=[0, 1], scale=2, detailed=True)',
        WEATHER,
        True,
        "match",
    ),  # an int where a float is expected
    ('get_weather(city="San Francisco", filters={"rain": True})', WEATHER, True, "match"),
    # wrong
    ("calculate_triangle_area(base=10, height=6)", TRIANGLE, False, "height"),
    ("calculate_triangle_area(base=10)", TRIANGLE, False, "missing required parameter height"),
    ("calculate_area(base=10, height=5)", TRIANGLE, False, "called calculate_area"),
    ("calculate_triangle_area(base=10, height=5, color='red')", TRIANGLE, False, "unexpected parameter color"),
    ("The area is 25.", TRIANGLE, False, "no function call"),
    ("", TRIANGLE, False, "no function call"),
    ('get_weather(city="Los Angeles")', WEATHER, False, "city"),
    # near misses
    ("calculate_triangle_area(10, 5)", TRIANGLE, False, "no function call"),  # positional: not BFCL's form
    ("calculate_triangle_area(base=10.0, height=5)", TRIANGLE, False, "expected integer"),
    ("calculate_triangle_area(base='10', height=5)", TRIANGLE, False, "expected integer"),
    ("calculate_triangle_area(base=10, height=5, unit='meters')", TRIANGLE, False, "unit"),
    (
        "[calculate_triangle_area(base=10, height=5), calculate_triangle_area(base=10, height=5)]",
        TRIANGLE,
        False,
        "2 calls",
    ),
    ('get_weather(city="San Francisco", days=[1, 0])', WEATHER, False, "days"),  # order matters
    ('get_weather(city="San Francisco", detailed=1)', WEATHER, False, "expected boolean"),
    ('get_weather(city="San Francisco", filters={"rain": False})', WEATHER, False, "filters"),
    ("math.factorial(number=__import__('os').getpid())", FACTORIAL, False, "no function call"),  # never run
]


@pytest.mark.parametrize("response,gold,correct,why", CASES)
def test_table(response, gold, correct, why):
    v = grade("funcall", response, gold)
    assert v.correct is correct, (response, v)
    assert why in v.reason


def test_extraction_prefers_the_fenced_block_and_never_evaluates():
    text = "I might call foo(x=1).\n```python\nbar(y=2)\n```"
    assert extract_calls(text) == [("bar", {"y": 2})]
    assert extract_calls("open('/etc/passwd').read()") is None  # positional: not a call we read
    assert extract_answer("funcall", "bar(y=2)") == '[{"name": "bar", "arguments": {"y": 2}}]'
    assert extract_answer("funcall", "no call here") is None


def test_bad_gold():
    with pytest.raises(InputError, match="exactly one function schema"):
        grade("funcall", "f(a=1)", {"function": [], "ground_truth": [{"f": {"a": [1]}}]})
    with pytest.raises(InputError, match="exactly one ground-truth call"):
        grade("funcall", "f(a=1)", {"function": [{"name": "f"}], "ground_truth": []})
    with pytest.raises(InputError, match="function-call gold"):
        grade("funcall", "f(a=1)", "f(a=1)")
