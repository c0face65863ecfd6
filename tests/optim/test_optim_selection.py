"""The best-θ rule is robust to validation noise (issue 14): a challenger replaces the incumbent
only when its paired per-question val difference exceeds VAL_MARGIN_Z standard errors."""

import json

import numpy as np
import pytest
from optim_helpers import standin_trainer, write_inputs

from trinity.config import TrainConfig
from trinity.optim.trainer import VAL_MARGIN_Z, Incumbent


@pytest.fixture()
def cfg(tmp_path):
    q, m = write_inputs(tmp_path)
    return TrainConfig(questions=str(q), matrix=str(m), popsize=12, generations=8, m=12, sigma0=0.3, seed=5)


def test_a_lucky_question_or_a_tie_does_not_replace_the_incumbent(tmp_path, cfg):
    t = standin_trainer(tmp_path / "run", cfg)
    t.state = t.fresh_state()
    n = len(t.val_q)
    inc = (np.arange(n) % 3 != 0).astype(float)  # 2/3 right
    t.state.best = Incumbent(theta=np.zeros(3), val_acc=float(inc.mean()), gen=0, which="warm_start", val_vec=inc)
    assert not t._beats(inc.copy())  # a tie keeps the incumbent (the old rule gave it to the later θ)
    one = inc.copy()
    one[0] = 1.0  # one more right val question: noise
    assert not t._beats(one)
    swap = inc.copy()
    swap[0], swap[1] = 1.0, 0.0  # same accuracy, other questions
    assert not t._beats(swap)
    many = np.ones(n)  # every third question gained, none lost: far beyond the margin
    d = many - inc
    assert d.mean() > VAL_MARGIN_Z * d.std(ddof=1) / np.sqrt(n) and t._beats(many)


def test_warm_start_kept_when_es_only_ties_it(tmp_path, cfg):
    # the stand-in task's warm start already routes every category right: ES candidates tie it on
    # val (or win by noise); the old rule (ties to the later θ) handed the best θ to the last of them
    t = standin_trainer(tmp_path / "run", cfg)
    t.train()
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert s["best_theta"]["which"] == "warm_start" and s["best_theta"]["gen"] == 0
    assert s["best_theta"]["val_acc"] == pytest.approx(s["warm_start"]["val_acc"])
    assert f"{VAL_MARGIN_Z:g} standard errors" in s["best_theta"]["rule"]
