"""`trinity collect`: ask every pool model each question k times (single-turn Worker), grade the
answers, and write the TinyRouter oracle-matrix JSON, with the raw answers beside it.

Files (for `--out M.json`): `M.json` (the matrix), `M.answers.jsonl` (one graded answer a line:
qid, model, sample, text, correct, reason, cost), `M.ledger.jsonl` (hash-chained cost records),
`M.journal.jsonl` (paid calls, so a crash between paying and recording never pays twice).
A re-run reads the answers file and asks only for the (question, model, sample) cells it lacks.

`max_k` (`--max-k`): after the k answers a cell, a group (benchmark and kind) whose two best models
by their labels are not yet told apart (`close_groups`: the gap between their smoothed means within
`separate_z` standard errors) gets one more answer a question from each of those two, round by
round, until they are told apart or they hold `max_k` a cell. The labels name a group's best model
(what a live run's warm start routes it to); one answer a cell names the wrong one when two models
are close, and the other models' cells are not asked again. The matrix is then ragged (its `k` the
fewest a cell). The decisions depend only on the answers, so a re-run asks nothing twice.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from trinity.benchmarks import split_questions
from trinity.benchmarks.prompts import cached_messages
from trinity.competition.protocol import get_protocol
from trinity.data.matrix import OutcomeMatrix, save_matrix
from trinity.data.questions import Question, question_group
from trinity.errors import BudgetExceeded, InputError, OutOfCredit
from trinity.grading import grade_question
from trinity.io import append_jsonl, read_jsonl
from trinity.pool.client import DEFAULT_FAIL_THRESHOLD, PoolClient
from trinity.session.live import LiveRun

if TYPE_CHECKING:
    from trinity.pool.providers import PoolConfig


@dataclass
class CollectResult:
    matrix_path: Path
    n_questions: int
    complete_questions: int
    cells_done: int
    cells_total: int
    new_calls: int
    failed: int
    cost_usd: float
    stopped: str | None = None
    last_error: str | None = None  # why the newest failed call failed (model: provider message)
    # `max_k`: {group: [its two best models, answers a cell each]} for the groups asked again
    asked_again: dict[str, list[Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in self.__dict__.items()}


@dataclass
class _Tally:
    """What a collect run has counted so far."""

    done: int
    failed: int = 0
    new_calls: int = 0
    last: float = 0.0  # when progress was last reported (monotonic seconds)
    last_error: str | None = None
    stop: str | None = None  # why the run stops early (a failing provider)


def sibling(out: Path, suffix: str) -> Path:
    return out.with_name(out.stem + suffix)


def select_questions(questions: list[Question], split: str, n: int | None, seed: int) -> list[Question]:
    if split != "all":
        ids = split_questions(questions, seed).get(split)  # the trainer's own splits
        if ids is None:
            raise InputError(f"unknown split {split!r}: use train, val, test or all")
        by_id = {q.id: q for q in questions}
        questions = [by_id[i] for i in ids]
    return questions[:n] if n else questions


def _drop_torn_tail(path: Path) -> None:
    """Cut a torn last line (a crash mid-write) so the next append starts on a fresh line; the
    answer it held is asked again (its paid call comes back from the journal at no cost)."""
    if not path.exists():
        return
    with open(path, "rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)


Answers = dict[tuple[str, str, int], bool]  # (qid, model, sample) -> graded right


def _held(answers: Answers, qid: str, model: str) -> int:
    """How many answers the cell holds from sample 0 on without a gap (a failed call leaves one)."""
    n = 0
    while (qid, model, n) in answers:
        n += 1
    return n


# Below this many standard errors apart, a group's two best models are "close" (`--separate-z`):
# on the live bench's stand-in, 6 questions a topic asked again at 0.5 name the topic's best model
# as often as 8 questions with 4 answers a cell, for the $ of 8 questions with one
DEFAULT_SEPARATE_Z = 0.5


def close_groups(
    questions: list[Question], models: list[str], answers: Answers, z: float = DEFAULT_SEPARATE_Z
) -> dict[str, tuple[str, str]]:
    """{group: (best, second)} for each group whose two best models by their answers so far are
    close: (r + 1) / (n + 2) per model over the group's questions (n answers, r right; smoothed so
    that 8 of 8 is not certainty), the best two not more than `z` standard errors apart."""
    by_group: dict[str, list[Question]] = {}
    for q in questions:
        by_group.setdefault(question_group(q), []).append(q)
    out: dict[str, tuple[str, str]] = {}
    for g, qs in sorted(by_group.items()):
        if len(models) < 2:
            break
        p, n = [], []
        for m in models:
            held = [_held(answers, q.id, m) for q in qs]
            right = sum(answers[(q.id, m, s)] for q, h in zip(qs, held) for s in range(h))
            p.append((right + 1) / (sum(held) + 2))
            n.append(max(sum(held), 1))
        a, b = sorted(range(len(models)), key=lambda j: (-p[j], j))[:2]
        se = float(np.sqrt(p[a] * (1 - p[a]) / n[a] + p[b] * (1 - p[b]) / n[b]))
        if p[a] - p[b] <= z * se:
            out[g] = (models[a], models[b])
    return out


def _matrix_from_answers(
    questions: list[Question], models: list[str], k: int, answers: Answers, benchmark: str
) -> tuple[OutcomeMatrix, int]:
    complete = [q for q in questions if all(_held(answers, q.id, m) >= k for m in models)]
    cells = [[[float(answers[(q.id, m, s)]) for s in range(_held(answers, q.id, m))] for m in models] for q in complete]
    solves = np.array([[c[:k] for c in row] for row in cells], dtype=np.float64).reshape(len(complete), len(models), k)
    mat = OutcomeMatrix(
        benchmark,
        list(models),
        [q.id for q in complete],
        solves,
        [q.answer if q.kind != "code" else None for q in complete],
        [q.benchmark for q in complete],
        cells=cells,  # dropped when every cell holds k (the matrix as without `max_k`)
    )
    return mat, len(complete)


def collect(
    questions: list[Question],
    pool: PoolConfig,
    out: Path,
    k: int,
    *,
    temperature: float | None = None,
    budget_usd: float | None = None,
    env_file: str | None = None,
    cache_path: str | None = None,
    progress: Callable[[dict[str, float]], None] | None = None,
    fail_threshold: float | None = None,
    protocol: str | None = None,
    max_k: int | None = None,
    separate_z: float = DEFAULT_SEPARATE_Z,
) -> CollectResult:
    """`fail_threshold`: stop (what was answered is kept; a re-run asks for the rest) once more
    than this share of the calls so far failed (`PoolClient.failing`; default the trainer's).
    `protocol`: the session protocol whose single Worker turn asks (trinity.competition.protocol;
    None: open): a competition's is how its cached answers were made (its prompt and decoding).
    `max_k` > k: ask close groups' two best models again, up to `max_k` answers a cell (see above)."""
    proto = get_protocol(protocol)
    tag = "" if proto.is_open else f"/{proto.name}"  # answers under another protocol are not reused

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    answers_path = sibling(out, ".answers.jsonl")
    models = list(pool.models)
    answers: dict[tuple[str, str, int], bool] = {}
    _drop_torn_tail(answers_path)
    if answers_path.exists():
        for rec in read_jsonl(answers_path):
            if rec.get("model") in models and "correct" in rec and (rec.get("protocol") or "open") == proto.name:
                answers[(rec["qid"], rec["model"], int(rec["sample"]))] = bool(rec["correct"])
    cells = [(q, m, s) for q in questions for m in models for s in range(k) if (q.id, m, s) not in answers]
    total = len(questions) * len(models) * k
    max_k = k if max_k is None else max(k, max_k)
    asked_again: dict[str, list[Any]] = {}
    # the pool stack (client, ledger, journal, cache, budget, event loop), files next to --out
    live = LiveRun(
        pool,
        run_id=f"collect-{out.stem}",
        ledger_path=sibling(out, ".ledger.jsonl"),
        journal_path=sibling(out, ".journal.jsonl"),
        cache_path=cache_path,
        budget_usd=budget_usd,
        budget="local",
        env_file=env_file,
    )
    ledger = live.ledger
    spent0 = live.spent_at_open
    # k samples of one model at temperature 0 would be one sample k times: sample when k > 1.
    decoding = (
        {} if temperature is None and max_k == 1 else {"temperature": 0.7 if temperature is None else temperature}
    )
    decoding = {**proto.cached_kwargs(), **decoding}
    state = _Tally(done=total - len(cells))
    threshold = DEFAULT_FAIL_THRESHOLD if fail_threshold is None else fail_threshold
    grade_slots = asyncio.Semaphore(2)  # code grading runs sandboxed children: bound them

    def report(force: bool = False) -> None:
        now = time.monotonic()
        if progress and (force or now - state.last > 1.0):
            state.last = now
            progress(
                {
                    "done": state.done,
                    "total": total,
                    "failed": state.failed,
                    "cost_usd": ledger.total_usd - spent0,
                }
            )

    async def one(client: PoolClient, slots: asyncio.Semaphore, q: Question, model: str, s: int) -> None:
        messages = cached_messages(proto, q)
        async with slots:  # as many waiting as the pool serves at once: a stop leaves the rest unasked
            if state.stop is not None:
                return
            res = await client.chat(
                model, messages, purpose="collect", seed=s, journal_key=f"collect/{q.id}/{model}/{s}{tag}", **decoding
            )
        if not getattr(res, "journal_hit", False) and not res.cache_hit and res.cost_source != "none":
            state.new_calls += 1
        if not res.ok:
            state.failed += 1  # not an answer: a re-run asks again
            state.last_error = f"{model}: {res.error or f'HTTP {res.status}'}"
            failing = client.failing(
                threshold,
                then="the answers so far are kept — check the provider, "
                "then re-run the same command to ask for the rest",
            )
            if failing is not None and state.stop is None:
                state.stop = f"stopped: {failing}"
            report()
            return
        async with grade_slots:
            v = await asyncio.to_thread(grade_question, q, res.text)
        append_jsonl(
            answers_path,
            {
                "qid": q.id,
                "benchmark": q.benchmark,
                "model": model,
                "sample": s,
                "text": res.text,
                "correct": bool(v.correct),
                "reason": v.reason,
                "extracted": v.extracted if q.kind != "code" else None,
                "cost_usd": res.cost_usd,
                "cache_hit": res.cache_hit,
                "protocol": proto.name,
            },
            fsync=True,
        )
        answers[(q.id, model, s)] = bool(v.correct)
        state.done += 1
        report()

    async def ask(slots: asyncio.Semaphore, todo: list[tuple[Question, str, int]]) -> str | None:
        # Calls already in flight when one raises (402, budget) finish and are recorded.
        results = await asyncio.gather(*(one(live.client, slots, q, m, s) for q, m, s in todo), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for e in errors:
            if isinstance(e, OutOfCredit):
                return f"stopped: out of credit ({e})"
        for e in errors:
            if isinstance(e, BudgetExceeded):
                return f"stopped: budget reached ({e})"
        if errors:
            raise errors[0]
        return state.stop

    def again(upto: int) -> list[tuple[Question, str, int]] | None:
        """The cells the close groups' two best models lack below `upto` answers (only among the
        questions every model has answered k times: the rest are not in the matrix yet); None when
        no group is close."""
        nonlocal total
        complete = [q for q in questions if all(_held(answers, q.id, m) >= k for m in models)]
        close = close_groups(complete, models, answers, separate_z)
        if not close:
            return None
        todo = []
        for g, pair in close.items():
            asked_again[g] = [list(pair), upto]
            for q in (q for q in complete if question_group(q) == g):
                for m in pair:
                    todo += [(q, m, s) for s in range(upto) if (q.id, m, s) not in answers]
        total += len(todo)
        return todo

    async def main() -> str | None:
        slots = asyncio.Semaphore(max(1, int(getattr(pool, "max_concurrency", 16))))
        stop = await ask(slots, cells)
        for upto in range(k + 1, max_k + 1):  # one more answer a cell a round: decide on what came back
            if stop is not None:
                break
            todo = again(upto)
            if todo is None:
                break
            stop = await ask(slots, todo)
        return stop

    with live:
        stopped = live.run(main())
    report(force=True)
    bench = "+".join(sorted({q.benchmark for q in questions})) or "unknown"
    mat, n_complete = _matrix_from_answers(questions, models, k, answers, bench)
    if n_complete:
        save_matrix(out, mat)
    return CollectResult(
        out,
        len(questions),
        n_complete,
        state.done,
        total,
        state.new_calls,
        state.failed,
        ledger.total_usd - spent0,
        stopped,
        state.last_error,
        asked_again,
    )


def print_progress(p: dict[str, float]) -> None:
    print(
        f"collect: {p['done']}/{p['total']} answers  failed {p['failed']}  spent ${p['cost_usd']:.4f}",
        file=sys.stderr,
        flush=True,
    )
