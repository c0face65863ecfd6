"""Fixtures shared by the live-session tests."""

from __future__ import annotations

import json

import pytest

from trinity.benchmarks.practice import practice_questions


@pytest.fixture(scope="module")
def questions_file(tmp_path_factory):
    """The practice questions but code: math + multiple choice are graded in-process, so the
    live tests stay fast on 2 cores."""
    p = tmp_path_factory.mktemp("q") / "mathmc.jsonl"
    p.write_text("".join(json.dumps(q.to_json()) + "\n" for q in practice_questions() if q.kind != "code"))
    return p
