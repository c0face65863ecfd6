"""The session protocol: what the pool models see and how a session runs, per competition.

A head trained here learns which (model, role) is best under the protocol its sessions ran
under; the validator replays it under its own. So the protocol is data, one frozen
`SessionProtocol` per competition, read from their code (TinyRouter at 1767d1f, MiniRouter at
6a1e0f4 — `roles/prompts.py`, `roles/postprocess.py`, `roles/verifier.py`,
`orchestration/session.py`, `orchestration/reward.py`, `adapters/loaders.py`, their pool
clients and `scripts/pr_eval.py`; none of their code is copied here):

- messages: a system message holding the role contract (THINKER / WORKER / VERIFIER, the same
  text in both), and a user message `"QUERY:\\n{query}\\n\\nTRANSCRIPT SO FAR:\\n{transcript}"`;
  the transcript is `"(no prior turns yet)"` when empty, else one block per earlier turn,
  `"--- Turn {k} | agent={pool name} | role={ROLE} ---\\n{output}"` (a Verifier's block adds
  `"\\n[parsed verdict: {verdict}]"` when a verdict was parsed), blocks joined by a blank line;
- the query: the same text the router reads (`trinity.competition.text`), with no answer-format
  instruction of ours;
- post-processing: stripped, capped at 8,000 characters as a head and a tail around
  `"\\n... [truncated] ...\\n"` (`RouterText.output_text`, one source);
- the verdict: read from the raw output, the last match wins, none → no verdict (a REVISE for
  the stop rule). TinyRouter tolerates Markdown and separators between VERDICT and the word;
  MiniRouter wants `VERDICT:` then optional whitespace. Each is its own regular expression;
- the stop rule: a Verifier ACCEPT ends the session once any Worker turn came before it (an
  empty Worker output counts: their flag is set by the role, not the text);
- the final answer: the last Worker output, else the last non-Verifier output; the scored
  (committed) answer is the final answer when it has an extractable answer, else the newest
  Worker turn with one, else the newest non-Verifier turn with one;
- decoding: every role `temperature 0.0, top_p 1.0, max_tokens 4096` and reasoning `"minimal"`
  (their `run_trajectory` defaults, which `pr_eval` and the MiniRouter validator keep; the
  `decoding:` block of their models.yaml is never read). On the wire TinyRouter's OpenRouter
  client sends `"reasoning_effort": "minimal"` as a top-level key; MiniRouter's client maps
  `minimal` to `low` and sends it under the provider's `reasoning_param` (Chutes: none);
- the cached answers TinyRouter scores 70% on (`scripts/build_benchmark.py`): one Worker turn on
  an empty transcript, `temperature 0.0, top_p 1.0, max_tokens 4096`, no reasoning setting.

`open` is this project's own protocol (our role prompts with the benchmark's answer instruction,
our transcript, our verdict parser, the pool's own decoding) for users outside the competitions.

This module imports nothing of trinity above `competition.text` and `errors`, so the session
loop, collect, the practice server and the score estimate can all read it; the whole messages of
a turn (the open protocol's prompts included) come from `trinity.benchmarks.prompts.turn_messages`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Protocol

from trinity.competition.text import MINIROUTER, POOL_COMPETITION, ROUTER_TEXTS, TINYROUTER, QuestionLike, RouterText
from trinity.errors import ConfigError

OPEN = "open"
ROLE_NAMES = ("Thinker", "Worker", "Verifier")

# ---- their role contracts (the same text in both competitions) -------------------------------

COMPETITION_SYSTEM = MappingProxyType(
    {
        "Thinker": (
            "You are the THINKER. Do NOT solve the task end-to-end.\n"
            "Analyze the current state and produce meta-level guidance: a concise high-level\n"
            "plan, a decomposition into subgoals, or a critique of the partial solution so far.\n"
            "You may recommend which role should act next.\n"
            "Return only your plan/critique."
        ),
        "Worker": (
            "You are the WORKER. Make concrete progress toward the final answer.\n"
            "Follow any plan in the transcript. Produce actionable content: the derivation,\n"
            "the code, or the numerical/final result. Be explicit and complete.\n"
            "Return your solution work."
        ),
        "Verifier": (
            "You are the VERIFIER. Check whether the accumulated solution is correct, complete,\n"
            "and responsive to the query.\n"
            "End your response with EXACTLY one line:\n"
            "VERDICT: ACCEPT      (if the current answer is correct and final)\n"
            "VERDICT: REVISE      (otherwise, with a one-line diagnosis above it)"
        ),
    }
)

# TinyRouter: Markdown / separators (* _ ` ~ - : whitespace) may sit between VERDICT and the word;
# neither word may run on into a letter (ACCEPTABLE, VERDICTS).
_TINYROUTER_VERDICT = re.compile(r"VERDICT(?![a-z])[\s:*_`~-]*(ACCEPT|REVISE)(?![a-z])", re.IGNORECASE)
# MiniRouter: "VERDICT:" then optional whitespace, the word at a word boundary.
_MINIROUTER_VERDICT = re.compile(r"VERDICT:\s*(ACCEPT|REVISE)\b", re.IGNORECASE)


def _last_match(pattern: re.Pattern[str]) -> Callable[[str | None], str | None]:
    def parse(text: str | None) -> str | None:
        if not text:
            return None
        found = None
        for m in pattern.finditer(text):
            found = m
        return found.group(1).upper() if found else None

    return parse


# Ours (open): per line, the last verdict on the last line that has one; Markdown decorations
# are tolerated (`**VERDICT: ACCEPT**`, `### Verdict - accept`); ACCEPTABLE / ACCEPTED are not ACCEPT.
_OPEN_VERDICT = re.compile(r"verdict\s*[:\-–—]?\s*[*_`\s]*\b(accept|revise)\b(?![a-z])", re.IGNORECASE)


def _open_verdict(text: str | None) -> str | None:
    found = None
    for line in (text or "").splitlines():
        matches = list(_OPEN_VERDICT.finditer(line))
        if matches:
            found = matches[-1].group(1).upper()
    return found


class TurnLike(Protocol):
    """What the protocol reads of an earlier turn: `TurnView`, or the session's `Turn` (which
    also has `ok`, read where present)."""

    @property
    def model(self) -> str: ...

    @property
    def role(self) -> str: ...

    @property
    def output(self) -> str: ...

    @property
    def verdict(self) -> str | None: ...


@dataclass(frozen=True)
class TurnView:
    """What the protocol needs of one earlier turn (the session's `Turn` has these fields)."""

    model: str
    role: str
    output: str  # post-processed
    verdict: str | None = None
    ok: bool = True


@dataclass(frozen=True)
class SessionProtocol:
    """One competition's session protocol (`open`: ours). See the module docstring."""

    name: str
    title: str
    system: Mapping[str, str]  # role -> system message ("open": with {answer_format})
    user_template: str = "QUERY:\n{query}\n\nTRANSCRIPT SO FAR:\n{transcript}"
    empty_transcript: str = "(no prior turns yet)"
    turn_header: str = "--- Turn {k} | agent={agent} | role={role} ---"
    verdict_line: str = "\n[parsed verdict: {verdict}]"
    block_separator: str = "\n\n"
    router: str = TINYROUTER  # whose RouterText renders the query, the pool names and the cap
    verdict_parser: Callable[[str | None], str | None] = field(default=_open_verdict, repr=False, compare=False)
    worker_turn_counts_empty: bool = True  # their has_worker_output is set by the role alone
    decoding: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType({"temperature": 0.0, "top_p": 1.0, "max_tokens": 4096})
    )
    reasoning: str | None = "minimal"  # their run_trajectory's `reasoning`
    reasoning_wire: str = "raw"  # "raw": top-level `reasoning_effort`; "pool": the pool's own style
    reasoning_map: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    cached_decoding: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType({"temperature": 0.0, "top_p": 1.0, "max_tokens": 4096})
    )
    exact_decoding: bool = True  # the protocol's decoding replaces the pool's (False: pool's own)

    # ---- the parts ----

    @property
    def text(self) -> RouterText:
        return ROUTER_TEXTS[self.router]

    @property
    def is_open(self) -> bool:
        return self.name == OPEN

    def render_question(self, question: QuestionLike) -> str:
        """The query text the pool sees under a competition's protocol (the router's text too).
        The open protocol's is the benchmark adapter's (`trinity.benchmarks.prompts`)."""
        return self.text.render_question(question)

    def system_message(self, role: str) -> str:
        """A competition's role contract (the open protocol's prompts live in
        `trinity.benchmarks.prompts`: they carry the benchmark's answer instruction)."""
        return self.system[role]

    def output_text(self, raw: str | None) -> str:
        """A raw model output as the transcript keeps it (strip + head/tail cap)."""
        return self.text.output_text(raw)

    def parse_verdict(self, raw: str | None) -> str | None:
        """The verdict of a Verifier's raw output: "ACCEPT", "REVISE" or None (none found)."""
        return self.verdict_parser(raw)

    def render_transcript(self, turns: Sequence[TurnLike]) -> str:
        if self.is_open:
            return "".join(
                f"[Turn {k} | {t.role} | {t.model}]\n{t.output}\n\n" for k, t in enumerate(turns, start=1)
            ).rstrip()
        if not turns:
            return self.empty_transcript
        blocks = []
        for k, t in enumerate(turns, start=1):
            header = self.turn_header.format(k=k, agent=self.text.model_name(t.model), role=t.role.upper())
            body = (t.output or "").strip()
            if t.role == "Verifier" and t.verdict is not None:
                body += self.verdict_line.format(verdict=t.verdict)
            blocks.append(f"{header}\n{body}")
        return self.block_separator.join(blocks)

    def user_message(self, query: str, turns: Sequence[TurnLike]) -> str:
        transcript = self.render_transcript(turns)
        if not turns:
            transcript = self.empty_transcript
        return self.user_template.format(query=query, transcript=transcript)

    # ---- decoding on the wire ----

    def decoding_kwargs(self, role: str) -> dict[str, Any]:
        """The kwargs `PoolClient.chat` gets for a turn of `role` (every role the same in both
        competitions): the decoding, the reasoning setting, and how it goes on the wire."""
        if not self.exact_decoding:
            return {}
        kw: dict[str, Any] = dict(self.decoding)
        if self.reasoning is not None:
            kw["reasoning_effort"] = self.reasoning_map.get(self.reasoning, self.reasoning)
        kw["decoding_exact"] = True
        if self.reasoning_wire == "raw":
            kw["reasoning_style"] = "reasoning_effort"
        return kw

    def cached_kwargs(self) -> dict[str, Any]:
        """The kwargs of a cached-answer call (no reasoning setting: `build_benchmark` sends none)."""
        if not self.exact_decoding:
            return {}
        return {**self.cached_decoding, "decoding_exact": True}

    # ---- the rules ----

    def has_worker(self, turns: Sequence[TurnLike]) -> bool:
        if self.worker_turn_counts_empty:
            return any(t.role == "Worker" and getattr(t, "ok", True) for t in turns)
        return any(t.role == "Worker" and getattr(t, "ok", True) and (t.output or "").strip() for t in turns)

    def stops(self, turns: Sequence[TurnLike]) -> bool:
        """Whether the session ends after its newest turn (a Verifier ACCEPT with a Worker turn
        before it)."""
        if not turns:
            return False
        last = turns[-1]
        return last.role == "Verifier" and last.verdict == "ACCEPT" and self.has_worker(turns[:-1])

    @staticmethod
    def final_answer(turns: Sequence[TurnLike]) -> str:
        """O_τ: the last Worker output, else the last non-Verifier output, else the last output."""
        for t in reversed(turns):
            if t.role == "Worker":
                return t.output
        for t in reversed(turns):
            if t.role != "Verifier":
                return t.output
        return turns[-1].output if turns else ""

    def committed_answer(self, turns: Sequence[TurnLike], has_answer: Callable[[str], bool]) -> str:
        """The text scored: the final answer when it has an extractable answer, else the newest
        Worker output that has one, else the newest non-Verifier output that has one, else the
        final answer."""
        final = self.final_answer(turns)
        if has_answer(final):
            return final
        for role in ("Worker", None):
            for t in reversed(turns):
                if t.role == "Verifier" or (role is not None and t.role != role):
                    continue
                if has_answer(t.output):
                    return t.output
        return final

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "decoding": dict(self.decoding),
            "reasoning": self.reasoning,
            "reasoning_wire": self.reasoning_wire,
        }


TINYROUTER_PROTOCOL = SessionProtocol(
    TINYROUTER,
    "TinyRouter",
    COMPETITION_SYSTEM,
    router=TINYROUTER,
    verdict_parser=_last_match(_TINYROUTER_VERDICT),
    reasoning_wire="raw",  # their OpenRouter client: payload["reasoning_effort"] = reasoning
)
MINIROUTER_PROTOCOL = SessionProtocol(
    MINIROUTER,
    "MiniRouter",
    COMPETITION_SYSTEM,
    router=MINIROUTER,
    verdict_parser=_last_match(_MINIROUTER_VERDICT),
    reasoning_wire="pool",  # their compatible pool: the provider's reasoning_param (Chutes: none)
    reasoning_map=MappingProxyType({"minimal": "low"}),
)
OPEN_PROTOCOL = SessionProtocol(
    OPEN,
    "open",
    MappingProxyType({}),
    empty_transcript="(empty: you are the first turn)",
    worker_turn_counts_empty=False,
    reasoning=None,
    exact_decoding=False,
)

PROTOCOLS: Mapping[str, SessionProtocol] = MappingProxyType(
    {TINYROUTER: TINYROUTER_PROTOCOL, MINIROUTER: MINIROUTER_PROTOCOL, OPEN: OPEN_PROTOCOL}
)
PROTOCOL_ALIASES = MappingProxyType({"trinity": OPEN})
PROTOCOL_CHOICES = (*PROTOCOLS, *PROTOCOL_ALIASES)


def get_protocol(name: str | None) -> SessionProtocol:
    """The protocol called `name` (None: open, what runs made before protocols were recorded used)."""
    key = (name or OPEN).strip().lower()
    key = PROTOCOL_ALIASES.get(key, key)
    try:
        return PROTOCOLS[key]
    except KeyError:
        raise ConfigError(f"unknown session protocol {name!r}; use one of: {', '.join(PROTOCOL_CHOICES)}") from None


def run_protocol(meta: Mapping[str, Any]) -> SessionProtocol:
    """The protocol a run's sessions ran under, from its run.json: the top-level `protocol`, else
    the config's, else open (a run made before runs recorded it)."""
    cfg = meta.get("config") if isinstance(meta.get("config"), Mapping) else {}
    name = meta.get("protocol") or (cfg or {}).get("protocol")
    return get_protocol(name if isinstance(name, str) else None)


def default_protocol(competition: str | None, explicit: bool, pool: str | None) -> str:
    """The protocol a new run uses when none is asked for: the competition's when the run names
    its competition or runs a competition's pool; open otherwise (practice, local servers)."""
    if competition and (explicit or (pool or "").strip().lower() in POOL_COMPETITION):
        return get_protocol(competition).name
    return OPEN
