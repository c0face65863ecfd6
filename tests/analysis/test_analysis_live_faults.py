"""Live baselines against a practice server that misbehaves: failures are counted and said, 402 stops."""

import json

import pytest

from trinity.benchmarks.practice import practice_questions
from trinity.cli import main
from trinity.data.questions import save_questions
from trinity.io import read_jsonl
from trinity.practice.server import Faults, start_practice_server


@pytest.fixture()
def qfile(tmp_path, monkeypatch):
    # a response cache of this test's own: the default one is keyed by the server's address, and a
    # later server of this worker on a freed port got the earlier server's answers from it (a pool
    # where every call fails then measured as healthy)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "q.jsonl"
    save_questions(path, [q for q in practice_questions() if q.kind == "math"])
    return path


def baselines(qfile, run, url, capsys, *extra):
    capsys.readouterr()
    rc = main(
        [
            "baselines",
            "--pool",
            "practice",
            "--questions",
            str(qfile),
            "--run",
            str(run),
            "--base-url",
            url,
            "--split",
            "all",
            "--json",
            "--bootstrap",
            "100",
            *extra,
        ]
    )
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_error_bodies_count_as_wrong_and_are_reported(qfile, tmp_path, capsys):
    server = start_practice_server(faults=Faults(rate_error_body=0.5))
    try:
        rc, out, err = baselines(qfile, tmp_path / "b", server.base_url, capsys)
    finally:
        server.stop()
    assert rc == 0, err
    rep = json.loads(out)
    assert any("failed call and count as wrong" in n for n in rep["notes"])


def test_a_pool_where_every_call_fails_is_an_error_not_a_zero(qfile, tmp_path, capsys):
    # 0.000 for every system would read as a measurement; nothing was measured: one line, exit 2
    server = start_practice_server(faults=Faults(rate_error_body=1.0))
    try:
        rc, out, err = baselines(qfile, tmp_path / "b", server.base_url, capsys)
    finally:
        server.stop()
    assert rc == 2 and out == ""
    assert err.startswith("error: always simulated/mathlete: every one of") and err.count("\n") == 1
    assert "check the pool" in err


def test_out_of_credit_stops_with_one_line(qfile, tmp_path, capsys):
    server = start_practice_server(faults=Faults(credit_after=3))
    try:
        rc, out, err = baselines(qfile, tmp_path / "b", server.base_url, capsys)
    finally:
        server.stop()
    assert rc == 4 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1
    ledger = read_jsonl(tmp_path / "b" / "ledger.jsonl")
    assert len(ledger) == 3 and {r["purpose"] for r in ledger} == {"eval"}


def test_budget_cap_stops_before_spending_more(qfile, tmp_path, capsys):
    server = start_practice_server()
    try:
        rc, out, err = baselines(qfile, tmp_path / "b", server.base_url, capsys, "--budget-usd", "0.0002")
    finally:
        server.stop()
    assert rc == 4 and "budget" in err.lower()
    paid = sum(r["cost_micro_usd"] for r in read_jsonl(tmp_path / "b" / "ledger.jsonl")) / 1e6
    assert paid <= 0.0002


def test_cache_hits_are_said_once_with_counts():
    from types import SimpleNamespace as NS

    from trinity.analysis.live import cache_note

    hit, paid = NS(cache_hit=True), NS(cache_hit=False)
    notes = cache_note([("always a", [NS(turns=[hit]), NS(turns=[paid])]), ("always b", [NS(turns=[paid])])])
    assert notes == [
        "response-cache hits cost $0 (always a 1/2 calls): the cost shown is what was paid now, "
        "not what a cold run would pay"
    ]
    assert cache_note([("router", [NS(turns=[paid, paid])])]) == []
