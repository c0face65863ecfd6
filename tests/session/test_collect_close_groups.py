"""`trinity collect --max-k K` over real loopback HTTP against the skilled stand-in pool: a group
whose two best models' labels are close is asked again (those two only, one more answer a
question a round) until they are told apart or hold K answers a cell; a group with a clear best
model is not; the matrix is ragged and keeps every answer; a re-run asks nothing; a live run's
warm start reads the labels of every answer."""

import json

import numpy as np
import pytest
from train_argv import train_argv

from trinity.benchmarks.practice import practice_questions
from trinity.cli import main
from trinity.data.matrix import load_matrix, matrix_from_json
from trinity.data.questions import Question, question_group
from trinity.errors import InputError
from trinity.io import read_jsonl
from trinity.optim.runinputs import load_run_inputs
from trinity.perf.standin import Standin, StandinHandle, StandinModel
from trinity.session.collect import close_groups

MODELS = ("twin-a", "twin-b", "weak")


def _answers(table: dict[tuple[str, str], list[int]]) -> dict[tuple[str, str, int], bool]:
    return {(q, m, s): bool(v) for (q, m), vals in table.items() for s, v in enumerate(vals)}


def _q(i: int, kind: str) -> Question:
    return Question(id=f"{kind}-{i}", benchmark="b", kind=kind, question=f"{kind} {i}", answer="1")


def test_close_groups_smooths_counts_and_tells_apart_by_standard_errors():
    qs = [_q(i, "math") for i in range(8)] + [_q(i, "mc") for i in range(8)]
    table = {}
    for i in range(8):
        # math: 5 of 8 against 4 of 8 (close); mc: 8 of 8 against 1 of 8 (apart)
        table[(f"math-{i}", "a")] = [int(i < 5)]
        table[(f"math-{i}", "b")] = [int(i < 4)]
        table[(f"math-{i}", "c")] = [0]
        table[(f"mc-{i}", "a")] = [0]
        table[(f"mc-{i}", "b")] = [1]
        table[(f"mc-{i}", "c")] = [int(i < 1)]
    close = close_groups(qs, ["a", "b", "c"], _answers(table), z=0.5)
    assert close == {"b/math": ("a", "b")}
    # (6/10 - 5/10) against 0.5 standard errors: close at 0.5, apart at z 0
    assert close_groups(qs, ["a", "b", "c"], _answers(table), z=0.0) == {}
    # more answers on the same questions shrink the errors: 50 of 80 against 40 of 80 is apart
    more = {k: v * 10 for k, v in table.items()}
    assert "b/math" not in close_groups(qs, ["a", "b", "c"], _answers(more), z=0.5)
    # a gap in a cell (a failed call) counts only the answers before it
    gap = _answers(table) | {("math-0", "b", 2): True}
    assert close_groups(qs, ["a", "b", "c"], gap, z=0.5) == {"b/math": ("a", "b")}


def test_a_ragged_matrix_is_refused_by_default_and_kept_whole_when_asked():
    obj = {
        "k": 1,
        "tasks": [
            {"id": "q1", "per_model": {"a": [1, 0, 0], "b": [1]}},
            {"id": "q2", "per_model": {"a": [0], "b": [1]}},
        ],
    }
    with pytest.raises(InputError, match="ragged sample counts"):
        matrix_from_json(obj)
    m = matrix_from_json(obj, ragged="keep")
    assert m.k == 1 and m.solves.shape == (2, 2, 1) and m.ragged
    assert np.allclose(m.accuracy(), [[1 / 3, 1.0], [0.0, 1.0]])
    assert m.draws().tolist() == [[3, 1], [1, 1]]
    assert [t["per_model"] for t in m.to_json()["tasks"]] == [t["per_model"] for t in obj["tasks"]]
    assert not m.subset(["q2"]).ragged and m.subset(["q1", "q2"]).ragged
    assert np.allclose(matrix_from_json(obj, ragged="truncate").accuracy(), [[1.0, 1.0], [0.0, 1.0]])


# twin-a and twin-b are alike on math (close labels), each far ahead on one other topic (apart)
STANDIN = (
    StandinModel("twin-a", {"math": 0.6, "mc": 0.95, "code": 0.05}, 0.1, 0.4, 120, 0.3, 0.8),
    StandinModel("twin-b", {"math": 0.6, "mc": 0.05, "code": 0.95}, 0.1, 0.4, 120, 0.3, 0.8),
    StandinModel("weak", {"math": 0.05, "mc": 0.05, "code": 0.05}, 0.1, 0.4, 120, 0.3, 0.8),
)


@pytest.fixture
def standin():
    qs = [q for q in practice_questions() if q.kind in ("math", "mc", "code")]
    h = StandinHandle(Standin(qs, seed=2, models=STANDIN))
    yield h
    h.stop()


def _collect(h, out, *extra):
    argv = ["collect", "--benchmark", "practice", "--pool", "local", "--base-url", h.base_url]
    argv += ["--models", ",".join(MODELS), "--price-in", "0.1", "--price-out", "0.4", "--split", "train"]
    argv += ["--per-group", "6", "--k", "1", "--out", str(out), "--cache", str(out.parent / "c.db"), *extra]
    return main(argv)


def test_collect_asks_close_groups_again_and_a_live_run_reads_every_answer(standin, tmp_path, capsys):
    out = tmp_path / "m.json"
    assert _collect(standin, out, "--max-k", "4") == 0
    text = capsys.readouterr().out
    mat = load_matrix(out, ragged="keep")
    qs = {q.id: q for q in practice_questions()}
    groups = [question_group(qs[i]) for i in mat.ids]
    assert sorted(set(groups)) == ["practice/code", "practice/math", "practice/mc"] and len(mat.ids) == 18
    draws = mat.draws()
    rows = {g: [i for i, gi in enumerate(groups) if gi == g] for g in set(groups)}
    # the clear groups: one answer a cell
    assert (draws[rows["practice/mc"]] == 1).all() and (draws[rows["practice/code"]] == 1).all()
    # math, close on one answer a cell: the twins asked again, the weak model not
    math = draws[rows["practice/math"]]
    upto = int(math[:, 0].max())
    assert upto > 1 and (math[:, :2] == upto).all() and (math[:, 2] == 1).all()
    assert f"practice/math: twin-a and twin-b were close; asked again up to {upto} answers a question" in text
    # it stopped once they were told apart, or at --max-k
    answers = {(r["qid"], r["model"], r["sample"]): r["correct"] for r in read_jsonl(tmp_path / "m.answers.jsonl")}
    assert len(answers) == int(draws.sum())
    assert upto == 4 or "practice/math" not in close_groups([qs[i] for i in mat.ids], list(MODELS), answers)
    # every answer is in the matrix, and a label is the mean of all of a cell's answers
    for i, qid in enumerate(mat.ids):
        for j, m in enumerate(MODELS):
            cell = [answers[(qid, m, s)] for s in range(draws[i, j])]
            assert mat.accuracy()[i, j] == pytest.approx(np.mean(cell))
    # what the server answered is what was ledgered: 18 × 3 first answers, then the twins' again
    calls = standin.stats().calls
    assert calls == 18 * 3 + 6 * 2 * (upto - 1) == len(list(read_jsonl(tmp_path / "m.ledger.jsonl")))
    # a re-run decides the same on the same answers and asks nothing
    before = out.read_bytes()
    assert _collect(standin, out, "--max-k", "4") == 0
    assert standin.stats().calls == calls and out.read_bytes() == before
    assert "0 new paid calls" in capsys.readouterr().out

    # a live run on it: the warm start's labels average every answer; the first sample alone would not
    run = tmp_path / "run"
    argv = train_argv(
        run, "--pool", "local", "--base-url", standin.base_url, "--pool-models", ",".join(MODELS),
        "--price-in", "0.1", "--price-out", "0.4", questions="practice", matrix=out, mode="live",
        generations=0, popsize=4, m=4,
    )  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    assert standin.stats().calls == calls  # generation 0: nothing asked
    inputs = load_run_inputs(run)
    assert inputs.matrix is not None and inputs.matrix.ragged
    assert np.array_equal(inputs.matrix.accuracy(), mat.subset(inputs.matrix.ids).accuracy())
    ws = json.loads((run / "run.json").read_text())["warm_start"]
    assert ws["method"] == "labels" and ws["n_with_rows"] == 18


def test_without_max_k_the_matrix_is_as_before_and_max_k_below_k_is_refused(standin, tmp_path, capsys):
    out = tmp_path / "m.json"
    assert _collect(standin, out) == 0
    assert standin.stats().calls == 18 * 3 and not load_matrix(out).ragged
    assert "were close" not in capsys.readouterr().out
    assert _collect(standin, tmp_path / "n.json", "--k", "2", "--max-k", "1") == 2
    assert "--max-k must be at least --k (2)" in capsys.readouterr().err
