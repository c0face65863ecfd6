"""Every bad input of issue 2 items 7 and 9: one `error:` line, a non-zero exit, nothing changed.

`trinity` runs in this process (`trinity_main`: the console script's code path, without a child's
1.5–3 s of imports); the resume cases share two runs trained once for the module, each test
working on its own copy."""

import json
import shutil

import pytest
from optim_helpers import standin_trainer, tree_digest, trinity_main, write_inputs
from train_argv import train_argv

from trinity.config import TrainConfig
from trinity.runs.rundir import RunDir


def _train(q, m, run_dir, *extra):
    return trinity_main(train_argv(run_dir, *extra, questions=q, matrix=m, generations=2, popsize=4, m=4, seed=0))


def _one_error_line(res, *needles):
    rc, out, err = res
    assert rc != 0, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for n in needles:
        assert n in lines[0], lines[0]


def _edit_matrix(m, fn):
    doc = json.loads(m.read_text())
    fn(doc)
    m.write_text(json.dumps(doc))


def test_question_without_matrix_row(tmp_path):
    q, m = write_inputs(tmp_path)
    _edit_matrix(m, lambda d: d["tasks"].pop(3))
    missing = json.loads(q.read_text().splitlines()[3])["id"]
    res = _train(q, m, tmp_path / "run")
    _one_error_line(res, "have no row in the matrix", missing)
    assert not (tmp_path / "run").exists()


def test_matrix_row_without_question(tmp_path):
    q, m = write_inputs(tmp_path)
    lines = q.read_text().splitlines()
    q.write_text("\n".join(lines[:5] + lines[6:]) + "\n")
    gone = json.loads(lines[5])["id"]
    res = _train(q, m, tmp_path / "run")
    _one_error_line(res, "have no question in", gone)
    assert not (tmp_path / "run").exists()


def test_empty_matrix(tmp_path):
    q, m = write_inputs(tmp_path)
    m.write_text(json.dumps({"benchmark": "synth", "k": 4, "tasks": []}))
    _one_error_line(_train(q, m, tmp_path / "run"), "no tasks")
    assert not (tmp_path / "run").exists()


def test_model_missing_from_some_rows(tmp_path):
    q, m = write_inputs(tmp_path)

    def drop(d):
        for t in d["tasks"][7:9]:
            del t["per_model"]["m-hist"]

    _edit_matrix(m, drop)
    ids = [json.loads(line)["id"] for line in q.read_text().splitlines()[7:9]]
    _one_error_line(_train(q, m, tmp_path / "run"), "'m-hist' is missing", *ids)
    assert not (tmp_path / "run").exists()


@pytest.fixture(scope="module")
def trained_runs(tmp_path_factory):
    """Runs "a" and "b" over one pair of inputs, trained once for the module (read-only: tests
    work on copies). The inputs stay where the runs recorded them."""
    base = tmp_path_factory.mktemp("two-runs")
    q, m = write_inputs(base)
    cfg = TrainConfig(questions=str(q), matrix=str(m), popsize=4, generations=3, m=4, encoder="tiny-qwen3")
    for name in ("a", "b"):
        t = standin_trainer(base / name, cfg.model_copy(update={"generations": 2}), run_id=name)
        t.train()
        # as if the run had been asked for 3 generations and killed after 2
        RunDir(base / name).update_meta(config=cfg.resolved())
    return base


@pytest.fixture()
def two_runs(trained_runs, tmp_path):
    """This test's own copies of the module's runs "a" and "b"."""
    for name in ("a", "b"):
        shutil.copytree(trained_runs / name, tmp_path / name)
    return tmp_path / "a", tmp_path / "b"


def test_existing_run_dir_is_not_overwritten(two_runs, trained_runs):
    a, _ = two_runs
    before = tree_digest(a)
    res = _train(trained_runs / "questions.jsonl", trained_runs / "matrix.json", a)
    _one_error_line(res, "already holds a run", "trinity resume")
    assert tree_digest(a) == before


def test_resume_corrupt_checkpoint(two_runs):
    a, _ = two_runs
    f = next((a / "checkpoint").glob("state-*.npz"))
    f.write_bytes(f.read_bytes()[:-100])  # truncated
    before = tree_digest(a)
    _one_error_line(trinity_main(["resume", str(a)]), "corrupt", "checksum")
    assert tree_digest(a) == before


def test_resume_with_the_checkpoint_lost_does_not_start_over(two_runs):
    a, _ = two_runs
    shutil.rmtree(a / "checkpoint")
    (a / "checkpoint").mkdir()
    before = tree_digest(a)
    _one_error_line(trinity_main(["resume", str(a), "--generations", "4"]), "no checkpoint", "restore checkpoint/")
    assert tree_digest(a) == before


def test_resume_foreign_checkpoint(two_runs):
    a, b = two_runs
    shutil.rmtree(a / "checkpoint")
    shutil.copytree(b / "checkpoint", a / "checkpoint")
    before = tree_digest(a)
    _one_error_line(trinity_main(["resume", str(a)]), "belongs to run 'b'", "foreign")
    assert tree_digest(a) == before


def test_resume_refuses_a_second_engine(two_runs):
    a, _ = two_runs
    before = tree_digest(a)
    with RunDir(a).lock():
        res = trinity_main(["resume", str(a)])
    _one_error_line(res, "in use by another engine")
    assert res[0] == 3
    assert tree_digest(a) == before


def test_resume_not_a_run(tmp_path):
    _one_error_line(trinity_main(["resume", str(tmp_path)]), "not a run directory")


def test_resume_finished_run(two_runs):
    a, _ = two_runs
    _one_error_line(trinity_main(["resume", str(a), "--generations", "2"]), "nothing to resume")


def test_resume_refuses_changed_inputs(two_runs, trained_runs):
    a, _ = two_runs
    m = trained_runs / "matrix.json"  # where the run recorded its matrix: edited, then put back
    saved = m.read_bytes()
    doc = json.loads(saved)
    cell = doc["tasks"][0]["per_model"]["m-code"]
    cell[0] = 1 - cell[0]
    before = tree_digest(a)
    try:
        m.write_text(json.dumps(doc))
        res = trinity_main(["resume", str(a)])
    finally:
        m.write_bytes(saved)
    _one_error_line(res, "changed since the run was started")
    assert tree_digest(a) == before


def test_run_dir_is_a_file(tmp_path):
    q, m = write_inputs(tmp_path)
    (tmp_path / "f").write_text("x")
    _one_error_line(_train(q, m, tmp_path / "f"), "is a file")


@pytest.mark.parametrize("extra, needle", [((), "live mode needs a pool"), (("--pool", "nope"), "unknown pool 'nope'")])
def test_live_mode_pool_errors_before_the_run_dir(tmp_path, extra, needle):
    res = trinity_main(
        [
            "train",
            "--mode",
            "live",
            "--questions",
            "practice",
            "--encoder",
            "tiny-qwen3",
            "--run-dir",
            tmp_path / "run",
            *extra,
        ]
    )
    _one_error_line(res, needle)
    assert not (tmp_path / "run").exists()
