"""The group-target warm start on a matrix with rows for only some training questions (a live
run's `trinity collect --per-group N`): every training question is fitted, one without a row to
its group's mean (in the cross-validation's folds too); the record says how many, and says nothing
new when every question had a row (a run made before reads and writes the same bytes)."""

import json

import numpy as np
import pytest
from optim_helpers import FixedFeatureRouter, trinity_inproc, write_inputs
from train_argv import train_argv

from trinity.optim.warmstart import fill_group_means, warm_start_theta
from trinity.runs.records import WarmStart
from trinity.runs.rundir import RunDir


def test_a_question_without_labels_gets_its_groups_mean_over_the_fit_rows():
    acc = np.array([[1, 0], [0, 0], [np.nan, np.nan], [0, 1], [np.nan, np.nan], [1, 1]], dtype=float)
    groups = ["a", "a", "a", "b", "b", "c"]
    labelled = ~np.isnan(acc[:, 0])
    everyone = np.arange(6)
    out = fill_group_means(acc, groups, labelled, everyone, everyone)
    assert np.array_equal(out[labelled], acc[labelled])  # labels stand
    assert np.array_equal(out[2], [0.5, 0.0]) and np.array_equal(out[4], [0.0, 1.0])
    # a fold whose training rows hold no label of the group: the mean over all their labels
    fold = fill_group_means(acc, groups, labelled, np.array([0, 1, 5]), np.array([4]))
    assert np.allclose(fold[0], acc[[0, 1, 5]].mean(axis=0))


def _topics(rng, n, centres, skill):
    t = np.arange(n) % len(centres)
    X = centres[t] + 0.5 * rng.randn(n, centres.shape[1]) + 3.0
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    logit = np.log(skill[t] / (1 - skill[t])) + 0.8 * rng.randn(n, 3)
    return t, X, 1 / (1 + np.exp(-logit))


def test_four_labelled_questions_per_group_route_about_as_their_group_means_say():
    # 3 topics, 3 models each best on one, one 0/1 draw per cell; of 45 training questions the fit
    # sees the labels of 4 per topic (12), and routes 300 held-out ones about as the 4 labels' means
    # per topic name the specialist (all it can know: the others' targets are those means)
    rng = np.random.RandomState(1)
    H = 8
    centres = rng.randn(3, H)
    skill = np.array([[0.88, 0.45, 0.30], [0.50, 0.90, 0.45], [0.62, 0.60, 0.90]]).T
    t_te, X_te, P_te = _topics(rng, 300, centres, skill)
    got, by_means = [], []
    for rep in range(3):
        t_tr, X_tr, P_tr = _topics(rng, 45, centres, skill)
        acc = (rng.rand(45, 3) < P_tr).astype(float)
        texts = [f"{rep}-{i}" for i in range(45)]
        router = FixedFeatureRouter(dict(zip(texts, X_tr)))
        labelled = np.zeros(45, dtype=bool)
        for t in range(3):
            labelled[np.flatnonzero(t_tr == t)[:4]] = True
        hidden = np.where(labelled[:, None], acc, np.nan)  # what the fit must not read
        theta, info = warm_start_theta(
            router, router.initial_mean(), 3, texts, hidden, groups=[f"b/{t}" for t in t_tr], labelled=labelled,
            label_targets="group",
        )  # fmt: skip
        assert np.all(np.isfinite(theta))
        assert info["n_train"] == 45 and info["n_with_rows"] == 12 and info["n_group_mean"] == 33
        assert info["groups"] == {"b/0": 4, "b/1": 4, "b/2": 4} and info["label_targets"] == "group"
        assert all(np.isfinite(v) for v in info["cv_routed_acc"].values())
        W = theta[: 3 * H].reshape(3, H)
        got.append(float(np.mean(P_te[np.arange(300), np.argmax(X_te @ W.T, axis=1)])))
        means = [acc[labelled & (t_tr == t)].mean(axis=0) for t in range(3)]
        tied = [np.flatnonzero(mu == mu.max()) for mu in means]  # a tie: any of them, evenly
        by_means.append(float(np.mean([P_te[i, tied[t]].mean() for i, t in enumerate(t_te)])))
    # measured: 0.726 against 0.810 by the means (a linear head on overlapping features splits a
    # few topics between tied or near-tied models) and 0.67 for the best single model
    assert np.mean(got) >= np.mean(by_means) - 0.1, (got, by_means)
    assert np.mean(got) > P_te.mean(axis=0).max() + 0.03, (got, P_te.mean(axis=0))


def test_every_question_labelled_is_the_fit_as_before():
    rng = np.random.RandomState(0)
    texts = [f"q{i}" for i in range(24)]
    router = FixedFeatureRouter({t: rng.randn(8) for t in texts})
    acc = (rng.rand(24, 3) < 0.5).astype(float)
    groups = [f"b/{i % 3}" for i in range(24)]
    a, ia = warm_start_theta(router, router.initial_mean(), 3, texts, acc, groups=groups)
    b, ib = warm_start_theta(router, router.initial_mean(), 3, texts, acc, groups=groups, labelled=np.ones(24, bool))
    assert np.array_equal(a, b) and json.dumps(ia) == json.dumps(ib)
    with pytest.raises(ValueError, match="pass groups"):
        warm_start_theta(router, router.initial_mean(), 3, texts, acc, labelled=np.arange(24) > 3)


def test_a_full_matrix_run_json_has_no_new_fields_and_reads_back_byte_for_byte(tmp_path, capsys):
    q, m = write_inputs(tmp_path, n_per_cat=8)
    run = tmp_path / "run"
    rc, _, err = trinity_inproc(capsys, *train_argv(run, questions=q, matrix=m, generations=1, popsize=4, m=4, seed=3))
    assert rc == 0, err
    raw = (run / "run.json").read_text()
    ws = json.loads(raw)["warm_start"]
    assert ws["method"] == "labels" and "n_with_rows" not in ws and "n_group_mean" not in ws
    meta = RunDir(run).meta()
    assert meta.warm_start is not None and meta.warm_start.n_with_rows is None
    assert json.dumps(meta.to_json()) == json.dumps(json.loads(raw))  # same keys, same order, same values
    summary = json.loads((run / "summary.json").read_text())["warm_start"]
    assert "n_with_rows" not in summary and "n_group_mean" not in summary
    # a record with the counts reads them back as written
    rec = WarmStart.model_validate({**ws, "n_with_rows": 6, "n_group_mean": 9})
    assert (
        rec.n_with_rows == 6 and rec.n_group_mean == 9 and rec.to_json() == {**ws, "n_with_rows": 6, "n_group_mean": 9}
    )
