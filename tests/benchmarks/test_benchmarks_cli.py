"""`trinity benchmarks list|export|show` on the fixture files."""

from __future__ import annotations

from pathlib import Path

from trinity.cli import main
from trinity.data.questions import load_questions, split_ids

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"


def test_list(capsys):
    assert main(["benchmarks", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("math500", "mmlu", "livecodebench", "practice", "HuggingFaceH4/MATH-500", "cais/mmlu"):
        assert name in out


def test_export_roundtrips_through_load_questions(tmp_path, capsys):
    out = tmp_path / "q.jsonl"
    assert (
        main(
            ["benchmarks", "export", "mmlu", "--data", str(FIX / "mmlu_test.jsonl"), "--out", str(out), "--limit", "3"]
        )
        == 0
    )
    qs = load_questions(out)
    assert [q.id for q in qs] == ["mmlu-0", "mmlu-1", "mmlu-2"]
    assert [q.kind for q in qs] == ["mc"] * 3 and qs[1].answer == "C"
    assert qs[0].extra["choices"][1] == "newton"
    assert "wrote 3 mmlu questions" in capsys.readouterr().err


def test_export_one_split_is_the_seeded_split(tmp_path):
    all_out, val_out = tmp_path / "all.jsonl", tmp_path / "val.jsonl"
    data = str(FIX / "math500_test.jsonl")
    assert main(["benchmarks", "export", "math500", "--data", data, "--out", str(all_out)]) == 0
    assert (
        main(
            ["benchmarks", "export", "math500", "--data", data, "--out", str(val_out), "--split", "val", "--seed", "7"]
        )
        == 0
    )
    want = split_ids(load_questions(all_out), 7)["val"]
    assert sorted(q.id for q in load_questions(val_out)) == sorted(want)


def test_export_livecodebench_test_split_is_disjoint_from_train(tmp_path):
    tr, te = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    base = [
        "benchmarks",
        "export",
        "livecodebench",
        "--data",
        str(FIX / "livecodebench"),
        "--train-release",
        "release_v1",
    ]
    assert main([*base, "--split", "train", "--out", str(tr)]) == 0
    assert main([*base, "--split", "test", "--out", str(te)]) == 0
    train_ids = {q.id for q in load_questions(tr)}
    test = load_questions(te)
    assert [q.id for q in test] == ["livecodebench-1999A"]
    assert not train_ids & {q.id for q in test}
    assert test[0].answer["tests"][1] == {"input": "hello world\n", "output": "world hello\n", "testtype": "stdin"}


def test_show_and_errors(capsys):
    assert main(["benchmarks", "show", "mmlu", "--data", str(FIX / "mmlu_test.jsonl"), "--index", "2"]) == 0
    out = capsys.readouterr().out
    assert "id: mmlu-2" in out and "gold: D" in out and "D) Mitochondrion" in out
    assert main(["benchmarks", "show", "mmlu", "--data", str(FIX / "mmlu_test.jsonl"), "--index", "99"]) == 2
    assert "error: --index must be in 0..4" in capsys.readouterr().err
    assert main(["benchmarks", "export", "nope", "--out", "/dev/null"]) == 2
    assert "error: unknown benchmark 'nope'" in capsys.readouterr().err
