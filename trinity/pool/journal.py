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
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypedDict

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
