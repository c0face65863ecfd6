"""`trinity serve` over loopback HTTP with the OpenAI client, against the simulated practice pool
the engine starts in-process: the route in headers and the `trinity` field, streaming, the ledger
against the pool's own bill, keys and budgets, bad input, a client that goes away mid-stream,
the 429 over --max-sessions and a graceful shutdown."""

import asyncio
import json
import threading

import httpx
import pytest

from trinity.benchmarks.practice import practice_questions
from trinity.io import read_jsonl
from trinity.serve.app import ServeApp
from trinity.serve.engine import ServeEngine
from trinity.serve.keys import KeyStore, add_key
from trinity.serve.server import ServerThread


@pytest.fixture(scope="module")
def openai():
    """The OpenAI client package, imported by the tests that use it (~0.4 s of every xdist
    worker's collection otherwise)."""
    import openai

    return openai


def math_question():
    return next(q for q in practice_questions() if q.kind == "math")


def serve(run_dir, *, keys=None, budget_usd=1.0, max_sessions=64, key_budgets=None):
    store = KeyStore.load(keys) if keys else None
    caps = key_budgets if key_budgets is not None else ({k.name: k.budget_usd for k in store.keys} if store else {})
    engine = ServeEngine.load(run_dir, budget_usd=budget_usd, key_budgets=caps)
    app = ServeApp(engine, keys=store, max_sessions=max_sessions)
    return engine, app, ServerThread(app.starlette())


def ledger(run_dir):
    path = run_dir / "serve" / "ledger.jsonl"
    return read_jsonl(path) if path.exists() else []


def test_a_session_carries_its_route_and_the_ledger_matches_the_pools_bill(openai, run_copy):
    q = math_question()
    engine, app, srv = serve(run_copy)
    with srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="unused", max_retries=0)
        models = client.models.list()
        assert [m.id for m in models.data] == ["router"]
        raw = client.chat.completions.with_raw_response.create(
            model="router",
            messages=[{"role": "system", "content": "ignored"}, {"role": "user", "content": q.question}],
            extra_body={"trinity": {"kind": "math", "reference": q.answer}},
        )
        comp = raw.parse()
        ext = comp.model_extra["trinity"]
        turns = ext["turns"]
        assert 1 <= len(turns) <= engine.max_turns and raw.headers["x-trinity-turns"] == str(len(turns))
        route = raw.headers["x-trinity-route"].split(";")
        for t, part in zip(turns, route):
            k, model, role, mp, rp = part.split(":", 1)[0], *part.split(":")[1:]
            assert (int(k), model, role) == (t["turn"], t["model"], t["role"])
            assert float(mp) == pytest.approx(t["model_probs"][model], abs=1e-4)
            assert float(rp) == pytest.approx(t["role_probs"][role], abs=1e-4)
            assert abs(sum(t["model_probs"].values()) - 1) < 1e-3 and set(t["role_probs"]) == {
                "Thinker",
                "Worker",
                "Verifier",
            }
            assert t["model"] == max(t["model_probs"], key=t["model_probs"].get)  # argmax routing
        assert comp.usage.prompt_tokens == sum(t["prompt_tokens"] for t in turns) > 0
        assert float(raw.headers["x-trinity-cost-usd"]) == pytest.approx(ext["cost_usd"], abs=1e-8)
        if ext["answer"] is not None:
            assert comp.choices[0].message.content and ext["correct"] in (True, False)
        else:
            assert ext["correct"] is False
        billed = engine.practice_server.server.stats.billed_usd
    records = ledger(run_copy)
    assert len(records) == len(turns) and {r["purpose"] for r in records} == {"serve"}
    paid = sum(r["cost_micro_usd"] for r in records) / 1e6
    assert paid == pytest.approx(billed, abs=0.5e-6 * len(records) + 1e-12)
    assert paid == pytest.approx(ext["cost_usd"], abs=0.5e-6 * len(records) + 1e-12)  # the ledger keeps whole micro-USD


def test_streaming_sends_each_turn_then_the_answer_and_a_repeat_is_served_from_the_cache(openai, run_copy):
    q = math_question()
    engine, app, srv = serve(run_copy)
    with srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="unused", max_retries=0)
        body = {"trinity": {"kind": "math"}}
        chunks = list(
            client.chat.completions.create(
                model="router",
                messages=[{"role": "user", "content": q.question}],
                stream=True,
                stream_options={"include_usage": True},
                extra_body=body,
            )
        )
        turn_chunks = [
            c.model_extra["trinity"]["turn"] for c in chunks if "turn" in (c.model_extra.get("trinity") or {})
        ]
        final = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
        assert len(final) == 1
        summary = final[0].model_extra["trinity"]
        assert [t["turn"] for t in turn_chunks] == list(range(1, summary["n_turns"] + 1))
        assert [(t["model"], t["role"]) for t in turn_chunks] == [(t["model"], t["role"]) for t in summary["turns"]]
        content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert chunks[-1].usage.prompt_tokens == sum(t["prompt_tokens"] for t in turn_chunks)
        # the same question again: the same route, every call a cache hit, nothing paid
        again = client.chat.completions.create(
            model="router", messages=[{"role": "user", "content": q.question}], extra_body=body
        )
        ext = again.model_extra["trinity"]
        assert [(t["model"], t["role"]) for t in ext["turns"]] == [(t["model"], t["role"]) for t in turn_chunks]
        assert all(t["cache_hit"] for t in ext["turns"]) and ext["cost_usd"] == 0
        assert (again.choices[0].message.content or "") == content
    assert len(ledger(run_copy)) == len(turn_chunks)


def test_bad_input_gets_a_clear_http_error_and_costs_nothing(openai, run_copy, tmp_path, caplog):
    keys = tmp_path / "keys.json"
    key = add_key(keys, "alice", 1.0)
    assert key not in keys.read_text() and "sha256" in keys.read_text()
    engine, app, srv = serve(run_copy, keys=keys)
    q = math_question()
    msgs = [{"role": "user", "content": q.question}]
    with srv:
        good = openai.OpenAI(base_url=srv.base_url, api_key=key, max_retries=0)
        with pytest.raises(openai.NotFoundError, match="does not exist"):
            good.chat.completions.create(model="gpt-4o", messages=msgs)
        with pytest.raises(openai.AuthenticationError, match="not one this server knows"):
            openai.OpenAI(base_url=srv.base_url, api_key="trn-wrong", max_retries=0).chat.completions.create(
                model="router", messages=msgs
            )
        with pytest.raises(openai.BadRequestError, match="trinity.kind"):
            good.chat.completions.create(model="router", messages=msgs, extra_body={"trinity": {"kind": "essay"}})
        with pytest.raises(openai.BadRequestError, match="no user message"):
            good.chat.completions.create(model="router", messages=[{"role": "system", "content": "hi"}])
        url = srv.base_url + "/chat/completions"
        auth = {"Authorization": f"Bearer {key}"}
        r = httpx.post(url, content=b'{"model": "router", "messages": [', headers=auth)
        assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
        r = httpx.post(url, json={"model": "router", "messages": msgs})
        assert r.status_code == 401 and r.json()["error"]["code"] == "missing_api_key"
        big = json.dumps({"model": "router", "messages": [{"role": "user", "content": "x" * (1 << 20)}]})
        r = httpx.post(url, content=big.encode(), headers=auth)
        assert r.status_code == 413 and "over 1048576 bytes" in r.json()["error"]["message"]

        def chunked():
            yield b'{"model": "router", "messages": [{"role": "user", "content": "'
            for _ in range(40):
                yield b"y" * 32768
            yield b'"}]}'

        r = httpx.post(url, content=chunked(), headers=auth)  # no Content-Length: counted as it arrives
        assert r.status_code == 413
    assert ledger(run_copy) == []
    assert "Traceback" not in caplog.text


def test_a_key_budget_and_the_server_budget_stop_calls_before_they_go_out(openai, run_copy, tmp_path):
    keys = tmp_path / "keys.json"
    poor = add_key(keys, "poor", 0.00001)  # below one call's worst case
    rich = add_key(keys, "rich", None)
    engine, app, srv = serve(run_copy, keys=keys, budget_usd=0.00002)
    msgs = [{"role": "user", "content": math_question().question}]
    with srv:
        with pytest.raises(openai.APIStatusError) as e:
            openai.OpenAI(base_url=srv.base_url, api_key=poor, max_retries=0).chat.completions.create(
                model="router", messages=msgs
            )
        assert e.value.status_code == 402 and "key 'poor'" in str(e.value)
        with pytest.raises(openai.APIStatusError) as e:
            openai.OpenAI(base_url=srv.base_url, api_key=rich, max_retries=0).chat.completions.create(
                model="router", messages=msgs
            )
        assert e.value.status_code == 402 and "server's budget" in str(e.value)
        billed = engine.practice_server.server.stats.billed_usd
    assert ledger(run_copy) == [] and billed == 0


def test_the_key_spend_survives_a_restart(openai, run_copy, tmp_path):
    keys = tmp_path / "keys.json"
    key = add_key(keys, "bob", 1.0)
    msgs = [{"role": "user", "content": math_question().question}]
    engine, app, srv = serve(run_copy, keys=keys)
    with srv:
        ext = (
            openai.OpenAI(base_url=srv.base_url, api_key=key, max_retries=0)
            .chat.completions.create(model="router", messages=msgs)
            .model_extra["trinity"]
        )
    engine2 = ServeEngine.load(run_copy, budget_usd=1.0, key_budgets={"bob": 1.0})
    try:
        assert engine2.key_spent()["bob"] == pytest.approx(ext["cost_usd"], abs=1e-9) and ext["cost_usd"] > 0
    finally:
        if engine2.practice_server is not None:
            engine2.practice_server.stop()


def test_a_client_that_goes_away_mid_stream_pays_nothing_twice_and_the_server_goes_on(openai, run_copy, caplog):
    q = math_question()
    engine, app, srv = serve(run_copy)
    stats = engine.practice_server.server.stats  # the pool's own count of what it billed
    with srv:
        url = srv.base_url + "/chat/completions"
        body = {"model": "router", "stream": True, "messages": [{"role": "user", "content": q.question}]}
        with httpx.Client(timeout=60) as h:
            with h.stream("POST", url, json=body) as r:
                assert r.status_code == 200
                for line in r.iter_lines():
                    if line.startswith("data: ") and '"turn"' in line:
                        break  # one turn seen: hang up
        # a new request on the same server is served
        ok = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0).chat.completions.create(
            model="router", messages=[{"role": "user", "content": practice_questions()[1].question}]
        )
        assert ok.model_extra["trinity"]["n_turns"] >= 1
    # the server has stopped: every session finished its call in flight, and each paid call is
    # in the ledger and the journal exactly once
    records = ledger(run_copy)
    journal = read_jsonl(run_copy / "serve" / "journal.jsonl")
    keys = [j["key"] for j in journal]
    assert len(keys) == len(set(keys)) == len(records) == stats.completions
    paid = sum(r["cost_micro_usd"] for r in records) / 1e6
    assert paid == pytest.approx(stats.billed_usd, abs=0.5e-6 * len(records) + 1e-12)
    assert engine.practice_server is None and app.running == 0  # stopped with the server
    assert "Traceback" not in caplog.text


class BlockingEngine:
    """A stand-in engine whose sessions wait for `release`: the 429 and the graceful shutdown
    are then decided by state, not by timing."""

    def __init__(self, real):
        self.real = real
        self.closing = False
        self.release: asyncio.Event | None = None
        self.started = threading.Event()
        self.finished = 0
        self.run, self.pool, self.models, self.text, self.max_turns = real.run, real.pool, real.models, real.text, 1
        self.loop = None

    async def open(self):
        self.release = asyncio.Event()
        self.loop = asyncio.get_running_loop()

    async def close(self):
        self.closing = True
        self.real.practice_server and self.real.practice_server.stop()

    def start_session(self, question, key="local", on_turn=None, cancel=None):
        from trinity.serve.engine import ServedSession

        async def go():
            self.started.set()
            await self.release.wait()
            self.finished += 1
            s = ServedSession("s1", key, question, answer_text="done")
            s.stopped = "accepted"
            return s

        return asyncio.get_running_loop().create_task(go())


def test_over_max_sessions_is_a_429_and_the_session_in_flight_still_finishes(openai, run_copy):
    real = ServeEngine.load(run_copy, budget_usd=1.0)
    engine = BlockingEngine(real)
    app = ServeApp(engine, keys=None, max_sessions=1)
    msgs = [{"role": "user", "content": "hello"}]
    results = []
    with ServerThread(app.starlette()) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        first = threading.Thread(
            target=lambda: results.append(client.chat.completions.create(model="router", messages=msgs))
        )
        first.start()
        assert engine.started.wait(60)
        with pytest.raises(openai.RateLimitError, match="1 sessions are running") as e:
            client.chat.completions.create(model="router", messages=msgs)
        assert e.value.response.headers["retry-after"] == "1"
        engine.loop.call_soon_threadsafe(engine.release.set)
        first.join(60)
    assert results and results[0].choices[0].message.content == "done" and engine.finished == 1
