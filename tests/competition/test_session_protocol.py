"""The session protocol against golden strings made by running each competition's own session
code (tests/fixtures/protocol/make_golden.py, run with their `src/` on the path): the messages of
every turn, the decoding kwargs, the stop rule, the final answer, truncation and verdicts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from trinity.benchmarks.prompts import turn_messages
from trinity.competition.protocol import (
    MINIROUTER_PROTOCOL,
    OPEN_PROTOCOL,
    TINYROUTER_PROTOCOL,
    TurnView,
    get_protocol,
    run_protocol,
)
from trinity.data.questions import Question
from trinity.errors import ConfigError

FIX = Path(__file__).parents[1] / "fixtures" / "protocol"
PROTOCOLS = {"tinyrouter": TINYROUTER_PROTOCOL, "minirouter": MINIROUTER_PROTOCOL}
ROLE = {"Thinker": "Thinker", "Worker": "Worker", "Verifier": "Verifier"}
# pool ids whose competition names the golden sessions used
IDS = {
    "tinyrouter": ["qwen/qwen3.5-35b-a3b", "google/gemini-3.1-flash-lite", "deepseek/deepseek-v4-flash"],
    "minirouter": ["deepseek-ai/DeepSeek-V3.2-TEE", "zai-org/GLM-5-TEE", "moonshotai/Kimi-K2.5-TEE"],
}


# The long inputs of make_golden.py, rebuilt here (the fixture holds only their sha256).
_LONG = [
    "x" * 30 + "\n" + "".join(chr(97 + i % 26) for i in range(20000)) + "\nFinal: 7",
    "a" * 7999,
    "b" * 8000,
    "c" * 8001,
    "".join(chr(65 + i % 26) for i in range(20000)),
    "  " + "d" * 8001 + "\n\n",
    "e\r\n" * 3000,
    "é😀" * 4500,
]
_BY_SHA = {hashlib.sha256(t.encode()).hexdigest(): t for t in _LONG}


def _full(x):
    if isinstance(x, dict) and "sha256" in x:
        return _BY_SHA[x["sha256"]]
    if isinstance(x, list):
        return [_full(v) for v in x]
    return x


def golden(name: str) -> dict:
    g = json.loads((FIX / f"{name}_golden.json").read_text(encoding="utf-8"))
    for sess in g["sessions"]:
        sess["outputs"] = _full(sess["outputs"])
    g["truncation"]["inputs"] = {k: _full(v) for k, v in g["truncation"]["inputs"].items()}
    return g


def same(ours: str, theirs) -> bool:
    """Golden strings over 600 characters are stored as their sha256 and length."""
    if isinstance(theirs, dict):
        return hashlib.sha256(ours.encode()).hexdigest() == theirs["sha256"] and len(ours) == theirs["len"]
    return ours == theirs


def q(query: str) -> Question:
    return Question(id="t", benchmark="math500", kind="math", question=query, answer="3")


def replay(proto, comp: str, sess: dict):
    """Run the golden session's choices through our protocol; yields (call index, messages,
    kwargs) and returns the turns."""
    turns: list[TurnView] = []
    sent = []
    question = q(sess["query"])
    for k, ((agent, role), raw) in enumerate(zip(sess["plan"], sess["outputs"])):
        if k >= sess["n_turns"]:
            break
        sent.append((turn_messages(proto, role, question, turns), proto.decoding_kwargs(role)))
        verdict = proto.parse_verdict(raw) if role == "Verifier" else None
        turns.append(TurnView(IDS[comp][agent], role, proto.output_text(raw), verdict))
        if proto.stops(turns):
            break
    return sent, turns


@pytest.mark.parametrize("comp", ["tinyrouter", "minirouter"])
def test_messages_kwargs_stop_and_final_answer_match_their_sessions(comp):
    g = golden(comp)
    proto = PROTOCOLS[comp]
    n_msgs = 0
    for sess in g["sessions"]:
        sent, turns = replay(proto, comp, sess)
        assert len(turns) == sess["n_turns"] == len(sess["calls"]), sess["plan"]
        for (messages, kwargs), call, (agent, _role) in zip(sent, sess["calls"], sess["plan"]):
            assert call["model"] == proto.text.model_name(IDS[comp][agent]) == g["names"][agent]
            assert [m["role"] for m in messages] == [m["role"] for m in call["messages"]]
            for ours, theirs in zip(messages, call["messages"]):
                assert same(ours["content"], theirs["content"]), (sess["kind"], ours["content"][:200])
            n_msgs += 1
            want = call["kwargs"]
            assert kwargs["temperature"] == want["temperature"] and type(kwargs["temperature"]) is float
            assert kwargs["top_p"] == want["top_p"] and kwargs["max_tokens"] == want["max_tokens"]
            assert proto.reasoning == want["reasoning"]
        assert [t.verdict for t in turns] == sess["verdicts"]
        assert same(proto.final_answer(turns), sess["final_answer"])
    assert n_msgs >= 27  # 3 roles × turns 1-3 × math / MMLU / code, and the edge sessions


@pytest.mark.parametrize("comp", ["tinyrouter", "minirouter"])
def test_truncation_matches_theirs(comp):
    g = golden(comp)["truncation"]
    for key, raw in g["inputs"].items():
        assert same(PROTOCOLS[comp].output_text(raw), g["outputs"][key]), key
    assert len(PROTOCOLS[comp].output_text("x" * 20000)) == 8000
    assert PROTOCOLS[comp].output_text("y" * 8000) == "y" * 8000


@pytest.mark.parametrize("comp", ["tinyrouter", "minirouter"])
def test_verdicts_match_theirs(comp):
    cases = golden(comp)["verdicts"]
    assert len(cases) >= 12
    for text, want in cases:
        assert PROTOCOLS[comp].parse_verdict(text) == want, text


def test_the_two_competitions_parse_verdicts_differently():
    tr, mr = TINYROUTER_PROTOCOL.parse_verdict, MINIROUTER_PROTOCOL.parse_verdict
    assert tr("VERDICT: **ACCEPT**") == "ACCEPT" and mr("VERDICT: **ACCEPT**") is None
    assert tr("**VERDICT:** ACCEPT") == "ACCEPT" and mr("**VERDICT:** ACCEPT") is None
    assert OPEN_PROTOCOL.parse_verdict("Verdict - accept") == "ACCEPT" and mr("Verdict - accept") is None


def test_stop_rule_needs_an_earlier_worker_turn_even_an_empty_one():
    acc = TurnView("m", "Verifier", "VERDICT: ACCEPT", "ACCEPT")
    assert not TINYROUTER_PROTOCOL.stops([acc])
    empty_worker = TurnView("m", "Worker", "")
    assert TINYROUTER_PROTOCOL.stops([empty_worker, acc])
    assert not OPEN_PROTOCOL.stops([empty_worker, acc])  # ours wants a non-empty Worker output


def test_final_and_committed_answer():
    turns = [TurnView("m", "Worker", "answer 3"), TurnView("m", "Thinker", "plan"), TurnView("m", "Verifier", "ok")]
    assert TINYROUTER_PROTOCOL.final_answer(turns) == "answer 3"
    assert TINYROUTER_PROTOCOL.final_answer([TurnView("m", "Verifier", "v")]) == "v"
    has = lambda s: any(c.isdigit() for c in s)
    turns2 = [TurnView("m", "Worker", "x = 4"), TurnView("m", "Thinker", "so 5"), TurnView("m", "Worker", "done")]
    assert TINYROUTER_PROTOCOL.committed_answer(turns2, has) == "x = 4"


def test_wire_kwargs_per_competition():
    kw = TINYROUTER_PROTOCOL.decoding_kwargs("Thinker")
    assert list(kw)[:4] == ["temperature", "top_p", "max_tokens", "reasoning_effort"]
    assert kw["reasoning_effort"] == "minimal" and kw["reasoning_style"] == "reasoning_effort"
    mk = MINIROUTER_PROTOCOL.decoding_kwargs("Verifier")
    assert mk["reasoning_effort"] == "low" and "reasoning_style" not in mk  # the pool's own style
    assert "reasoning_effort" not in TINYROUTER_PROTOCOL.cached_kwargs()
    assert OPEN_PROTOCOL.decoding_kwargs("Worker") == {}


def test_protocol_names_and_old_runs():
    assert get_protocol("trinity") is OPEN_PROTOCOL and get_protocol(None) is OPEN_PROTOCOL
    assert run_protocol({"config": {"competition": "tinyrouter"}}) is OPEN_PROTOCOL  # made before protocols
    assert run_protocol({"protocol": "minirouter"}) is MINIROUTER_PROTOCOL
    with pytest.raises(ConfigError, match="unknown session protocol 'nope'"):
        get_protocol("nope")


def test_new_runs_pick_their_protocol_and_objective():
    from trinity.config import load_config
    from trinity.optim.engine import run_protocol_of

    live = {"questions": "practice", "mode": "live", "pool": "practice"}
    assert run_protocol_of(load_config(None, live), False) == ("open", "reward")
    assert run_protocol_of(load_config(None, {**live, "pool": "openrouter"}), False) == ("tinyrouter", "competition")
    cfg = load_config(None, {**live, "competition": "tinyrouter"})
    assert run_protocol_of(cfg, True) == ("tinyrouter", "competition")
    cfg = load_config(None, {**live, "competition": "minirouter", "protocol": "open"})
    assert run_protocol_of(cfg, True) == ("open", "reward")
    cached = load_config(None, {"questions": "practice", "matrix": "practice", "competition": "tinyrouter"})
    assert run_protocol_of(cached, True) == ("tinyrouter", "reward")
    bad = load_config(None, {"questions": "practice", "matrix": "practice", "objective": "competition"})
    with pytest.raises(ConfigError, match="--objective competition scores live sessions"):
        run_protocol_of(bad, False)


@pytest.mark.parametrize("proto", [TINYROUTER_PROTOCOL, MINIROUTER_PROTOCOL, OPEN_PROTOCOL])
def test_the_practice_server_reads_either_protocol(proto):
    from trinity.benchmarks.practice import practice_questions
    from trinity.practice.replies import PracticeResponder

    r = PracticeResponder()
    mc = next(q for q in practice_questions() if q.kind == "mc")
    turns = [
        TurnView("simulated/coder", "Thinker", "a plan"),
        TurnView("simulated/scholar", "Worker", "The answer is B."),
        TurnView("simulated/mathlete", "Verifier", "no\nVERDICT: REVISE", "REVISE"),
    ]
    for role in ("Thinker", "Worker", "Verifier"):
        q, got_role, got_turns = r.parse(turn_messages(proto, role, mc, turns))
        assert q.id == mc.id and got_role == role
        assert [(t[0], t[2]) for t in got_turns] == [(t.role, t.output) for t in turns]
