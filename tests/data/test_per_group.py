"""`question_group` and `pick_per_group`: the groups a per-group collect draws from, drawn
deterministically (by the ids and the seed, not the file's order)."""

import pytest

from trinity.benchmarks.practice import practice_questions
from trinity.data.questions import Question, pick_per_group, question_group
from trinity.errors import InputError


def test_the_group_is_the_benchmark_and_kind():
    assert question_group(Question("a", "mmlu", "q?", "A", "mc")) == "mmlu/mc"
    assert {question_group(q) for q in practice_questions()} == {"practice/math", "practice/mc", "practice/code"}


def test_pick_per_group_takes_n_of_each_group_by_ids_and_seed():
    qs = practice_questions()
    got = pick_per_group(qs, 4, seed=0)
    assert len(got) == 12
    assert all(sum(question_group(q) == g for q in got) == 4 for g in {question_group(q) for q in qs})
    assert [q.id for q in got] == [q.id for q in qs if q.id in {p.id for p in got}]  # the input's order
    assert [q.id for q in pick_per_group(list(reversed(qs)), 4, seed=0)] == [q.id for q in reversed(got)]
    assert {q.id for q in pick_per_group(qs, 4, seed=0)} == {q.id for q in got}  # same seed, same draw
    assert {q.id for q in pick_per_group(qs, 4, seed=1)} != {q.id for q in got}
    small = pick_per_group(qs, 3, seed=0)
    assert len(small) == 9
    assert pick_per_group(qs, 100, seed=0) == qs  # a group smaller than n: all of it


def test_pick_per_group_refuses_less_than_one():
    with pytest.raises(InputError, match="at least 1"):
        pick_per_group(practice_questions(), 0, seed=0)
