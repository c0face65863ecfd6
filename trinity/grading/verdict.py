"""The result of grading one response: right or wrong, and why in a few words."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Verdict:
    correct: bool
    reason: str  # short: "match", "no \\boxed{} or number", "test 3 failed: wrong output", ...
    extracted: str | None = None  # the answer as graded (the boxed text, the letter, the code)

    def to_json(self) -> dict:
        return asdict(self)
