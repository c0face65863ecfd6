"""Run inputs: benchmark filter, splits, digest, and the practice set."""

import json

import pytest
from optim_helpers import standin_trainer, write_inputs

from trinity.config import TrainConfig
from trinity.errors import InputError
from trinity.io import read_jsonl
from trinity.optim.runinputs import inputs_digest, inputs_from_config, load_run_inputs


def _relabel(q_path, m_path):
    """Give the 'history' questions another benchmark name (in the questions file only)."""
    rows = [json.loads(line) for line in q_path.read_text().splitlines()]
    for r in rows:
        if r["id"].startswith("history"):
            r["benchmark"] = "hist"
    q_path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_benchmark_filter_and_splits(tmp_path):
    q, m = write_inputs(tmp_path, n_per_cat=10)
    _relabel(q, m)
    cfg = TrainConfig(questions=str(q), matrix=str(m), benchmarks=["hist"], seed=4)
    inp = inputs_from_config(cfg)
    assert {x.benchmark for x in inp.questions} == {"hist"} and len(inp.questions) == 10
    assert inp.matrix.ids == [x.id for x in inp.questions]
    assert sorted(sum(inp.splits.values(), [])) == sorted(x.id for x in inp.questions)
    assert inputs_from_config(cfg).splits == inp.splits  # deterministic by seed
    assert inputs_from_config(cfg.model_copy(update={"seed": 5})).splits != inp.splits
    with pytest.raises(InputError, match="benchmark\\(s\\) nope not in"):
        inputs_from_config(cfg.model_copy(update={"benchmarks": ["nope"]}))


def test_digest_sees_outcome_changes(tmp_path):
    q, m = write_inputs(tmp_path, n_per_cat=5)
    cfg = TrainConfig(questions=str(q), matrix=str(m))
    a = inputs_digest(inputs_from_config(cfg))
    doc = json.loads(m.read_text())
    doc["tasks"][2]["per_model"]["m-hist"][1] ^= 1
    m.write_text(json.dumps(doc))
    assert inputs_digest(inputs_from_config(cfg)) != a


def test_load_run_inputs_uses_recorded_splits(tmp_path):
    q, m = write_inputs(tmp_path, n_per_cat=5)
    cfg = TrainConfig(questions=str(q), matrix=str(m), popsize=4, generations=1, m=4)
    t = standin_trainer(tmp_path / "run", cfg)
    t.train()
    questions, matrix, splits = load_run_inputs(tmp_path / "run")
    assert splits == t.inputs.splits and matrix.models == t.models


def test_practice_inputs():
    cfg = TrainConfig(questions="practice", matrix="practice")
    inp = inputs_from_config(cfg)
    assert len(inp.questions) == 60 and all("simulated" in m for m in inp.matrix.models)


def test_traces_best_and_none(tmp_path):
    q, m = write_inputs(tmp_path, n_per_cat=6)
    cfg = TrainConfig(questions=str(q), matrix=str(m), popsize=6, generations=2, m=5)
    standin_trainer(tmp_path / "best", cfg.model_copy(update={"traces": "best"})).train()
    rows = read_jsonl(tmp_path / "best/traces.jsonl")
    assert len(rows) == 2 * 5 and len({(r["gen"], r["candidate"]) for r in rows}) == 2
    standin_trainer(tmp_path / "none", cfg.model_copy(update={"traces": "none"})).train()
    assert not (tmp_path / "none/traces.jsonl").exists()
