"""The trainer with a fitness that hands it a ranking (a live race): the ES is told the ranking,
not the mean reward; NaN cells (questions an eliminated candidate never met) are not rewards; the
run's θ is the fitness's incumbent when nothing is validated."""

from __future__ import annotations

import json

import numpy as np
from optim_helpers import standin_trainer, write_inputs

from trinity.config import TrainConfig
from trinity.optim.fitness import CachedFitness
from trinity.runs.rundir import RunDir
from trinity.session.evaluation import Evaluation


class Raced(CachedFitness):
    """Cached rewards, the second half of the candidates "eliminated" after half the questions,
    ranked in the reverse of their index (an order no mean gives); keeps an incumbent."""

    told: list[np.ndarray] = []

    def evaluate(self, gen, thetas, questions, hooks):
        ev = super().evaluate(gen, thetas, questions, hooks)
        R = np.array(ev.rewards, dtype=np.float64)
        P, m = R.shape
        R[P // 2 :, m // 2 :] = np.nan
        ranking = -np.arange(P, dtype=np.float64)  # candidate 0 first
        self.told.append(ranking)
        self.incumbent = {"theta": np.asarray(thetas[0]).copy(), "gen": gen}
        return Evaluation(R, ev.stats, ranking=ranking)

    def validate(self, thetas, questions):
        return None  # as in live mode


def test_the_es_is_told_the_ranking_and_the_incumbent_is_the_runs_theta(tmp_path):
    q, m = write_inputs(tmp_path)
    cfg = TrainConfig(questions=str(q), matrix=str(m), popsize=8, generations=2, m=6, sigma0=0.3, seed=5)
    t = standin_trainer(tmp_path / "run", cfg, fitness_cls=Raced)
    Raced.told = []
    t.train()
    st = t.state
    assert len(st.es_tells) == 2
    for told, ranking in zip(st.es_tells, Raced.told):
        assert np.array_equal(np.asarray(told), -ranking)  # pycma minimises: −ranking
    assert st.evals == 2 * (8 * 6 - 4 * 3)  # the NaN cells are not evaluations
    gens = [e for e in RunDir(tmp_path / "run").read_events() if e["type"] == "generation"]
    assert all(np.isfinite(g["mean"]) and np.isfinite(g["max"]) for g in gens)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["best_theta"]["which"] == "incumbent" and "race" in summary["best_theta"]["rule"]
    assert np.array_equal(np.load(tmp_path / "run" / "best_theta.npy"), t.fitness.incumbent["theta"])
