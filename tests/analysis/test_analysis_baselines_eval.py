"""Baselines and the eval statistics on routing decisions constructed by hand."""

import json

import numpy as np
import pytest

from trinity.analysis.baselines import baselines_from_outcomes, cached_baselines, random_routing
from trinity.analysis.evaluate import compare_router
from trinity.analysis.inputs import resolve_matrix, select_ids
from trinity.data.matrix import OutcomeMatrix
from trinity.errors import InputError


def test_always_model_and_random_routing_by_hand():
    # 4 questions, 2 models: m0 solves q0,q1; m1 solves q2 only
    p = np.array([[1, 0], [1, 0], [0, 1], [0, 0]], float)
    rep = baselines_from_outcomes(p, ["m0", "m1"], benchmark="toy", split="all", source="hand", seeds=200)
    assert [s.accuracy.point for s in rep.always] == [0.5, 0.25]
    assert rep.best_single == "m0"
    assert rep.random_expected == pytest.approx(0.375)
    assert rep.random.point == pytest.approx(0.375, abs=0.03)  # mean over 200 seeds
    assert rep.random.lo <= 0.25 and rep.random.hi >= 0.5
    assert all(s.cost_usd == 0 and s.avg_turns == 1.0 for s in rep.always)


def test_random_routing_gives_each_seed_its_own_generator():
    p = np.random.default_rng(0).random((50, 3))
    a = random_routing(p, seeds=100, seed=1)
    assert np.array_equal(a, random_routing(p, seeds=100, seed=1))
    assert len(set(np.round(a, 12))) > 50  # seeds differ from each other
    # seed s of a 100-seed run is the same draw as seed s of a 10-seed run
    assert np.array_equal(a[:10], random_routing(p, seeds=10, seed=1))


def test_cached_baselines_on_the_practice_test_split():
    m = resolve_matrix("practice")
    sel = select_ids(m, "test")
    rep = cached_baselines(m, sel.ids, split="test", source=sel.source, seeds=100)
    assert rep.n_questions == len(sel.ids) == 12
    sub = m.subset(sel.ids).accuracy()
    assert [s.accuracy.point for s in rep.always] == pytest.approx(sub.mean(axis=0).tolist())
    assert any("SIMULATED" in n for n in rep.notes)
    json.dumps(rep.to_json(), allow_nan=False)


def test_split_selection_errors_are_clear():
    m = OutcomeMatrix("toy", ["a", "b"], ["q0", "q1"], np.ones((2, 2, 2)))
    with pytest.raises(InputError, match="unknown split"):
        select_ids(m, "holdout")
    with pytest.raises(InputError, match="benchmark 'mmlu' is not in the matrix"):
        select_ids(m, "all", benchmark="mmlu")
    with pytest.raises(InputError, match="no questions left"):
        select_ids(m.subset(["q0"]), "test")  # one question goes to train: the test split is empty


def _router_case(n=60, seed=0):
    rng = np.random.default_rng(seed)
    p = (rng.random((n, 3)) < np.array([0.5, 0.55, 0.45])).astype(float)
    return p


def test_router_equal_to_the_best_model_is_within_noise():
    p = _router_case()
    best = int(p.mean(axis=0).argmax())
    idx = np.full(len(p), best)
    rep = compare_router(
        p[:, best],
        p,
        ["a", "b", "c"],
        model_idx=idx,
        ids=[f"q{i}" for i in range(len(p))],
        benchmarks=["toy"] * len(p),
        split="test",
        source="hand",
        bootstrap=500,
    )
    cmp = rep.comparison(f"always {rep.best_single}")
    assert (cmp.diff.point, cmp.diff.lo, cmp.diff.hi) == (0.0, 0.0, 0.0)
    assert cmp.outcome == "within noise" and "within noise" in rep.claim
    assert "beats" not in rep.claim


def test_oracle_router_beats_every_baseline_and_says_so():
    p = _router_case(n=80)
    idx = p.argmax(axis=1)  # picks a model that solved it whenever one did
    router_q = p[np.arange(len(p)), idx]
    rep = compare_router(
        router_q,
        p,
        ["a", "b", "c"],
        model_idx=idx,
        role_idx=np.ones(len(p), int),
        ids=[f"q{i}" for i in range(len(p))],
        benchmarks=["toy"] * len(p),
        split="test",
        source="hand",
        bootstrap=1000,
    )
    assert rep.claim.startswith("beats the best single model")
    assert all(c.outcome == "better" for c in rep.comparisons)
    assert rep.role_mix == {"Worker": len(p)}
    assert sum(rep.model_mix.values()) == len(p)
    rnd = rep.comparison("random routing")
    assert rnd.baseline_accuracy == pytest.approx(p.mean())
    assert rep.per_benchmark["toy"]["accuracy"] == pytest.approx(router_q.mean())
    json.dumps(rep.to_json(), allow_nan=False)


def test_a_worse_router_is_called_worse():
    p = np.zeros((50, 2))
    p[:, 0] = 1  # model a always right, b always wrong
    idx = np.ones(50, int)  # the router always picks b
    rep = compare_router(
        p[:, 1],
        p,
        ["a", "b"],
        model_idx=idx,
        ids=[f"q{i}" for i in range(50)],
        benchmarks=["toy"] * 50,
        split="test",
        source="hand",
        bootstrap=300,
    )
    assert rep.claim.startswith("is below the best single model (a)")
    assert rep.comparison("always a").mcnemar.b_only == 50


def test_mismatched_router_outcomes_are_refused():
    p = np.ones((4, 2))
    with pytest.raises(InputError, match="same questions"):
        compare_router(
            np.ones(3),
            p,
            ["a", "b"],
            model_idx=np.zeros(3, int),
            ids=["a"] * 3,
            benchmarks=["t"] * 3,
            split="test",
            source="x",
        )


def test_per_benchmark_breakdown():
    p = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], float)
    idx = np.array([0, 0, 0, 1])
    rep = compare_router(
        p[np.arange(4), idx],
        p,
        ["a", "b"],
        model_idx=idx,
        ids=["m0", "m1", "c0", "c1"],
        benchmarks=["math500", "math500", "mmlu", "mmlu"],
        split="test",
        source="hand",
        bootstrap=100,
    )
    assert rep.per_benchmark["math500"] == {"n": 2, "accuracy": 1.0, "avg_turns": 1.0, "best_single_accuracy": 1.0}
    assert rep.per_benchmark["mmlu"]["accuracy"] == 0.5 and rep.per_benchmark["mmlu"]["best_single_accuracy"] == 1.0
    assert [q["model"] for q in rep.per_question] == ["a", "a", "a", "b"]


def test_outcome_needs_the_interval_and_mcnemar_to_agree():
    """A bootstrap interval above 0 beside McNemar p = 0.5 is not called "better"."""
    from trinity.analysis.evaluate import Comparison
    from trinity.analysis.stats import CI, McNemar

    up = CI(0.05, 0.01, 0.09, "paired bootstrap")
    assert Comparison("b", 0.5, up, McNemar(3, 1, 0.625)).outcome == "not significant"
    assert Comparison("b", 0.5, up, McNemar(12, 1, 0.003)).outcome == "better"
    down = CI(-0.05, -0.09, -0.01, "paired bootstrap")
    assert Comparison("b", 0.5, down, McNemar(1, 3, 0.625)).outcome == "not significant"
    assert Comparison("b", 0.5, down, McNemar(1, 12, 0.003)).outcome == "worse"
    assert Comparison("b", 0.5, CI(0.0, -0.02, 0.02, "x"), McNemar(1, 1, 1.0)).outcome == "within noise"
