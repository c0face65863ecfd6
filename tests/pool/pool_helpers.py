"""Shared fixtures of the pool tests: a real practice server on loopback, fast retry policies."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trinity.benchmarks.practice import practice_questions
from trinity.benchmarks.prompts import system_prompt, user_message
from trinity.pool.faults import RetryPolicy
from trinity.pool.providers import Price, Timeouts, load_pool
from trinity.practice.server import Faults, start_practice_server

FAST_RETRY = RetryPolicy(max_retries=3, backoff_base_s=0.01, backoff_max_s=0.05, max_retry_after_s=2.0)


@pytest.fixture
def server():
    srv = start_practice_server()
    yield srv
    srv.stop()


def practice_pool(base_url: str, **over):
    over.setdefault("retry", FAST_RETRY)
    over.setdefault("timeouts", Timeouts(connect_s=2, read_s=10, write_s=5))
    return load_pool("practice", base_url=base_url, **over)


def messages(q, role: str = "Worker", transcript: str = "") -> list[dict]:
    return [
        {"role": "system", "content": system_prompt(role, q)},
        {"role": "user", "content": user_message(q.question, transcript)},
    ]


def questions(kind: str | None = None):
    qs = practice_questions()
    return [q for q in qs if kind is None or q.kind == kind]


__all__ = ["server", "practice_pool", "messages", "questions", "FAST_RETRY", "Faults", "replace"]


# ---- the hostile stand-in's pool (tests/pool/hostile.py): two models at what it really charges ----
def hostile_prices() -> dict[str, Price]:
    from hostile import PRICE_IN, PRICE_OUT

    return {"m-a": Price(PRICE_IN, PRICE_OUT), "m-b": Price(PRICE_IN, PRICE_OUT)}


@pytest.fixture
def hostile():
    from hostile import HostileServer

    h = HostileServer()
    yield h
    h.stop()


def hostile_pool(h, **over):
    over.setdefault("retry", FAST_RETRY)
    over.setdefault("timeouts", Timeouts(connect_s=2, read_s=10, write_s=5))
    over.setdefault("prices", hostile_prices())
    return load_pool("local", base_url=h.base_url, models=["m-a", "m-b"], **over)


def question_messages(i=0):
    return [{"role": "user", "content": f"question {i}: what is 6 x 7?"}]
