"""Feature routers (issue 14): kNN and nearest centroid, exact on hand-made cases; the learnable
gain and its verdict; the CLI paths (oracle --learnable, baselines --features)."""

import json

import numpy as np
import pytest

from trinity.analysis.learnable import (
    centroid_route,
    cross_validated_choices,
    knn_route,
    learnable_gain,
    learnable_verdict,
)
from trinity.analysis.stats import CI

# three training points on the axes of R^3; model j is right exactly on point j
X = np.eye(3)
ACC = np.eye(3)


def test_knn_k1_routes_to_the_nearest_questions_model():
    q = np.array([[0.9, 0.1, 0.0], [0.0, 0.2, 0.8], [0.1, 1.0, 0.1]])
    assert knn_route(X, ACC, q, k=1).tolist() == [0, 2, 1]


def test_knn_means_correctness_over_k_neighbours_and_breaks_ties_by_overall_accuracy():
    Xt = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    # model 0: right on the first two; model 1: right on 1 and 2 and 3 (overall best)
    acc = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    # k=2 near [1, 0]: neighbours 0 and 1 -> means (1.0, 0.5) -> model 0
    assert knn_route(Xt, acc, np.array([[1.0, 0.0]]), k=2).tolist() == [0]
    # k=4: means (0.5, 0.75) -> model 1 everywhere
    assert knn_route(Xt, acc, np.array([[1.0, 0.0]]), k=4).tolist() == [1]
    # an exact tie (k=1 on a point where both are right) goes to the overall better model, 1
    assert knn_route(Xt, acc, np.array([[0.9, 0.1]]), k=1).tolist() == [1]
    # cosine, not Euclidean: scale does not matter
    assert knn_route(Xt * 7.0, acc, np.array([[50.0, 0.0]]), k=2).tolist() == [0]


def test_centroid_uses_uniquely_best_questions_only():
    Xt = np.array([[1.0, 0.0], [0.8, 0.2], [0.0, 1.0], [0.5, 0.5]])
    # rows 0, 1 -> model 0 uniquely best; row 2 -> model 1; row 3: a tie, no label
    acc = np.array([[1.0, 0.0], [0.75, 0.25], [0.0, 1.0], [1.0, 1.0]])
    got = centroid_route(Xt, acc, np.array([[1.0, 0.1], [0.1, 1.0], [0.6, 0.4]]))
    # centroid 0 = normalised mean of rows 0, 1 = (0.9, 0.1)/|.|; centroid 1 = (0, 1)
    assert got.tolist() == [0, 1, 0]
    # nothing uniquely best anywhere: every query goes to the overall best model
    tie = np.ones((4, 2)) * np.array([0.5, 0.75])
    assert centroid_route(Xt, tie, np.array([[1.0, 0.0]])).tolist() == [1]


def test_cross_validation_never_uses_a_question_to_route_itself():
    # each question is the only one of its kind: routed by the others, kNN k=1 picks a wrong model
    Xd = np.eye(4)
    acc = np.eye(4)
    choice = cross_validated_choices("knn", Xd, acc, folds=4, seed=0, k=1)
    assert all(acc[i, choice[i]] == 0.0 for i in range(4))


def test_learnable_gain_and_verdict():
    rng = np.random.RandomState(0)
    centers = np.eye(4)[:2]
    topic = np.repeat([0, 1], 40)
    Xg = centers[topic] + 0.05 * rng.randn(80, 4)
    acc = np.where(topic[:, None] == np.arange(2)[None, :], 0.9, 0.3)  # each topic has its own model
    g = learnable_gain(Xg, acc, ["a", "b"], "knn", bootstrap=500)
    assert g.accuracy == pytest.approx(0.9) and g.best_single_acc == pytest.approx(0.6)
    assert g.significant and g.gain.point == pytest.approx(0.3)
    label, reason = learnable_verdict("INCONCLUSIVE", CI(0.01, -0.02, 0.04, "x"), g)
    assert label == "LEARNABLE" and "INCONCLUSIVE" in reason
    flat = learnable_gain(Xg, np.full((80, 2), 0.5), ["a", "b"], "knn", bootstrap=200)
    assert not flat.significant
    assert learnable_verdict("ROUTER_BOUND", CI(0.1, 0.05, 0.15, "x"), flat)[0] == "CEILING_ONLY"
    assert learnable_verdict("POOL_BOUND", CI(0.0, -0.01, 0.01, "x"), flat)[0] == "NOT_LEARNABLE"


def test_oracle_learnable_and_baselines_features_cli(capsys):
    from trinity.cli import main

    capsys.readouterr()
    assert (
        main(
            [
                "oracle",
                "practice",
                "--learnable",
                "--questions",
                "practice",
                "--encoder",
                "tiny-qwen3",
                "--bootstrap",
                "200",
                "--splits",
                "20",
                "--json",
            ]
        )
        == 0
    )
    rep = json.loads(capsys.readouterr().out)
    ln = rep["learnable"]
    assert [g["method"] for g in ln["gains"]] == ["knn", "centroid"] and ln["verdict"] in (
        "LEARNABLE",
        "CEILING_ONLY",
        "NOT_LEARNABLE",
    )
    assert (
        main(
            [
                "baselines",
                "--matrix",
                "practice",
                "--questions",
                "practice",
                "--features",
                "--encoder",
                "tiny-qwen3",
                "--split",
                "all",
                "--bootstrap",
                "200",
                "--json",
            ]
        )
        == 0
    )
    rep = json.loads(capsys.readouterr().out)
    assert len(rep["features"]) == 2 and all(0 <= f["accuracy"]["point"] <= 1 for f in rep["features"])
    # without the questions' text there is nothing to read features from: one clear line
    assert main(["oracle", "practice", "--learnable", "--encoder", "tiny-qwen3"]) != 0
    assert "--questions" in capsys.readouterr().err
