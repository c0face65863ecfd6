"""Response cache, call journal and API-key hygiene, over real loopback HTTP."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

import pytest
from pool_helpers import messages, practice_pool, questions, server  # noqa: F401

from trinity.errors import ConfigError
from trinity.pool.budget import Budget
from trinity.pool.cache import ResponseCache
from trinity.pool.client import PoolClient
from trinity.pool.journal import CallJournal
from trinity.pool.keys import read_env_file, resolve_key
from trinity.pool.ledger import Ledger, verify_ledger

QS = questions()[:24]


async def _evaluate(pool, *, cache=None, ledger=None, journal=None, budget=None, keyed=False, **dec):
    async with PoolClient(pool, run_id="run-c", cache=cache, ledger=ledger, journal=journal, budget=budget) as c:
        res = await asyncio.gather(
            *(
                c.chat(
                    pool.models[i % 3],
                    messages(q),
                    purpose="eval",
                    journal_key=f"0/0/{q.id}/1" if keyed else None,
                    **dec,
                )
                for i, q in enumerate(QS)
            )
        )
        return c, res


async def test_second_identical_evaluation_is_free_and_makes_no_request(server, tmp_path):
    pool = practice_pool(server.base_url)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    ledger = Ledger(tmp_path / "ledger.jsonl", "run-c")
    c1, first = await _evaluate(pool, cache=cache, ledger=ledger)
    n_http = server.stats.requests
    assert n_http == len(QS) and all(r.ok and not r.cache_hit for r in first)
    c2, second = await _evaluate(pool, cache=cache, ledger=ledger)
    ledger.close()
    assert server.stats.requests == n_http  # zero HTTP requests the second time
    assert all(r.cache_hit and r.cost_usd == 0 and r.cost_source == "cache" for r in second)
    assert [r.text for r in second] == [r.text for r in first]
    assert c2.stats.cost_micro_usd == 0 and c2.stats.cache_hits == len(QS) and c2.stats.calls == 0
    assert verify_ledger(tmp_path / "ledger.jsonl").n_records == len(QS)  # hits write no record
    # A second process-level reader sees the same entries (WAL: readers alongside the writer).
    other = ResponseCache(tmp_path / "cache.sqlite")
    assert len(other) == len(QS)
    other.close()
    cache.close()


async def test_nondeterministic_requests_are_not_cached_and_seed_is_part_of_the_key(server, tmp_path):
    pool = practice_pool(server.base_url)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    await _evaluate(pool, cache=cache, temperature=0.7)
    await _evaluate(pool, cache=cache, temperature=0.7)
    assert server.stats.requests == 2 * len(QS) and len(cache) == 0
    await _evaluate(pool, cache=cache, seed=1)
    await _evaluate(pool, cache=cache, seed=2)
    assert server.stats.requests == 4 * len(QS)
    await _evaluate(pool, cache=cache, seed=1)
    assert server.stats.requests == 4 * len(QS) and len(cache) == 2 * len(QS)


async def test_journal_key_is_never_paid_twice_even_after_a_restart(server, tmp_path):
    pool = practice_pool(server.base_url)
    jpath, lpath = tmp_path / "journal.jsonl", tmp_path / "ledger.jsonl"
    journal, ledger = CallJournal(jpath), Ledger(lpath, "run-c")
    _, first = await _evaluate(pool, journal=journal, ledger=ledger, keyed=True, temperature=0.5)
    _, again = await _evaluate(pool, journal=journal, ledger=ledger, keyed=True, temperature=0.5)
    journal.close(), ledger.close()
    assert server.stats.requests == len(QS)
    assert all(r.journal_hit for r in again) and [r.text for r in again] == [r.text for r in first]
    # "Resume": a new process opens the same journal (with a torn last line from a crash).
    with open(jpath, "ab") as f:
        f.write(b'{"key": "0/0/practice-x/1", "res')
    journal, ledger = CallJournal(jpath), Ledger(lpath, "run-c")
    assert len(journal) == len(QS)
    _, resumed = await _evaluate(pool, journal=journal, ledger=ledger, keyed=True, temperature=0.5)
    journal.close(), ledger.close()
    assert server.stats.requests == len(QS) and all(r.journal_hit for r in resumed)
    assert verify_ledger(lpath).n_records == len(QS)
    assert jpath.read_bytes().endswith(b"\n")


async def test_cache_hits_are_journaled_so_a_resume_survives_a_cleared_cache(server, tmp_path):
    pool = practice_pool(server.base_url)
    cache = ResponseCache(tmp_path / "c1.sqlite")
    await _evaluate(pool, cache=cache)  # warms the cache, unkeyed
    requests = server.stats.requests
    jpath = tmp_path / "journal.jsonl"
    journal = CallJournal(jpath)
    _, hits = await _evaluate(pool, cache=cache, journal=journal, keyed=True)
    journal.close(), cache.close()
    assert all(r.cache_hit for r in hits) and server.stats.requests == requests
    # The resumed run has lost its cache (another machine, a cleared cache dir): the journal
    # still replays every answer, at $0 and with no request.
    journal = CallJournal(jpath)
    _, resumed = await _evaluate(pool, cache=ResponseCache(tmp_path / "c2.sqlite"), journal=journal, keyed=True)
    journal.close()
    assert server.stats.requests == requests
    assert all(r.journal_hit and r.cost_usd == 0 for r in resumed)
    assert [r.text for r in resumed] == [r.text for r in hits]


FAKE_KEY = "sk-test-FAKE-0123456789abcdef-never-write-me"


async def test_key_never_reaches_any_file_we_write(server, tmp_path, monkeypatch):
    monkeypatch.setenv("TRINITY_FAKE_KEY", FAKE_KEY)
    server.server.api_key = FAKE_KEY  # the server insists on the key, so it really was sent
    pool = replace(practice_pool(server.base_url), key_env="TRINITY_FAKE_KEY")
    run = tmp_path / "runs" / "run-c"
    run.mkdir(parents=True)
    cache = ResponseCache(tmp_path / "cache" / "responses.sqlite")
    journal, ledger = CallJournal(run / "journal.jsonl"), Ledger(run / "ledger.jsonl", "run-c")
    _, res = await _evaluate(pool, cache=cache, ledger=ledger, journal=journal, budget=Budget(10.0), keyed=True)
    assert all(r.ok for r in res) and server.stats.by_status.get(401) is None
    assert all(FAKE_KEY not in repr(r) for r in res)
    journal.close(), ledger.close()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("responses.sqlite") for p in files)
    for p in files:  # includes the SQLite WAL / shm files
        assert FAKE_KEY.encode() not in p.read_bytes(), p
    cache.close()


def test_env_file_must_be_private_and_outside_the_repo(tmp_path, monkeypatch):
    monkeypatch.delenv("SOME_PROVIDER_KEY", raising=False)
    f = tmp_path / "secrets.env"
    f.write_text("# keys\nexport SOME_PROVIDER_KEY='k-123456'\nOTHER=1\n")
    os.chmod(f, 0o644)
    with pytest.raises(ConfigError, match=r"readable by other users \(mode 0644\).*chmod 600"):
        resolve_key("SOME_PROVIDER_KEY", provider="openrouter", env_file=f)
    os.chmod(f, 0o600)
    assert resolve_key("SOME_PROVIDER_KEY", provider="openrouter", env_file=f) == "k-123456"
    monkeypatch.setenv("SOME_PROVIDER_KEY", "from-env")  # the environment wins
    assert resolve_key("SOME_PROVIDER_KEY", provider="openrouter", env_file=f) == "from-env"
    monkeypatch.delenv("SOME_PROVIDER_KEY")
    with pytest.raises(ConfigError, match="no API key for provider 'chutes'.*CHUTES_TEST_KEY"):
        resolve_key("CHUTES_TEST_KEY", provider="chutes", env_file=f)
    project = tmp_path / "checkout"  # stands in for this project's checkout (nothing written to the real one)
    (project / ".git").mkdir(parents=True)
    (project / ".secrets.env").write_text("A=1\n")
    os.chmod(project / ".secrets.env", 0o600)
    import trinity.pool.keys as keys

    monkeypatch.setattr(keys, "REPO_ROOT", project)
    with pytest.raises(ConfigError, match=f"inside the git repository {project}"):
        read_env_file(project / ".secrets.env")
    other = tmp_path / "miner-repo"  # the repository the command runs in counts too
    (other / ".git").mkdir(parents=True)
    (other / "secrets.env").write_text("A=1\n")
    os.chmod(other / "secrets.env", 0o600)
    monkeypatch.chdir(other)
    with pytest.raises(ConfigError, match=f"inside the git repository {other}"):
        read_env_file(other / "secrets.env")
    bad = tmp_path / "bad.env"
    bad.write_text("sk-or-" + "v1-secretvalue\n")  # split: no key-shaped literal in the repo
    os.chmod(bad, 0o600)
    with pytest.raises(ConfigError) as ei:
        read_env_file(bad)
    assert "secretvalue" not in str(ei.value)  # a malformed line is not echoed


def test_cache_readers_in_other_processes_never_block_the_writer(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    cache.put("k-init", "practice", "m", {"text": "x"})
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom trinity.pool.cache import ResponseCache\n"
            f"c = ResponseCache({str(path)!r})\nseen = []\nt = time.time()\n"
            "print('ready', flush=True)\n"
            "while time.time() - t < 30:\n"
            "    n = len(c); seen.append(n)\n"
            "    if n >= 301: break\n"
            "assert seen == sorted(seen), 'count went backwards'\nprint(len(seen), seen[-1])\n",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert reader.stdout.readline().strip() == "ready"  # the reader is polling from here on
    import time

    for i in range(300):
        cache.put(f"k{i}", "practice", "m", {"text": f"answer {i}"})
        time.sleep(0.005)  # ~1.5 s of writing: the reader polls in between even on a loaded box
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    reads, last = map(int, out.split())
    assert last == 301 and reads > 1
    assert cache.get("k299") == {"text": "answer 299"}
    cache.close()


def test_pool_list_says_whether_a_key_is_set_but_never_prints_it(monkeypatch, capsys, tmp_path):
    from trinity.cli import main

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no default env file
    monkeypatch.setenv("OPENROUTER_API_KEY", FAKE_KEY)
    monkeypatch.delenv("CHUTES_API_KEY", raising=False)
    assert main(["pool", "list"]) == 0
    out = capsys.readouterr().out
    assert "$OPENROUTER_API_KEY is set" in out and "$CHUTES_API_KEY not set" in out
    assert "practice — SIMULATED: simulated/mathlete, simulated/scholar, simulated/coder" in out
    assert FAKE_KEY not in out
