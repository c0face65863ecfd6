"""The free-form kinds (BBH, IFEval, BFCL): only a Worker turn is the answer, never a plan."""

from __future__ import annotations

from trinity.benchmarks import get_benchmark
from trinity.data.questions import Question
from trinity.session.loop import SessionRunner, extract_answer
from trinity.session.transcript import Trajectory, Turn

Q = Question(
    "ifeval-1",
    "ifeval",
    "Write without commas.",
    {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}], "prompt": "p"},
    "ifeval",
)


def _traj(*turns):
    return Trajectory(candidate=0, qid=Q.id, turns=[Turn("m", role, [1.0], [1.0], output=o) for role, o in turns])


def test_worker_turn_is_the_answer_not_the_thinkers_plan():
    t = _traj(("Worker", "a reply with no commas"), ("Thinker", "Plan: keep it short, avoid commas."))
    assert SessionRunner._pick_answer(Q, t)
    assert t.answer_text == "a reply with no commas"
    only_plan = _traj(("Thinker", "Plan: keep it short, avoid commas."))
    assert not SessionRunner._pick_answer(Q, only_plan)


def test_extract_answer_for_the_new_kinds():
    assert extract_answer("exact", "work\nAnswer: (C)") == "(C)"
    assert extract_answer("funcall", "f(a=1)") == '[{"name": "f", "arguments": {"a": 1}}]'
    assert extract_answer("funcall", "no call") is None
    assert extract_answer("ifeval", "  ") is None
    b = get_benchmark("ifeval")
    assert b.grade(Q, "a reply with no commas").correct
