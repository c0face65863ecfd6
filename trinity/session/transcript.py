"""Turns, transcript text, trimming, verdict parsing and the scored answer."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from trinity.competition.protocol import OPEN_PROTOCOL

TRIM_CHARS = 8000


def parse_verdict(text: str) -> str:
    """'ACCEPT' or 'REVISE' under the open protocol's parser; no verdict line means REVISE."""
    return OPEN_PROTOCOL.parse_verdict(text) or "REVISE"


def trim_output(text: str, limit: int = TRIM_CHARS) -> str:
    """Keep the head and the tail (the answer is usually at the end) within `limit` chars."""
    if len(text) <= limit:
        return text
    marker = "\n[… trimmed …]\n"
    keep = limit - len(marker)
    head = keep // 3
    return text[:head] + marker + text[-(keep - head) :]


@dataclass
class Turn:
    model: str
    role: str
    model_probs: list[float]
    role_probs: list[float]
    output: str = ""
    verdict: str | None = None
    ok: bool = True
    error: str | None = None
    cost_usd: float = 0.0
    cache_hit: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_trace(self, excerpt: int = 2000) -> dict[str, Any]:
        d = asdict(self)
        d["output"] = trim_output(self.output, excerpt)
        return d


@dataclass
class Trajectory:
    """One multi-turn session on one question under one candidate θ."""

    candidate: int
    qid: str
    turns: list[Turn] = field(default_factory=list)
    done: bool = False
    failed: bool = False
    answer_text: str | None = None
    answer: str | None = None
    correct: bool = False
    reason: str = ""

    @property
    def cost_usd(self) -> float:
        return sum(t.cost_usd for t in self.turns)

    def encoder_turns(self) -> list[tuple[str, str, str]]:
        return [(t.role, t.model, t.output) for t in self.turns]

    def transcript(self) -> str:
        return "".join(
            f"[Turn {k} | {t.role} | {t.model}]\n{t.output}\n\n" for k, t in enumerate(self.turns, start=1)
        ).rstrip()

    def has_worker_output(self) -> bool:
        return any(t.role == "Worker" and t.ok and t.output.strip() for t in self.turns)

    def has_plan(self) -> bool:
        return any(t.role == "Thinker" and t.ok and t.output.strip() for t in self.turns)
