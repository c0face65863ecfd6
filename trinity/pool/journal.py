"""The call journal: completed paid calls by a caller-given key, so a resumed run never pays twice.

`runs/<id>/journal.jsonl`, one `{"key": …, "result": ChatResult-json}` a line, appended through the
group-commit writer (fsync) right after a paid call returns and before the caller sees it. The
live trainer keys calls by `g<gen>/c<candidate>/<qid>/t<turn>/<model>/<role>` (evaluations by
`eval/<split>/<system>/c<repeat>/…`). Reopening loads every complete line; a torn
final line (a crash mid-append) is dropped — that call is simply made again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from trinity.io import iter_jsonl
from trinity.pool.appender import GroupCommitAppender


class CallJournal:
    def __init__(self, path: str | os.PathLike, *, fsync: bool = True):
        self.path = Path(path)
        self._appender = GroupCommitAppender(self.path, fsync=fsync, what="call journal")
        self._entries: dict[str, dict[str, Any]] = {}
        try:
            if self.path.stat().st_size:
                self._load()
        except BaseException:
            self._appender.close()
            raise

    def _load(self) -> None:
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):
            # A torn final line: drop it so the next append starts on a fresh line.
            self._appender.truncate_to(data.rfind(b"\n") + 1)
        for _, obj in iter_jsonl(self.path):
            if isinstance(obj, dict) and isinstance(obj.get("key"), str) and isinstance(obj.get("result"), dict):
                self._entries[obj["key"]] = obj["result"]

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> dict[str, Any] | None:
        return self._entries.get(key)

    def _line(self, key: str, result: dict[str, Any]) -> bytes:
        self._entries[key] = result
        return (json.dumps({"key": key, "result": result}, ensure_ascii=False) + "\n").encode("utf-8")

    def record(self, key: str, result: dict[str, Any]) -> None:
        self._appender.write(self._line(key, result))

    async def record_async(self, key: str, result: dict[str, Any]) -> None:
        await self._appender.write_async(self._line(key, result))

    def close(self) -> None:
        self._appender.close()
