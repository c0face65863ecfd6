"""Function-call grader for BFCL "simple" (one function, one call), by AST match.

    extract_calls(text) -> list[(name, {param: value})] | None
    grade_funcall(response, gold) -> Verdict
    gold = {"function": [schema], "ground_truth": [{name: {param: [allowed values]}}]}

What a response may write: a Python call `f(a=1, b="x")` (also
`[f(a=1)]`, dotted names `math.factorial(number=5)`), or JSON `{"name": f, "arguments": {...}}`
(also `"parameters"`, an OpenAI `{"function": {"name", "arguments": "<json>"}}`, or a list of
them); a fenced block (the last) is read first, then the whole text, then its lines from the
end. Python calls are parsed with `ast` and their arguments read
with `ast.literal_eval` — nothing is executed.

The checks follow BFCL's AST checker for the simple category: exactly one call; the function's
name (a `.` may be written `_`, as BFCL allows for providers that forbid dots); every required
parameter present and none the schema does not define; each value of the schema's type
(`integer` not bool, `float` also from an int, `string`, `boolean`, `array`/`tuple` element-wise,
`dict` key-wise); each value one of the possible answers, strings compared after BFCL's
normalisation (case, spaces and `,./-_*^` ignored, `'` = `"`); an omitted optional parameter is
right only when "" is among its possible answers.

Why not BFCL's own checker (`bfcl_eval.eval_checker.ast_eval.ast_checker`): the `bfcl-eval`
package cannot be imported without its dependencies — the checker imports
`bfcl_eval.constants.model_config`, which imports every provider handler (openai, anthropic,
mistralai, cohere, google-genai …) — and it pins numpy==1.26.4, tree-sitter 0.21 and
sentence-transformers, which would downgrade this project's stack. So the checker is written
here, with a table of right / wrong / near-miss cases in tests/grading/test_funcall_grader.py.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from trinity.errors import InputError
from trinity.grading.verdict import Verdict

_FENCE = re.compile(r"```[\w+-]*[ \t]*\n(.*?)```", re.DOTALL)
_STRING_NOISE = re.compile(r"[ ,./\-_*^]")


# ---------------------------------------------------------------- extraction


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _python_calls(src: str) -> list[tuple[str, dict]] | None:
    src = src.strip()
    if not src or len(src) > 20000:
        return None
    try:
        tree = ast.parse(src, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    body = tree.body
    nodes = body.elts if isinstance(body, (ast.List, ast.Tuple)) else [body]
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call) or node.args:  # BFCL calls take keyword arguments
            return None
        name = _dotted(node.func)
        if name is None or any(k.arg is None for k in node.keywords):
            return None
        try:
            args = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        calls.append((name, args))
    return calls or None


def _json_call(obj: Any) -> tuple[str, dict] | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI tool call
        obj = obj["function"]
    name = obj.get("name")
    args = obj.get("arguments", obj.get("parameters", obj.get("args")))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if isinstance(name, str) and isinstance(args, dict):
        return name, args
    if len(obj) == 1:  # BFCL's own {"name": {args}} shape
        ((k, v),) = obj.items()
        if isinstance(v, dict):
            return str(k), v
    return None


def _json_calls(src: str) -> list[tuple[str, dict]] | None:
    try:
        obj = json.loads(src)
    except (ValueError, RecursionError):
        return None
    items = obj if isinstance(obj, list) else [obj]
    calls = [_json_call(o) for o in items]
    return calls if calls and all(c is not None for c in calls) else None  # type: ignore[return-value]


def _spans(text: str):
    """Candidate call texts in order of preference: fenced blocks (last first), the whole text,
    its lines (last first), then bracketed spans (widest first, at most 50)."""
    yield from reversed([m.group(1) for m in _FENCE.finditer(text)])
    yield text
    for line in reversed(text.splitlines()):
        s = line.strip().strip("`").strip()
        if s and ("(" in s or "{" in s):
            yield s
    for k, m in enumerate(re.finditer(r"[\[{]", text)):
        if k >= 50:
            break
        end = text.rfind("]" if m.group(0) == "[" else "}")
        if end > m.start():
            yield text[m.start() : end + 1]


def extract_calls(text: str) -> list[tuple[str, dict]] | None:
    """The function calls the response commits to (see the module docstring), or None."""
    if not isinstance(text, str) or not text.strip():
        return None
    for span in _spans(text):
        calls = _json_calls(span) or _python_calls(span)
        if calls:
            return calls
    return None


# ---------------------------------------------------------------- comparison


def _norm_string(s: str) -> str:
    return _STRING_NOISE.sub("", s).lower().replace("'", '"')


def _type_ok(value: Any, typ: str) -> bool:
    if typ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if typ == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if typ == "string":
        return isinstance(value, str)
    if typ == "boolean":
        return isinstance(value, bool)
    if typ in ("array", "tuple"):
        return isinstance(value, (list, tuple))
    if typ == "dict":
        return isinstance(value, dict)
    return True  # "any" and types BFCL leaves unchecked


def _same(value: Any, allowed: Any, schema: dict | None) -> bool:
    """Whether `value` equals one possible answer `allowed` (BFCL's rules)."""
    typ = (schema or {}).get("type", "any")
    if isinstance(allowed, str) and isinstance(value, str):
        return _norm_string(value) == _norm_string(allowed)
    if isinstance(allowed, bool) or isinstance(value, bool):
        return type(value) is type(allowed) and value == allowed
    if isinstance(allowed, (int, float)) and isinstance(value, (int, float)):
        return float(value) == float(allowed)
    if isinstance(allowed, (list, tuple)) and isinstance(value, (list, tuple)):
        items = (schema or {}).get("items") if typ in ("array", "tuple") else None
        return len(value) == len(allowed) and all(_same(v, a, items) for v, a in zip(value, allowed))
    if isinstance(allowed, dict) and isinstance(value, dict):
        return _dict_matches(value, allowed, (schema or {}).get("properties") or {}) is None
    return value == allowed


def _one_of(value: Any, allowed: list, schema: dict | None) -> bool:
    return any(_same(value, a, schema) for a in allowed if a != "")


def _dict_matches(value: dict, allowed: dict, props: dict) -> str | None:
    """None when a dict argument matches a possible-answer dict ({key: [allowed values]})."""
    for key, options in allowed.items():
        options = options if isinstance(options, list) else [options]
        if key not in value:
            if "" in options:
                continue
            return f"missing key {key!r}"
        if not _one_of(value[key], options, props.get(key)):
            return f"key {key!r} has {value[key]!r}"
    extra = set(value) - set(allowed)
    return f"unexpected key(s) {', '.join(map(repr, sorted(extra)))}" if extra else None


def check_gold(gold: Any) -> tuple[dict, str, dict]:
    """(function schema, expected name, {param: [allowed values]}); InputError if malformed."""
    if not isinstance(gold, dict):
        raise InputError('function-call gold must be {"function": [schema], "ground_truth": [{name: {...}}]}')
    functions, truth = gold.get("function"), gold.get("ground_truth")
    if not isinstance(functions, list) or len(functions) != 1 or not isinstance(functions[0], dict):
        raise InputError("function-call gold needs exactly one function schema (BFCL simple)")
    if not isinstance(truth, list) or len(truth) != 1 or not isinstance(truth[0], dict) or len(truth[0]) != 1:
        raise InputError("function-call gold needs exactly one ground-truth call {name: {param: [values]}}")
    ((name, params),) = truth[0].items()
    if not isinstance(params, dict):
        raise InputError(f"function-call gold: the ground truth of {name!r} must map parameters to value lists")
    return functions[0], str(name), params


def grade_funcall(response: str, gold: dict) -> Verdict:
    schema, want_name, possible = check_gold(gold)
    calls = extract_calls(response or "")
    if not calls:
        return Verdict(False, "no function call found", None)
    shown = json.dumps([{"name": n, "arguments": a} for n, a in calls], ensure_ascii=False, default=str)[:400]
    if len(calls) != 1:
        return Verdict(False, f"{len(calls)} calls, expected 1", shown)
    name, args = calls[0]
    if name != want_name and name != want_name.replace(".", "_"):
        return Verdict(False, f"called {name[:60]}, expected {want_name}", shown)
    params = schema.get("parameters") or {}
    props = params.get("properties") or {}
    for p in params.get("required") or []:
        if p not in args:
            return Verdict(False, f"missing required parameter {p}", shown)
    for p, value in args.items():
        if p not in props:
            return Verdict(False, f"unexpected parameter {p[:40]}", shown)
        typ = props[p].get("type", "any")
        if not _type_ok(value, typ):
            return Verdict(False, f"parameter {p}: {type(value).__name__}, expected {typ}", shown)
        options = possible.get(p)
        if options is None:
            return Verdict(False, f"unexpected parameter {p[:40]}", shown)
        options = options if isinstance(options, list) else [options]
        if not _one_of(value, options, props[p]):
            return Verdict(
                False, f"parameter {p}: {json.dumps(value, default=str)[:60]} is not a possible answer", shown
            )
    for p, options in possible.items():
        if p not in args and "" not in (options if isinstance(options, list) else [options]):
            return Verdict(False, f"missing parameter {p}", shown)
    return Verdict(True, "match", shown)
