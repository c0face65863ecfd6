"""The cost ledger: `runs/<id>/ledger.jsonl`, one hash-chained record per paid call.

Record (written as `canonical_json`, one line each):
  {"seq", "run_id", "time" (ISO-8601 UTC, ms), "provider", "model", "prompt_tokens",
   "completion_tokens", "cost_micro_usd" (int, >= 0), "cost_source": "reported"|"estimated"|"invalid",
   "purpose": "train"|"eval"|"collect", "prev_h", "h"} and, only on an "invalid" record, "note":
  why the provider's usage was refused and its raw figures (the cost then comes from the price
  table: `trinity.pool.client.check_usage`). Only on a record billed above the call's reserved
  worst case: "excess_micro_usd" (int > 0, how much above; `trinity ledger report` lists them per
  provider and model, summary.json sums them as `excess_billed_usd` / `excess_calls`).
  h = sha256(prev_h + canonical_json(record without h)); the first record's prev_h is 64 zeros.

Tamper evidence: an edited, deleted, inserted or reordered line breaks the chain (or `seq`); a
line that is not byte-for-byte canonical JSON is also refused. Deleting records at the END can
only be seen against a head hash kept elsewhere: pass it as `expected_head` (`--head`); a run
directory's `summary.json` and `checkpoint/manifest.json` keep `ledger_head` + `ledger_records`,
which `verify_run_ledger` (and `trinity ledger verify RUN_DIR`) check by themselves — a ledger cut
at the end, emptied or deleted is then reported as broken. A torn final line (a crash mid-append: a prefix of a record, no newline) is
reported as `torn_tail`, not as tampering; reopening the ledger moves it to `ledger.jsonl.torn`
and continues the chain from the last good record.

Readers: `read_ledger(path)` (or `parse_ledger_line` / `try_ledger_line` for one JSON object)
give `LedgerLine`s, a frozen record read by attribute; a line that is not a ledger record (a
foreign or hand-edited line) is an `InputError` of one line naming the file, the line and the
field. They check each record's fields and types, not the chain: `verify_ledger` does that.

Single writer: `Ledger` holds an exclusive lock on the file and appends through a group-commit
thread (O_APPEND, fsync before `append` returns).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NotRequired, TypedDict, TypeVar, Unpack

from trinity.errors import InputError
from trinity.io import canonical_json, iter_jsonl
from trinity.pool.appender import GroupCommitAppender

GENESIS = "0" * 64
PURPOSES = ("train", "eval", "collect", "serve", "playground")
COST_SOURCES = ("reported", "estimated", "invalid")
FIELDS = (
    "seq",
    "run_id",
    "time",
    "provider",
    "model",
    "prompt_tokens",
    "completion_tokens",
    "cost_micro_usd",
    "cost_source",
    "purpose",
    "prev_h",
    "h",
)
OPTIONAL_FIELDS = ("note", "excess_micro_usd")  # only on "invalid" / billed-above-worst-case records


class LedgerEntry(TypedDict):
    """What a caller gives `Ledger.append` for one paid call (the ledger adds the rest)."""

    provider: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_micro_usd: int
    cost_source: str  # one of COST_SOURCES
    purpose: str  # one of PURPOSES
    note: NotRequired[str | None]
    excess_micro_usd: NotRequired[int]


class UnsignedRecord(TypedDict):
    """A ledger record before its hash: FIELDS but "h", and OPTIONAL_FIELDS where they apply."""

    seq: int
    run_id: str
    time: str
    provider: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_micro_usd: int
    cost_source: str
    purpose: str
    prev_h: str
    note: NotRequired[str]
    excess_micro_usd: NotRequired[int]


class LedgerRecord(UnsignedRecord):
    """A ledger record as written (one canonical-JSON line)."""

    h: str


_Fut = TypeVar("_Fut")


def record_hash(record_without_h: Mapping[str, Any]) -> str:
    return hashlib.sha256((record_without_h["prev_h"] + canonical_json(record_without_h)).encode("utf-8")).hexdigest()


def utc_iso_ms() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Bucket(TypedDict):
    """A report's totals for one model / purpose / day / cost source."""

    calls: int
    micro_usd: int
    prompt_tokens: int
    completion_tokens: int


class ExcessBucket(TypedDict):
    """Calls billed above their reserved worst case, and by how much in all (the excess only)."""

    calls: int
    micro_usd: int


class InvalidUsage(TypedDict):
    """A record billed from the price table because the provider's usage was invalid."""

    seq: int
    model: str
    note: str | None


def _bucket() -> Bucket:
    return {"calls": 0, "micro_usd": 0, "prompt_tokens": 0, "completion_tokens": 0}


@dataclass
class LedgerReport:
    ok: bool
    n_records: int  # good records before the first bad line
    total_micro_usd: int
    head_hash: str
    first_bad_line: int | None = None  # 1-based
    problem: str | None = None
    torn_tail: bool = False  # a crash left a partial final line (not tampering)
    torn_bytes: int = 0
    missing_final_newline: bool = False  # last record complete but its "\n" never hit the disk
    good_bytes: int = 0  # byte length of the verified prefix (where a resumed writer continues)
    per_model: dict[str, Bucket] = field(default_factory=dict)
    per_purpose: dict[str, Bucket] = field(default_factory=dict)
    per_day: dict[str, Bucket] = field(default_factory=dict)
    per_source: dict[str, Bucket] = field(default_factory=dict)
    invalid: list[InvalidUsage] = field(default_factory=list)  # the first invalid-usage records
    # billed above the reserved worst case, per "provider model"
    excess: dict[str, ExcessBucket] = field(default_factory=dict)
    run_ids: list[str] = field(default_factory=list)
    anchors: list[str] = field(default_factory=list)  # where the checked head came from (run dirs)

    @property
    def total_usd(self) -> float:
        return self.total_micro_usd / 1e6

    @property
    def excess_calls(self) -> int:
        return sum(b["calls"] for b in self.excess.values())

    @property
    def excess_usd(self) -> float:
        return sum(b["micro_usd"] for b in self.excess.values()) / 1e6

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["total_usd"] = self.total_usd
        d["excess_billed_usd"], d["excess_calls"] = self.excess_usd, self.excess_calls
        return d


def _check_record(obj: Any, raw: bytes, prev_h: str, seq: int) -> str | None:
    """Why this line is not the next good record, or None."""
    if not isinstance(obj, dict):
        return "not a JSON object"
    if set(obj) - set(OPTIONAL_FIELDS) != set(FIELDS):
        missing = sorted(set(FIELDS) - set(obj))
        extra = sorted(set(obj) - set(FIELDS) - set(OPTIONAL_FIELDS))
        return f"wrong fields (missing {missing}, extra {extra})"
    if canonical_json(obj).encode("utf-8") != raw:
        return "not in canonical form (the line was edited)"
    if obj["seq"] != seq:
        return f"seq is {obj['seq']!r}, expected {seq} (a line was deleted, inserted or moved)"
    if obj["prev_h"] != prev_h:
        return "prev_h does not match the previous record's h (a line was deleted, inserted or moved)"
    body = {k: v for k, v in obj.items() if k != "h"}
    if record_hash(body) != obj["h"]:
        return "hash mismatch (the record was edited)"
    if not isinstance(obj["cost_micro_usd"], int) or isinstance(obj["cost_micro_usd"], bool):
        return "cost_micro_usd is not an integer"
    for k in ("cost_micro_usd", "prompt_tokens", "completion_tokens"):
        if not isinstance(obj[k], int) or isinstance(obj[k], bool) or obj[k] < 0:
            return f"{k} is {obj[k]!r}, not a non-negative integer (a provider's figure taken unchecked)"
    ex = obj.get("excess_micro_usd", 1)
    if not isinstance(ex, int) or isinstance(ex, bool) or ex <= 0:
        return f"excess_micro_usd is {ex!r}, not a positive integer"
    return None


def _is_torn_prefix(raw: bytes) -> bool:
    """A crash mid-append leaves a PREFIX of a record: never a complete JSON value plus more."""
    text = raw.decode("utf-8", errors="replace")
    if not text.startswith("{"):
        return False
    try:
        json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return True  # ran out of input (or garbled) before the object closed
    return False  # a whole object followed by junk: someone edited the line end


def verify_ledger(path: str | os.PathLike[str], expected_head: str | None = None) -> LedgerReport:
    """Check the chain. `expected_head`: a head hash recorded elsewhere (a checkpoint, the run's
    summary); the chain must reach it — records appended after it are fine (a resumed run), records
    cut from the end are not."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise InputError(f"ledger {path} is not a regular file (a device, a folder?); pass a ledger.jsonl")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"ledger not found: {path}") from None
    rep = LedgerReport(ok=True, n_records=0, total_micro_usd=0, head_hash=GENESIS)
    parts = data.split(b"\n")
    complete, tail = parts[:-1], parts[-1]  # tail is b"" when the file ends with "\n"
    offset = 0

    def fail(lineno: int, problem: str) -> LedgerReport:
        rep.ok, rep.first_bad_line, rep.problem = False, lineno, problem
        return rep

    seen_heads = {GENESIS}

    def accept(obj: dict[str, Any], nbytes: int) -> None:
        nonlocal offset
        seen_heads.add(obj["h"])
        rep.n_records += 1
        rep.head_hash = obj["h"]
        rep.total_micro_usd += obj["cost_micro_usd"]
        day = str(obj["time"])[:10]
        if obj["cost_source"] == "invalid" and len(rep.invalid) < 20:
            rep.invalid.append({"seq": obj["seq"], "model": obj["model"], "note": obj.get("note")})
        if "excess_micro_usd" in obj:
            ex = rep.excess.setdefault(f"{obj['provider']} {obj['model']}", {"calls": 0, "micro_usd": 0})
            ex["calls"] += 1
            ex["micro_usd"] += obj["excess_micro_usd"]
        for table, key in (
            (rep.per_model, obj["model"]),
            (rep.per_purpose, obj["purpose"]),
            (rep.per_day, day),
            (rep.per_source, obj["cost_source"]),
        ):
            b = table.setdefault(str(key), _bucket())
            b["calls"] += 1
            b["micro_usd"] += obj["cost_micro_usd"]
            b["prompt_tokens"] += int(obj["prompt_tokens"])
            b["completion_tokens"] += int(obj["completion_tokens"])
        if obj["run_id"] not in rep.run_ids:
            rep.run_ids.append(obj["run_id"])
        offset += nbytes
        rep.good_bytes = offset

    for i, raw in enumerate(complete, start=1):
        if not raw:
            return fail(i, "empty line")
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return fail(i, "not valid JSON (the line was edited or cut short)")
        why = _check_record(obj, raw, rep.head_hash, rep.n_records)
        if why:
            return fail(i, why)
        accept(obj, len(raw) + 1)

    if tail:
        lineno = len(complete) + 1
        try:
            obj = json.loads(tail.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            obj = None
        if obj is not None and _check_record(obj, tail, rep.head_hash, rep.n_records) is None:
            accept(obj, len(tail))
            rep.missing_final_newline = True
        elif _is_torn_prefix(tail):
            rep.torn_tail, rep.torn_bytes = True, len(tail)
        else:
            return fail(lineno, "last line is neither a record nor a torn write (it was edited)")

    if expected_head is not None and expected_head not in seen_heads:
        return fail(
            rep.n_records + 1,
            f"the chain ends at record {rep.n_records} without reaching the "
            f"recorded head {expected_head[:12]}… (records at the end were "
            "deleted, or this is another run's ledger)",
        )
    return rep


def excess_totals(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(micro-USD, calls) billed above the reserved worst case, summed over the ledger's records
    (a quick scan for summary.json; `verify_ledger` checks the chain and lists them per model)."""
    micro = calls = 0
    try:
        data = Path(path).read_bytes()
    except OSError:
        return 0, 0
    for raw in data.split(b"\n"):
        if b'"excess_micro_usd"' in raw:
            try:
                ex = json.loads(raw).get("excess_micro_usd")
            except (UnicodeDecodeError, json.JSONDecodeError, AttributeError):
                continue  # a torn last line
            if isinstance(ex, int) and not isinstance(ex, bool) and ex > 0:
                micro, calls = micro + ex, calls + 1
    return micro, calls


def run_anchors(run_dir: str | os.PathLike[str]) -> list[tuple[str, str, int | None]]:
    """(where, head hash, record count) that a run directory recorded for its ledger:
    `summary.json` and `checkpoint/manifest.json` (`ledger_head`, `ledger_records`)."""
    run_dir = Path(run_dir)
    out = []
    for rel in ("summary.json", "checkpoint/manifest.json"):
        try:
            doc = json.loads((run_dir / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict):
            continue
        head, n = doc.get("ledger_head"), doc.get("ledger_records")
        if isinstance(head, str) and len(head) == 64:
            out.append((str(run_dir / rel), head, n if isinstance(n, int) and not isinstance(n, bool) else None))
    return out


def verify_run_ledger(run_dir: str | os.PathLike[str]) -> LedgerReport:
    """`verify_ledger` of a run directory's ledger.jsonl against every head the run recorded
    (`run_anchors`): records cut from the end, an emptied file and a deleted file are all broken.
    A run that recorded no paid call and has no ledger is OK (0 records)."""
    run_dir = Path(run_dir)
    path = run_dir / "ledger.jsonl"
    anchors = run_anchors(run_dir)
    paid = [(w, h, n) for w, h, n in anchors if n != 0]
    if not path.exists():
        rep = LedgerReport(ok=True, n_records=0, total_micro_usd=0, head_hash=GENESIS)
        if paid:
            w, h, n = paid[0]
            rep.ok, rep.first_bad_line = False, 1
            rep.problem = (
                f"ledger.jsonl is missing but {w} records {n if n is not None else 'some'} "
                f"records ending at {h[:12]}… (the file was deleted)"
            )
        rep.anchors = [w for w, _, _ in anchors]
        return rep
    rep = verify_ledger(path)
    for w, h, n in anchors:
        if not rep.ok:
            break
        if n == 0 and h == GENESIS:
            continue
        sub = verify_ledger(path, expected_head=h)
        if not sub.ok:
            sub.problem = f"{sub.problem}; head recorded in {w}" + ("" if rep.n_records else " (the file is empty)")
            sub.anchors = [w for w, _, _ in anchors]
            return sub
        if n is not None and rep.n_records < n:
            rep.ok, rep.first_bad_line = False, rep.n_records + 1
            rep.problem = f"{w} records {n} ledger records, the file holds {rep.n_records}"
    rep.anchors = [w for w, _, _ in anchors]
    return rep


# ---- reading ----------------------------------------------------------------------------------
_INT_FIELDS = ("seq", "prompt_tokens", "completion_tokens", "cost_micro_usd")
_STR_FIELDS = ("run_id", "time", "provider", "model", "cost_source", "purpose", "prev_h", "h")
_LEDGER_HINT = "it was not written by trinity's ledger (run `trinity ledger verify` on the file)"


@dataclass(frozen=True)
class LedgerLine:
    """One ledger.jsonl record, typed (the fields of `LedgerRecord`, read by attribute)."""

    seq: int
    run_id: str
    time: str  # ISO-8601 UTC, ms
    provider: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost_micro_usd: int
    cost_source: str  # one of COST_SOURCES
    purpose: str  # one of PURPOSES (an older ledger may hold fewer)
    prev_h: str
    h: str
    note: str | None = None  # only on an "invalid" record
    excess_micro_usd: int | None = None  # only on a record billed above its reserved worst case

    @property
    def cost_usd(self) -> float:
        return self.cost_micro_usd / 1e6

    @property
    def estimated(self) -> bool:
        return self.cost_source == "estimated"

    @classmethod
    def from_json(cls, obj: Any, where: str = "ledger.jsonl") -> LedgerLine:
        """The record of one parsed line; InputError (one line: `where`, the field, what is wrong)
        when it is not a ledger record."""
        if not isinstance(obj, dict):
            raise InputError(f"{where}: a ledger record is not a JSON object; {_LEDGER_HINT}")
        for k in FIELDS:
            if k not in obj:
                raise InputError(f"{where}: field {k} is missing; {_LEDGER_HINT}")
        for k in obj:
            if k not in FIELDS and k not in OPTIONAL_FIELDS:
                raise InputError(f"{where}: field {k} is not part of a ledger record; {_LEDGER_HINT}")
        for k in _INT_FIELDS:
            v = obj[k]
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise InputError(f"{where}: field {k} is {v!r}, not a non-negative integer; {_LEDGER_HINT}")
        for k in _STR_FIELDS:
            if not isinstance(obj[k], str):
                raise InputError(f"{where}: field {k} is {obj[k]!r}, not a string; {_LEDGER_HINT}")
        note, ex = obj.get("note"), obj.get("excess_micro_usd")
        if note is not None and not isinstance(note, str):
            raise InputError(f"{where}: field note is {note!r}, not a string; {_LEDGER_HINT}")
        if ex is not None and (not isinstance(ex, int) or isinstance(ex, bool) or ex <= 0):
            raise InputError(f"{where}: field excess_micro_usd is {ex!r}, not a positive integer; {_LEDGER_HINT}")
        return cls(**obj)


def parse_ledger_line(obj: Any, where: str = "ledger.jsonl") -> LedgerLine:
    return LedgerLine.from_json(obj, where)


def try_ledger_line(obj: Any) -> LedgerLine | None:
    """`parse_ledger_line` for tolerant readers (the app's live tail): None for a line it cannot type."""
    try:
        return LedgerLine.from_json(obj)
    except InputError:
        return None


def read_ledger(path: str | os.PathLike[str], *, strict: bool = True) -> list[LedgerLine]:
    """ledger.jsonl's records, in order. A torn final line (a write in progress) is skipped; any
    other line that is not a record is an InputError naming it (`strict=False`: skipped)."""
    out: list[LedgerLine] = []
    for i, obj in iter_jsonl(path, strict=strict):
        if strict:
            out.append(LedgerLine.from_json(obj, f"{path}: line {i}"))
        elif (rec := try_ledger_line(obj)) is not None:
            out.append(rec)
    return out


class Ledger:
    """The single writer of one run's ledger. Reopening continues the chain (resume)."""

    def __init__(self, path: str | os.PathLike[str], run_id: str, *, fsync: bool = True):
        self.path = Path(path)
        self.run_id = run_id
        self._appender = GroupCommitAppender(self.path, fsync=fsync, what="ledger")
        try:
            rep = verify_ledger(self.path)
            if not rep.ok:
                raise InputError(
                    f"ledger {self.path} is broken at line {rep.first_bad_line} ({rep.problem}); "
                    f"run `trinity ledger verify {self.path}`, then restore it or start a new run"
                )
            if rep.torn_tail:
                # Keep the evidence, then continue from the last good record.
                data = self.path.read_bytes()
                with open(self.path.with_name(self.path.name + ".torn"), "ab") as f:
                    f.write(data[rep.good_bytes :] + b"\n")
                self._appender.truncate_to(rep.good_bytes)
            elif rep.missing_final_newline:
                self._appender.write(b"\n")
        except BaseException:
            self._appender.close()
            raise
        self.recovered_torn_tail = rep.torn_tail
        self.n_records = rep.n_records
        self.head_hash = rep.head_hash
        self.total_micro_usd = rep.total_micro_usd
        self._lock = threading.Lock()

    def _make(
        self,
        submit: Callable[[bytes], _Fut],
        *,
        provider: str,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        cost_micro_usd: int,
        cost_source: str,
        purpose: str,
        note: str | None = None,
        excess_micro_usd: int = 0,
    ) -> tuple[LedgerRecord, _Fut]:
        if purpose not in PURPOSES:
            raise ValueError(f"ledger purpose must be one of {PURPOSES}, got {purpose!r}")
        if cost_source not in COST_SOURCES:
            raise ValueError(f"cost_source must be one of {COST_SOURCES}, got {cost_source!r}")
        with self._lock:  # seq, prev_h and the queue order must agree
            body: UnsignedRecord = {
                "seq": self.n_records,
                "run_id": self.run_id,
                "time": utc_iso_ms(),
                "provider": provider,
                "model": model,
                "prompt_tokens": int(prompt_tokens),
                "completion_tokens": int(completion_tokens),
                "cost_micro_usd": int(cost_micro_usd),
                "cost_source": cost_source,
                "purpose": purpose,
                "prev_h": self.head_hash,
            }
            if note is not None:
                body["note"] = str(note)[:500]
            if excess_micro_usd > 0:
                body["excess_micro_usd"] = int(excess_micro_usd)
            rec: LedgerRecord = {**body, "h": record_hash(body)}
            line = (canonical_json(rec) + "\n").encode("utf-8")
            self.n_records += 1
            self.head_hash = rec["h"]
            self.total_micro_usd += rec["cost_micro_usd"]
            fut = submit(line)
        return rec, fut

    def append(self, **fields: Unpack[LedgerEntry]) -> LedgerRecord:
        """Append one record; returns it once it is on disk."""
        rec, fut = self._make(self._appender.submit, **fields)
        fut.result()
        return rec

    async def append_async(self, **fields: Unpack[LedgerEntry]) -> LedgerRecord:
        """`append` for a coroutine on the running loop's thread."""
        rec, fut = self._make(self._appender.submit_async, **fields)
        await fut
        return rec

    @property
    def total_usd(self) -> float:
        return self.total_micro_usd / 1e6

    def close(self) -> None:
        self._appender.close()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
