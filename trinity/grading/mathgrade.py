"""Math grader: extract the final answer, decide equivalence with the gold answer.

Order of decisions (cheapest first, each one final):
1. extraction — the last non-empty `\\boxed{...}` (balanced braces), else the last number;
2. exact string match after light normalisation (spacing, `\\dfrac`, `\\left`, `$`, `^\\circ` …);
3. variables — `x = 5` vs `5` compares the right-hand sides; `x = 5` vs `y = 5` is wrong;
4. exact numbers — when both sides are plain numbers (integers, decimals, `a/b`, `\\frac{a}{b}`,
   thousands separators) they are compared as exact fractions, so `1000001` ≠ `1000000` and
   `0.333` / `0.3333333` ≠ `1/3` (math-verify would round the latter to equal);
5. a decimal answer to a non-numeric gold (`\\sqrt{2}`, `\\pi`) is an approximation: wrong;
6. otherwise math-verify (sympy) decides, under a CPU-time deadline.

The deadline: math-verify's own timeouts use `signal.alarm`, which only works in the main thread,
only in whole seconds, and counts wall time (so a busy machine changes verdicts). We switch them
off and guard the call ourselves: in the main thread with a `setitimer(ITIMER_VIRTUAL)` alarm on
this process's CPU time; in any other thread (the practice server, a thread pool) the comparison
runs in a persistent helper process (its own main thread, same alarm) that is also killed and
restarted if it overruns a generous wall-clock limit (C code that ignores signals).
Results are memoised per (gold, answer); a timeout is not, so a retry may finish.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

from trinity.grading.verdict import Verdict

DEADLINE_S = 2.0  # CPU seconds per symbolic comparison (parse gold + parse answer + verify)
WALL_LIMIT_FACTOR = 5.0  # helper process: wall-clock kill at 5 × the deadline + 5 s
MAX_SYMBOLIC_CHARS = 400  # longer answers are compared as strings only (sympy can take seconds)

# ---------------------------------------------------------------------------------------------
# extraction

_BOX_RE = re.compile(r"\\(?:boxed|fbox)\s*")
_NUMBER_RE = re.compile(
    r"(?<![\w.])-?\\[dt]?frac\{\d+\}\{\d+\}"  # \frac{3}{4}
    r"|(?<![\w.\-])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,]*\d)"  # 1,000,000 (strict groups)
    r"|(?<![\w.])-?\d+(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?"  # 42, -3.5, 7/8
    r"|(?<![\w.])-?\.\d+"  # .5
)


def _brace_pairs(text: str) -> dict[int, int]:
    """{index of `{`: index of its `}`} in one pass; escaped `\\{` `\\}` do not count. Linear, so
    a response with thousands of unclosed `\\boxed{` cannot make extraction quadratic."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2  # skip the escaped character (\{, \}, \\)
            continue
        if c == "{":
            stack.append(i)
        elif c == "}" and stack:
            pairs[stack.pop()] = i
        i += 1
    return pairs


def last_boxed(text: str) -> str | None:
    """Content of the last non-empty `\\boxed{...}` / `\\fbox{...}` (or `\\boxed 5`), else None."""
    matches = list(_BOX_RE.finditer(text))
    if not matches:
        return None
    pairs = _brace_pairs(text)
    for m in reversed(matches):
        start = m.end()
        if start < len(text) and text[start] == "{":
            end = pairs.get(start)
            if end is None:
                continue  # unbalanced (truncated output): not an answer
            inner = text[start + 1 : end].strip()
        else:  # `\\boxed 5`: one token
            tok = re.match(r"[^\s$]+", text[start : start + 200])
            inner = tok.group(0) if tok else ""
        if inner:
            return inner
    return None


def last_number(text: str) -> str | None:
    last = None
    for m in _NUMBER_RE.finditer(text):
        last = m.group(0)
    return last.replace(" ", "") if last else None


def extract_math_answer(text: str) -> str | None:
    """The final answer a response commits to: the last `\\boxed{}`, else the last number."""
    if not isinstance(text, str) or not text:
        return None
    return last_boxed(text) or last_number(text)


# ---------------------------------------------------------------------------------------------
# normalisation and exact decisions

_TEXT_CMD_RE = re.compile(r"\\(?:text|textbf|textrm|mathrm|mathbf|mbox|operatorname)\s*\{([^{}]*)\}")
_SPACING_RE = re.compile(r"(?<!\\)\\[!,;:> ]|\\q?quad|~")  # not the `\\` row break


def _strip_wrappers(s: str) -> str:
    s = s.strip()
    for _ in range(3):
        before = s
        if s.startswith("$") and s.endswith("$") and len(s) >= 2:
            s = s.strip("$").strip()
        for a, b in (("\\(", "\\)"), ("\\[", "\\]")):
            if s.startswith(a) and s.endswith(b):
                s = s[len(a) : -len(b)].strip()
        boxed = last_boxed(s)
        if boxed is not None and s.startswith("\\boxed") and len(boxed) + 8 >= len(s):
            s = boxed
        if s == before:
            break
    return s


def normalize(s: str) -> str:
    """A canonical spelling for the exact-match fast path (never makes unequal values equal)."""
    s = _strip_wrappers(s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = s.replace("\\left", "").replace("\\right", "").replace("\\displaystyle", "")
    s = _SPACING_RE.sub("", s)
    s = s.replace("\\$", "").replace("$", "").replace("\\%", "%")
    s = re.sub(r"\^\s*\{?\\circ\}?|°|\\degree", "", s)
    s = s.replace("{,}", ",")
    for _ in range(3):
        s = _TEXT_CMD_RE.sub(r"\1", s)
    # drop spacing, but keep the one space that ends a command before a letter (`\\cdot x`)
    s = re.sub(r"(\\[A-Za-z]+)\s+(?=[A-Za-z])", "\\1\x00", s)
    s = re.sub(r"\s+", "", s).replace("\x00", " ")
    s = s.rstrip(".")
    # \frac12 -> \frac{1}{2}
    s = re.sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}", s)
    return s


# A trailing unit: `\\text{ cm}` (any words), or plain words of 2+ letters (`5 dollars`; a single
# letter after a number is a variable: `2 x`).
_UNIT_TAIL_RE = re.compile(
    r"(?:\\(?:text|mbox|mathrm)\s*\{\s*[A-Za-z][A-Za-z .^2]*\}"
    r"|\s+[A-Za-z]{2,}(?:\s+[A-Za-z]{2,})*\.?)\s*$"
)


def _drop_units(s: str) -> str:
    """`10\\text{ cm}` -> `10`, `5 dollars` -> `5` (only a trailing unit after a number)."""
    m = _UNIT_TAIL_RE.search(s)
    if m and m.start() > 0 and re.search(r"[\w})]\s*$", s[: m.start()]):
        return s[: m.start()].strip()
    return s


_VAR_EQ_RE = re.compile(r"^\s*([A-Za-z](?:_\{?\w+\}?)?|\\[a-z]+)\s*=\s*([^=]+)$")


def split_variable(s: str) -> tuple[str | None, str]:
    """`x = 5` -> ("x", "5"); `5` -> (None, "5"). Only a single variable on the left counts."""
    m = _VAR_EQ_RE.match(s)
    if m and not re.fullmatch(r"\\(?:frac|sqrt|pi)", m.group(1)):
        return m.group(1), m.group(2).strip()
    return None, s


_PLAIN_NUM_RE = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)")
_THOUSANDS_RE = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_FRAC_RE = re.compile(r"(-?)\\frac\{(-?[\d.]+)\}\{(-?[\d.]+)\}")
_SLASH_RE = re.compile(r"(-?[\d.]+)/(-?[\d.]+)")


def exact_number(s: str) -> Fraction | None:
    """An exact value for a plain number spelling (normalised), else None."""
    s = s.strip()
    if not s or len(s) > 64:
        return None
    if s.startswith("+"):
        s = s[1:]
    try:
        if _PLAIN_NUM_RE.fullmatch(s):
            return Fraction(s)
        if _THOUSANDS_RE.fullmatch(s):
            return Fraction(s.replace(",", ""))
        m = _FRAC_RE.fullmatch(s)
        if m:
            val = Fraction(m.group(2)) / Fraction(m.group(3))
            return -val if m.group(1) else val
        m = _SLASH_RE.fullmatch(s)
        if m:
            return Fraction(m.group(1)) / Fraction(m.group(2))
    except (ValueError, ZeroDivisionError):
        return None
    return None


_TEXT_ANSWER_RE = re.compile(r"\\text(?:bf|rm)?\s*\{\s*[A-Za-z][A-Za-z \-']*\}")


def _is_decimal(s: str) -> bool:
    return bool(re.fullmatch(r"-?\d*\.\d+", s))


# ---------------------------------------------------------------------------------------------
# symbolic comparison under a deadline


class _Deadline(BaseException):
    """Raised by our alarm; a BaseException so math-verify's `except Exception` lets it through."""


def _symbolic_equal_unguarded(gold: str, pred: str) -> bool:
    # lazy: math-verify (sympy, antlr) loaded only when a symbolic check is needed
    from math_verify import grader, parse, parser, verify

    # We guard the call ourselves (see module doc): silence the "timeout disabled" warning.
    parser.TIMEOUT_WARNING_SHOWN = grader.TIMEOUT_WARNING_SHOWN = True
    g = parse(f"${gold}$", parsing_timeout=None)
    p = parse(f"${pred}$", parsing_timeout=None)
    if not g or not p:
        return False
    return bool(verify(g, p, timeout_seconds=None))


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGVTALRM")


class _NoSignals(Exception):
    """SIGVTALRM cannot be used here (not the main thread / interpreter, or no setitimer)."""


_WARM = False


def _warm_up() -> None:
    """The first parse builds the LaTeX parser (a second or more on a busy box): not on the clock."""
    global _WARM
    if not _WARM:
        _symbolic_equal_unguarded("1", "1")
        _WARM = True


def _equal_with_alarm(gold: str, pred: str, deadline_s: float) -> bool | None:
    """Main thread only (else _NoSignals). None = ran out of time.

    The deadline is CPU time of this process (ITIMER_VIRTUAL / SIGVTALRM), not wall time, so a
    verdict does not depend on how busy the machine is."""

    def on_alarm(signum, frame):
        raise _Deadline()

    if not _in_main_thread():
        raise _NoSignals()
    _warm_up()
    started = time.process_time()
    try:
        old_handler = signal.signal(signal.SIGVTALRM, on_alarm)
    except ValueError:  # main thread of a sub-interpreter
        raise _NoSignals() from None
    old_timer = signal.setitimer(signal.ITIMER_VIRTUAL, deadline_s)
    try:
        try:
            result: bool | None = _symbolic_equal_unguarded(gold, pred)
        finally:
            signal.setitimer(signal.ITIMER_VIRTUAL, 0)
    except _Deadline:  # also when the alarm lands between the result and the cancel above
        result = None
    finally:
        signal.signal(signal.SIGVTALRM, old_handler)
        if old_timer[0] > 0:  # someone else's timer was pending: re-arm what is left of it
            left = max(old_timer[0] - (time.process_time() - started), 0.001)
            signal.setitimer(signal.ITIMER_VIRTUAL, left, old_timer[1])
    return result


class _Helper:
    """One persistent child process that runs comparisons for non-main threads."""

    STARTUP_S = 60.0  # importing sympy on a loaded 2-core box can take a while

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.owner_pid = os.getpid()  # a forked child must not share its parent's helper pipes
        self.buf = b""

    def _start(self) -> None:
        root = str(Path(__file__).resolve().parents[2])
        code = (
            f"import sys; sys.path.insert(0, {root!r}); "
            "from trinity.grading.mathgrade import _helper_main; _helper_main()"
        )
        env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "TMPDIR", "HOME") if k in os.environ}
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        self.buf = b""
        if self._read_line(self.STARTUP_S) != b"ready":
            self.stop()
            raise RuntimeError("math grading helper process did not start")

    def _read_line(self, timeout: float) -> bytes | None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                return None
            poller = select.poll()  # not select(): it fails on descriptors >= 1024
            poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
            if poller.poll(left * 1000):
                chunk = os.read(fd, 65536)
                if not chunk:
                    return None  # the helper died
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def stop(self) -> None:
        if self.proc is not None and self.owner_pid == os.getpid():
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
            self.proc = None

    def equal(self, gold: str, pred: str, deadline_s: float) -> bool | None:
        with self.lock:
            if self.owner_pid != os.getpid():  # we are a fork: leave the parent's helper alone
                self.proc, self.owner_pid = None, os.getpid()
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            assert self.proc is not None and self.proc.stdin is not None
            msg = json.dumps({"gold": gold, "pred": pred, "deadline": deadline_s}) + "\n"
            try:
                self.proc.stdin.write(msg.encode())
                self.proc.stdin.flush()
            except BrokenPipeError:
                self.stop()
                return None
            # The helper enforces the (CPU-time) deadline itself; this wall-clock limit only
            # catches C code that ignores signals, with room for a busy machine.
            line = self._read_line(WALL_LIMIT_FACTOR * deadline_s + 5.0)
            if line is None:
                self.stop()
                return None
            try:
                return json.loads(line)["equal"]
            except (ValueError, KeyError, TypeError):  # not our protocol: start afresh next time
                self.stop()
                return None


_HELPER = _Helper()
atexit.register(_HELPER.stop)


def _helper_main() -> None:
    """The helper process: one JSON request a line on stdin, one JSON answer a line on stdout."""
    out = os.fdopen(os.dup(1), "w")  # the protocol channel; stray library prints go to stderr
    sys.stdout = sys.stderr
    _warm_up()
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        req = json.loads(line)
        try:
            eq = _equal_with_alarm(req["gold"], req["pred"], float(req["deadline"]))
        except Exception:  # noqa: BLE001 — a crash in sympy means "not shown equal"
            eq = False
        out.write(json.dumps({"equal": eq}) + "\n")
        out.flush()


@lru_cache(maxsize=8192)
def _symbolic_cached(gold: str, pred: str, deadline_s: float) -> bool:
    eq: bool | None
    try:
        eq = _equal_with_alarm(gold, pred, deadline_s)
    except _NoSignals:  # no signals here: let the helper process (its own main thread) do it
        try:
            eq = _HELPER.equal(gold, pred, deadline_s)
        except (OSError, RuntimeError):
            eq = None  # the helper could not start: an undecided comparison, not a crash
    if eq is None:
        raise TimeoutError  # not cached: a later call on a quieter machine may finish
    return eq


def symbolic_equal(gold: str, pred: str, deadline_s: float = DEADLINE_S) -> bool | None:
    """math-verify equivalence; None when it did not finish within `deadline_s`."""
    try:
        return _symbolic_cached(gold, pred, deadline_s)
    except TimeoutError:
        return None


# ---------------------------------------------------------------------------------------------
# the grader


def answers_equivalent(gold: str, pred: str, deadline_s: float = DEADLINE_S) -> tuple[bool, str]:
    """(equal?, reason) for two answer strings (no extraction)."""
    raw_gold = _strip_wrappers(gold)
    g, p = normalize(_drop_units(raw_gold)), normalize(_drop_units(_strip_wrappers(pred)))
    if not p:
        return False, "empty answer"
    if g == p:
        return True, "exact match"
    if _TEXT_ANSWER_RE.fullmatch(raw_gold) and g.casefold() == p.casefold():
        return True, "same words"  # \text{East} vs "east"; not for symbols, where x != X
    gv, g = split_variable(g)
    pv, p = split_variable(p)
    if gv and pv and gv != pv:
        return False, f"wrong variable ({pv} instead of {gv})"
    if g == p:
        return True, "exact match"
    gpct, ppct = g.endswith("%"), p.endswith("%")
    gn, pn = exact_number(g.rstrip("%")), exact_number(p.rstrip("%"))
    has_percent = "%" in g or "%" in p
    if gn is not None and pn is not None:
        # `12.5%` answers a gold of `12.5` (a "what percent" question) and of `0.125`.
        same = gn == pn or (gpct and not ppct and gn / 100 == pn) or (ppct and not gpct and pn / 100 == gn)
        return (True, "same number") if same else (False, "different number")
    if pn is not None and _is_decimal(p) and gn is None and not has_percent:
        # the gold is symbolic (√2, π, 1/3 written oddly …): a decimal is only an approximation
        return False, "decimal approximation of an exact answer"
    if len(g) > MAX_SYMBOLIC_CHARS or len(p) > MAX_SYMBOLIC_CHARS:
        return False, "answer too long to compare symbolically (no exact match)"
    eq = symbolic_equal(g, p, deadline_s)
    if eq is None:
        return False, f"comparison timed out after {deadline_s:g}s (or could not run)"
    return (True, "equivalent") if eq else (False, "not equivalent")


def grade_math(response: str, gold: str, deadline_s: float = DEADLINE_S) -> Verdict:
    gold = str(gold)
    pred = extract_math_answer(response or "")
    if pred is None:
        return Verdict(False, "no \\boxed{} or number", None)
    ok, reason = answers_equivalent(gold, pred, deadline_s)
    return Verdict(ok, reason, pred)
