"""A live run on a per-group collect (`trinity collect --per-group N`) over real loopback HTTP
against the practice server: `generations: 0` makes no call, the warm start fits every training
question (those without a row to their group's mean) and says how many, and validation scores
the val questions, none of which has a row, by their group's mean, free."""

import json

import numpy as np
import pytest
from train_argv import train_argv

from trinity.cli import main
from trinity.config import validate_config
from trinity.data.matrix import load_matrix
from trinity.data.questions import question_group
from trinity.optim.engine import make_validator
from trinity.optim.fitness import build_router
from trinity.optim.runinputs import load_run_inputs
from trinity.practice.server import start_practice_server
from trinity.runs.rundir import RunDir


@pytest.fixture
def server():
    h = start_practice_server(port=0)
    yield h
    h.stop()


def test_a_live_run_warm_starts_on_a_per_group_collect_and_validates_by_group_means(
    server, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("TRINITY_POOL_BASE_URL", server.base_url)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    mfile = tmp_path / "m.json"
    argv = ["collect", "--benchmark", "practice", "--pool", "practice", "--base-url", server.base_url]
    argv += ["--split", "train", "--per-group", "2", "--k", "1", "--out", str(mfile), "--cache", str(tmp_path / "c.db")]
    assert main(argv) == 0
    calls = server.stats.completions
    run = tmp_path / "run"
    # no --warm-start: a live run on a collected matrix fits its labels by default (the live recipe)
    argv = train_argv(
        run, "--pool", "practice", questions="practice", matrix=mfile, mode="live", generations=0, popsize=4, m=4
    )
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    assert server.stats.completions == calls  # the warm start and validation are free

    meta = json.loads((run / "run.json").read_text())
    ws = meta["warm_start"]
    n_train, n_val = len(meta["splits"]["train"]), len(meta["splits"]["val"])
    assert meta["config"]["warm_start"] == "auto" and ws["method"] == "labels" and ws["n_train"] == n_train
    assert ws["n_with_rows"] == 6 and ws["n_group_mean"] == n_train - 6
    assert ws["label_targets"] == "best" and sorted(ws["groups"].values()) == [2, 2, 2]
    assert ws["n_val"] == n_val and 0 <= ws["val_acc"] <= 1

    inputs = load_run_inputs(run)
    mat = load_matrix(mfile)
    assert not set(inputs.splits["val"]) & set(mat.ids)  # no val question has a row
    cfg = validate_config(RunDir(run).meta().config.to_json())
    router = build_router(cfg, len(meta["models"]))
    val = make_validator(cfg, router, inputs, meta["models"])
    assert val is not None and set(val.fill) == set(inputs.splits["val"])
    by_id = {q.id: q for q in inputs.questions}
    acc = mat.accuracy()
    for qid, row in val.fill.items():
        same = [mat.row(i) for i in mat.ids if question_group(by_id[i]) == question_group(by_id[qid])]
        assert np.array_equal(row, acc[same].mean(axis=0))
    theta = np.load(run / "best_theta.npy")
    got = val.validate(theta[None, :], [by_id[i] for i in inputs.splits["val"]])
    summary = json.loads((run / "summary.json").read_text())
    assert summary["val_acc"] == pytest.approx(float(np.mean(got)), abs=1e-12) == pytest.approx(ws["val_acc"])
    assert summary["val_n"] == n_val and "test_acc" not in summary  # the test split has no row: evaluated live

    # the role rows alone, as before the live recipe, are one flag away on the same matrix
    old = tmp_path / "run-roles"
    argv = train_argv(
        old, "--pool", "practice", "--warm-start", "roles", questions="practice", matrix=mfile, mode="live",
        generations=0, popsize=4, m=4,
    )  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    assert server.stats.completions == calls
    ws_old = json.loads((old / "run.json").read_text())["warm_start"]
    assert ws_old["method"] == "roles" and "label_targets" not in ws_old
