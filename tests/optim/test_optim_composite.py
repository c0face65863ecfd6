"""Composite training (issue 14): one matrix per benchmark, stratified minibatches, per-benchmark
fitness and validation, selection on the mean over benchmarks."""

import json

from optim_helpers import standin_trainer, trinity_inproc
from train_argv import train_argv

from trinity.config import TrainConfig
from trinity.data.learningtask import TaskSpec, generate_task
from trinity.data.matrix import save_matrix
from trinity.data.questions import save_questions
from trinity.runs.rundir import RunDir


def _bench_files(tmp_path):
    qfiles, mfiles = [], []
    # an unbalanced pair: 'small' has a tenth of the questions; same pool (3 models), same k
    for name, n in (("big", 60), ("small", 6)):
        qs, mat, _ = generate_task(TaskSpec(name, topics=3, models=3, k=2, edge=0.3, n_per_topic=n, seed=len(name)))
        mat.models = ["m-arith", "m-hist", "m-code"]  # the stand-in router's pool
        q, m = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.json"
        save_questions(q, qs)
        save_matrix(m, mat)
        qfiles.append(str(q))
        mfiles.append(str(m))
    return ",".join(qfiles), ",".join(mfiles)


def test_every_minibatch_holds_every_benchmark(tmp_path):
    q, m = _bench_files(tmp_path)
    cfg = TrainConfig(questions=q, matrix=m, popsize=4, generations=6, m=8, seed=1, select_on="benchmark_mean")
    t = standin_trainer(tmp_path / "run", cfg)
    assert {x.benchmark for x in t.train_q} == {"big", "small"}
    rng = t.fresh_state().batch_rng
    for _ in range(20):
        pick = t._minibatch(rng, 8)
        batch = [t.train_q[i] for i in pick]
        assert len(set(pick.tolist())) == 8 and {x.benchmark for x in batch} == {"big", "small"}
    t.train()
    gens = [e for e in RunDir(tmp_path / "run").read_events() if e["type"] == "generation"]
    assert all(set(g["fitness_per_benchmark"]) == {"big", "small"} for g in gens)
    assert all(set(g["val_per_benchmark"]) == {"big", "small"} for g in gens)
    for g in gens:  # the composite: the mean of the per-benchmark accuracies
        assert abs(g["val_benchmark_mean"] - sum(g["val_per_benchmark"].values()) / 2) < 1e-12
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    # benchmark_mean selection: the best θ's validation figure is a composite, at least every best candidate's
    assert s["best_theta"]["val_acc"] >= max(g["val_benchmark_mean"] for g in gens) - 1e-12
    assert set(s["test_per_benchmark"]) == {"big", "small"}
    assert abs(s["test_composite"] - sum(s["test_per_benchmark"].values()) / 2) < 1e-12


def test_composite_cli_with_one_matrix_per_benchmark(tmp_path, capsys):
    q, m = _bench_files(tmp_path)
    argv = train_argv(tmp_path / "r", mode=None, questions=q, matrix=m, generations=2, popsize=4, m=6)
    rc, _, err = trinity_inproc(capsys, *argv)
    assert rc == 0, err
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    assert meta["benchmarks"] == ["big", "small"] and meta["config"]["matrix"].count(",") == 1
