"""Oracle ceiling: hand-computed small cases, verdict boundaries, degenerate inputs."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from trinity.analysis.oracle import cross_fit, oracle_ceiling, validate_solves, verdict
from trinity.analysis.stats import CI
from trinity.data.matrix import OutcomeMatrix
from trinity.errors import InputError


def matrix(solves, models=None) -> OutcomeMatrix:
    s = np.asarray(solves, dtype=np.float64)
    models = models or [f"m{j}" for j in range(s.shape[1])]
    return OutcomeMatrix("toy", models, [f"q{i}" for i in range(s.shape[0])], s)


def test_two_specialists_by_hand():
    # q0: only m0 solves it, q1: only m1 — every sample agrees, so every split gives the same answer
    rep = oracle_ceiling(matrix([[[1, 1], [0, 0]], [[0, 0], [1, 1]]]), splits=50, bootstrap=400)
    assert [c.point for c in rep.per_model] == [0.5, 0.5]
    assert rep.best_single == "m0" and rep.best_single_acc == 0.5  # tie → lower index
    assert rep.naive_oracle == 1.0
    assert rep.disagreement_rate == 1.0
    cf = rep.crossfit
    assert cf["oracle"] == 1.0 and cf["best_single"] == 0.5 and cf["headroom"] == 0.5
    # per-question headroom is {0, 1}: resampling 2 questions gives means 0, ½, 1 → CI [0, 1]
    assert (cf["headroom_ci"]["lo"], cf["headroom_ci"]["hi"]) == (0.0, 1.0)
    assert rep.verdict == "INCONCLUSIVE"  # lower bound is not > 0 with two questions
    assert cf["mcnemar"]["a_only"] == 1 and cf["mcnemar"]["b_only"] == 0


def test_crossfit_removes_the_winners_curse_by_hand():
    # one question, k=2: m0 = [1, 0], m1 = [0, 1]. Whatever half A is, the model that looks best on
    # A fails on B: the honest oracle is 0 while the naive in-sample max says 0.5.
    rep = oracle_ceiling(matrix([[[1, 0], [0, 1]]]), splits=40, bootstrap=100)
    assert rep.naive_oracle == 0.5
    assert rep.crossfit["oracle"] == 0.0 and rep.crossfit["best_single"] == 0.0
    assert rep.crossfit["headroom_ci"] is None  # one question: no interval
    assert rep.verdict == "INCONCLUSIVE"
    assert any("one question" in n for n in rep.notes)


def test_crossfit_headroom_is_exactly_zero_when_every_split_agrees_by_hand():
    # q0: m0 [1,1], m1 [1,0]; q1: m0 [0,0], m1 [1,0]. Enumerating the 4 split combinations by hand,
    # the per-question choice equals the best fixed model's outcome in each: headroom 0, and the
    # expected held-out accuracy of both is (0 + 1 + 1 + 1)/4 on q0 and 0 on q1 = 0.375.
    s = [[[1, 1], [1, 0]], [[0, 0], [1, 0]]]
    cf = cross_fit(np.asarray(s, float), splits=4000, seed=1)
    assert np.array_equal(cf.oracle_q, cf.best_q)
    assert cf.oracle_q.mean() == pytest.approx(0.375, abs=0.02)
    assert oracle_ceiling(matrix(s), splits=200).naive_oracle == 0.75


def test_per_question_ties_go_to_the_best_fixed_model():
    # best fixed model is m1 (2/3 vs 1/3); q0 is a tie and must go to m1, not to the lower index
    s = np.array([[[1, 1], [1, 1]], [[0, 0], [1, 1]], [[0, 0], [0, 0]]], float)
    cf = cross_fit(s, splits=10)
    assert cf.choice_counts[0].tolist() == [0, 10]
    assert cf.best_counts.tolist() == [0, 10]


def test_identical_models_are_pool_bound():
    rng = np.random.default_rng(0)
    one = (rng.random((80, 1, 4)) < 0.6).astype(float)
    rep = oracle_ceiling(matrix(np.concatenate([one, one, one], axis=1)), splits=100, bootstrap=500)
    ci = rep.headroom_ci
    assert ci.contains(0.0) and ci.hi <= 0.02
    assert rep.verdict == "POOL_BOUND"
    assert rep.crossfit["mcnemar"]["discordant"] == 0


def test_complementary_specialist_is_router_bound():
    # m0 is perfect on the first half of the questions, where m1 always fails; on the second half
    # m1 is perfect and m0 right once in 4 — m0 is still the best single model (0.625 vs 0.5)
    q = 40
    s = np.zeros((q, 2, 4))
    s[: q // 2, 0, :] = 1
    s[q // 2 :, 1, :] = 1
    s[q // 2 :, 0, 0] = 1
    rep = oracle_ceiling(matrix(s), splits=100, bootstrap=1000)
    assert rep.best_single == "m0" and rep.best_single_acc == 0.625
    assert rep.headroom_ci.lo > 0
    assert rep.verdict == "ROUTER_BOUND"
    assert "no router given" in rep.verdict_reason
    assert rep.crossfit["mcnemar"]["p_value"] < 0.05


def test_router_share_decides_router_bound_vs_near_ceiling():
    q = 40
    s = np.zeros((q, 2, 4))
    s[: q // 2, 0, :] = 1
    s[q // 2 :, 1, :] = 1
    m = matrix(s)
    perfect = np.ones(q)
    always_m0 = s[:, 0, :].mean(axis=1)
    near = oracle_ceiling(m, splits=50, bootstrap=300, router_correct=perfect)
    assert near.router["accuracy"] == 1.0 and near.router["headroom_captured"] == pytest.approx(1.0)
    assert near.verdict == "NEAR_CEILING"
    bound = oracle_ceiling(m, splits=50, bootstrap=300, router_correct=always_m0)
    assert bound.router["headroom_captured"] == pytest.approx(0.0)
    assert bound.verdict == "ROUTER_BOUND"


@pytest.mark.parametrize(
    "ci, gap, label",
    [
        (CI(0.01, -0.005, 0.02, "t"), None, "POOL_BOUND"),  # upper exactly 0.02, contains 0
        (CI(0.01, -0.005, 0.0201, "t"), None, "INCONCLUSIVE"),  # upper just above 0.02
        (CI(0.01, 0.001, 0.015, "t"), None, "ROUTER_BOUND"),  # small but excludes 0
        (CI(0.05, 0.0, 0.10, "t"), None, "INCONCLUSIVE"),  # lower bound 0 is not > 0
        (CI(0.05, 0.001, 0.10, "t"), 0.49, "ROUTER_BOUND"),
        (CI(0.05, 0.001, 0.10, "t"), 0.5, "NEAR_CEILING"),  # gap closed exactly 0.5
        (None, None, "INCONCLUSIVE"),
    ],
)
def test_verdict_boundaries(ci, gap, label):
    assert verdict(ci, gap)[0] == label


def test_a_router_above_the_cross_fit_estimate_gets_its_own_wording():
    # router 0.917 vs a cross-fit oracle of 0.802: "captures 206%" is what it used to say
    label, reason = verdict(CI(0.05, 0.001, 0.10, "t"), 2.06)
    assert label == "NEAR_CEILING"
    assert "%" not in reason and "above the cross-fit oracle estimate" in reason


def test_determinism_given_the_seed():
    rng = np.random.default_rng(5)
    m = matrix((rng.random((30, 3, 4)) < 0.5).astype(float))
    a = json.dumps(oracle_ceiling(m, seed=3, splits=50, bootstrap=300).to_json())
    b = json.dumps(oracle_ceiling(m, seed=3, splits=50, bootstrap=300).to_json())
    c = json.dumps(oracle_ceiling(m, seed=4, splits=50, bootstrap=300).to_json())
    assert a == b and a != c


def test_single_sample_gives_a_reduced_report():
    rep = oracle_ceiling(matrix(np.array([[[1], [0]], [[0], [1]], [[1], [1]]], float)), bootstrap=100)
    assert rep.crossfit is None and rep.verdict == "INCONCLUSIVE"
    assert rep.naive_oracle == 1.0 and rep.best_single_acc == pytest.approx(2 / 3)
    assert any("cross-fit is impossible" in n for n in rep.notes)
    json.dumps(rep.to_json(), allow_nan=False)


def test_single_model_has_zero_headroom():
    rng = np.random.default_rng(1)
    rep = oracle_ceiling(matrix((rng.random((20, 1, 4)) < 0.5).astype(float)), splits=20, bootstrap=200)
    assert rep.crossfit["headroom"] == 0.0 and rep.verdict == "POOL_BOUND"
    assert any("one model" in n for n in rep.notes)


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.array([[[1, np.nan]]]), "NaN"),
        (np.array([[[1, 2]]]), "other than 0 and 1"),
        (np.zeros((0, 2, 2)), "empty"),
        (np.zeros((2, 2)), "shape"),
    ],
)
def test_bad_tensors_are_clear_errors(bad, match):
    with pytest.raises(InputError, match=match):
        validate_solves(bad)


def test_router_correctness_must_match_the_questions():
    m = matrix(np.ones((3, 2, 2)))
    with pytest.raises(InputError, match="one per question"):
        oracle_ceiling(m, router_correct=[1, 0])


def test_practice_matrix_finds_real_headroom():
    from trinity.practice.simulation import practice_matrix

    rep = oracle_ceiling(practice_matrix(), splits=100, bootstrap=1000)
    # the simulated specialists (math / mc / code) leave room a per-question router can use
    assert rep.crossfit["oracle"] > rep.crossfit["best_single"]
    assert rep.naive_oracle > rep.crossfit["oracle"]
    assert rep.verdict == "ROUTER_BOUND"


def test_merged_matrix_is_also_reported_per_benchmark():
    from trinity.data.matrix import merge_matrices

    q = 30
    a = np.zeros((q, 2, 4))
    a[: q // 2, 0], a[q // 2 :, 1] = 1, 1  # complementary specialists: real headroom
    b = np.ones((q, 2, 4))  # both models always right: none
    ma = OutcomeMatrix("math500", ["x", "y"], [f"a{i}" for i in range(q)], a)
    mb = OutcomeMatrix("mmlu", ["x", "y"], [f"b{i}" for i in range(q)], b)
    rep = oracle_ceiling(merge_matrices([ma, mb]), splits=30, bootstrap=300)
    assert set(rep.per_benchmark) == {"math500", "mmlu"}
    assert rep.per_benchmark["math500"]["verdict"] == "ROUTER_BOUND"
    assert rep.per_benchmark["mmlu"]["verdict"] == "POOL_BOUND"
    assert rep.per_benchmark["mmlu"]["n_questions"] == q
    # math500 alone: any fixed model is right on half the questions; the per-question oracle on all
    for name, best in (("math500", 0.5), ("mmlu", 1.0)):
        r = rep.per_benchmark[name]
        assert r["crossfit_best_single"] == pytest.approx(best) and r["crossfit_oracle"] == pytest.approx(1.0)
    import io

    from rich.console import Console

    from trinity.analysis.render import oracle_view

    console = Console(width=100, record=True, file=io.StringIO())
    console.print(oracle_view(rep))
    assert "Each benchmark alone" in console.export_text()


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.int8, st.tuples(st.integers(2, 12), st.integers(1, 4), st.integers(2, 6)), elements=st.integers(0, 1)),
    st.integers(0, 3),
)
def test_invariants_on_any_tensor(s, seed):
    rep = oracle_ceiling(matrix(s.astype(float)), seed=seed, splits=20, bootstrap=100)
    cf = rep.crossfit
    assert rep.naive_oracle >= rep.best_single_acc - 1e-12  # the in-sample max is never below a fixed model
    assert 0.0 <= cf["best_single"] <= 1.0 and 0.0 <= cf["oracle"] <= 1.0
    assert cf["headroom"] == pytest.approx(cf["oracle"] - cf["best_single"])
    ci = cf["headroom_ci"]
    assert ci["lo"] <= ci["point"] + 1e-12 and ci["point"] <= ci["hi"] + 1e-12
    assert rep.verdict in ("POOL_BOUND", "ROUTER_BOUND", "NEAR_CEILING", "INCONCLUSIVE")
    # copies of one model never show headroom
    dup = np.repeat(s[:, :1, :], 3, axis=1).astype(float)
    assert oracle_ceiling(matrix(dup), seed=seed, splits=10, bootstrap=50).crossfit["headroom"] == 0.0


def test_headroom_that_only_routes_by_benchmark_is_called_so():
    # x is always right on math500 and y on mmlu: routing pays pooled, but within each benchmark
    # the best single model is already perfect (the competition compares per benchmark)
    from trinity.data.matrix import merge_matrices

    q = 20
    a, b = np.zeros((q, 2, 4)), np.zeros((q, 2, 4))
    a[:, 0], b[:, 1] = 1, 1
    m = merge_matrices(
        [
            OutcomeMatrix("math500", ["x", "y"], [f"a{i}" for i in range(q)], a),
            OutcomeMatrix("mmlu", ["x", "y"], [f"b{i}" for i in range(q)], b),
        ]
    )
    rep = oracle_ceiling(m, splits=20, bootstrap=200)
    assert rep.headroom_ci.lo > 0 and all(v["verdict"] == "POOL_BOUND" for v in rep.per_benchmark.values())
    assert any("comes from picking a model per benchmark" in n for n in rep.notes)
    assert not any("per benchmark" in n for n in oracle_ceiling(m.subset([f"a{i}" for i in range(q)])).notes)
