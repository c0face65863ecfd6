"""The code grader for LiveCodeBench-style problems (docs/CONTRACTS.md, Grading).

    extract_code(text) -> str            the last fenced python block, else the whole text
    grade_code(response, gold) -> Verdict

gold = {"tests": [{"input", "output", "testtype": "stdin"|"functional"}], "fn_name"?} or the
LiveCodeBench row fields (`public_test_cases`, `private_test_cases` — JSON, or the
base64/zlib/pickle form of code_generation_lite — and `metadata` with `func_name`).

The code runs in `trinity.grading.sandbox` (never in this process); this module only decides.
Stdin tests compare line-wise (surrounding whitespace ignored, numbers with a small tolerance).
Functional tests: each line of `input` is one JSON argument, `output` the expected JSON value;
the child sends back the JSON of the return value and this process compares it with exact JSON
types (a bool is not a number, a string not a list), so an object whose `__eq__` always says
True cannot pass. The first failing test ends the problem.
"""

from __future__ import annotations

import base64
import io
import json
import math
import pickle
import re
import zlib
from decimal import Decimal
from typing import Any

from trinity.errors import InputError
from trinity.grading.sandbox import Limits, SandboxRun, run_in_sandbox
from trinity.grading.verdict import Verdict

NUMBER_TOLERANCE = 1e-6  # for non-integer expected numbers: absolute, or relative when |expected| > 1

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$")
_FENCE_TAG = re.compile(r"\{?\.?([\w+-]*)")  # matches every string (all of it optional)
_PYTHON_TAGS = {"python", "py", "python3", "py3", "python2", "pycon", "ipython"}
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


# ---------------------------------------------------------------- extraction


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(info tag, body) of every fenced block; an unclosed last fence runs to the end."""
    blocks: list[tuple[str, str]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i].rstrip("\r"))
        if not m:
            i += 1
            continue
        fence = m.group(1)
        tag_m = _FENCE_TAG.match(m.group(2).lower())
        tag = tag_m.group(1) if tag_m else ""  # "python", "{.python}", "py:sol.py"
        close = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j].rstrip("\r")):
            j += 1
        blocks.append((tag, "\n".join(lines[i + 1 : j])))
        i = j + 1
    return blocks


def extract_code(text: str) -> str:
    """The last fenced python block (```python, ```py …), else the last untagged fenced block,
    else the whole text. Never raises."""
    if not isinstance(text, str):
        return ""
    blocks = _fenced_blocks(text)
    for wanted in (lambda tag: tag in _PYTHON_TAGS, lambda tag: tag == ""):
        chosen = [body for tag, body in blocks if wanted(tag)]
        if chosen:
            return chosen[-1]
    return text


# ---------------------------------------------------------------- gold tests


class _StrOnly(pickle.Unpickler):
    """code_generation_lite pickles a JSON string; refuse anything that names a class."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from test data")


def _decode_cases(value: Any, what: str) -> list:
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return value
    if not isinstance(value, str):
        raise InputError(f"code gold {what} must be a list or a JSON string, got {type(value).__name__}")
    try:
        return json.loads(value)
    except ValueError:
        pass
    try:  # LiveCodeBench code_generation_lite: base64(zlib(pickle(json string)))
        inner = _StrOnly(io.BytesIO(zlib.decompress(base64.b64decode(value)))).load()
        return json.loads(inner)
    except Exception as e:
        raise InputError(f"code gold {what} is neither JSON nor LiveCodeBench's compressed form ({e})") from None


def normalize_gold(gold: Any) -> tuple[str, list, list[str], str | None]:
    """-> (mode "stdin"|"call", inputs, expected outputs, fn_name). InputError if malformed."""
    if not isinstance(gold, dict):
        raise InputError(f"code gold must be a dict with tests, got {type(gold).__name__}")
    fn_name = gold.get("fn_name")
    if "tests" in gold:
        tests = gold["tests"]
        if not isinstance(tests, list):
            raise InputError("code gold 'tests' must be a list of {input, output, testtype}")
    else:  # LiveCodeBench row
        tests = _decode_cases(gold.get("public_test_cases"), "public_test_cases") + _decode_cases(
            gold.get("private_test_cases"), "private_test_cases"
        )
        meta = gold.get("metadata") or {}
        if isinstance(meta, str):
            try:
                meta = json.loads(meta) if meta.strip() else {}
            except ValueError:
                raise InputError("code gold metadata is not JSON") from None
        fn_name = fn_name or (meta.get("func_name") if isinstance(meta, dict) else None)
    if not tests:
        raise InputError("code gold has no tests: give 'tests' (or public/private_test_cases)")
    kinds = set()
    for k, t in enumerate(tests, 1):
        if not isinstance(t, dict) or "input" not in t or "output" not in t:
            raise InputError(f"code gold test {k} must have 'input' and 'output'")
        kinds.add(t.get("testtype") or ("functional" if fn_name else "stdin"))
    if len(kinds) != 1 or not kinds <= {"stdin", "functional"}:
        raise InputError(f"code gold tests must all be 'stdin' or all 'functional', got {sorted(map(str, kinds))}")
    if kinds == {"stdin"}:
        for k, t in enumerate(tests, 1):
            if not isinstance(t["input"], str) or not isinstance(t["output"], str):
                raise InputError(f"code gold test {k}: stdin tests need string input and output")
        return "stdin", [t["input"] for t in tests], [t["output"] for t in tests], None
    if not isinstance(fn_name, str) or not fn_name.isidentifier():
        raise InputError(f"code gold with functional tests needs fn_name (a function name), got {fn_name!r}")
    inputs, outputs = [], []
    for k, t in enumerate(tests, 1):
        inputs.append(_call_args(t["input"], k))
        out = t["output"]
        if isinstance(out, str):
            try:
                out = json.loads(out)
            except ValueError:
                raise InputError(f"code gold test {k}: output is not JSON: {out[:60]!r}") from None
        outputs.append(out)
    return "call", inputs, outputs, fn_name


def _call_args(raw: Any, k: int) -> list:
    if isinstance(raw, list):
        return raw
    if not isinstance(raw, str):
        raise InputError(f"code gold test {k}: input must be JSON lines (one argument a line)")
    args: list = []
    if not raw.strip():  # a function of no arguments
        return args
    for n, line in enumerate(raw.strip("\n").split("\n"), 1):
        try:
            args.append(json.loads(line))
        except ValueError:
            raise InputError(f"code gold test {k}: input line {n} is not JSON: {line[:60]!r}") from None
    return args


# ---------------------------------------------------------------- comparison


def _int_key(token: str) -> tuple[bool, str]:
    digits = token.lstrip("+-").lstrip("0") or "0"
    return (token.startswith("-") and digits != "0", digits)


def _numbers_close(got: float, want: float) -> bool:
    return math.isfinite(got) and math.isfinite(want) and abs(got - want) <= NUMBER_TOLERANCE * max(1.0, abs(want))


def tokens_equal(got: str, want: str) -> bool:
    if got == want:
        return True
    if not (_FLOAT.fullmatch(got) and _FLOAT.fullmatch(want)):
        return False
    if _INT.fullmatch(want):  # an integer answer is exact ("2.0" is fine, 1.55e+25 for 25! is not)
        if _INT.fullmatch(got):
            return _int_key(got) == _int_key(want)  # at any length
        try:
            return Decimal(got) == Decimal(want)
        except ArithmeticError:  # an exponent too large to compare
            return False
    return _numbers_close(float(got), float(want))


def stdout_matches(got: str, want: str) -> bool:
    """Line-wise; surrounding whitespace and blank trailing lines ignored; numbers tolerant."""
    got_lines = got.replace("\r\n", "\n").strip().split("\n")
    want_lines = want.replace("\r\n", "\n").strip().split("\n")
    if len(got_lines) != len(want_lines):
        return False
    for g, w in zip(got_lines, want_lines):
        if g.rstrip() == w.rstrip():
            continue
        gt, wt = g.split(), w.split()
        if len(gt) != len(wt) or not all(tokens_equal(a, b) for a, b in zip(gt, wt)):
            return False
    return True


def json_equal(got: Any, want: Any) -> bool:
    """Equality of parsed JSON with exact JSON types: bool ≠ number, str ≠ list, null only null.
    Numbers are one JSON type: ints compare exactly, floats with the tolerance."""
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    if isinstance(want, (int, float)):
        if not isinstance(got, (int, float)):
            return False
        if isinstance(got, int) and isinstance(want, int):
            return got == want
        return _numbers_close(float(got), float(want))
    if want is None or isinstance(want, str):
        return type(got) is type(want) and got == want
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(json_equal, got, want))
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(json_equal(got[k], want[k]) for k in want)
    return False


# ---------------------------------------------------------------- grading


def grade_code(
    response: str,
    gold: dict,
    *,
    per_test_timeout: float = 6.0,
    problem_timeout: float | None = None,
    memory_bytes: int = 2 << 30,
    use_bwrap: bool | None = None,
) -> Verdict:
    """Run the response's code against every test (public then private) in a sandboxed child.

    `problem_timeout` None: per_test_timeout × tests + 5 s. The first failing test ends it."""
    return grade_code_run(
        response,
        gold,
        per_test_timeout=per_test_timeout,
        problem_timeout=problem_timeout,
        memory_bytes=memory_bytes,
        use_bwrap=use_bwrap,
    )[0]


def grade_code_run(
    response: str,
    gold: dict,
    *,
    per_test_timeout: float = 6.0,
    problem_timeout: float | None = None,
    memory_bytes: int = 2 << 30,
    use_bwrap: bool | None = None,
) -> tuple[Verdict, SandboxRun | None]:
    """`grade_code`, plus what the sandbox saw (None when there was no code to run)."""
    mode, inputs, outputs, fn_name = normalize_gold(gold)
    code = extract_code(response if isinstance(response, str) else "")
    if not code.strip():
        return Verdict(False, "no code in the response", code), None
    n = len(inputs)
    if problem_timeout is None:
        problem_timeout = per_test_timeout * n + 5.0
    limits = Limits(per_test_timeout=per_test_timeout, problem_timeout=problem_timeout, memory_bytes=memory_bytes)
    failure: list[str] = []

    def check(k: int, status: str, error: str | None, payload: bytes) -> bool:
        if status != "ok":
            failure.append(f"test {k + 1}/{n}: runtime error ({error or 'unknown'})")
            return False
        if len(payload) > limits.output_bytes:
            failure.append(f"test {k + 1}/{n}: output over {limits.output_bytes} bytes")
            return False
        if mode == "stdin":
            ok = stdout_matches(payload.decode("utf-8", errors="replace"), outputs[k])
        else:
            try:
                ok = json_equal(json.loads(payload), outputs[k])
            except (ValueError, RecursionError):
                ok = False
        if not ok:
            failure.append(f"test {k + 1}/{n} failed: wrong {'output' if mode == 'stdin' else 'return value'}")
        return ok

    job = {"mode": mode, "code": code, "inputs": inputs, "fn_name": fn_name}
    run = run_in_sandbox(job, limits, check, use_bwrap=use_bwrap)
    return _verdict(run, failure, n, code), run


def _verdict(run: SandboxRun, failure: list[str], n: int, code: str) -> Verdict:
    if run.outcome == "completed":
        return Verdict(True, f"passed {n}/{n} tests", code)
    if failure:
        return Verdict(False, failure[0], code)
    where = f"test {run.test + 1}/{n}" if isinstance(run.test, int) and run.test >= 0 else "loading the code"
    if run.outcome == "timeout":
        return Verdict(False, f"{where}: {run.detail}", code)
    if run.outcome == "fatal":
        return Verdict(False, f"cannot run: {run.detail}", code)
    if run.outcome == "protocol":
        return Verdict(False, f"{where}: sandbox protocol violated ({run.detail})", code)
    return Verdict(False, f"{where}: no result ({run.detail or 'the program ended early'})", code)
