"""The Playground's / a served run's calls: the ledger's paid calls joined with the call journal
(role, turn, session), the cache's answers listed at $0, a paid call the journal lacks kept."""

from __future__ import annotations

import json
import math

from minertui.calls import call_rows, join_calls, load_calls
from trinity.io import canonical_json
from trinity.pool.journal import JournalEntry
from trinity.pool.ledger import GENESIS, LedgerLine, record_hash


def rec(model: str, p: int, c: int, micro: int, t: str, run: str = "run-a") -> dict:
    return {
        "seq": 0,
        "run_id": run,
        "time": t,
        "provider": "openrouter",
        "model": model,
        "prompt_tokens": p,
        "completion_tokens": c,
        "cost_micro_usd": micro,
        "cost_source": "reported",
        "purpose": "playground",
        "prev_h": GENESIS,
    }


def chain(records: list[dict]) -> list[dict]:
    """The records as the ledger writes them: numbered and hash-chained."""
    out, prev = [], GENESIS
    for i, r in enumerate(records):
        body = {**r, "seq": i, "prev_h": prev}
        prev = record_hash(body)
        out.append({**body, "h": prev})
    return out


def line(key: str, model: str, p: int, c: int, usd: float, cache: bool = False) -> dict:
    return {
        "key": key,
        "result": {
            "model": model,
            "prompt_tokens": p,
            "completion_tokens": c,
            "cost_usd": usd,
            "cache_hit": cache,
            "cost_source": "cache" if cache else "reported",
        },
    }


LEDGER_LINES = chain(
    [
        rec("org/m-1", 10, 5, 30, "2026-12-02T10:00:00.000Z"),
        rec("m-2", 20, 7, 41, "2026-12-02T10:00:01.000Z"),
        rec("m-2", 99, 9, 77, "2026-12-02T10:00:02.000Z"),  # the journal never got it (a kill)
    ]
)
JOURNAL_LINES = [
    # two sessions in flight: their journal lines finish in the other order than the ledger's
    line("playground/local/s2/c0/q/x/t1/m-2/Thinker", "m-2", 20, 7, 41e-6),
    line("playground/local/s1/c0/q/x/t1/org/m-1/Worker", "org/m-1", 10, 5, 30e-6),
    line("playground/local/s1/c0/q/x/t2/org/m-1/Verifier", "org/m-1", 10, 5, 0.0, cache=True),
]
LEDGER = [LedgerLine.from_json(r) for r in LEDGER_LINES]
JOURNAL = [JournalEntry.from_json(j) for j in JOURNAL_LINES]


def test_paid_calls_get_their_role_and_time_cached_ones_cost_nothing_and_nothing_is_lost():
    rows = join_calls(LEDGER, JOURNAL)
    assert [(r.model, r.role, r.turn, r.session, r.cached) for r in rows] == [
        ("m-2", "Thinker", 1, "s2", False),
        ("org/m-1", "Worker", 1, "s1", False),
        ("org/m-1", "Verifier", 2, "s1", True),
        ("m-2", "?", None, "", False),
    ]
    assert [r.cost_micro for r in rows] == [41, 30, 0, 77]  # the ledger's money, every record once
    assert sum(r.cost_micro for r in rows) == sum(r.cost_micro_usd for r in LEDGER)
    assert math.isnan(rows[2].time) and all(math.isfinite(r.time) for r in rows if not r.cached)
    assert rows[0].time > rows[1].time  # each paid call has its own record's time
    assert rows[0].run_id == "run-a"


def test_filter_and_sort():
    rows = join_calls(LEDGER, JOURNAL)
    assert call_rows(rows) == [3, 2, 1, 0]  # newest first
    assert call_rows(rows, "verifier") == [2]
    assert call_rows(rows, "cached") == [2]
    assert call_rows(rows, "s1 worker") == [1]
    assert call_rows(rows, sort="cost")[0] == 3


def test_load_calls_reads_the_folder_and_rereads_when_it_grows(tmp_path):
    assert load_calls(tmp_path) is None
    (tmp_path / "ledger.jsonl").write_text("".join(canonical_json(r) + "\n" for r in LEDGER_LINES[:2]))
    (tmp_path / "journal.jsonl").write_text("".join(json.dumps(j) + "\n" for j in JOURNAL_LINES[:2]))
    view = load_calls(tmp_path)
    assert view is not None and len(view.rows) == 2 and len(view.ledger) == 2
    assert view.ledger.total_usd == 71e-6
    with open(tmp_path / "journal.jsonl", "a") as f:
        f.write(json.dumps(JOURNAL_LINES[2]) + "\n" + '{"key": "torn')  # a line being written
    view = load_calls(tmp_path)
    assert view is not None and len(view.rows) == 3 and view.cached == 1
