"""The typed readers of ledger.jsonl and journal.jsonl: a file the writers made reads back record
for record through `read_ledger` / `read_journal`, and a torn, foreign or edited line is an
InputError of one line naming the file, the line and the field."""

from __future__ import annotations

import json

import pytest

from trinity.errors import InputError
from trinity.io import read_jsonl
from trinity.pool.client import ChatResult
from trinity.pool.journal import CallJournal, JournalEntry, read_journal, try_journal_line
from trinity.pool.ledger import Ledger, LedgerLine, read_ledger, try_ledger_line, verify_ledger


def _write_ledger(path):
    with Ledger(path, "run-x", fsync=False) as led:
        led.append(
            provider="openrouter",
            model="org/m-1",
            prompt_tokens=10,
            completion_tokens=5,
            cost_micro_usd=30,
            cost_source="reported",
            purpose="train",
        )
        led.append(
            provider="openrouter",
            model="m-2",
            prompt_tokens=20,
            completion_tokens=7,
            cost_micro_usd=41,
            cost_source="invalid",
            purpose="eval",
            note="usage refused",
            excess_micro_usd=3,
        )
        led.append(
            provider="practice",
            model="m-2",
            prompt_tokens=0,
            completion_tokens=0,
            cost_micro_usd=0,
            cost_source="estimated",
            purpose="collect",
        )


def _result(model: str, p: int, c: int, usd: float, *, cache: bool = False) -> dict:
    return ChatResult(
        text="ok",
        ok=True,
        error=None,
        status=200,
        prompt_tokens=p,
        completion_tokens=c,
        cost_usd=usd,
        cost_source="cache" if cache else "reported",
        cache_hit=cache,
        model=model,
        provider="openrouter",
    ).to_json()


def _write_journal(path):
    j = CallJournal(path, fsync=False)
    try:
        j.record("g0/c0/q1/t1/org/m-1/Worker", _result("org/m-1", 10, 5, 30e-6))
        j.record("g0/c1/q1/t1/m-2/Thinker", _result("m-2", 20, 7, 0.0, cache=True))
    finally:
        j.close()


def test_a_ledger_the_writer_made_reads_back_record_for_record(tmp_path):
    path = tmp_path / "ledger.jsonl"
    _write_ledger(path)
    raw = read_jsonl(path)
    recs = read_ledger(path)
    assert all(isinstance(r, LedgerLine) for r in recs)
    assert [r.seq for r in recs] == [0, 1, 2]
    assert [(r.model, r.prompt_tokens, r.completion_tokens, r.cost_micro_usd) for r in recs] == [
        (d["model"], d["prompt_tokens"], d["completion_tokens"], d["cost_micro_usd"]) for d in raw
    ]
    assert recs[0].note is None and recs[0].excess_micro_usd is None
    assert (recs[1].note, recs[1].excess_micro_usd, recs[1].cost_source) == ("usage refused", 3, "invalid")
    assert recs[2].estimated and not recs[0].estimated
    assert [r.h for r in recs] == [d["h"] for d in raw] and recs[-1].h == verify_ledger(path).head_hash
    assert recs[1].prev_h == recs[0].h
    assert sum(r.cost_usd for r in recs) == pytest.approx(71e-6)


def test_a_journal_the_writer_made_reads_back_line_for_line(tmp_path):
    path = tmp_path / "journal.jsonl"
    _write_journal(path)
    entries = read_journal(path)
    assert all(isinstance(e, JournalEntry) for e in entries)
    assert [e.key for e in entries] == ["g0/c0/q1/t1/org/m-1/Worker", "g0/c1/q1/t1/m-2/Thinker"]
    a, b = (e.result for e in entries)
    assert (a.model, a.prompt_tokens, a.completion_tokens, a.cost_usd, a.cache_hit) == ("org/m-1", 10, 5, 30e-6, False)
    assert (b.cost_source, b.cache_hit, b.journal_hit, b.provider) == ("cache", True, False, "openrouter")


def test_a_torn_final_line_is_skipped(tmp_path):
    led, jr = tmp_path / "ledger.jsonl", tmp_path / "journal.jsonl"
    _write_ledger(led)
    _write_journal(jr)
    with open(led, "ab") as f:
        f.write(b'{"seq":3,"run_id":"ru')  # a crash mid-append
    with open(jr, "ab") as f:
        f.write(b'{"key": "torn')
    assert len(read_ledger(led)) == 3 and len(read_ledger(led, strict=False)) == 3
    assert len(read_journal(jr)) == 2


def _one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d.pop("h"), "field h is missing"),
        (lambda d: d.update(cost_micro_usd="30"), "field cost_micro_usd is '30', not a non-negative integer"),
        (lambda d: d.update(prompt_tokens=-1), "field prompt_tokens is -1"),
        (lambda d: d.update(model=None), "field model is None, not a string"),
        (lambda d: d.update(extra=1), "field extra is not part of a ledger record"),
        (lambda d: d.update(excess_micro_usd=0), "field excess_micro_usd is 0, not a positive integer"),
    ],
)
def test_a_foreign_or_edited_ledger_line_is_one_line_naming_it(tmp_path, edit, field):
    path = tmp_path / "ledger.jsonl"
    _write_ledger(path)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    edit(lines[1])
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    with pytest.raises(InputError) as e:
        read_ledger(path)
    msg = _one_line(e)
    assert msg.startswith(f"{path}: line 2: {field}"), msg
    assert "not written by trinity's ledger" in msg
    # the tolerant readers (the app's) skip it and keep the rest
    assert [r.seq for r in read_ledger(path, strict=False)] == [0, 2]
    assert try_ledger_line(lines[1]) is None and try_ledger_line(lines[0]) is not None


def test_a_non_object_or_non_json_ledger_line_is_one_line(tmp_path):
    path = tmp_path / "ledger.jsonl"
    _write_ledger(path)
    good = path.read_text()
    path.write_text(good + "[1, 2]\n")
    with pytest.raises(InputError) as e:
        read_ledger(path)
    assert _one_line(e) == (
        f"{path}: line 4: a ledger record is not a JSON object; it was not written by trinity's ledger "
        "(run `trinity ledger verify` on the file)"
    )
    path.write_text(good.replace("\n", "\nnot json\n", 1))
    with pytest.raises(InputError) as e:
        read_ledger(path)
    assert "line 2 is not valid JSON" in _one_line(e)


@pytest.mark.parametrize(
    "line, field",
    [
        ({"result": {}}, "field key is missing"),
        ({"key": 3, "result": {}}, "field key is 3, not a string"),
        ({"key": "k"}, "field result is missing"),
        ({"key": "k", "result": [1]}, "field result is not a JSON object"),
        ({"key": "k", "result": {"cache_hit": "yes"}}, "field result.cache_hit is 'yes', not bool"),
        ({"key": "k", "result": {"prompt_tokens": True}}, "field result.prompt_tokens is True, not int"),
        ({"key": "k", "result": {}, "sent": "k"}, "field sent is not part of a journal line"),
    ],
)
def test_a_foreign_journal_line_is_one_line_naming_it(tmp_path, line, field):
    path = tmp_path / "journal.jsonl"
    _write_journal(path)
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")
    with pytest.raises(InputError) as e:
        read_journal(path)
    msg = _one_line(e)
    assert msg.startswith(f"{path}: line 3: {field}"), msg
    assert len(read_journal(path, strict=False)) == 2
    assert try_journal_line(line) is None
