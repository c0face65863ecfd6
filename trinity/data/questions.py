"""Questions as JSONL: one `{"id", "benchmark", "question", "answer", ...}` object a line.

More fields are kept in `Question.extra` (e.g. `kind`, `choices`, `tests`, `fn_name`).
`kind` says which grader applies: "math", "mc" (multiple choice), "code", "exact" (BBH's
per-task answer forms), "ifeval" (instruction checks) or "funcall" (BFCL function calls).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from trinity.data.kinds import KINDS  # one list, light to import (grading reads it too)
from trinity.errors import InputError

REQUIRED = ("id", "benchmark", "question", "answer")

BENCHMARK_KIND = {
    "math500": "math",
    "mmlu": "mc",
    "livecodebench": "code",
    "gpqa": "mc",
    "aime": "math",
    "mmlu_pro": "mc",
    "bbh": "exact",
    "ifeval": "ifeval",
    "bfcl_simple": "funcall",
    "humaneval": "code",
}


@dataclass(frozen=True)
class Question:
    id: str
    benchmark: str
    question: str
    answer: Any
    kind: str = "math"
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "benchmark": self.benchmark,
            "question": self.question,
            "answer": self.answer,
            "kind": self.kind,
            **self.extra,
        }

    @classmethod
    def from_json(cls, obj: dict, where: str = "") -> "Question":
        if not isinstance(obj, dict):
            raise InputError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        missing = [k for k in REQUIRED if k not in obj]
        if missing:
            raise InputError(f"{where}: question is missing field(s) {', '.join(missing)}")
        if not isinstance(obj["id"], str) or not obj["id"]:
            raise InputError(f"{where}: question id must be a non-empty string")
        if not isinstance(obj["question"], str):
            raise InputError(f"{where}: question {obj['id']!r} has a non-string 'question'")
        kind = obj.get("kind") or BENCHMARK_KIND.get(obj["benchmark"], "math")
        if kind not in KINDS:
            raise InputError(
                f"{where}: question {obj['id']!r} has unknown kind {kind!r} (expected one of {', '.join(KINDS)})"
            )
        extra = {k: v for k, v in obj.items() if k not in (*REQUIRED, "kind")}
        return cls(obj["id"], str(obj["benchmark"]), obj["question"], obj["answer"], kind, extra)


def load_questions(path: str | Path) -> list[Question]:
    """Read a questions JSONL file strictly: any bad line is an error naming the line."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"questions file not found: {path}")
    if path.is_dir():
        raise InputError(f"questions path {path} is a directory; pass a questions JSONL file")
    out: list[Question] = []
    seen: set[str] = set()
    dups: list[str] = []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                line.encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(f"{path}: line {lineno} is not UTF-8 text; save the file as UTF-8") from None
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                raise InputError(f"{path}: line {lineno} is not valid JSON; fix or delete it") from None
            except RecursionError:
                raise InputError(
                    f"{path}: line {lineno} is nested too deeply to be a question; fix or delete it"
                ) from None
            q = Question.from_json(obj, where=f"{path}: line {lineno}")
            if q.id in seen:
                dups.append(q.id)
            seen.add(q.id)
            out.append(q)
    if dups:
        raise InputError(f"{path}: duplicate question ids: {', '.join(sorted(set(dups))[:10])}")
    if not out:
        raise InputError(f"{path}: no questions in file")
    return out


def save_questions(path: str | Path, questions: Iterable[Question]) -> None:
    from trinity.io import atomic_write_text  # lazy: PyYAML kept off the CLI start

    atomic_write_text(path, "".join(json.dumps(q.to_json(), ensure_ascii=False) + "\n" for q in questions))


SPLITS = ("train", "val", "test")


def split_ids(
    questions: list[Question], seed: int, fractions: tuple[float, float, float] = (0.6, 0.2, 0.2)
) -> dict[str, list[str]]:
    """Deterministic train/val/test split, stratified by (benchmark, kind).

    Depends only on the set of ids and the seed (not on file order), so a run's splits can be
    recomputed and checked from `run.json`.
    """
    if abs(sum(fractions) - 1.0) > 1e-9 or min(fractions) < 0:
        raise InputError(f"split fractions must be >= 0 and sum to 1, got {fractions}")
    groups: dict[tuple[str, str], list[str]] = {}
    for q in questions:
        groups.setdefault((q.benchmark, q.kind), []).append(q.id)
    out: dict[str, list[str]] = {s: [] for s in SPLITS}
    for key in sorted(groups):
        ids = sorted(groups[key])
        rng = np.random.RandomState(seed)
        order = [ids[i] for i in rng.permutation(len(ids))]
        n = len(order)
        n_train = int(round(fractions[0] * n))
        n_val = int(round(fractions[1] * n))
        out["train"] += order[:n_train]
        out["val"] += order[n_train : n_train + n_val]
        out["test"] += order[n_train + n_val :]
    return out


def question_group(q: Question) -> str:
    """The question's group: its benchmark and kind (the topic), as `benchmark/kind`. What the
    warm start's group targets average over and what a per-group collect samples from."""
    return f"{q.benchmark}/{q.kind}"


def pick_per_group(questions: list[Question], n: int, seed: int) -> list[Question]:
    """At most `n` questions of each group (`question_group`), drawn by `seed`, in the order of
    `questions`. Depends only on the set of ids and the seed (not on file order)."""
    if n < 1:
        raise InputError(f"questions per group must be at least 1, got {n}")
    groups: dict[str, list[str]] = {}
    for q in questions:
        groups.setdefault(question_group(q), []).append(q.id)
    keep: set[str] = set()
    for name in sorted(groups):
        ids = sorted(groups[name])
        order = np.random.RandomState(seed).permutation(len(ids))
        keep.update(ids[i] for i in order[:n])
    return [q for q in questions if q.id in keep]
