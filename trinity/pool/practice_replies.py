"""What the SIMULATED practice models say (the content side of `trinity pool serve-practice`).

The request tells us everything: the question (exact text of the `QUERY:` block), the role (the
first line of the system prompt, `You are the Thinker|Worker|Verifier …`), the transcript so far
(`[Turn k | Role | model]` blocks, `trinity.session.transcript`), and the sample index (the
request's `seed`, default 0). Whether a Worker is right comes only from
`trinity.data.practice.simulate_correct`, so a collect against this server reproduces
`practice_matrix` exactly.

- Worker: right → the gold answer in the kind's format; wrong → a plausible wrong one (a nearby
  boxed number, another letter, a one-token mutation of the reference program that fails a test).
- Thinker: a plan with no final answer.
- Verifier: grades the latest Worker answer with the real grader and says ACCEPT/REVISE correctly
  with probability `verifier_accuracy` (`verifier_is_right`).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
import sys
import threading
from dataclasses import replace
from fractions import Fraction

from trinity.benchmarks.prompts import render_question
from trinity.data.practice import (PracticeSetup, practice_questions, practice_setup, simulate_correct,
                                   verifier_is_right)
from trinity.data.questions import Question

ROLE_RE = re.compile(r"^\s*You are the (Thinker|Worker|Verifier)\b")
TURN_RE = re.compile(r"^\[Turn (\d+) \| (Thinker|Worker|Verifier) \| ([^\]\n]*)\]$", re.MULTILINE)
QUERY_MARK = "QUERY:\n"
TRANSCRIPT_MARK = "\n\nTRANSCRIPT SO FAR:\n"
LETTERS = "ABCDEFGHIJ"


class BadRequest(ValueError):
    """The request cannot be served (HTTP 400); the message says why."""


def _u(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big")


def parse_turns(transcript: str) -> list[tuple[str, str, str]]:
    """`[(role, model, output)]` from the session's transcript text."""
    heads = list(TURN_RE.finditer(transcript))
    out = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(transcript)
        out.append((m.group(2), m.group(3), transcript[m.end():end].strip("\n")))
    return out


# ---- wrong answers ----------------------------------------------------------------------------
def wrong_math(gold: str, salt: int) -> str:
    """A nearby but different value in the gold's own form (integer, fraction, multiple of π)."""
    delta = 1 + salt % 9
    sign = 1 if (salt >> 8) % 2 else -1
    g = gold.strip()
    m = re.fullmatch(r"-?\d+", g)
    if m:
        v = int(g) + sign * delta
        return str(v if v != int(g) else v + 1)
    m = re.fullmatch(r"\\frac\{(-?\d+)\}\{(\d+)\}", g)
    if m:
        f = Fraction(int(m.group(1)) + delta, int(m.group(2)))
        return f"\\frac{{{f.numerator}}}{{{f.denominator}}}" if f.denominator != 1 else str(f.numerator)
    m = re.fullmatch(r"(-?\d*)\\pi", g)
    if m:
        k = int(m.group(1)) if m.group(1) not in ("", "-") else (1 if m.group(1) == "" else -1)
        return f"{k + delta}\\pi"
    try:
        return repr(float(g) + sign * delta)
    except ValueError:
        return str(1000 + salt % 9000)  # a symbolic gold: any plain number is wrong


_BINOP_SWAP = {ast.Mult: ast.Add, ast.Add: ast.Sub, ast.Sub: ast.Add, ast.FloorDiv: ast.Mult,
               ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.Div: ast.Mult}
_CMP_SWAP = {ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Eq: ast.NotEq,
             ast.NotEq: ast.Eq, ast.In: ast.NotIn}
_NAME_SWAP = {"max": "min", "min": "max", "sum": "len", "sorted": "reversed", "upper": "lower",
              "lower": "upper", "split": "strip"}


def _replace_child(tree: ast.AST, old: ast.AST, new: ast.AST) -> bool:
    """Put `new` where `old` sits in `tree` (ast has no parent links)."""
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, name, new)
                return True
            if isinstance(value, list) and any(v is old for v in value):
                value[[i for i, v in enumerate(value) if v is old][0]] = new
                return True
    return False


def code_mutants(source: str) -> list[str]:
    """Every one-site mutation of `source` (operator, comparison, constant off-by-one, swapped
    builtin): the kind of slip a model makes. Each is valid Python."""
    tree = ast.parse(source)
    kinds = (ast.BinOp, ast.Compare, ast.Constant, ast.Name, ast.Attribute, ast.Call)
    n_sites = sum(isinstance(n, kinds) for n in ast.walk(tree))
    out: list[str] = []
    for idx in range(n_sites):
        t = ast.parse(source)
        node = [n for n in ast.walk(t) if isinstance(n, kinds)][idx]
        changed = False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int":
            # int(x) -> int(x) + 1: the classic off-by-one on the parsed input
            changed = _replace_child(t, node, ast.BinOp(node, ast.Add(), ast.Constant(1)))
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAP:
            node.op, changed = _BINOP_SWAP[type(node.op)](), True
        elif isinstance(node, ast.Compare) and type(node.ops[0]) in _CMP_SWAP:
            node.ops[0], changed = _CMP_SWAP[type(node.ops[0])](), True
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            node.value, changed = node.value + 1, True
        elif isinstance(node, ast.Name) and node.id in _NAME_SWAP:
            node.id, changed = _NAME_SWAP[node.id], True
        elif isinstance(node, ast.Attribute) and node.attr in _NAME_SWAP:
            node.attr, changed = _NAME_SWAP[node.attr], True
        if changed:
            code = ast.unparse(t) + "\n"
            if code not in out:
                out.append(code)
    return out


# Runs each mutant on each test input in ONE child process (isolated mode, no env) and reports
# its outputs; the parent decides which mutants fail. These are mutations of our own shipped
# reference programs, not model output.
_PROBE = r"""
import io, json, sys, contextlib, signal
def _too_slow(*_):
    raise TimeoutError
signal.signal(signal.SIGALRM, _too_slow)
jobs = json.loads(sys.stdin.read())
res = []
for codes, inputs in jobs:
    per_code = []
    for code in codes:
        outs = []
        for inp in inputs:
            sys.stdin = io.StringIO(inp)
            buf = io.StringIO()
            signal.setitimer(signal.ITIMER_REAL, 2.0)  # a mutant that loops forever counts as wrong
            try:
                with contextlib.redirect_stdout(buf):
                    exec(compile(code, "<mutant>", "exec"), {"__name__": "__main__"})
                outs.append(buf.getvalue())
            except BaseException:
                outs.append(None)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        per_code.append(outs)
    res.append(per_code)
sys.__stdout__.write(json.dumps(res))
"""


def _tokens(s: str) -> list[str]:
    return s.split()


def _same_output(got: str | None, want: str) -> bool:
    """Lenient equality (whitespace-insensitive, numeric-tolerant): a mutant counts as wrong only
    if it is wrong under any reasonable checker."""
    if got is None:
        return False
    a, b = _tokens(got), _tokens(want)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        try:
            if abs(float(x) - float(y)) <= 1e-6 * max(1.0, abs(float(y))):
                continue
        except ValueError:
            pass
        if x.lower() != y.lower():
            return False
    return True


def failing_mutants_many(jobs: list[tuple[str, list[dict]]]) -> list[list[str]]:
    """For each (reference program, tests): its mutants that fail at least one test, the ones
    that run and print a wrong answer first (that is what a model's slip usually looks like).
    All mutants of all jobs run in ONE child process (isolated mode, empty environment)."""
    mutants = [code_mutants(ref) for ref, _ in jobs]
    payload = json.dumps([(codes, [t.get("input", "") for t in tests]) for codes, (_, tests) in zip(mutants, jobs)])
    try:
        proc = subprocess.run([sys.executable, "-I", "-c", _PROBE], input=payload, capture_output=True,
                              text=True, timeout=60, env={})
        outs = json.loads(proc.stdout)
    except (subprocess.TimeoutExpired, ValueError):
        return [[] for _ in jobs]
    result = []
    for codes, per_code, (_, tests) in zip(mutants, outs, jobs):
        wrong = [(c, o) for c, o in zip(codes, per_code)
                 if any(not _same_output(g, t.get("output", "")) for g, t in zip(o, tests))]
        wrong.sort(key=lambda co: any(g is None for g in co[1]))
        result.append([c for c, _ in wrong])
    return result


def constant_wrong_program(tests: list[dict]) -> str:
    """Last resort: a program that prints a wrong answer to the first test."""
    want = tests[0].get("output", "").strip()
    wrong = "0" if want != "0" else "1"
    return f"print({wrong!r})\n"


# ---- the responder ----------------------------------------------------------------------------
class PracticeResponder:
    def __init__(self, seed: int | None = None, setup: PracticeSetup | None = None):
        setup = setup or practice_setup()
        if seed is not None and seed != setup.seed:
            setup = replace(setup, seed=seed)
        self.setup = setup
        self.models = tuple(setup.models)
        self.by_text: dict[str, Question] = {}
        for q in practice_questions():
            self.by_text[q.question.strip()] = q
            # the session shows the benchmark adapter's rendering of the question
            self.by_text.setdefault(render_question(q).strip(), q)
        self._wrong_code: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._grades: dict[tuple[str, str], bool] = {}

    # -- request parsing --
    def parse(self, messages: list[dict]) -> tuple[Question, str, list[tuple[str, str, str]]]:
        system = next((m.get("content") for m in messages if m.get("role") == "system"), None)
        role = "Worker"
        if isinstance(system, str):
            m = ROLE_RE.match(system.splitlines()[0] if system else "")
            if m:
                role = m.group(1)
        user = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), None)
        if not isinstance(user, str) or QUERY_MARK not in user:
            raise BadRequest("the practice server needs a user message with a 'QUERY:' block")
        body = user.split(QUERY_MARK, 1)[1]
        qtext, _, transcript = body.partition(TRANSCRIPT_MARK)
        q = self.by_text.get(qtext.strip())
        if q is None:
            raise BadRequest("the QUERY is not one of the practice questions (the simulated pool only "
                             "answers the shipped practice benchmark)")
        return q, role, parse_turns(transcript)

    # -- wrong code, computed once per question (a child process runs the mutants) --
    def wrong_code(self, q: Question, salt: int) -> str:
        with self._lock:
            if q.id not in self._wrong_code:
                self._compute_wrong_code()
            cands = self._wrong_code.get(q.id) or ["print()\n"]
        return cands[salt % len(cands)]

    def _compute_wrong_code(self) -> None:
        """Wrong programs for every code question at once (one child process runs the mutants)."""
        code_qs = [q for q in practice_questions() if q.kind == "code" and q.id not in self._wrong_code]
        jobs = [(q.extra.get("reference_solution", ""),
                 q.answer.get("tests", []) if isinstance(q.answer, dict) else []) for q in code_qs]
        found = failing_mutants_many([(ref, tests) for ref, tests in jobs if ref and tests])
        it = iter(found)
        for q, (ref, tests) in zip(code_qs, jobs):
            cands = next(it) if ref and tests else []
            if not cands and tests:
                cands = [constant_wrong_program(tests)]
            self._wrong_code[q.id] = cands

    # -- the three roles --
    def worker(self, model: str, q: Question, seed: int, turns: list) -> str:
        boosted = any(r == "Thinker" and out.strip() for r, _, out in turns)
        sample = sum(1 for r, m, _ in turns if r == "Worker" and m == model)  # a retry draws anew
        right = simulate_correct(model, q.id, q.kind, "Worker", seed=seed, sample=sample, boosted=boosted,
                                 setup=self.setup)
        salt = _u(self.setup.seed, model, q.id, seed, sample)
        name = model.split("/")[-1]
        if q.kind == "math":
            ans = str(q.answer) if right else wrong_math(str(q.answer), salt)
            return (f"({name}, simulated) Working through the problem step by step.\n"
                    f"After simplifying, the result is {ans}.\n\nThe final answer is $\\boxed{{{ans}}}$.")
        if q.kind == "mc":
            n = len(q.extra.get("choices") or []) or 4
            gold = str(q.answer).strip().upper()
            letter = gold
            if not right:
                others = [c for c in LETTERS[:n] if c != gold]
                letter = others[salt % len(others)]
            return (f"({name}, simulated) Comparing the options one by one, option {letter} fits best.\n\n"
                    f"Answer: {letter}")
        code = q.extra.get("reference_solution", "") if right else self.wrong_code(q, salt)
        return f"({name}, simulated) Here is my program.\n\n```python\n{code}```"

    @staticmethod
    def thinker(model: str, q: Question) -> str:
        steps = {"math": "restate what is asked, set up the arithmetic or equation, compute carefully, "
                         "and check the result by substituting back",
                 "mc": "recall the relevant fact, eliminate options that contradict it, then pick the "
                       "remaining one",
                 "code": "read the input format, handle edge cases (empty, negative, single item), and "
                         "print exactly the required output"}.get(
            q.kind, "read every requirement of the request, then answer in exactly the form it asks for")
        return (f"({model.split('/')[-1]}, simulated) Plan: {steps}. I will not state the final answer; "
                "the Worker should carry this out.")

    @staticmethod
    def _answer_key(q: Question, text: str) -> str:
        """What the grader will look at (the code block, the boxed value, the letter): answers
        that differ only in their prose share one grading (a code grade takes a sandbox run)."""
        try:
            if q.kind == "code":
                from trinity.grading.code import extract_code

                found: str | None = extract_code(text)
            elif q.kind == "math":
                from trinity.grading import extract_math_answer

                found = extract_math_answer(text)
            elif q.kind in ("exact", "ifeval", "funcall"):
                from trinity.grading import extract_answer

                found = extract_answer(q.kind, text)
            else:
                from trinity.grading import extract_choice

                found = extract_choice(text)
        except Exception:
            found = None
        return "x:" + found if found is not None else "t:" + hashlib.sha256(text.encode()).hexdigest()

    def _grade(self, q: Question, text: str) -> bool:
        key = (q.id, self._answer_key(q, text))
        with self._lock:
            hit = self._grades.get(key)
        if hit is None:
            from trinity.grading import grade

            hit = bool(grade(q.kind, text, q.answer).correct)
            with self._lock:
                self._grades[key] = hit
        return hit

    def verifier(self, model: str, q: Question, seed: int, turns: list) -> str:
        name = model.split("/")[-1]
        worker = [out for r, _, out in turns if r == "Worker" and out.strip()]
        if not worker:
            return (f"({name}, simulated) There is no Worker answer to check yet.\n\nVERDICT: REVISE")
        truth = self._grade(q, worker[-1])
        right = verifier_is_right(model, q.id, seed=seed, turn=len(turns) + 1, setup=self.setup)
        accept = truth if right else not truth
        why = ("The latest answer checks out against the problem." if accept
               else "The latest answer does not hold up when I check it.")
        return f"({name}, simulated) {why}\n\nVERDICT: {'ACCEPT' if accept else 'REVISE'}"

    def reply(self, model: str, messages: list[dict], seed: int = 0) -> str:
        """The completion text; BadRequest for a request the simulation cannot answer."""
        if model not in self.setup.models:
            raise BadRequest(f"unknown model {model!r}; the practice server serves {', '.join(self.models)}")
        q, role, turns = self.parse(messages)
        if role == "Thinker":
            return self.thinker(model, q)
        if role == "Verifier":
            return self.verifier(model, q, seed, turns)
        return self.worker(model, q, seed, turns)

    def needs_thread(self, messages: list[dict]) -> bool:
        """Whether answering may block (grading, running mutants) and belongs off the event loop."""
        try:
            q, role, _ = self.parse(messages)
        except BadRequest:
            return False
        return role == "Verifier" or (q.kind == "code" and q.id not in self._wrong_code)
