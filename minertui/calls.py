"""The calls of a ledger outside a run's own: the Playground's (`<runs root>/playground/`) and a
served run's (`RUN/serve/`, `trinity serve`).

Each such folder holds a hash-chained `ledger.jsonl` (the paid calls: time, model, tokens, cost)
and a call journal `journal.jsonl` (every call, paid or answered from the response cache, keyed
`<purpose>/<key>/<session>/c<candidate>/<question>/t<turn>/<model>/<role>`). `load_calls` joins
them: each paid call gets its role, turn and session from its journal line, and the cache's
answers (no ledger record: they cost nothing) are listed too, without a time. The money is the
ledger's: a paid call missing from the journal is listed with role "?".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from minertui.runmodel import LedgerView, as_time
from minertui.widgets.format import utc
from trinity.errors import InputError
from trinity.pool.budget import to_micro
from trinity.pool.journal import JournalEntry, read_journal
from trinity.pool.ledger import LedgerLine, read_ledger

SERVE_DIR = "serve"  # RUN/serve/: `trinity serve`'s ledger and journal (trinity.serve.engine.SERVE_DIR)
PLAYGROUND_DIR = "playground"  # <runs root>/playground/ (minertui.jobs.playground.PLAYGROUND_DIR)
MATCH_WINDOW = 512  # journal lines a ledger record's twin is looked for ahead of the last match


@dataclass(frozen=True)
class CallRow:
    time: float  # unix seconds; nan for an answer from the cache (not in the ledger)
    model: str
    role: str  # "?" for a paid call the journal does not have
    turn: int | None
    session: str
    run_id: str
    prompt_tokens: int
    completion_tokens: int
    cost_micro: int
    cached: bool
    estimated: bool


@dataclass(frozen=True)
class CallsView:
    ledger: LedgerView  # the paid calls, as a run's ledger reads (totals, spend plot)
    rows: list[CallRow]  # every call, oldest first
    path: Path  # the folder

    @property
    def cached(self) -> int:
        return sum(r.cached for r in self.rows)


def _key_parts(key: str, model: str) -> tuple[str, int | None, str, str]:
    """(role, turn, session, key name) of a journal key (a model name may hold '/')."""
    parts = key.split("/")
    role = parts[-1] if len(parts) > 1 else "?"
    head = key[: -(len(model) + len(role) + 2)] if model and key.endswith(f"/{model}/{role}") else "/".join(parts[:-2])
    last = head.rsplit("/", 1)[-1]
    turn = int(last[1:]) if last[:1] == "t" and last[1:].isdigit() else None
    hp = head.split("/")
    return role, turn, hp[2] if len(hp) > 2 else "", hp[1] if len(hp) > 1 else ""


def _ledger_view(records: list[LedgerLine]) -> LedgerView:
    models: list[str] = []
    purposes: list[str] = []

    def code(names: list[str], name: str) -> int:
        if name not in names:
            names.append(name)
        return names.index(name)

    return LedgerView(
        time=np.array([as_time(r.time) for r in records], dtype=np.float64),
        model=np.array([code(models, r.model) for r in records], dtype=np.int16),
        purpose=np.array([code(purposes, r.purpose) for r in records], dtype=np.int8),
        prompt_tokens=np.array([r.prompt_tokens for r in records], dtype=np.int64),
        completion_tokens=np.array([r.completion_tokens for r in records], dtype=np.int64),
        cost_micro=np.array([r.cost_micro_usd for r in records], dtype=np.int64),
        estimated=np.array([r.estimated for r in records], dtype=np.bool_),
        model_names=models,
        purpose_names=purposes,
    )


def join_calls(ledger: list[LedgerLine], journal: list[JournalEntry]) -> list[CallRow]:
    """Every call, oldest first: the journal's lines in order, a paid one with the time of its
    ledger record (matched in order by model, tokens and cost), then any ledger record the
    journal does not have."""
    lines = journal
    times: dict[int, LedgerLine] = {}  # journal line -> its ledger record
    unmatched: list[LedgerLine] = []
    start = 0
    for rec in ledger:
        want = (rec.model, rec.prompt_tokens, rec.completion_tokens, rec.cost_micro_usd)
        for j in range(start, min(len(lines), start + MATCH_WINDOW)):
            res = lines[j].result
            if j in times or res.cache_hit or res.journal_hit:
                continue
            got = (res.model, res.prompt_tokens, res.completion_tokens, to_micro(res.cost_usd))
            if got == want:
                times[j] = rec
                while start in times or (start < len(lines) and lines[start].result.cache_hit):
                    start += 1
                break
        else:
            unmatched.append(rec)
    rows: list[CallRow] = []
    for j, line in enumerate(lines):
        res = line.result
        cached = res.cache_hit
        billed = times.get(j)
        if billed is None and not cached:
            continue  # not billed (a failed call, or one replayed from the journal)
        model = res.model or "?"
        role, turn, session, _ = _key_parts(line.key, model)
        rows.append(
            CallRow(
                time=as_time(billed.time) if billed is not None else math.nan,
                model=model,
                role=role,
                turn=turn,
                session=session,
                run_id=billed.run_id if billed is not None else "",
                prompt_tokens=res.prompt_tokens,
                completion_tokens=res.completion_tokens,
                cost_micro=billed.cost_micro_usd if billed is not None else 0,
                cached=cached,
                estimated=billed is not None and billed.estimated,
            )
        )
    for rec in unmatched:
        rows.append(
            CallRow(
                time=as_time(rec.time),
                model=rec.model,
                role="?",
                turn=None,
                session="",
                run_id=rec.run_id,
                prompt_tokens=rec.prompt_tokens,
                completion_tokens=rec.completion_tokens,
                cost_micro=rec.cost_micro_usd,
                cached=False,
                estimated=rec.estimated,
            )
        )
    return rows


_CACHE: dict[str, tuple[tuple, CallsView]] = {}


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def load_calls(folder: Path) -> CallsView | None:
    """The calls of `folder` (a `playground/` or `RUN/serve/`); None when it has no ledger or
    journal. Read again only when a file changed (Ledger asks on every refresh)."""
    folder = Path(folder)
    lpath, jpath = folder / "ledger.jsonl", folder / "journal.jsonl"
    stamp = (_stamp(lpath), _stamp(jpath))
    if stamp == (None, None):
        return None
    hit = _CACHE.get(str(folder))
    if hit is not None and hit[0] == stamp:
        return hit[1]

    # a torn last line (a write in progress) and a line that is not a record are skipped
    # (`trinity ledger verify` says why)
    try:
        ledger = read_ledger(lpath, strict=False) if lpath.exists() else []
    except (OSError, InputError):
        ledger = []
    try:
        journal = read_journal(jpath, strict=False) if jpath.exists() else []
    except (OSError, InputError):
        journal = []
    view = CallsView(_ledger_view(ledger), join_calls(ledger, journal), folder)
    _CACHE[str(folder)] = (stamp, view)
    return view


def call_rows(rows: list[CallRow], text: str = "", sort: str | None = None) -> list[int]:
    """Indices of the calls whose model, role, session, run or UTC day contains every word of
    `text`, newest first (or by cost / tokens, largest first)."""
    idx = list(range(len(rows) - 1, -1, -1))
    words = text.lower().split()
    if words:

        def hay(r: CallRow) -> str:
            day = utc(r.time, "%Y-%m-%d") if math.isfinite(r.time) else ""
            return " ".join((r.model, r.role, r.session, r.run_id, day, "cached" if r.cached else "paid")).lower()

        idx = [i for i in idx if all(w in hay(rows[i]) for w in words)]
    if sort == "cost":
        idx.sort(key=lambda i: -rows[i].cost_micro)
    elif sort == "tokens":
        idx.sort(key=lambda i: -(rows[i].prompt_tokens + rows[i].completion_tokens))
    return idx
