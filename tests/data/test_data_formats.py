import json
import os

import numpy as np
import pytest

from trinity.benchmarks.practice import practice_questions
from trinity.data.matrix import load_matrix, matrix_from_json, merge_matrices, save_matrix
from trinity.data.questions import Question, load_questions, split_ids
from trinity.errors import InputError
from trinity.io import JsonlTail, append_jsonl, atomic_write_json, read_jsonl
from trinity.practice.simulation import practice_matrix, practice_setup, simulate_correct


def _matrix(tasks, k=2):
    return {"benchmark": "t", "k": k, "tasks": tasks}


def test_matrix_roundtrip_and_model_order(tmp_path):
    obj = _matrix(
        [
            {"id": "q1", "answer": "1", "per_model": {"b": [1, 0], "a": [0, 0]}},
            {"id": "q2", "answer": "2", "per_model": {"a": [1, 1], "b": [0, 1]}},
        ]
    )
    m = matrix_from_json(obj)
    assert m.models == ["b", "a"]  # order of the first task's keys
    assert m.solves.shape == (2, 2, 2)
    np.testing.assert_array_equal(m.accuracy(), [[0.5, 0.0], [0.5, 1.0]])
    save_matrix(tmp_path / "m.json", m)
    m2 = load_matrix(tmp_path / "m.json")
    np.testing.assert_array_equal(m2.solves, m.solves)
    assert m2.models == m.models and m2.ids == m.ids


@pytest.mark.parametrize(
    "tasks, needle",
    [
        ([], "no tasks"),
        ([{"id": "q1", "per_model": {"a": [1]}}, {"id": "q2", "per_model": {"b": [1]}}], "'a' is missing"),
        ([{"id": "q1", "per_model": {"a": [1, 2]}}], "0 or 1"),
        ([{"id": "q1", "per_model": {"a": [1, float("nan")]}}], "0 or 1"),
        ([{"id": "q1", "per_model": {"a": [1, 0]}}, {"id": "q1", "per_model": {"a": [1, 0]}}], "duplicate"),
        ([{"id": "q1", "per_model": {"a": [1, 0]}}, {"id": "q2", "per_model": {"a": [1]}}], "ragged"),
        ([{"id": "q1", "per_model": {"a": []}}], "no samples"),
    ],
)
def test_matrix_errors_name_the_problem(tasks, needle):
    with pytest.raises(InputError, match=needle):
        matrix_from_json(_matrix(tasks))


def test_ragged_truncation_is_reported():
    m = matrix_from_json(
        _matrix([{"id": "q1", "per_model": {"a": [1, 0, 1]}}, {"id": "q2", "per_model": {"a": [1, 1]}}]),
        ragged="truncate",
    )
    assert m.k == 2 and "truncated" in m.notes[0]


def test_merge_rejects_different_pools():
    a = matrix_from_json(_matrix([{"id": "q1", "per_model": {"a": [1, 0]}}]))
    b = matrix_from_json(_matrix([{"id": "q2", "per_model": {"b": [1, 0]}}]))
    with pytest.raises(InputError, match="pool"):
        merge_matrices([a, b])


def test_questions_load_errors(tmp_path):
    p = tmp_path / "q.jsonl"
    p.write_text('{"id": "a", "benchmark": "math500", "question": "1+1", "answer": "2"}\n{broken\n')
    with pytest.raises(InputError, match="line 2"):
        load_questions(p)
    p.write_text(
        '{"id": "a", "benchmark": "math500", "question": "x", "answer": "2"}\n'
        '{"id": "a", "benchmark": "math500", "question": "y", "answer": "3"}\n'
    )
    with pytest.raises(InputError, match="duplicate"):
        load_questions(p)
    p.write_text('{"id": "a", "benchmark": "math500", "answer": "2"}\n')
    with pytest.raises(InputError, match="missing field"):
        load_questions(p)


def test_splits_are_deterministic_stratified_and_order_free():
    qs = [Question(f"{k}-{i}", "b", "q", "a", kind) for kind, k in (("math", "m"), ("mc", "c")) for i in range(20)]
    s1 = split_ids(qs, seed=3)
    s2 = split_ids(list(reversed(qs)), seed=3)
    assert s1 == s2
    assert sorted(s1["train"] + s1["val"] + s1["test"]) == sorted(q.id for q in qs)
    assert sum(i.startswith("m-") for i in s1["test"]) == 4  # 20 % of each kind
    assert split_ids(qs, seed=4) != s1


def test_practice_setup_is_simulated_and_deterministic():
    qs = practice_questions()
    assert len(qs) == 60 and {q.kind for q in qs} == {"math", "mc", "code"}
    setup = practice_setup()
    assert all("simulated" in m for m in setup.models)
    m1, m2 = practice_matrix(), practice_matrix()
    np.testing.assert_array_equal(m1.solves, m2.solves)
    assert "SIMULATED" in m1.notes[0]
    acc = m1.accuracy()
    kinds = np.array([q.kind for q in qs])
    # each simulated model is the best one on its own kind: routing has real headroom
    for j, kind in enumerate(["math", "mc", "code"]):
        assert acc[kinds == kind].mean(0).argmax() == j
    q = qs[0]
    assert simulate_correct(m1.models[0], q.id, q.kind, seed=1) == bool(m1.solves[0, 0, 1])


def test_jsonl_tail_tolerates_torn_lines(tmp_path):
    p = tmp_path / "e.jsonl"
    append_jsonl(p, {"a": 1})
    with open(p, "ab") as f:
        f.write(b'{"a": 2')  # writer mid-append
    tail = JsonlTail(p)
    assert tail.read_new() == [{"a": 1}]
    assert read_jsonl(p) == [{"a": 1}]
    with open(p, "ab") as f:
        f.write(b"}\n")
    assert tail.read_new() == [{"a": 2}]
    assert tail.read_new() == []
    p.write_text('{"a": 9}\n')  # replaced by a shorter file
    assert tail.read_new() == [{"a": 9}] and tail.reset


def test_jsonl_tail_reads_a_line_longer_than_max_bytes(tmp_path):
    # It used to stop at such a line for ever: no newline in the chunk, so nothing advanced.
    p = tmp_path / "e.jsonl"
    append_jsonl(p, {"a": 1})
    append_jsonl(p, {"big": "x" * 5000})
    append_jsonl(p, {"a": 3})
    tail = JsonlTail(p)
    got = []
    for _ in range(10):
        got += tail.read_new(max_bytes=100)
    assert got == [{"a": 1}, {"big": "x" * 5000}, {"a": 3}] and not tail.pending
    with open(p, "ab") as f:
        f.write(b'{"torn": "' + b"y" * 500)  # a long line still being written stays unread
    assert tail.read_new(max_bytes=100) == [] and tail.pending


def test_read_jsonl_strict_names_bad_middle_line(tmp_path):
    p = tmp_path / "e.jsonl"
    p.write_text('{"a": 1}\nnot json\n{"a": 3}\n')
    with pytest.raises(InputError, match="line 2"):
        read_jsonl(p, strict=True)
    assert read_jsonl(p) == [{"a": 1}, {"a": 3}]


def test_atomic_write_leaves_no_temp_files(tmp_path):
    atomic_write_json(tmp_path / "x.json", {"a": 1})
    atomic_write_json(tmp_path / "x.json", {"a": 2})
    assert json.loads((tmp_path / "x.json").read_text()) == {"a": 2}
    assert os.listdir(tmp_path) == ["x.json"]
