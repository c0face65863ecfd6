"""`trinity.session.live.LiveRun`, the one owner of a live run's pool stack, over real loopback
HTTP against the practice server: a paid call lands in its ledger and journal, a reopened run
starts its budget from the ledger's spend, the sweep's budget wrapper applies to `budget="run"`
only, a failure while opening closes what was opened, and close() is final and idempotent."""

import httpx
import pytest

from trinity.benchmarks.practice import practice_questions
from trinity.benchmarks.prompts import render_question, system_prompt, user_message
from trinity.errors import ConfigError
from trinity.pool import budget as budget_mod
from trinity.pool.budget import Budget
from trinity.pool.providers import load_pool
from trinity.practice.server import start_practice_server
from trinity.session.live import LiveRun

Q = next(q for q in practice_questions() if q.kind != "code")
MESSAGES = [
    {"role": "system", "content": system_prompt("Worker", Q)},
    {"role": "user", "content": user_message(render_question(Q), "")},
]


@pytest.fixture
def server():
    h = start_practice_server(port=0)
    yield h
    h.stop()


def _open(tmp_path, pool, **kw):
    return LiveRun(
        pool,
        run_id="r",
        ledger_path=tmp_path / "ledger.jsonl",
        journal_path=tmp_path / "journal.jsonl",
        cache_path=str(tmp_path / "cache.sqlite"),
        **kw,
    )


def test_a_call_is_recorded_and_a_reopened_run_starts_from_its_spend(server, tmp_path):
    pool = load_pool("practice", base_url=server.base_url)
    model = list(pool.models)[0]
    with _open(tmp_path, pool, budget_usd=1.0) as live:
        assert live.in_flight_at_open == [] and live.spent_at_open == 0.0
        res = live.run(live.client.chat(model, MESSAGES, purpose="train", journal_key="g1/c0/q/t0/m/Worker"))
        assert res.ok and res.cost_usd > 0
        spent = live.ledger.total_usd
        assert spent == pytest.approx(res.cost_usd, abs=1e-6) and live.ledger.n_records == 1
    assert live.loop is None  # closed: the loop, the client, the files
    live.close()  # a second close does nothing
    with _open(tmp_path, pool, budget_usd=1.0) as again:
        assert again.spent_at_open == pytest.approx(spent)
        assert again.budget.spent_micro == pytest.approx(spent * 1e6, abs=1)
        # the same journal key again: replayed from the journal, not bought twice
        res = again.run(again.client.chat(model, MESSAGES, purpose="train", journal_key="g1/c0/q/t0/m/Worker"))
        assert res.ok and again.ledger.n_records == 1


def test_budget_kinds_and_the_sweep_wrapper(server, tmp_path):
    pool = load_pool("practice", base_url=server.base_url)
    wrapped = []

    def wrap(local):
        wrapped.append(local)
        return local

    budget_mod.set_budget_wrapper(wrap)
    try:
        with _open(tmp_path, pool, budget_usd=2.0, budget="run") as live:
            assert wrapped == [live.budget]  # run_budget: inside the shared cap
        with _open(tmp_path, pool, budget_usd=2.0, budget="local") as live:
            assert isinstance(live.budget, Budget) and len(wrapped) == 1  # collect: its own cap only
        with _open(tmp_path, pool, budget="none", cache=False) as live:
            assert live.budget is None and live.cache is None and live.client.budget is None
    finally:
        budget_mod.set_budget_wrapper(None)


def test_a_failure_while_opening_closes_what_was_opened_and_stops_the_server(tmp_path, monkeypatch):
    import dataclasses

    h = start_practice_server(port=0)
    pool = load_pool("practice", base_url=h.base_url)
    keyed = dataclasses.replace(pool, key_env="TRINITY_TEST_NO_SUCH_KEY", key_optional=False)
    monkeypatch.delenv("TRINITY_TEST_NO_SUCH_KEY", raising=False)
    (tmp_path / "empty.env").write_text("")
    (tmp_path / "empty.env").chmod(0o600)
    with pytest.raises(ConfigError, match="no API key"):
        _open(tmp_path, keyed, server=h, env_file=str(tmp_path / "empty.env"))
    with pytest.raises(httpx.HTTPError):  # the run's practice server was stopped with it
        httpx.get(f"{h.base_url}/models", timeout=2.0)
    # the ledger and journal were closed: the next owner opens them at once
    with _open(tmp_path, pool, budget="none") as live:
        assert live.ledger.n_records == 0
