"""Benchmark adapters on local fixture files written in each dataset's real schema."""

from __future__ import annotations

import base64
import json
import os
import pickle
import zlib
from pathlib import Path

import pytest

from trinity.benchmarks import BENCHMARK_NAMES, get_benchmark
from trinity.benchmarks.livecodebench import decode_test_cases
from trinity.errors import InputError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"
LCB_DIR = FIX / "livecodebench"


def test_registry_names_and_unknown():
    assert BENCHMARK_NAMES == (
        "math500",
        "mmlu",
        "livecodebench",
        "practice",
        "gpqa",
        "aime",
        "mmlu_pro",
        "bbh",
        "ifeval",
        "bfcl_simple",
        "humaneval",
    )
    with pytest.raises(InputError, match="unknown benchmark 'gsm8k'"):
        get_benchmark("gsm8k")


# -- MATH-500 ------------------------------------------------------------------------------------


def test_math500_ids_golds_and_prompt():
    b = get_benchmark("math500")
    qs = b.load(data=str(FIX / "math500_test.jsonl"))
    assert [q.id for q in qs] == [f"math500-{i}" for i in range(6)]
    assert [q.answer for q in qs][:2] == ["23", "\\frac{2}{3}"]
    assert all(q.kind == "math" and q.benchmark == "math500" for q in qs)
    assert qs[2].extra == {"subject": "Algebra", "level": 3, "unique_id": "test/algebra/2001.json"}
    assert "solution" not in qs[0].extra  # the worked solution never reaches a prompt
    prompt = b.prompt(qs[0])
    assert prompt.startswith("What is the value of $2^5 - 3^2$?")
    assert "\\boxed{" in b.answer_instruction(qs[0])
    # the adapter grades with the real math grader, against its own gold
    assert b.grade(qs[1], "Dividing by 6 gives \\boxed{\\dfrac{2}{3}}.").correct
    assert b.grade(qs[4], "\\boxed{(3, \\pi/2)}").correct
    assert b.grade(qs[5], "\\boxed{10000}").correct
    assert not b.grade(qs[5], "\\boxed{10001}").correct


def test_math500_limit_and_bad_rows(tmp_path):
    b = get_benchmark("math500")
    assert len(b.load(data=str(FIX / "math500_test.jsonl"), limit=2)) == 2
    bad = tmp_path / "m.jsonl"
    bad.write_text(json.dumps({"problem": "1+1?", "solution": "2"}) + "\n")
    with pytest.raises(InputError, match=r"row 0 lacks answer"):
        b.load(data=str(bad))
    torn = tmp_path / "t.jsonl"
    torn.write_text(json.dumps({"problem": "1+1?", "answer": "2"}) + '\n{"problem": \n')
    with pytest.raises(InputError, match="line 2 is not valid JSON"):
        b.load(data=str(torn))
    with pytest.raises(InputError, match="not found"):
        b.load(data=str(tmp_path / "missing.jsonl"))


# -- MMLU ----------------------------------------------------------------------------------------


def test_mmlu_ids_golds_prompt_and_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    b = get_benchmark("mmlu")
    qs = b.load(data=str(FIX / "mmlu_test.jsonl"))
    assert [q.id for q in qs] == [f"mmlu-{i}" for i in range(5)]
    assert [q.answer for q in qs] == ["B", "C", "D", "A", "B"]
    assert qs[0].extra["choices"] == ["joule", "newton", "watt", "pascal"]
    assert qs[0].extra["subject"] == "high_school_physics"
    text = b.render_question(qs[0])
    assert "A) joule\nB) newton\nC) watt\nD) pascal" in text
    assert "high school physics" in text
    prompt = b.prompt(qs[0])
    assert prompt.rstrip().endswith("where X is one letter (A, B, C or D).")
    assert b.prompt(qs[0], role="Thinker") == text  # only the Worker is told how to answer
    assert b.grade(qs[0], "Force is measured in newtons.\nAnswer: B").correct
    assert not b.grade(qs[0], "Answer: A").correct

    rows = [json.loads(line) for line in (FIX / "mmlu_test.jsonl").read_text().splitlines()]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "test-00000-of-00001.parquet")
    from_parquet = b.load(data=str(tmp_path / "test-00000-of-00001.parquet"))
    assert [q.to_json() for q in from_parquet] == [q.to_json() for q in qs]
    (tmp_path / "rows.json").write_text(json.dumps(rows, indent=1))  # a JSON array works too
    assert [q.to_json() for q in b.load(data=str(tmp_path / "rows.json"))] == [q.to_json() for q in qs]


def test_mmlu_bad_answer_index(tmp_path):
    f = tmp_path / "m.jsonl"
    f.write_text(json.dumps({"question": "q", "subject": "s", "choices": ["a", "b", "c", "d"], "answer": 7}) + "\n")
    with pytest.raises(InputError, match="row 0 has answer 7"):
        get_benchmark("mmlu").load(data=str(f))


# -- LiveCodeBench -------------------------------------------------------------------------------


def test_livecodebench_folder_releases_and_temporal_split():
    b = get_benchmark("livecodebench")
    qs = b.load(data=str(LCB_DIR), train_release="release_v1")
    by_id = {q.id: q for q in qs}
    # abc899_a is in release_v2 but dated before the newest release_v1 problem: in neither split
    assert set(by_id) == {
        "livecodebench-abc900_a",
        "livecodebench-3901",
        "livecodebench-abc905_b",
        "livecodebench-1999A",
    }
    assert b.last_load_info == {"train": 3, "test": 1, "dropped": 1, "test_after": "2024-02-17"}
    q = by_id["livecodebench-abc900_a"]
    assert q.kind == "code" and q.extra["release"] == "release_v1" and q.extra["lcb_split"] == "train"
    # public test first, then the base64/zlib/pickle private tests, decoded
    assert q.answer == {
        "tests": [
            {"input": "1 2\n", "output": "3\n", "testtype": "stdin"},
            {"input": "10 20\n", "output": "30\n", "testtype": "stdin"},
            {"input": "-5 5\n", "output": "0\n", "testtype": "stdin"},
        ]
    }
    fn = by_id["livecodebench-3901"]
    assert fn.answer["fn_name"] == "maxEven" and fn.answer["tests"][0]["testtype"] == "functional"
    assert "def maxEven(self, nums: List[int]) -> int:" in b.render_question(fn)
    assert "standard input" in b.render_question(q)
    assert "```python" in b.answer_instruction(q)

    splits = b.split(qs, seed=3)
    assert splits["test"] == ["livecodebench-1999A"]
    assert not set(splits["test"]) & (set(splits["train"]) | set(splits["val"]))
    assert sorted(splits["train"] + splits["val"]) == sorted(i for i in by_id if by_id[i].extra["lcb_split"] == "train")
    assert b.split(qs, seed=3) == splits  # deterministic
    for tid in splits["test"]:  # test problems are newer than every training problem
        assert all(
            by_id[tid].extra["contest_date"] > by_id[t].extra["contest_date"] for t in splits["train"] + splits["val"]
        )


def test_livecodebench_explicit_dates_and_single_file(tmp_path):
    b = get_benchmark("livecodebench")
    qs = b.load(data=str(LCB_DIR), train_release="release_v1", test_after="2023-12-31")
    assert {q.id for q in qs if q.extra["lcb_split"] == "test"} == {"livecodebench-1999A", "livecodebench-abc899_a"}
    # a release_v1 problem dated after --test-after still stays in train (test ⊄ train)
    assert next(q for q in qs if q.id == "livecodebench-abc905_b").extra["lcb_split"] == "train"

    single = tmp_path / "lcb.jsonl"
    single.write_text((LCB_DIR / "test.jsonl").read_text() + (LCB_DIR / "test2.jsonl").read_text())
    with pytest.raises(InputError, match="--train-before"):
        b.load(data=str(single))
    qs = b.load(data=str(single), train_before="2024-01-01")
    roles = {q.id: q.extra["lcb_split"] for q in qs}
    assert roles == {
        "livecodebench-abc900_a": "train",
        "livecodebench-3901": "train",
        "livecodebench-abc905_b": "test",
        "livecodebench-1999A": "test",
        "livecodebench-abc899_a": "test",
    }
    # a named release needs its files
    with pytest.raises(InputError, match="missing test3.jsonl"):
        b.load(data=str(LCB_DIR), release="release_v3")
    with pytest.raises(InputError, match="unknown LiveCodeBench release"):
        b.load(data=str(LCB_DIR), release="release_v9")


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_private_tests_refuse_malicious_pickles():
    evil = base64.b64encode(zlib.compress(pickle.dumps(_Evil()))).decode()
    with pytest.raises(InputError, match="unsafe or corrupt pickle.*posix.system|unsafe or corrupt pickle"):
        decode_test_cases(evil, "row 0 private_test_cases")
    evil_obj = base64.b64encode(zlib.compress(pickle.dumps([_Evil()]))).decode()
    with pytest.raises(InputError, match="refusing to load"):
        decode_test_cases(evil_obj)
    with pytest.raises(InputError, match="neither JSON nor base64"):
        decode_test_cases("!!! not base64 !!!")
    with pytest.raises(InputError, match="neither JSON nor base64"):
        decode_test_cases(base64.b64encode(b"not zlib").decode())
    ok = base64.b64encode(
        zlib.compress(pickle.dumps(json.dumps([{"input": "1", "output": "2", "testtype": "stdin"}])))
    ).decode()
    assert decode_test_cases(ok) == [{"input": "1", "output": "2", "testtype": "stdin"}]
    assert decode_test_cases("") == []
    with pytest.raises(InputError, match="testtype"):
        decode_test_cases(json.dumps([{"input": "1", "output": "2", "testtype": "interactive"}]))


def test_livecodebench_bad_rows_name_the_row(tmp_path):
    d = tmp_path / "lcb"
    d.mkdir()
    rows = [json.loads(line) for line in (LCB_DIR / "test.jsonl").read_text().splitlines()]
    rows[1]["metadata"] = "{}"  # functional tests without func_name
    (d / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"row 1 \(3901\): functional tests but no func_name"):
        get_benchmark("livecodebench").load(data=str(d))
    rows[1] = dict(rows[0])  # duplicate question_id
    (d / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match="appears twice"):
        get_benchmark("livecodebench").load(data=str(d))


def test_livecodebench_without_split_tags_refuses_to_split():
    b = get_benchmark("livecodebench")
    qs = b.load(data=str(LCB_DIR), train_release=None)
    assert len(qs) == 5 and all("lcb_split" not in q.extra for q in qs)
    with pytest.raises(InputError, match="lack lcb_split"):
        b.split(qs, 0)


# -- practice ------------------------------------------------------------------------------------


def test_practice_wraps_the_shipped_questions():
    from trinity.benchmarks.practice import practice_questions

    b = get_benchmark("practice")
    qs = b.load()
    assert [q.id for q in qs] == [q.id for q in practice_questions()]
    kinds = {q.kind for q in qs}
    assert kinds == {"math", "mc", "code"}
    mc = next(q for q in qs if q.kind == "mc")
    assert b.render_question(mc) == mc.question  # options are already in the text
    assert "Answer: X" in b.answer_instruction(mc)
    with pytest.raises(ValueError, match="mixes kinds"):
        b.answer_instruction()
    assert b.grade(mc, f"The answer is {mc.answer}.").correct
    math_q = next(q for q in qs if q.kind == "math")
    assert b.grade(math_q, f"\\boxed{{{math_q.answer}}}").correct
    splits = b.split(qs, 0)
    assert sorted(splits["train"] + splits["val"] + splits["test"]) == sorted(q.id for q in qs)


# -- offline behaviour ---------------------------------------------------------------------------


def _run_cli(args, env_extra, tmp_path):
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update({"HF_HOME": str(tmp_path / "hf"), **env_extra})
    return subprocess.run(
        [sys.executable, "-m", "trinity", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=str(tmp_path),
    )


@pytest.mark.parametrize(
    "env",
    [{"HF_HUB_OFFLINE": "1"}, {"HF_ENDPOINT": "http://127.0.0.1:9"}],
    ids=["HF_HUB_OFFLINE", "unreachable-endpoint"],
)
def test_offline_load_fails_loudly_with_the_fix(env, tmp_path):
    r = _run_cli(["benchmarks", "export", "math500", "--out", str(tmp_path / "q.jsonl")], env, tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("error: could not load HuggingFaceH4/MATH-500 (offline?")
    assert "pass --data FILE with the dataset's rows (JSONL/parquet)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "q.jsonl").exists()


def test_split_questions_mixes_benchmarks_and_keeps_lcb_temporal():
    from trinity.benchmarks import split_questions
    from trinity.data.questions import Question, split_ids

    math = get_benchmark("math500").load(data=str(FIX / "math500_test.jsonl"))
    mmlu = get_benchmark("mmlu").load(data=str(FIX / "mmlu_test.jsonl"))
    lcb = get_benchmark("livecodebench").load(data=str(LCB_DIR))
    other = [Question(f"custom-{i}", "custom", f"q{i}", str(i)) for i in range(5)]
    mixed = lcb + mmlu + other + math
    got = split_questions(mixed, seed=11)
    plain = split_ids(math + mmlu + other, seed=11)
    for k in ("train", "val", "test"):  # non-LCB ids exactly as split_ids gives them
        assert sorted(i for i in got[k] if not i.startswith("livecodebench-")) == sorted(plain[k])
    assert [i for i in got["test"] if i.startswith("livecodebench-")] == ["livecodebench-1999A"]
    assert sorted(got["train"] + got["val"] + got["test"]) == sorted(q.id for q in mixed)


def test_split_questions_keep_livecodebench_test_after_its_training_release():
    # The trainer's (and collect's, and the analyses') splits: mixed benchmarks, LiveCodeBench by release/date.
    from trinity.benchmarks import split_questions
    from trinity.data.questions import split_ids

    lcb = get_benchmark("livecodebench").load(data=str(LCB_DIR), train_release="release_v1")
    math = get_benchmark("math500").load(data=str(FIX / "math500_test.jsonl"))
    splits = split_questions(math + lcb, 0, (0.6, 0.2, 0.2))
    lcb_test = {q.id for q in lcb if q.extra["lcb_split"] == "test"}
    lcb_train = {q.id for q in lcb if q.extra["lcb_split"] == "train"}
    assert lcb_test and set(splits["test"]) >= lcb_test
    assert not lcb_test & set(splits["train"] + splits["val"])
    assert lcb_train <= set(splits["train"] + splits["val"])
    math_ids = {q.id for q in math}
    assert {k: [i for i in v if i in math_ids] for k, v in splits.items()} == split_ids(math, 0)
