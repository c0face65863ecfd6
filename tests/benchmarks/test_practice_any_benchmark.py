"""The simulated practice pool answers any benchmark's questions (issue 17): `trinity collect
--pool practice --benchmark X` over real loopback HTTP to the in-process practice server, for
HumanEval (shipped with the package) and every fixture-file benchmark. Right or wrong comes from
`simulate_correct` (the per-model, per-kind skill of configs/practice.yaml), and the answer is in
the benchmark's own form: a right one grades right with our grader, a wrong one wrong."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from trinity.benchmarks import get_benchmark
from trinity.cli import main
from trinity.data.kinds import KINDS
from trinity.data.matrix import load_matrix
from trinity.grading import grade_question
from trinity.io import read_jsonl
from trinity.practice.simulation import practice_setup, simulate_correct

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"


def _collect(tmp_path, bench, *extra):
    out = tmp_path / f"{bench}.json"
    code = main(
        [
            "collect",
            "--pool",
            "practice",
            "--benchmark",
            bench,
            "--out",
            str(out),
            "--cache",
            str(tmp_path / "c.db"),
            *extra,
        ]
    )
    return code, out


def _check(out, bench_name, data=None):
    answers = read_jsonl(out.with_name(out.stem + ".answers.jsonl"))
    qs = {q.id: q for q in get_benchmark(bench_name).load(data)}
    for a in answers:
        q = qs[a["qid"]]
        assert "simulated" in a["text"]  # still labelled simulated
        assert a["correct"] == simulate_correct(a["model"], q.id, q.kind, "Worker", seed=a["sample"])
        assert grade_question(q, a["text"]).correct == a["correct"]  # graded again, independently
    m = load_matrix(out)
    want = np.array(
        [
            [[float(simulate_correct(mod, i, qs[i].kind, "Worker", seed=s)) for s in range(m.k)] for mod in m.models]
            for i in m.ids
        ]
    )
    assert np.array_equal(m.solves, want)
    return answers


def test_practice_setup_has_a_skill_for_every_kind():
    for prof in practice_setup().models.values():
        assert set(KINDS) <= set(prof.skill), prof.id


def test_collect_humaneval_from_the_simulated_pool(tmp_path, capsys):
    code, out = _collect(tmp_path, "humaneval", "--split", "all", "--n", "5", "--k", "1")
    text = capsys.readouterr().out
    assert code == 0, text
    assert "5/5 questions complete" in text and "SIMULATED practice pool" in text
    answers = _check(out, "humaneval")
    assert len(answers) == 15 and {a["correct"] for a in answers} == {True, False}


@pytest.mark.parametrize(
    "bench, data",
    [
        ("gpqa", "gpqa_diamond.jsonl"),
        ("aime", "aime_2024.jsonl"),
        ("mmlu_pro", "mmlu_pro_test.jsonl"),
        ("bbh", "bbh"),
        ("ifeval", "ifeval_train.jsonl"),
        ("bfcl_simple", "bfcl"),
    ],
)
def test_collect_a_fixture_benchmark_from_the_simulated_pool(tmp_path, capsys, bench, data):
    code, out = _collect(tmp_path, bench, "--data", str(FIX / data), "--split", "all", "--k", "2")
    assert code == 0, capsys.readouterr().out
    answers = _check(out, bench, str(FIX / data))
    assert {a["correct"] for a in answers} == {True, False}  # both right and wrong answers, each graded so


def test_ifeval_checks_are_right_under_concurrency():
    # a fresh interpreter: langdetect's first concurrent uses used to see half-loaded profiles
    code = f"""
from concurrent.futures import ThreadPoolExecutor
from trinity.benchmarks import get_benchmark
from trinity.grading import grade_question
q = get_benchmark("ifeval").load({str(FIX / "ifeval_train.jsonl")!r})[1]
t = "(x simulated) this simulated reply keeps to the instructions " + "simulated " * 30 + "\\n*a*\\n*b*"
with ThreadPoolExecutor(4) as ex:
    print(sum(v.correct for v in ex.map(lambda _: grade_question(q, t), range(12))))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "12", r.stdout + r.stderr


def test_serve_practice_answers_a_benchmark_it_was_started_with(tmp_path, capsys):
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trinity",
            "pool",
            "serve-practice",
            "--port",
            "0",
            "--benchmark",
            "bfcl_simple",
            "--data",
            str(FIX / "bfcl"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    try:
        base = proc.stdout.readline().strip()
        code, out = _collect(
            tmp_path, "bfcl_simple", "--base-url", base, "--data", str(FIX / "bfcl"), "--split", "all", "--k", "1"
        )
        assert code == 0, capsys.readouterr().out
        _check(out, "bfcl_simple", str(FIX / "bfcl"))
        # a benchmark it was not started with: a clear 400, the collect says so and exits non-zero
        code, _ = _collect(
            tmp_path,
            "gpqa",
            "--base-url",
            base,
            "--data",
            str(FIX / "gpqa_diamond.jsonl"),
            "--split",
            "all",
            "--n",
            "1",
            "--k",
            "1",
        )
        assert code != 0 and "not a question the simulated pool knows" in capsys.readouterr().err
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
