"""A skilled stand-in pool for the live learning benchmark: an OpenAI-compatible server on
127.0.0.1 whose models are each strong on one topic, with real-looking prices and answer lengths.

Hostile-honest: it knows nothing of the router or its recipe. It answers what the request asks
(the role from the system prompt's first line, the question from the `QUERY:` block, earlier turns
from the transcript) and bills what it reports in `usage` (prompt tokens = request characters / 4,
completion tokens = reply characters / 4, `usage.cost` at the model's $/Mtok). `stats()` is its
own count of calls, tokens and dollars, per model, to check a ledger against.

- Worker: right with probability p(model, question) — the model's skill on the question's topic
  (its kind: math, mc, code), moved per (model, question) by a normal offset in logits (some
  questions suit a model better than its topic average says); each Worker answer is a fresh draw
  (request seed, how many Worker answers that model already gave in the transcript). A Thinker
  plan earlier in the transcript closes `plan_boost` of the gap to 1. Right answers are the gold in
  the benchmark's answer form; wrong ones a near miss of the same form; the real grader grades both.
- Thinker: a plan with no final answer.
- Verifier: checks the latest Worker answer against the truth and says ACCEPT/REVISE correctly
  with probability `verifier_accuracy` (its stated trust), wrongly otherwise.
- Length: each reply's completion length is drawn from a per-model lognormal (median, spread),
  the text padded with working to that length before its final answer.

Deterministic given the seed. Questions: any `math`, `mc` or `code` questions with gold answers
(the benchmark uses the shipped practice set, so nothing is downloaded).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from dataclasses import dataclass, field
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from trinity.benchmarks.prompts import render_question
from trinity.competition.text import ROUTER_TEXTS, TINYROUTER
from trinity.data.questions import Question
from trinity.grading import grade_question

TOPICS = ("math", "mc", "code")


@dataclass(frozen=True)
class StandinModel:
    id: str
    skill: dict[str, float]  # topic -> P(a Worker answer is right), before the per-question offset
    price_in: float  # USD per 1M prompt tokens
    price_out: float  # USD per 1M completion tokens
    tokens_median: int  # completion length of a Worker answer (lognormal median)
    tokens_sigma: float  # its spread (log scale)
    verifier_accuracy: float  # P(a verdict is right about the latest Worker answer)
    plan_boost: float = 0.2


# Three tiers like a real provider's price list (a small cheap model, a mid one, a large
# reasoning one): each the best on one topic, none the best everywhere. The strong model is the
# most expensive and the most verbose; the cheap one is the best at only one thing.
STANDIN_MODELS: tuple[StandinModel, ...] = (
    StandinModel(
        "standin/small-math",
        {"math": 0.88, "mc": 0.45, "code": 0.30},
        price_in=0.10,
        price_out=0.40,
        tokens_median=140,
        tokens_sigma=0.5,
        verifier_accuracy=0.80,
    ),
    StandinModel(
        "standin/mid-knowledge",
        {"math": 0.50, "mc": 0.90, "code": 0.45},
        price_in=0.60,
        price_out=2.40,
        tokens_median=260,
        tokens_sigma=0.45,
        verifier_accuracy=0.85,
    ),
    StandinModel(
        "standin/large-coder",
        {"math": 0.62, "mc": 0.60, "code": 0.90},
        price_in=3.00,
        price_out=15.00,
        tokens_median=520,
        tokens_sigma=0.6,
        verifier_accuracy=0.92,
    ),
)
QUESTION_SPREAD = 0.8  # per-(model, question) offset in logits (standard deviation)
MAX_COMPLETION_TOKENS = 2000

ROLE_RE = re.compile(r"^\s*You are the (Thinker|Worker|Verifier)\b", re.IGNORECASE)
HEAD_RE = re.compile(
    r"^(?:\[Turn \d+ \| (Thinker|Worker|Verifier) \| [^\]\n]*\]"
    r"|--- Turn \d+ \| agent=[^|\n]* \| role=(THINKER|WORKER|VERIFIER) ---)$",
    re.MULTILINE,
)
QUERY_MARK = "QUERY:\n"
LETTERS = "ABCDEFGHIJ"
FILLER = (
    "Let me restate what is asked and check each step against it. ",
    "Working through the details carefully, one quantity at a time. ",
    "Checking the intermediate result against the conditions again. ",
    "Considering the alternatives before settling on one. ",
)


def _u(*parts: object) -> float:
    h = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2.0**64


def _normal(*parts: object) -> float:
    u1 = max(_u("n1", *parts), 1e-12)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * _u("n2", *parts))


def tokens_of(text: str) -> int:
    return (len(text) + 3) // 4


@dataclass
class StandinStats:
    calls: int = 0
    by_model: dict[str, dict[str, float]] = field(default_factory=dict)  # model -> calls, tokens, usd

    @property
    def billed_usd(self) -> float:
        return sum(v["usd"] for v in self.by_model.values())

    def to_json(self) -> dict[str, Any]:
        return {"calls": self.calls, "billed_usd": self.billed_usd, "by_model": self.by_model}


class Standin:
    """The answering side (no HTTP): `reply(model, messages, seed)` -> (text, usage)."""

    def __init__(self, questions: list[Question], seed: int = 0, models: tuple[StandinModel, ...] = STANDIN_MODELS):
        self.seed = seed
        self.models = {m.id: m for m in models}
        self.questions = [q for q in questions if q.kind in TOPICS]
        self.by_text: dict[str, Question] = {}
        for q in self.questions:
            for text in (render_question(q), ROUTER_TEXTS[TINYROUTER].render_question(q), q.question):
                self.by_text.setdefault(text.strip(), q)
        self._truth: dict[str, bool] = {}  # sha of a Worker reply it gave -> whether it is right
        self.lock = threading.Lock()
        self.stats = StandinStats()

    # ---- what a model knows ----
    def p_correct(self, model: str, q: Question, boosted: bool = False) -> float:
        m = self.models[model]
        p = min(max(m.skill[q.kind], 1e-4), 1 - 1e-4)
        p = 1.0 / (1.0 + math.exp(-(math.log(p / (1 - p)) + QUESTION_SPREAD * _normal(self.seed, model, q.id))))
        return p + m.plan_boost * (1.0 - p) if boosted else p

    def ceiling(self, questions: list[Question]) -> dict[str, Any]:
        """The expected accuracy of the best model per topic (one Worker turn), and of the best
        single model, on `questions` — what a router that knows the topic reaches in one turn."""
        known = [q for q in questions if q.kind in TOPICS]
        per_topic: dict[str, dict[str, Any]] = {}
        for t in sorted({q.kind for q in known}):
            qs = [q for q in known if q.kind == t]
            accs = {m: sum(self.p_correct(m, q) for q in qs) / len(qs) for m in self.models}
            best = max(accs, key=lambda k: accs[k])
            per_topic[t] = {"n": len(qs), "best_model": best, "acc": accs[best]}
        singles = {m: sum(self.p_correct(m, q) for q in known) / max(len(known), 1) for m in self.models}
        n = max(len(known), 1)
        return {
            "per_topic": per_topic,
            "per_topic_ceiling": sum(v["acc"] * v["n"] for v in per_topic.values()) / n,
            "singles": singles,
        }

    # ---- request parsing ----
    def parse(self, messages: list[dict[str, Any]]) -> tuple[Question, str, list[tuple[str, str]]]:
        system = next((m.get("content") for m in messages if m.get("role") == "system"), "") or ""
        hit = ROLE_RE.match(system.splitlines()[0] if system else "")
        role = hit.group(1).title() if hit else "Worker"
        user = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), None)
        if not isinstance(user, str) or QUERY_MARK not in user:
            raise ValueError("a user message with a 'QUERY:' block is required")
        body = user.split(QUERY_MARK, 1)[1]
        found = [(len(k), q) for k, q in self.by_text.items() if body.startswith(k)]
        if not found:
            raise ValueError("the QUERY is not one of the questions this server was started with")
        q = max(found, key=lambda x: x[0])[1]
        heads = list(HEAD_RE.finditer(body))
        turns = []
        for i, h in enumerate(heads):
            end = heads[i + 1].start() if i + 1 < len(heads) else len(body)
            turns.append(((h.group(1) or h.group(2)).title(), body[h.end() : end].strip()))
        return q, role, turns

    # ---- replies ----
    def _pad(self, model: str, n: str, body: str, final: str) -> str:
        m = self.models[model]
        want = math.exp(math.log(m.tokens_median) + m.tokens_sigma * _normal(self.seed, "len", model, n))
        want = int(min(max(want, 8), MAX_COMPLETION_TOKENS))
        text = body
        k = 0
        while tokens_of(text + final) < want:
            text += FILLER[k % len(FILLER)]
            k += 1
        return text + final

    def worker(self, model: str, q: Question, seed: int, turns: list[tuple[str, str]], n: str) -> str:
        boosted = any(r == "Thinker" and out for r, out in turns)
        sample = sum(1 for r, _ in turns if r == "Worker")
        right = _u(self.seed, "w", model, q.id, seed, sample) < self.p_correct(model, q, boosted)
        salt = int(_u(self.seed, "salt", model, q.id, seed, sample) * 1e9)
        if q.kind == "math":
            ans = str(q.answer) if right else _wrong_math(str(q.answer), salt)
            text = self._pad(model, n, "", f"\n\nThe final answer is $\\boxed{{{ans}}}$.")
        elif q.kind == "mc":
            nchoice = len(q.extra.get("choices") or []) or 4
            gold = str(q.answer).strip().upper()
            others = [c for c in LETTERS[:nchoice] if c != gold]
            letter = gold if right else others[salt % len(others)]
            text = self._pad(model, n, f"Comparing the options, option {letter} fits best. ", f"\n\nAnswer: {letter}")
        else:
            tests = q.answer.get("tests", []) if isinstance(q.answer, dict) else []
            if right:
                code = str(q.extra.get("reference_solution", ""))
            else:
                want = str(tests[0].get("output", "")).strip() if tests else ""
                code = f"print({('0' if want != '0' else '1')!r})\n"
            text = self._pad(model, n, "Here is my program. ", f"\n\n```python\n{code}```")
        with self.lock:
            self._truth[hashlib.sha256(text.strip().encode()).hexdigest()] = right
        return text

    def verifier(self, model: str, q: Question, seed: int, turns: list[tuple[str, str]], n: str) -> str:
        answers = [out for r, out in turns if r == "Worker" and out]
        if not answers:
            return self._pad(model, n, "There is no answer to check yet. ", "\n\nVERDICT: REVISE")
        with self.lock:
            truth = self._truth.get(hashlib.sha256(answers[-1].encode()).hexdigest())
        if truth is None:  # not an answer it gave (trimmed, or another pool's): grade it
            truth = bool(grade_question(q, answers[-1]).correct)
        honest = _u(self.seed, "v", model, q.id, seed, len(turns)) < self.models[model].verifier_accuracy
        accept = truth if honest else not truth
        why = "The latest answer checks out. " if accept else "The latest answer does not hold up. "
        return self._pad(model, n, why, f"\n\nVERDICT: {'ACCEPT' if accept else 'REVISE'}")

    def reply(self, model: str, messages: list[dict[str, Any]], seed: int = 0) -> tuple[str, dict[str, Any]]:
        if model not in self.models:
            raise ValueError(f"unknown model {model!r}; this server has {', '.join(self.models)}")
        q, role, turns = self.parse(messages)
        with self.lock:
            self.stats.calls += 1
        # the reply's length is drawn from the request itself: the same request, the same reply
        n = hashlib.sha256(json.dumps([model, messages, seed], sort_keys=True).encode()).hexdigest()[:16]
        if role == "Thinker":
            text = self._pad(model, n, "Plan: restate the question, work it out, check it. ", "No final answer yet.")
        elif role == "Verifier":
            text = self.verifier(model, q, seed, turns, n)
        else:
            text = self.worker(model, q, seed, turns, n)
        prompt = sum(len(m.get("content") or "") for m in messages if isinstance(m, dict))
        pt, ct = (prompt + 3) // 4, tokens_of(text)
        price = self.models[model]
        cost = round((pt * price.price_in + ct * price.price_out) / 1e6, 12)
        with self.lock:
            row = self.stats.by_model.setdefault(
                model, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "usd": 0.0}
            )
            row["calls"] += 1
            row["prompt_tokens"] += pt
            row["completion_tokens"] += ct
            row["usd"] += cost
        return text, {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct, "cost": cost}


def _wrong_math(gold: str, salt: int) -> str:
    delta = 1 + salt % 9
    g = gold.strip()
    if re.fullmatch(r"-?\d+", g):
        return str(int(g) + delta)
    m = re.fullmatch(r"\\frac\{(-?\d+)\}\{(\d+)\}", g)
    if m:
        f = Fraction(int(m.group(1)) + delta, int(m.group(2)))
        return f"\\frac{{{f.numerator}}}{{{f.denominator}}}" if f.denominator != 1 else str(f.numerator)
    try:
        return repr(float(g) + delta)
    except ValueError:
        return str(1000 + salt % 9000)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, *a: Any) -> None:  # quiet
        pass

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        sd = self.server.standin
        if self.path.rstrip("/").endswith("/stats"):
            with sd.lock:
                return self._send(200, sd.stats.to_json())
        self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in sd.models]})

    def do_POST(self) -> None:
        sd = self.server.standin
        try:
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            model, messages = req["model"], req["messages"]
            seed = req.get("seed")
            text, usage = sd.reply(str(model), list(messages), int(seed) if isinstance(seed, int) else 0)
        except (ValueError, KeyError, TypeError) as e:
            return self._send(400, {"error": {"message": f"stand-in: {e}", "type": "invalid_request_error"}})
        self._send(
            200,
            {
                "id": f"chatcmpl-standin-{sd.stats.calls}",
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": usage,
            },
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    standin: Standin


class StandinHandle:
    """A stand-in pool server in a background thread: `base_url`, `stats()`, `stop()`."""

    def __init__(self, standin: Standin, host: str = "127.0.0.1", port: int = 0):
        self.standin = standin
        self._srv = _Server((host, port), _Handler)
        self._srv.standin = standin
        self._thread = threading.Thread(target=self._srv.serve_forever, name="standin-pool", daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._srv.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def stats(self) -> StandinStats:
        with self.standin.lock:
            return StandinStats(self.standin.stats.calls, {m: dict(v) for m, v in self.standin.stats.by_model.items()})

    def stop(self) -> None:
        self._srv.shutdown()
        self._srv.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> "StandinHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_standin(questions: list[Question], seed: int = 0, port: int = 0) -> StandinHandle:
    """Start the stand-in pool on 127.0.0.1 (an ephemeral port unless `port`)."""
    return StandinHandle(Standin(questions, seed=seed), port=port)


def pool_overrides(handle: StandinHandle) -> dict[str, Any]:
    """The run-config keys that point a run at this server (a `local` pool, its prices)."""
    ms = list(handle.standin.models.values())
    return {
        "pool": "local",
        "base_url": handle.base_url,
        "pool_models": [m.id for m in ms],
        "prices": {m.id: {"price_in": m.price_in, "price_out": m.price_out} for m in ms},
    }
