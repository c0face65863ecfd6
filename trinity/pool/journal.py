"""The call journal: completed paid calls by a caller-given key, so a resumed run never pays twice.

`runs/<id>/journal.jsonl`, one `{"key": …, "result": ChatResult-json}` a line, appended through the
group-commit writer (fsync) right after a paid call returns and before the caller sees it. The
live trainer keys calls by `g<gen>/c<candidate>/<qid>/t<turn>/<model>/<role>` (evaluations by
`eval/<split>/<system>/c<repeat>/…`). Reopening loads every complete line; a torn
final line (a crash mid-append) is dropped — that call is simply made again.

Next to it, `journal.sent.jsonl` (no fsync: it only has to survive a kill, not a power cut):
`{"sent": key}` just before a paid call goes out, and `{"lost": key, "model", "error",
"worst_micro_usd"}` when its answer was lost after the request went out (connection reset
mid-body, a read timeout, a body over the cap) — the provider may have billed those. Reopening
lists `in_flight_at_open`: keys sent but never recorded (in flight at a kill -9), which a resume
reports before it makes them again.

Readers outside the writer (the app's call lists) go through `read_journal(path)` (or
`parse_journal_line` / `try_journal_line` for one JSON object): `JournalEntry`s, each with its
`JournalResult` read by attribute; a line that is not a journal line is an `InputError` of one
line naming the file, the line and the field.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from trinity.errors import InputError
from trinity.io import iter_jsonl
from trinity.pool.appender import GroupCommitAppender


class JournalLine(TypedDict):
    """A line of journal.jsonl."""

    key: str
    result: dict[str, Any]  # `ChatResult.to_json()`


class SentLine(TypedDict):
    """A line of journal.sent.jsonl written just before a paid call goes out."""

    sent: str


class LostLine(TypedDict):
    """A line of journal.sent.jsonl: a paid call's answer lost after the request went out."""

    lost: str | None  # the journal key (None: a call made without one)
    model: str
    error: str
    worst_micro_usd: int


# ---- reading ----------------------------------------------------------------------------------
_JOURNAL_HINT = "it was not written by trinity's call journal"
# the `ChatResult` fields a reader of the journal relies on, with ChatResult's defaults
_RESULT_FIELDS: dict[str, tuple[type, ...]] = {
    "model": (str,),
    "provider": (str,),
    "prompt_tokens": (int,),
    "completion_tokens": (int,),
    "cost_usd": (int, float),
    "cost_source": (str,),
    "cache_hit": (bool,),
    "journal_hit": (bool,),
}


@dataclass(frozen=True)
class JournalResult:
    """A journal line's `result` (`ChatResult.to_json()`): the fields its readers use, typed.
    The other fields a ChatResult holds are left in the line (`CallJournal` replays them)."""

    model: str = ""
    provider: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_source: str = "none"  # reported | estimated | none (not billed) | cache
    cache_hit: bool = False  # answered from the response cache (no call, no ledger record)
    journal_hit: bool = False  # replayed from the journal (no call)


@dataclass(frozen=True)
class JournalEntry:
    """One journal.jsonl line, typed."""

    key: str
    result: JournalResult

    @classmethod
    def from_json(cls, obj: Any, where: str = "journal.jsonl") -> JournalEntry:
        """The entry of one parsed line; InputError (one line: `where`, the field, what is wrong)
        when it is not a journal line."""
        if not isinstance(obj, dict):
            raise InputError(f"{where}: a journal line is not a JSON object; {_JOURNAL_HINT}")
        for k in obj:
            if k not in ("key", "result"):
                raise InputError(f"{where}: field {k} is not part of a journal line; {_JOURNAL_HINT}")
        key, res = obj.get("key"), obj.get("result")
        if not isinstance(key, str):
            what = "is missing" if key is None else f"is {key!r}, not a string"
            raise InputError(f"{where}: field key {what}; {_JOURNAL_HINT}")
        if not isinstance(res, dict):
            what = "is missing" if res is None else "is not a JSON object"
            raise InputError(f"{where}: field result {what}; {_JOURNAL_HINT}")
        got: dict[str, Any] = {}
        for k, types in _RESULT_FIELDS.items():
            if k not in res:
                continue
            v = res[k]
            if not isinstance(v, types) or (bool not in types and isinstance(v, bool)):
                raise InputError(f"{where}: field result.{k} is {v!r}, not {types[-1].__name__}; {_JOURNAL_HINT}")
            got[k] = float(res[k]) if k == "cost_usd" else v
        return cls(key=key, result=JournalResult(**got))


def parse_journal_line(obj: Any, where: str = "journal.jsonl") -> JournalEntry:
    return JournalEntry.from_json(obj, where)


def try_journal_line(obj: Any) -> JournalEntry | None:
    """`parse_journal_line` for tolerant readers: None for a line it cannot type."""
    try:
        return JournalEntry.from_json(obj)
    except InputError:
        return None


def read_journal(path: str | os.PathLike[str], *, strict: bool = True) -> list[JournalEntry]:
    """journal.jsonl's lines, in order. A torn final line (a write in progress) is skipped; any
    other line that is not a journal line is an InputError naming it (`strict=False`: skipped)."""
    out: list[JournalEntry] = []
    for i, obj in iter_jsonl(path, strict=strict):
        if strict:
            out.append(JournalEntry.from_json(obj, f"{path}: line {i}"))
        elif (e := try_journal_line(obj)) is not None:
            out.append(e)
    return out


def _jsonl(line: JournalLine | SentLine | LostLine) -> bytes:
    return (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")


class CallJournal:
    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = True):
        self.path = Path(path)
        self._appender = GroupCommitAppender(self.path, fsync=fsync, what="call journal")
        self._entries: dict[str, dict[str, Any]] = {}
        self.sent_path = self.path.with_name(self.path.name.removesuffix(".jsonl") + ".sent.jsonl")
        self.in_flight_at_open: list[str] = []
        self.lost_at_open = 0  # answers lost mid-body in earlier processes (possible spend)
        try:
            if self.path.stat().st_size:
                self._load()
        except BaseException:
            self._appender.close()
            raise
        self._load_sent()
        self._sent = GroupCommitAppender(self.sent_path, fsync=False, what="call journal (sent)")

    def _load(self) -> None:
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):
            # A torn final line: drop it so the next append starts on a fresh line.
            self._appender.truncate_to(data.rfind(b"\n") + 1)
        for _, obj in iter_jsonl(self.path):
            if isinstance(obj, dict) and isinstance(obj.get("key"), str) and isinstance(obj.get("result"), dict):
                self._entries[obj["key"]] = obj["result"]

    def _load_sent(self) -> None:
        if not self.sent_path.exists():
            return
        sent: dict[str, None] = {}
        for _, obj in iter_jsonl(self.sent_path):
            if isinstance(obj, dict) and isinstance(obj.get("sent"), str):
                sent[obj["sent"]] = None
            elif isinstance(obj, dict) and "lost" in obj:
                self.lost_at_open += 1
        self.in_flight_at_open = [k for k in sent if k not in self._entries]
        data = self.sent_path.read_bytes()
        if data and not data.endswith(b"\n"):
            with open(self.sent_path, "ab") as f:
                f.write(b"\n")  # a torn line stays alone on its line

    async def mark_sent_async(self, key: str) -> None:
        await self._sent.write_async(_jsonl(SentLine(sent=key)))

    async def mark_lost_async(self, key: str | None, *, model: str, error: str, worst_micro_usd: int) -> None:
        await self._sent.write_async(
            _jsonl(LostLine(lost=key, model=model, error=error, worst_micro_usd=worst_micro_usd))
        )

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> dict[str, Any] | None:
        return self._entries.get(key)

    def _line(self, key: str, result: dict[str, Any]) -> bytes:
        self._entries[key] = result
        return _jsonl(JournalLine(key=key, result=result))

    def record(self, key: str, result: dict[str, Any]) -> None:
        self._appender.write(self._line(key, result))

    async def record_async(self, key: str, result: dict[str, Any]) -> None:
        await self._appender.write_async(self._line(key, result))

    def close(self) -> None:
        self._appender.close()
        self._sent.close()
