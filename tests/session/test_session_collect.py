"""`trinity collect` over real loopback HTTP against the practice server (no mocks): the matrix it
writes is `practice_matrix(k)`, a re-run asks for nothing it has, a crash's torn answer line
does not cost the lines after it, and a failing pool says why."""

import json

import numpy as np
import pytest

from trinity.cli import main
from trinity.data.matrix import load_matrix
from trinity.practice.server import start_practice_server
from trinity.practice.simulation import practice_matrix


@pytest.fixture
def server():
    h = start_practice_server(port=0)
    yield h
    h.stop()


def _collect(server, out, *extra):
    return main(
        [
            "collect",
            "--benchmark",
            "practice",
            "--pool",
            "practice",
            "--base-url",
            server.base_url,
            "--split",
            "val",
            "--n",
            "4",
            "--k",
            "2",
            "--out",
            str(out),
            "--cache",
            str(out.parent / "c.db"),
            *extra,
        ]
    )


def test_collect_reproduces_the_practice_matrix_and_resumes(server, tmp_path, capsys):
    out = tmp_path / "m.json"
    assert _collect(server, out) == 0
    m = load_matrix(out)
    assert len(m.ids) == 4 and m.k == 2
    assert np.array_equal(m.solves, practice_matrix(2, 0).subset(m.ids).solves)
    answers = tmp_path / "m.answers.jsonl"
    assert len(answers.read_text().splitlines()) == 4 * 3 * 2
    calls = server.stats.completions

    # A crash mid-write leaves a torn last line: the re-run cuts it, takes that answer back from
    # the call journal (no new paid call) and every line of the file parses again.
    data = answers.read_bytes()
    answers.write_bytes(data[:-30])
    capsys.readouterr()
    assert _collect(server, out) == 0
    assert "0 new paid calls" in capsys.readouterr().out
    assert server.stats.completions == calls
    rows = [json.loads(line) for line in answers.read_text().splitlines()]
    assert len(rows) == 4 * 3 * 2
    assert np.array_equal(load_matrix(out).solves, m.solves)


def test_collect_against_a_dead_pool_says_why_and_writes_no_matrix(tmp_path, capsys):
    out = tmp_path / "m.json"
    code = main(
        [
            "collect",
            "--benchmark",
            "practice",
            "--pool",
            "practice",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--n",
            "1",
            "--k",
            "1",
            "--out",
            str(out),
            "--cache",
            str(tmp_path / "c.db"),
        ]
    )
    text = capsys.readouterr().out
    assert code == 3
    assert "no matrix written" in text and not out.exists()
    assert "last failure: simulated/" in text and "ConnectError" in text


def test_collect_from_a_pool_without_a_model_list_takes_models(server, tmp_path, capsys):
    # the `local` pool (a vLLM / llama.cpp server) lists no models: --models names them, in order
    out = tmp_path / "m.json"
    assert (
        main(
            [
                "collect",
                "--benchmark",
                "practice",
                "--pool",
                "local",
                "--base-url",
                server.base_url,
                "--models",
                "simulated/coder,simulated/scholar",
                "--n",
                "2",
                "--k",
                "1",
                "--out",
                str(out),
                "--cache",
                str(tmp_path / "c.db"),
            ]
        )
        == 0
    )
    assert load_matrix(out).models == ["simulated/coder", "simulated/scholar"]


def test_collect_per_group_asks_only_n_questions_of_each_group(server, tmp_path, capsys):
    from trinity.benchmarks.practice import practice_questions
    from trinity.data.questions import pick_per_group
    from trinity.session.collect import select_questions

    out = tmp_path / "m.json"
    argv = ["collect", "--benchmark", "practice", "--pool", "practice", "--base-url", server.base_url]
    argv += ["--split", "train", "--k", "1", "--out", str(out), "--cache", str(tmp_path / "c.db")]
    assert main([*argv, "--per-group", "2", "--seed", "3"]) == 0
    want = pick_per_group(select_questions(practice_questions(), "train", None, 3), 2, 3)
    m = load_matrix(out)
    assert m.ids == [q.id for q in want] and len(m.ids) == 6  # 2 of each of the 3 topics
    assert server.stats.completions == 6 * 3  # one answer per model and question: nothing else asked
    assert np.array_equal(m.solves, practice_matrix(1, 0).subset(m.ids).solves)
    capsys.readouterr()
    assert main([*argv, "--per-group", "0"]) != 0
    err = capsys.readouterr().err
    assert "--per-group must be at least 1" in err and "Traceback" not in err
