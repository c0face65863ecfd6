"""What the SIMULATED practice models say (the content side of `trinity pool serve-practice`).

The request tells us everything: the question (exact text of the `QUERY:` block), the role (the
first line of the system prompt, `You are the Thinker|Worker|Verifier …`), the transcript so far
(`[Turn k | Role | model]` blocks, `trinity.session.transcript`), and the sample index (the
request's `seed`, default 0). Whether a Worker is right comes only from
`trinity.practice.simulation.simulate_correct`, so a collect against this server reproduces
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
from typing import Any

from trinity.benchmarks.practice import practice_questions
from trinity.benchmarks.prompts import render_question
from trinity.competition.text import ROUTER_TEXTS, TINYROUTER
from trinity.data.questions import Question
from trinity.grading import extract_answer, extract_choice, extract_math_answer, grade_question
from trinity.practice.simulation import PracticeSetup, practice_setup, simulate_correct, verifier_is_right

# The role from either protocol's system prompt: ours ("You are the Thinker …") or the
# competitions' role contracts ("You are the THINKER. …"), trinity.competition.protocol.
ROLE_RE = re.compile(r"^\s*You are the (Thinker|Worker|Verifier)\b", re.IGNORECASE)
TURN_RE = re.compile(r"^\[Turn (\d+) \| (Thinker|Worker|Verifier) \| ([^\]\n]*)\]$", re.MULTILINE)
COMPETITION_TURN_RE = re.compile(
    r"^--- Turn (\d+) \| agent=([^|\n]*) \| role=(THINKER|WORKER|VERIFIER) ---$", re.MULTILINE
)
VERDICT_LINE_RE = re.compile(r"\n\[parsed verdict: (?:ACCEPT|REVISE)\]$")
QUERY_MARK = "QUERY:\n"
TRANSCRIPT_MARK = "\n\nTRANSCRIPT SO FAR:\n"
LETTERS = "ABCDEFGHIJ"


def competition_question(q: Question) -> str:
    """The question text a competition's protocol shows the pool (the same in both)."""
    return ROUTER_TEXTS[TINYROUTER].render_question(q)


class BadRequest(ValueError):
    """The request cannot be served (HTTP 400); the message says why."""


def _u(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big")


def parse_turns(transcript: str) -> list[tuple[str, str, str]]:
    """`[(role, model, output)]` from the session's transcript text, in either protocol's form
    (a competition transcript names the model by its pool name)."""
    heads = list(TURN_RE.finditer(transcript))
    out = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(transcript)
        out.append((m.group(2), m.group(3), transcript[m.end() : end].strip("\n")))
    if out:
        return out
    heads = list(COMPETITION_TURN_RE.finditer(transcript))
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(transcript)
        body = VERDICT_LINE_RE.sub("", transcript[m.end() : end].strip("\n"))
        out.append((m.group(3).title(), m.group(2).strip(), body))
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


_BINOP_SWAP = {
    ast.Mult: ast.Add,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.Div: ast.Mult,
}
_CMP_SWAP = {
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
}
_NAME_SWAP = {
    "max": "min",
    "min": "max",
    "sum": "len",
    "sorted": "reversed",
    "upper": "lower",
    "lower": "upper",
    "split": "strip",
}


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


def failing_mutants_many(jobs: list[tuple[str, list[dict[str, Any]]]]) -> list[list[str]]:
    """For each (reference program, tests): its mutants that fail at least one test, the ones
    that run and print a wrong answer first (that is what a model's slip usually looks like).
    All mutants of all jobs run in ONE child process (isolated mode, empty environment)."""
    mutants = [code_mutants(ref) for ref, _ in jobs]
    payload = json.dumps([(codes, [t.get("input", "") for t in tests]) for codes, (_, tests) in zip(mutants, jobs)])
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", _PROBE], input=payload, capture_output=True, text=True, timeout=60, env={}
        )
        outs = json.loads(proc.stdout)
    except (subprocess.TimeoutExpired, ValueError):
        return [[] for _ in jobs]
    result = []
    for codes, per_code, (_, tests) in zip(mutants, outs, jobs):
        wrong = [
            (c, o)
            for c, o in zip(codes, per_code)
            if any(not _same_output(g, t.get("output", "")) for g, t in zip(o, tests))
        ]
        wrong.sort(key=lambda co: any(g is None for g in co[1]))
        result.append([c for c, _ in wrong])
    return result


def constant_wrong_program(tests: list[dict[str, Any]]) -> str:
    """Last resort: a program that prints a wrong answer to the first test."""
    want = tests[0].get("output", "").strip()
    wrong = "0" if want != "0" else "1"
    return f"print({wrong!r})\n"


# ---- the responder ----------------------------------------------------------------------------
class PracticeResponder:
    def __init__(
        self, seed: int | None = None, setup: PracticeSetup | None = None, questions: list[Question] | None = None
    ):
        """`questions`: benchmark questions beyond the shipped practice set that the simulated pool
        answers too (any kind of trinity.data.kinds; `trinity collect --pool practice` passes its
        own): right or wrong by `simulate_correct`, each answer checked with the real grader."""
        setup = setup or practice_setup()
        if seed is not None and seed != setup.seed:
            setup = replace(setup, seed=seed)
        self.setup = setup
        self.models = tuple(setup.models)
        self.by_text: dict[str, Question] = {}
        for q in practice_questions():
            self.by_text[q.question.strip()] = q
            # the session shows the benchmark adapter's rendering of the question (ours), or
            # the competition's (trinity.competition.text, the same in both)
            self.by_text.setdefault(render_question(q).strip(), q)
            self.by_text.setdefault(competition_question(q).strip(), q)
        self.practice_ids = {q.id for q in self.by_text.values()}
        for q in questions or []:
            self.add_question(q)
        self._wrong_code: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._grades: dict[tuple[str, str], bool] = {}

    def add_question(self, q: Question) -> None:
        """Answer `q` too (by the text the session shows: its adapter's rendering)."""
        self.by_text.setdefault(render_question(q).strip(), q)
        self.by_text.setdefault(competition_question(q).strip(), q)
        self.by_text.setdefault(q.question.strip(), q)

    # -- request parsing --
    def parse(self, messages: list[dict[str, Any]]) -> tuple[Question, str, list[tuple[str, str, str]]]:
        system = next((m.get("content") for m in messages if m.get("role") == "system"), None)
        role = "Worker"
        if isinstance(system, str):
            m = ROLE_RE.match(system.splitlines()[0] if system else "")
            if m:
                role = m.group(1).title()
        user = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), None)
        if not isinstance(user, str) or QUERY_MARK not in user:
            raise BadRequest("the practice server needs a user message with a 'QUERY:' block")
        body = user.split(QUERY_MARK, 1)[1]
        qtext, _, transcript = body.partition(TRANSCRIPT_MARK)
        q = self.by_text.get(qtext.strip())
        if q is None:
            raise BadRequest(
                "the QUERY is not a question the simulated pool knows: it answers the shipped "
                "practice set and the questions it was started with (`trinity collect --pool "
                "practice` passes its own; `trinity pool serve-practice --benchmark X [--data F]`)"
            )
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
        jobs = [
            (q.extra.get("reference_solution", ""), q.answer.get("tests", []) if isinstance(q.answer, dict) else [])
            for q in code_qs
        ]
        found = failing_mutants_many([(ref, tests) for ref, tests in jobs if ref and tests])
        it = iter(found)
        for q, (ref, tests) in zip(code_qs, jobs):
            cands = next(it) if ref and tests else []
            if not cands and tests:
                cands = [constant_wrong_program(tests)]
            self._wrong_code[q.id] = cands

    # -- the three roles --
    def worker(self, model: str, q: Question, seed: int, turns: list[tuple[str, str, str]]) -> str:
        boosted = any(r == "Thinker" and out.strip() for r, _, out in turns)
        names = (model, model.rsplit("/", 1)[-1])  # a competition transcript shows the pool name
        sample = sum(1 for r, m, _ in turns if r == "Worker" and m in names)  # a retry draws anew
        right = simulate_correct(
            model, q.id, q.kind, "Worker", seed=seed, sample=sample, boosted=boosted, setup=self.setup
        )
        salt = _u(self.setup.seed, model, q.id, seed, sample)
        name = model.split("/")[-1]
        if q.id not in self.practice_ids:
            return self.checked_answer(q, right, salt, name)
        if q.kind == "math":
            ans = str(q.answer) if right else wrong_math(str(q.answer), salt)
            return (
                f"({name}, simulated) Working through the problem step by step.\n"
                f"After simplifying, the result is {ans}.\n\nThe final answer is $\\boxed{{{ans}}}$."
            )
        if q.kind == "mc":
            n = len(q.extra.get("choices") or []) or 4
            gold = str(q.answer).strip().upper()
            letter = gold
            if not right:
                others = [c for c in LETTERS[:n] if c != gold]
                letter = others[salt % len(others)]
            return (
                f"({name}, simulated) Comparing the options one by one, option {letter} fits best.\n\nAnswer: {letter}"
            )
        code = q.extra.get("reference_solution", "") if right else self.wrong_code(q, salt)
        return f"({name}, simulated) Here is my program.\n\n```python\n{code}```"

    # -- any benchmark question: candidate answers in the benchmark's answer form, checked --
    def checked_answer(self, q: Question, right: bool, salt: int, name: str) -> str:
        """A right (or wrong) answer to `q` that our grader grades right (wrong): the first of the
        kind's candidates that does, the wrong ones rotated by `salt`. BadRequest when the
        simulation can form none (it never passes off an unchecked answer)."""
        cands = answer_candidates(q, name, right)
        if not right and cands:
            k = salt % len(cands)
            cands = cands[k:] + cands[:k]
        for text in cands:
            if self._grade(q, text) == right:
                return text
        raise BadRequest(
            f"the simulated pool cannot form a {'right' if right else 'wrong'} {q.kind} answer "
            f"to {q.id} (no candidate grades {'right' if right else 'wrong'})"
        )

    @staticmethod
    def thinker(model: str, q: Question) -> str:
        steps = {
            "math": "restate what is asked, set up the arithmetic or equation, compute carefully, "
            "and check the result by substituting back",
            "mc": "recall the relevant fact, eliminate options that contradict it, then pick the remaining one",
            "code": "read the input format, handle edge cases (empty, negative, single item), and "
            "print exactly the required output",
        }.get(q.kind, "read every requirement of the request, then answer in exactly the form it asks for")
        return (
            f"({model.split('/')[-1]}, simulated) Plan: {steps}. I will not state the final answer; "
            "the Worker should carry this out."
        )

    @staticmethod
    def _answer_key(q: Question, text: str) -> str:
        """What the grader will look at (the code block, the boxed value, the letter): answers
        that differ only in their prose share one grading (a code grade takes a sandbox run)."""
        from trinity.grading.code import extract_code  # lazy: brings the code sandbox, kept off the CLI start

        try:
            if q.kind == "code":
                found: str | None = extract_code(text)
            elif q.kind == "math":
                found = extract_math_answer(text)
            elif q.kind in ("exact", "ifeval", "funcall"):
                found = extract_answer(q.kind, text)
            else:
                found = extract_choice(text)
        except Exception:
            found = None
        return "x:" + found if found is not None else "t:" + hashlib.sha256(text.encode()).hexdigest()

    def _grade(self, q: Question, text: str) -> bool:
        key = (q.id, self._answer_key(q, text))
        with self._lock:
            hit = self._grades.get(key)
        if hit is None:
            hit = bool(grade_question(q, text).correct)  # mc: its own number of options
            with self._lock:
                self._grades[key] = hit
        return hit

    def verifier(self, model: str, q: Question, seed: int, turns: list[tuple[str, str, str]]) -> str:
        name = model.split("/")[-1]
        worker = [out for r, _, out in turns if r == "Worker" and out.strip()]
        if not worker:
            return f"({name}, simulated) There is no Worker answer to check yet.\n\nVERDICT: REVISE"
        truth = self._grade(q, worker[-1])
        right = verifier_is_right(model, q.id, seed=seed, turn=len(turns) + 1, setup=self.setup)
        accept = truth if right else not truth
        why = (
            "The latest answer checks out against the problem."
            if accept
            else "The latest answer does not hold up when I check it."
        )
        return f"({name}, simulated) {why}\n\nVERDICT: {'ACCEPT' if accept else 'REVISE'}"

    def reply(self, model: str, messages: list[dict[str, Any]], seed: int = 0) -> str:
        """The completion text; BadRequest for a request the simulation cannot answer."""
        if model not in self.setup.models:
            raise BadRequest(f"unknown model {model!r}; the practice server serves {', '.join(self.models)}")
        q, role, turns = self.parse(messages)
        if role == "Thinker":
            return self.thinker(model, q)
        if role == "Verifier":
            return self.verifier(model, q, seed, turns)
        return self.worker(model, q, seed, turns)

    def needs_thread(self, messages: list[dict[str, Any]]) -> bool:
        """Whether answering may block (grading, running mutants) and belongs off the event loop."""
        try:
            q, role, _ = self.parse(messages)
        except BadRequest:
            return False
        if q.id not in self.practice_ids:
            return role != "Thinker"  # its answers are checked with the grader (a sandbox for code)
        return role == "Verifier" or (q.kind == "code" and q.id not in self._wrong_code)


# ---- answer candidates for any benchmark question (checked by PracticeResponder.checked_answer) ----
_FLIP = {"true_false": ("True", "False"), "yes_no": ("Yes", "No"), "valid_invalid": ("valid", "invalid")}


def _exact_wrongs(target: str, form: str) -> list[str]:
    t = target.strip()
    if form in _FLIP:
        a, b = _FLIP[form]
        return [b if t.lower() == a.lower() else a]
    if form == "choice":
        m = re.search(r"[A-R]", t.upper())
        gold = m.group(0) if m else "A"
        return [f"({c})" for c in "ABCDEFGHIJKLMNOPQR" if c != gold][:6]
    if form == "integer":
        try:
            v = int(t)
        except ValueError:
            return ["0", "1"]
        return [str(v + d) for d in (1, -1, 2, 10)]
    if form == "brackets":
        return [t + " )", t + " ]", t[:-1].strip() or ")", "( " + t]
    words = t.split()
    return [" ".join(reversed(words)), " ".join(words[:-1]) or "none", t + " extra"]


def _funcall_text(name: str, args: dict[str, Any], label: str = "(simulated)") -> str:
    return (
        f"{label} Calling the function.\n\n```json\n"
        + json.dumps([{"name": name, "arguments": args}], ensure_ascii=False)
        + "\n```"
    )


def _funcall_candidates(gold: object, right: bool, label: str) -> list[str]:
    gt = gold.get("ground_truth") if isinstance(gold, dict) else None
    if not isinstance(gt, list) or not gt or not isinstance(gt[0], dict) or not gt[0]:
        return []
    fname, params = next(iter(gt[0].items()))
    params = params if isinstance(params, dict) else {}
    args = {}
    for p, options in params.items():
        opts = options if isinstance(options, list) else [options]
        given = [o for o in opts if o != ""]
        if given:
            args[p] = given[0]
    if right:
        return [_funcall_text(fname, args, label)]
    out = [_funcall_text(fname + "_other", args, label)]
    for p, v in args.items():  # one argument off: the slip a model makes
        bad = (
            v + 1
            if isinstance(v, (int, float)) and not isinstance(v, bool)
            else (not v if isinstance(v, bool) else f"{v}_x" if isinstance(v, str) else None)
        )
        out.append(_funcall_text(fname, {**args, p: bad}, label))
    out.append(_funcall_text(fname, {}, label))
    return out


def _ifeval_compose(gold: dict[str, Any], label: str) -> str | None:
    """A response built to follow every instruction of an IFEval prompt (from its kwargs), or
    None for an instruction the simulation does not write for. The grader still checks it."""
    ids = gold.get("instruction_id_list") if isinstance(gold, dict) else None
    kws = gold.get("kwargs") or [{}] * len(ids or [])
    if not isinstance(ids, list):
        return None
    spec = {i: {k: v for k, v in (kw or {}).items() if v is not None} for i, kw in zip(ids, kws)}
    words = (
        "this simulated reply from the practice pool keeps to the instructions it was given and "
        "says only what it needs to"
    ).split()
    head: list[str] = []
    tail: list[str] = []
    paras = 1
    for iid, kw in spec.items():
        if iid == "keywords:existence":
            words += list(kw.get("keywords") or [])
        elif iid == "keywords:frequency":
            n = int(kw.get("frequency", 1))
            words += [str(kw.get("keyword", ""))] * (n + 1 if kw.get("relation") == "at least" else max(n - 1, 0))
        elif iid == "keywords:letter_frequency":
            return None
        elif iid == "length_constraints:number_words":
            n = int(kw.get("num_words", 10))
            if kw.get("relation") == "at least":
                words += ["simulated"] * max(0, n + 5 - len(words))
            else:
                words = words[: max(1, n - 1 - 8)]
        elif iid == "detectable_format:number_highlighted_sections":
            tail += [f"*highlight {i + 1}*" for i in range(int(kw.get("num_highlights", 1)))]
        elif iid == "detectable_format:number_bullet_lists":
            tail += [f"* point {i + 1}" for i in range(int(kw.get("num_bullets", 1)))]
        elif iid == "detectable_format:title":
            head.append("<<simulated reply>>")
        elif iid == "detectable_content:number_placeholders":
            tail.append(" ".join(f"[place{i}]" for i in range(int(kw.get("num_placeholders", 1)))))
        elif iid == "combination:repeat_prompt":
            head.insert(0, str(kw.get("prompt_to_repeat", "")))
        elif iid == "length_constraints:number_paragraphs":
            paras = int(kw.get("num_paragraphs", 1))
        elif iid not in (
            "punctuation:no_comma",
            "change_case:english_lowercase",
            "change_case:english_capital",
            "startend:end_checker",
            "startend:quotation",
            "detectable_content:postscript",
            "detectable_format:json_format",
            "keywords:forbidden_words",
        ):
            return None
    body = " ".join(w for w in words if w)
    if paras > 1:
        body = "\n***\n".join([body] + [f"paragraph {i + 2} of the simulated reply" for i in range(paras - 1)])
    text = "\n".join([*head, label + " " + body, *tail])
    if "detectable_content:postscript" in spec:
        text += f"\n{spec['detectable_content:postscript'].get('postscript_marker', 'P.S.')} simulated"
    if "change_case:english_lowercase" in spec:
        text = text.lower()
    if "change_case:english_capital" in spec:
        text = text.upper()
    if "startend:end_checker" in spec:
        text += "\n" + str(spec["startend:end_checker"].get("end_phrase", ""))
    if "detectable_format:json_format" in spec:
        text = json.dumps({"reply": text})
    if "startend:quotation" in spec:
        text = f'"{text}"'
    if "keywords:forbidden_words" in spec:
        for w in spec["keywords:forbidden_words"].get("forbidden_words") or []:
            text = re.sub(re.escape(str(w)), "", text, flags=re.IGNORECASE)
    return text


def _ifeval_candidates(q: Question, label: str, right: bool) -> list[str]:
    plain = label.replace(",", "")  # "(name simulated)": no comma, so `punctuation:no_comma` can hold
    if right:
        built = _ifeval_compose(q.answer if isinstance(q.answer, dict) else {}, plain)
        return [built] if built is not None else []
    return [
        f"{plain} Sure, HERE, is a reply, that ignores the instructions.",
        f"{plain} No.",
        f"{{{plain}: NO, THANKS}}",
    ]


def answer_candidates(q: Question, name: str, right: bool) -> list[str]:
    """What a simulated model says to `q`, in the benchmark's answer form: right candidates (the
    gold stated as its grader reads it) or wrong ones (a near miss of the same form)."""
    label = f"({name}, simulated)"
    gold = q.answer
    if q.kind == "math":
        vals = [str(gold)] if right else [wrong_math(str(gold), i * 257 + 1) for i in range(6)]
        return [
            f"{label} Working through the problem step by step.\n\nThe final answer is $\\boxed{{{v}}}$." for v in vals
        ]
    if q.kind == "mc":
        n = len(q.extra.get("choices") or []) or 4
        g = str(gold).strip().upper()
        if g.isdigit() and int(g) < len(LETTERS):
            g = LETTERS[int(g)]
        letters = [g] if right else [c for c in LETTERS[:n] if c != g]
        return [f"{label} Comparing the options one by one, option {c} fits best.\n\nAnswer: {c}" for c in letters]
    if q.kind == "code":
        if isinstance(gold, dict) and "entry_point" in gold:  # HumanEval: check(candidate) tests
            prompt = str(gold.get("prompt", q.question))
            if right:
                sol = q.extra.get("canonical_solution")
                return [f"{label} Here is the function.\n\n```python\n{prompt}{sol}```"] if sol else []
            return [
                f"{label} Here is the function.\n\n```python\n{prompt}    return None\n```",
                f"{label} Here is the function.\n\n```python\n{prompt}    pass\n```",
            ]
        ref = q.extra.get("reference_solution")
        if not ref:
            return []
        if right:
            return [f"{label} Here is my program.\n\n```python\n{ref}```"]
        tests = gold.get("tests", []) if isinstance(gold, dict) else []
        return [
            f"{label} Here is my program.\n\n```python\n{c}```"
            for c in (constant_wrong_program(tests) if tests else "print()\n",)
        ]
    if q.kind == "exact":
        target, form = str(gold.get("target", "")), str(gold.get("form", "words"))
        vals = [target] if right else _exact_wrongs(target, form)
        return [f"{label} Let me work it out step by step.\n\nSo the answer is {v}." for v in vals]
    if q.kind == "funcall":
        return _funcall_candidates(gold, right, label)
    if q.kind == "ifeval":
        return _ifeval_candidates(q, label, right)
    return []
