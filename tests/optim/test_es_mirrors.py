"""Mirrored sampling in the ES (`--es-mirrors`): the candidates it adds are mirror images of the
previous generation's worst, the choice is recorded in run.json, and a run that uses it resumes
from its data-only checkpoint exactly as the uninterrupted run goes on."""

from __future__ import annotations

import json

import numpy as np
import pytest
from optim_helpers import standin_trainer, write_inputs

from trinity.config import TrainConfig
from trinity.optim import checkpoint as ckpt
from trinity.optim.trainer import make_es
from trinity.runs.rundir import RunDir


def _antiparallel_to_previous(mirrored: float) -> int:
    """How many candidates of generations 2-4 point exactly opposite a candidate of the generation
    before (relative to each generation's mean)."""
    es = make_es(np.zeros(10), 1.0, 8, np.random.RandomState(0), mirrored=mirrored)
    prev, found = None, 0
    for g in range(4):
        X = np.asarray(es.ask())
        D = X - np.asarray(es.mean)
        if prev is not None:
            for d in D:
                cos = prev @ d / (np.linalg.norm(prev, axis=1) * np.linalg.norm(d))
                found += int(np.any(cos < -1 + 1e-9))
        prev = D
        es.tell(list(X), list(np.random.RandomState(g).rand(8)))
    return found


def test_mirrored_candidates_mirror_the_previous_generation():
    assert _antiparallel_to_previous(0.0) == 0  # pycma's default at 8 candidates: no mirrors
    assert _antiparallel_to_previous(0.5) >= 4  # two a generation, when the worst were worth mirroring


def test_the_default_hashes_as_before(tmp_path):
    plain = TrainConfig(questions="practice", matrix="practice", popsize=8, generations=1, m=4)
    mirrored = plain.model_copy(update={"es_mirrors": 0.5})
    # a run made before the option hashes as a run with it off: its checkpoint stays valid
    data = plain.resolved()
    data.pop("es_mirrors")
    assert TrainConfig(**data).hash() == plain.hash() != mirrored.hash()


@pytest.mark.slow
def test_a_mirrored_run_resumes_as_the_uninterrupted_one(tmp_path):
    q, m = write_inputs(tmp_path, n_per_cat=6)
    cfg = TrainConfig(questions=str(q), matrix=str(m), popsize=8, generations=3, m=4, seed=3, es_mirrors=0.5)
    standin_trainer(tmp_path / "full", cfg, run_id="full").train()

    part = tmp_path / "part"
    standin_trainer(part, cfg.model_copy(update={"generations": 2}), run_id="part").train()
    run = RunDir(part)
    run.update_meta(config=cfg.resolved())  # as if it had been killed after 2 of 3
    _, state = ckpt.read_checkpoint(run, run_id="part", config_hash=cfg.hash())
    assert "es" not in state  # data only: the ES is rebuilt by replaying its tells, mirrors included
    trainer = standin_trainer(part, cfg, run_id="part")
    trainer.load_state(state)
    trainer.train(resume=True)

    def trail(path):
        hist = json.loads((path / "history.json").read_text())
        return [{k: v for k, v in h.items() if k != "secs"} for h in hist]

    assert trail(part) == trail(tmp_path / "full")
    assert json.loads((part / "run.json").read_text())["config"]["es_mirrors"] == 0.5
    assert np.array_equal(np.load(part / "best_theta.npy"), np.load(tmp_path / "full" / "best_theta.npy"))
