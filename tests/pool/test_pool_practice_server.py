"""The practice pool server: simulated answers that agree with `simulate_correct`, the real
grader and the cached practice matrix; Verifier reliability; the server as a separate process."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pool_helpers import messages, practice_pool, questions, server  # noqa: F401
from trinity_main import trinity_main

from trinity.errors import ProviderError
from trinity.grading import extract_choice, extract_math_answer, grade
from trinity.pool.client import PoolClient
from trinity.practice.replies import PracticeResponder
from trinity.practice.simulation import practice_matrix, simulate_correct, verifier_is_right
from trinity.session.transcript import parse_verdict

ROOT = Path(__file__).resolve().parents[2]
ALL = questions()
BY_ID = {q.id: q for q in ALL}


def _code_of(text: str) -> str:
    m = re.search(r"```python\n(.*?)```", text, re.S)
    assert m, text
    return m.group(1)


async def test_a_collect_against_the_server_reproduces_the_practice_matrix(server):
    pool = practice_pool(server.base_url)
    k = 2
    mat = practice_matrix(k=k)
    async with PoolClient(pool, run_id="collect") as c:
        jobs = [(qi, mi, s) for qi in range(len(ALL)) for mi in range(3) for s in range(k)]
        res = await asyncio.gather(
            *(c.chat(pool.models[mi], messages(ALL[qi]), purpose="collect", seed=s) for qi, mi, s in jobs)
        )
    assert list(pool.models) == list(mat.models)
    for (qi, mi, s), r in zip(jobs, res):
        q = ALL[qi]
        assert r.ok and r.prompt_tokens > 0 and r.completion_tokens > 0 and r.cost_source == "reported"
        if q.kind == "code":
            right = _code_of(r.text) == q.extra["reference_solution"]
        else:
            right = grade(q.kind, r.text, q.answer).correct  # the real grader
        assert right == bool(mat.solves[qi, mi, s]), (q.id, pool.models[mi], s, r.text)
    assert server.stats.by_model == {m: len(ALL) * k for m in pool.models}
    # Each model's hit rate follows its profile: the math specialist is best at math, etc.
    acc = {m: {kind: 0.0 for kind in ("math", "mc", "code")} for m in pool.models}
    for qi, mi, s in jobs:
        acc[pool.models[mi]][ALL[qi].kind] += mat.solves[qi, mi, s] / (20 * k)
    assert max(acc, key=lambda m: acc[m]["math"]) == "simulated/mathlete"
    assert max(acc, key=lambda m: acc[m]["mc"]) == "simulated/scholar"
    assert max(acc, key=lambda m: acc[m]["code"]) == "simulated/coder"


_RUN_ALL = r"""
import contextlib, io, json, sys
jobs = json.loads(sys.stdin.read())
out = []
for code, inputs in jobs:
    res = []
    for inp in inputs:
        sys.stdin, buf = io.StringIO(inp), io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                exec(code, {"__name__": "__main__"})
            res.append(buf.getvalue())
        except Exception as e:
            res.append(None)
    out.append(res)
sys.__stdout__.write(json.dumps(out))
"""


def test_wrong_programs_fail_a_test():
    """Every wrong program the server hands out prints a wrong answer (or crashes) on some test
    (all run in one child process); one is also checked with the real code grader (its sandbox
    takes seconds per program, so not all twenty)."""
    r = PracticeResponder()
    qs = questions("code")
    wrong = [r.wrong_code(q, 0) for q in qs]
    jobs = [(w, [t["input"] for t in q.answer["tests"]]) for w, q in zip(wrong, qs)]
    proc = subprocess.run(
        [sys.executable, "-I", "-c", _RUN_ALL],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=60,
        env={},
    )
    outs = json.loads(proc.stdout)
    for q, w, got in zip(qs, wrong, outs):
        assert w != q.extra["reference_solution"]
        assert any(g is None or g.split() != t["output"].split() for g, t in zip(got, q.answer["tests"])), (q.id, w)
    assert not grade("code", f"```python\n{wrong[0]}```", qs[0].answer).correct


async def test_verifier_grades_the_latest_worker_answer_with_its_profile_accuracy(server):
    pool = practice_pool(server.base_url)
    cases = []
    for q in questions("math")[:10] + questions("mc")[:10]:
        good = f"\\boxed{{{q.answer}}}" if q.kind == "math" else f"Answer: {q.answer}"
        wrong_letter = "A" if q.answer != "A" else "B"
        bad = "\\boxed{-12345}" if q.kind == "math" else f"Answer: {wrong_letter}"
        for truth, ans in ((True, good), (False, bad)):
            # an older wrong Worker answer first: the server must look at the LATEST one
            transcript = (
                f"[Turn 1 | Worker | simulated/coder]\n{bad}\n\n"
                f"[Turn 2 | Thinker | simulated/scholar]\nCheck the arithmetic.\n\n"
                f"[Turn 3 | Worker | simulated/mathlete]\nSo: {ans}"
            )
            for m in pool.models:
                cases.append((q, truth, m, transcript))
    async with PoolClient(pool, run_id="v") as c:
        res = await asyncio.gather(*(c.chat(m, messages(q, "Verifier", t), purpose="eval") for q, _, m, t in cases))
    n_right = 0
    for (q, truth, m, _), r in zip(cases, res):
        assert r.ok and r.text.rstrip().splitlines()[-1] in ("VERDICT: ACCEPT", "VERDICT: REVISE")
        said_accept = parse_verdict(r.text) == "ACCEPT"
        expected_right = verifier_is_right(m, q.id, seed=0, turn=4)
        assert (said_accept == truth) == expected_right, (q.id, m, truth, r.text)
        n_right += said_accept == truth
    assert 0.6 < n_right / len(cases) < 1.0  # profiles say 0.80–0.90: some verdicts are wrong
    async with PoolClient(pool, run_id="v") as c:  # nothing to verify yet
        r = await c.chat(pool.models[0], messages(ALL[0], "Verifier"), purpose="eval")
    assert parse_verdict(r.text) == "REVISE"


async def test_thinker_gives_a_plan_without_an_answer_and_boosts_the_next_worker(server):
    pool = practice_pool(server.base_url)
    qs = questions("math") + questions("mc")
    async with PoolClient(pool, run_id="t") as c:
        plans = await asyncio.gather(*(c.chat(pool.models[0], messages(q, "Thinker"), purpose="train") for q in qs))
        for q, p in zip(qs, plans):
            assert "simulated" in p.text and "Plan:" in p.text
            found = extract_math_answer(p.text) if q.kind == "math" else extract_choice(p.text)
            assert found is None, (q.id, p.text)
        transcripts = [f"[Turn 1 | Thinker | {pool.models[0]}]\n{p.text}" for p in plans]
        work = await asyncio.gather(
            *(c.chat(pool.models[1], messages(q, "Worker", t), purpose="train") for q, t in zip(qs, transcripts))
        )
    for q, w in zip(qs, work):
        boosted = simulate_correct(pool.models[1], q.id, q.kind, "Worker", seed=0, boosted=True)
        assert grade(q.kind, w.text, q.answer).correct == boosted, q.id


async def test_models_endpoint_unknown_model_and_non_practice_queries(server):
    async with httpx.AsyncClient() as h:
        r = await h.get(server.base_url + "/models")
        ids = [m["id"] for m in r.json()["data"]]
        assert ids == ["simulated/mathlete", "simulated/scholar", "simulated/coder"]
        r = await h.post(server.base_url + "/chat/completions", json={"model": "gpt-4o", "messages": messages(ALL[0])})
        assert r.status_code == 400 and "unknown model 'gpt-4o'" in r.json()["error"]["message"]
        r = await h.post(server.base_url + "/chat/completions", content=b"{not json")
        assert r.status_code == 400
        r = await h.get(server.base_url.replace("/v1", "/nope"))
        assert r.status_code == 404
    pool = practice_pool(server.base_url)
    async with PoolClient(pool, run_id="x") as c:
        with pytest.raises(ProviderError, match="not a question the simulated pool knows"):
            await c.chat(pool.models[0], [{"role": "user", "content": "QUERY:\nWhat is 2+2?"}], purpose="eval")


def test_serve_practice_runs_as_a_separate_process():
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trinity",
            "pool",
            "serve-practice",
            "--port",
            "0",
            "--latency-ms",
            "0",
            "--fault-429",
            "1.0",
            "--retry-after",
            "3",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        base = proc.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", base), base
        r = httpx.post(base + "/chat/completions", json={"model": "simulated/coder", "messages": messages(ALL[0])})
        assert r.status_code == 429 and r.headers["retry-after"] == "3"
        stats = httpx.get(base + "/stats").json()
        assert stats["simulated"] is True and stats["by_status"] == {"429": 1}
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "SIMULATED" in err
    env = {**os.environ, "PRACTICE_PROC_KEY": "sk-proc-test"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trinity",
            "pool",
            "serve-practice",
            "--port",
            "0",
            "--require-key-env",
            "PRACTICE_PROC_KEY",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        base = proc.stdout.readline().strip()
        body = {"model": "simulated/coder", "messages": messages(ALL[0])}
        assert httpx.post(base + "/chat/completions", json=body).status_code == 401
        ok = httpx.post(base + "/chat/completions", json=body, headers={"Authorization": "Bearer sk-proc-test"})
        assert ok.status_code == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    rc, _, err = trinity_main(["pool", "serve-practice", "--fault-500", "2"])
    assert rc == 2 and "rate must be in [0, 1]" in err
    assert json.loads(json.dumps(stats))  # plain JSON


def _raw(port: int, data: bytes) -> bytes:
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
        except (TimeoutError, ConnectionResetError):
            pass
    return b"".join(chunks)


def test_garbage_and_pipelined_requests_over_a_raw_socket(server):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=25, deadline=None)
    @given(st.binary(max_size=300))
    def garbage_never_kills_the_server(data):
        reply = _raw(server.port, data)
        assert reply == b"" or reply.startswith(b"HTTP/1.1 ")

    garbage_never_kills_the_server()
    # two pipelined requests on one connection come back complete and in order
    body = json.dumps({"model": "simulated/scholar", "messages": messages(ALL[20])}).encode()
    req = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    models = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    reply = _raw(server.port, req + models)
    first, rest = reply.split(b"\r\n\r\n", 1)
    assert first.startswith(b"HTTP/1.1 200 OK")
    length = int(re.search(rb"Content-Length: (\d+)", first).group(1))
    assert json.loads(rest[:length])["choices"][0]["message"]["content"].endswith(tuple(f"Answer: {c}" for c in "ABCD"))
    assert rest[length:].startswith(b"HTTP/1.1 200 OK") and b"simulated/coder" in rest[length:]
    r = httpx.post(
        server.base_url + "/chat/completions", json={"model": "simulated/coder", "messages": messages(ALL[0])}
    )
    assert r.status_code == 200  # still serving


@pytest.mark.parametrize("port", ["-5", "99999", "http"])
def test_serve_practice_rejects_a_bad_port_without_a_traceback(port, capsys):
    from trinity.cli import main

    with pytest.raises(SystemExit) as e:
        main(["pool", "serve-practice", "--port", port])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --port:" in err and "Traceback" not in err


def test_the_practice_pool_takes_its_models_and_prices_from_the_simulator(server):
    """`models_from: practice`: the ids (in pool order) and prices of the practice setup, read
    through the source the simulator registers with the pool."""
    from trinity.practice.simulation import practice_models

    pool = practice_pool(server.base_url)
    profiles = practice_models()
    assert pool.models == tuple(profiles) and pool.simulated
    assert {m: (p.input_per_1m, p.output_per_1m) for m, p in pool.prices.items()} == {
        m: (p.price_in, p.price_out) for m, p in profiles.items()
    }


def test_a_models_from_source_nobody_registered_is_a_one_line_error(tmp_path):
    from trinity.errors import ConfigError
    from trinity.pool.providers import load_pool

    f = tmp_path / "models.yaml"
    f.write_text("providers:\n  elsewhere:\n    base_url: http://127.0.0.1:1\n    models_from: nowhere\n")
    with pytest.raises(ConfigError) as e:
        load_pool("elsewhere", f)
    assert "models_from" in str(e.value) and "'nowhere'" in str(e.value) and "\n" not in str(e.value)
