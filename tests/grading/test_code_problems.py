"""20 code problems (10 stdin, 10 functional), each graded with a right and a wrong solution."""

from __future__ import annotations

import base64
import json
import pickle
import zlib

import pytest

from trinity.errors import InputError
from trinity.grading import grade
from trinity.grading.code import grade_code


def stdin(*cases):
    return {"tests": [{"input": i, "output": o, "testtype": "stdin"} for i, o in cases]}


def functional(fn_name, *cases):
    return {
        "fn_name": fn_name,
        "tests": [
            {"input": "\n".join(json.dumps(a) for a in args), "output": json.dumps(out), "testtype": "functional"}
            for args, out in cases
        ],
    }


PROBLEMS = {
    # name: (gold, right solution, wrong solution)
    "sum_two": (
        stdin(("1 2\n", "3\n"), ("-5 5\n", "0\n"), ("1000000000 1000000000\n", "2000000000\n")),
        "a, b = map(int, input().split())\nprint(a + b)",
        "a, b = map(int, input().split())\nprint(a + b + (a > 100))",
    ),
    "reverse_lines": (
        stdin(("3\nab\ncd\nef\n", "ef\ncd\nab\n"), ("1\nx\n", "x\n")),
        "import sys\nn, *rows = sys.stdin.read().split()\nprint('\\n'.join(reversed(rows)))",
        "import sys\nn, *rows = sys.stdin.read().split()\nprint('\\n'.join(rows))",
    ),
    "float_mean": (
        stdin(("3\n1 2 2\n", "1.6666666667\n"), ("2\n1 2\n", "1.5\n")),
        "n = int(input())\nxs = list(map(int, input().split()))\nprint(f'{sum(xs) / n:.9f}')",
        "n = int(input())\nxs = list(map(int, input().split()))\nprint(f'{sum(xs) / n:.2f}')",
    ),
    "big_factorial": (
        stdin(("25\n", "15511210043330985984000000\n"), ("0\n", "1\n")),
        "import math\nprint(math.factorial(int(input())))",
        "import math\nprint(float(math.factorial(int(input()))))",
    ),
    "open0_sort": (
        stdin(
            ("5\n3 1 4 1 5\n", "1 1 3 4 5\n"),
        ),
        "data = open(0).read().split()\nprint(*sorted(map(int, data[1:])))",
        "data = open(0).read().split()\nprint(*sorted(data[1:], reverse=True))",
    ),
    "main_guard": (
        stdin(("4\n", "even\n"), ("7\n", "odd\n")),
        "def main():\n    n = int(input())\n    print('odd' if n % 2 else 'even')\n\n"
        "if __name__ == '__main__':\n    main()",
        "def main():\n    n = int(input())\n    print('even' if n % 3 else 'odd')\n\n"
        "if __name__ == '__main__':\n    main()",
    ),
    "buffer_io": (
        stdin(
            ("2\n10 20\n30 40\n", "30\n70\n"),
        ),
        "import sys\nlines = sys.stdin.buffer.read().split(b'\\n')\nfor row in lines[1:]:\n"
        "    if row.strip():\n        a, b = map(int, row.split())\n"
        "        sys.stdout.buffer.write(b'%d\\n' % (a + b))",
        "import sys\nlines = sys.stdin.buffer.read().split(b'\\n')\nsys.stdout.write('30\\n')",
    ),
    "grid_paths": (
        stdin(("2 2\n", "2\n"), ("3 3\n", "6\n"), ("1 5\n", "1\n")),
        "from math import comb\nr, c = map(int, input().split())\nprint(comb(r + c - 2, r - 1))",
        "r, c = map(int, input().split())\nprint(r * c // 2)",
    ),
    "exit_after_answer": (
        stdin(("5\n", "YES\n"), ("4\n", "NO\n")),
        "import sys\nn = int(input())\nif n % 2:\n    print('YES')\n    sys.exit(0)\nprint('NO')",
        "import sys\nn = int(input())\nprint('YES')\nsys.exit(0)",
    ),
    "word_count": (
        stdin(
            ("the cat the dog\n", "cat 1\ndog 1\nthe 2\n"),
        ),
        "from collections import Counter\nc = Counter(input().split())\n"
        "for w, k in sorted(c.items()):\n    print(w, k)",
        "from collections import Counter\nc = Counter(input().split())\nfor w, k in c.most_common():\n    print(w, k)",
    ),
    "two_sum": (
        functional("twoSum", (([2, 7, 11, 15], 9), [0, 1]), (([3, 2, 4], 6), [1, 2])),
        "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
        "        seen = {}\n        for i, x in enumerate(nums):\n"
        "            if target - x in seen:\n                return [seen[target - x], i]\n"
        "            seen[x] = i",
        "class Solution:\n    def twoSum(self, nums, target):\n        return [0, len(nums) - 1]",
    ),
    "is_palindrome": (
        functional("isPalindrome", (("racecar",), True), (("ab",), False)),
        "class Solution:\n    def isPalindrome(self, s: str) -> bool:\n        return s == s[::-1]",
        "class Solution:\n    def isPalindrome(self, s: str) -> bool:\n        return int(s == s[::-1])",
    ),
    "top_level_fn": (
        functional("maxProfit", (([7, 1, 5, 3, 6, 4],), 5), (([7, 6, 4, 3, 1],), 0)),
        "def maxProfit(prices):\n    best, low = 0, float('inf')\n    for p in prices:\n"
        "        low = min(low, p)\n        best = max(best, p - low)\n    return best",
        "def maxProfit(prices):\n    return max(prices) - min(prices)",
    ),
    "tuple_as_list": (
        functional(
            "minMax",
            (([3, 1, 2],), [1, 3]),
        ),
        "class Solution:\n    def minMax(self, xs):\n        return (min(xs), max(xs))",
        "class Solution:\n    def minMax(self, xs):\n        return (max(xs), min(xs))",
    ),
    "string_not_list": (
        functional(
            "letters",
            (("abc",), "cba"),
        ),
        "class Solution:\n    def letters(self, s):\n        return s[::-1]",
        "class Solution:\n    def letters(self, s):\n        return list(s[::-1])",
    ),
    "float_median": (
        functional("median", (([1, 2],), 1.5), (([1, 2, 3],), 2.0)),
        "from statistics import median as m\nclass Solution:\n    def median(self, xs):\n        return m(xs)",
        "class Solution:\n    def median(self, xs):\n        return xs[len(xs) // 2]",
    ),
    "dict_result": (
        functional(
            "freq",
            (("aab",), {"a": 2, "b": 1}),
        ),
        "class Solution:\n    def freq(self, s):\n        return dict(Counter(s))",
        "class Solution:\n    def freq(self, s):\n        return {k: str(v) for k, v in Counter(s).items()}",
    ),
    "none_result": (
        functional(
            "nothing",
            (([1],), None),
        ),
        "class Solution:\n    def nothing(self, xs):\n        xs.clear()",
        "class Solution:\n    def nothing(self, xs):\n        return 0",
    ),
    "state_per_test": (
        functional("count", ((5,), 1), ((5,), 1)),
        "class Solution:\n    def __init__(self):\n        self.calls = 0\n"
        "    def count(self, x):\n        self.calls += 1\n        return self.calls",
        "calls = [0]\nclass Solution:\n    def count(self, x):\n        calls[0] += 1\n        return calls[0]",
    ),
    "recursion_memo": (
        functional("fib", ((30,), 832040), ((90,), 2880067194370816120)),
        "class Solution:\n    @cache\n    def fib(self, n):\n        return n if n < 2 else self.fib(n - 1) + self.fib(n - 2)",
        "class Solution:\n    def fib(self, n):\n        return round(((1 + 5 ** .5) / 2) ** n / 5 ** .5)",
    ),
}


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_right_solution_passes_and_wrong_fails(name):
    gold, right, wrong = PROBLEMS[name]
    ok = grade("code", f"Here is my solution.\n```python\n{right}\n```\nIt runs in O(n).", gold)
    assert ok.correct, (name, ok.reason)
    assert ok.reason == f"passed {len(gold['tests'])}/{len(gold['tests'])} tests"
    bad = grade_code(f"```python\n{wrong}\n```", gold)
    assert not bad.correct, (name, bad.reason)
    assert bad.reason.startswith("test "), bad.reason


def test_twenty_problems_both_kinds():
    kinds = [p[0]["tests"][0]["testtype"] for p in PROBLEMS.values()]
    assert len(PROBLEMS) == 20 and kinds.count("stdin") == 10 and kinds.count("functional") == 10


def test_first_failing_test_ends_the_problem():
    gold = stdin(("1\n", "1\n"), ("2\n", "2\n"), ("3\n", "3\n"))
    v = grade_code("n = int(input())\nprint(n if n != 2 else 5)\nimport time\ntime.sleep(3 if n == 3 else 0)", gold)
    assert v.reason == "test 2/3 failed: wrong output"


def test_per_test_and_problem_timeouts():
    gold = stdin(*[(f"{k}\n", f"{k}\n") for k in range(6)])
    slow = "import time\nn = int(input())\ntime.sleep(0.4)\nprint(n)"
    assert grade_code(slow, gold, per_test_timeout=2.0).correct
    v = grade_code(slow, gold, per_test_timeout=0.2)
    assert v.reason == "test 1/6: per-test timeout"
    v = grade_code(slow, gold, per_test_timeout=2.0, problem_timeout=1.5)
    assert not v.correct and v.reason.endswith("whole-problem timeout")


def _lcb_compress(cases: list) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


def test_livecodebench_row_with_public_and_private_tests():
    row = {
        "public_test_cases": json.dumps([{"input": "[1,2,3]", "output": "6", "testtype": "functional"}]),
        "private_test_cases": _lcb_compress(
            [
                {"input": "[5]", "output": "5", "testtype": "functional"},
                {"input": "[]", "output": "0", "testtype": "functional"},
            ]
        ),
        "metadata": json.dumps({"func_name": "total"}),
    }
    assert grade_code("class Solution:\n    def total(self, xs): return sum(xs)", row).reason == "passed 3/3 tests"
    v = grade_code("class Solution:\n    def total(self, xs): return sum(xs) if xs else None", row)
    assert v.reason == "test 3/3 failed: wrong return value"  # only a private test catches it


def test_livecodebench_pickle_that_names_a_class_is_refused():
    evil = base64.b64encode(zlib.compress(pickle.dumps(InputError("x")))).decode()
    with pytest.raises(InputError, match="private_test_cases"):
        grade_code("print(1)", {"public_test_cases": "[]", "private_test_cases": evil})


@pytest.mark.parametrize(
    "gold, match",
    [
        ({"tests": []}, "no tests"),
        ({"tests": [{"input": "1"}]}, "'input' and 'output'"),
        ({"tests": [{"input": "1", "output": "1", "testtype": "functional"}]}, "fn_name"),
        ({"tests": [{"input": "{bad", "output": "1", "testtype": "functional"}], "fn_name": "f"}, "not JSON"),
        (
            {
                "tests": [
                    {"input": "1", "output": "1", "testtype": "stdin"},
                    {"input": "1", "output": "1", "testtype": "functional"},
                ],
                "fn_name": "f",
            },
            "all be 'stdin' or all",
        ),
        ("tests", "must be a dict"),
    ],
)
def test_bad_gold_is_one_clear_error(gold, match):
    with pytest.raises(InputError, match=match):
        grade_code("print(1)", gold)


def test_no_code_and_syntax_error_are_wrong():
    gold = stdin(("1\n", "1\n"))
    assert grade_code("", gold).reason == "no code in the response"
    v = grade_code("```python\ndef f(:\n```", gold)
    assert not v.correct and v.reason.startswith("cannot run: SyntaxError")
    v = grade_code("def g(): pass", functional("f", ((1,), 1)))
    assert not v.correct and "no function 'f'" in v.reason


def _modes():
    from trinity.grading.sandbox import bwrap_status

    return ([True] if bwrap_status()[0] else []) + [False]


@pytest.mark.parametrize("use_bwrap", _modes(), ids=lambda b: "bwrap" if b else "plain")
def test_prelude_names_and_stdlib_imports_work_in_every_mode(use_bwrap):
    """LiveCodeBench solutions use the prelude's names without importing them, and import more."""
    code = (
        "import array, fractions, decimal, dataclasses, cmath\n"
        "class Solution:\n"
        "    def go(self, xs: List[int]) -> int:\n"
        "        d = defaultdict(int); h = []\n"
        "        for x in xs:\n"
        "            d[x] += 1; heappush(h, -x)\n"
        "        q = deque(accumulate(xs)); c = Counter(xs)\n"
        "        extra = int(sqrt(16)) + comb(4, 2) + bisect_left([1, 3, 5], 4) + reduce(lambda a, b: a + b, xs)\n"
        "        assert array.array('i', [1])[0] == 1 and fractions.Fraction(1, 2) == decimal.Decimal('0.5')\n"
        "        return -h[0] + len(d) + q[-1] + c.most_common(1)[0][1] + extra + (inf > 10**9)\n"
    )
    gold = functional("go", (([1, 2, 2],), 2 + 2 + 5 + 2 + (4 + 6 + 2 + 5) + 1))
    assert grade_code(code, gold, use_bwrap=use_bwrap).correct
    dynamic = "def go(xs):\n    return eval('len(List.__name__) + len(xs)')"
    assert grade_code(dynamic, functional("go", (([1],), 5)), use_bwrap=use_bwrap).correct


def test_a_chatty_stderr_does_not_block_or_count():
    code = "import sys\nfor _ in range(2000):\n    print('debug ' * 100, file=sys.stderr)\nprint(int(input()) * 2)"
    assert grade_code(code, stdin(("21\n", "42\n")), per_test_timeout=3.0).correct


def test_a_sandbox_that_cannot_start_says_why(monkeypatch):
    from trinity.grading import sandbox

    monkeypatch.setattr(sandbox, "_interpreter", lambda: "/nonexistent/python3")
    with pytest.raises(sandbox.SandboxError, match="cannot start the code sandbox .*nonexistent"):
        grade_code("print(1)", stdin(("", "1\n")), use_bwrap=False)


def test_site_builtins_exit_and_quit_work():
    """`-S` skips site.py, which normally defines exit() and quit(); programs use them."""
    gold = stdin(("2\n", "4\n"))
    assert grade_code("print(int(input()) * 2)\nexit()", gold).correct
    assert grade_code("print(int(input()) * 2)\nquit(0)", gold).correct
    assert not grade_code("print(int(input()) * 2)\nexit(3)", gold).correct  # a failure status


def test_deep_recursion_gets_a_judge_sized_stack_and_a_crash_is_wrong():
    code = (
        "import sys\nsys.setrecursionlimit(10**7)\n@lru_cache(None)\ndef depth(n):\n"
        "    return 0 if n == 0 else 1 + depth(n - 1)\nprint(depth(int(input())))"
    )
    assert grade_code(code, stdin(("100000\n", "100000\n"))).correct  # through C frames: > 8 MB
    v = grade_code(code, stdin(("3000000\n", "3000000\n")))
    assert not v.correct and "SIGSEGV" in v.reason, v.reason


def test_main_in_a_big_stack_thread_is_waited_for():
    code = (
        "import sys, threading\nthreading.stack_size(1 << 26)\nsys.setrecursionlimit(10**6)\n"
        "def main():\n    import time\n    time.sleep(0.2)\n    print(int(input()) * 2)\n"
        "threading.Thread(target=main).start()"
    )
    assert grade_code(code, stdin(("4\n", "8\n"), ("5\n", "10\n"))).correct
