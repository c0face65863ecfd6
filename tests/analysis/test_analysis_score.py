"""The TinyRouter score formula, computed by hand."""

import json

import numpy as np
import pytest

from trinity.analysis.score import (BenchInputs, Component, bench_score, efficiency, load_king_theta, novelty,
                                    overfit_penalty, score_from_inputs)
from trinity.errors import InputError


def test_bench_score_by_hand():
    # efficiency = (5 − 3)/4 × 0.6 = 0.3; (0.70·0.8 + 0.15·0.6 + 0.10·0.3 + 0.05·0.5) × 0.85 (gap 0.10)
    assert efficiency(3, 0.6) == pytest.approx(0.3)
    assert bench_score(0.8, 0.6, 3, 0.5, 0.10) == pytest.approx(0.705 * 0.85)
    assert bench_score(0.8, 0.6, 3, 0.5, 0.0) == pytest.approx(0.705)
    assert efficiency(5, 1.0) == 0.0 and efficiency(7, 1.0) == 0.0 and efficiency(1, 0.5) == 0.5


@pytest.mark.parametrize("gap, mult, rejected", [
    (None, 1.0, False), (-0.2, 1.0, False), (0.08, 1.0, False), (0.0801, 0.85, False),
    (0.15, 0.85, False), (0.1501, 0.0, True)])
def test_overfit_penalty_boundaries(gap, mult, rejected):
    assert overfit_penalty(gap) == (mult, rejected)


def test_novelty_by_hand():
    ours = (np.array([0, 1, 2]), np.array([1, 1, 1]))
    king = (np.array([0, 1, 0]), np.array([1, 0, 1]))  # agrees on (model, role) only at q0
    assert novelty(ours, king) == pytest.approx(2 / 3)
    assert novelty(ours, ours) == 0.0
    with pytest.raises(InputError):
        novelty(ours, (np.array([0]), np.array([1])))


def _bench(name, cached, live=None, turns=None, nov=None, gap=None):
    return BenchInputs(name, Component(cached, "test"), Component(live, "test" if live is not None else "not measured"),
                       Component(turns, "t"), Component(nov, "no king"), Component(gap, "g"))


def test_without_live_both_bounds_are_shown_and_labelled():
    rep = score_from_inputs([_bench("math500", 0.8)])
    sc = {s.name: s.score for s in rep.benchmarks[0].scenarios}
    assert sc == pytest.approx({"live=cached, 1 turn (optimistic)": 0.56 + 0.12 + 0.08 + 0.025,
                                "live=0 (pessimistic)": 0.56 + 0.025})
    assert "measured" not in sc
    assert "no king given" in rep.dethrone
    json.dumps(rep.to_json(), allow_nan=False)


def test_composite_is_the_mean_and_the_king_margin_is_reported():
    ours = [_bench("math500", 0.8, 0.6, 3, 0.4, 0.0), _bench("mmlu", 0.9, 0.9, 1, 0.4, 0.0)]
    rep = score_from_inputs(ours, king_benches=[_bench("math500", 0.7), _bench("mmlu", 0.9)])
    s1 = 0.70 * 0.8 + 0.15 * 0.6 + 0.10 * 0.3 + 0.05 * 0.4
    s2 = 0.70 * 0.9 + 0.15 * 0.9 + 0.10 * 0.9 + 0.05 * 0.4
    assert rep.composite == pytest.approx({"measured": (s1 + s2) / 2})
    k_opt = ((0.49 + 0.105 + 0.07 + 0.025) + (0.63 + 0.135 + 0.09 + 0.025)) / 2
    m = rep.king["margin"]
    key = "ours measured − king live=cached, 1 turn (optimistic)"
    assert m[key] == pytest.approx((s1 + s2) / 2 - k_opt)
    assert rep.king["dethrones"][key] == (m[key] >= 0.02)
    json.dumps(rep.to_json(), allow_nan=False)


def test_a_rejected_benchmark_scores_zero():
    rep = score_from_inputs([_bench("math500", 0.9, 0.9, 1, 0.5, 0.2)])
    assert rep.benchmarks[0].rejected and rep.composite["measured"] == 0.0
    # no "could dethrone a king scoring ≤ -0.0200": a zero composite dethrones nobody
    assert "this run cannot dethrone any king" in rep.dethrone and "-0.02" not in rep.dethrone


def test_king_loading_errors(tmp_path):
    with pytest.raises(InputError, match="king not found"):
        load_king_theta(tmp_path / "nope.npy")
    (tmp_path / "bundle").mkdir()
    with pytest.raises(InputError, match="head weights"):
        load_king_theta(tmp_path / "bundle")
    np.save(tmp_path / "bundle" / "head_weights.npy", np.zeros((6, 8), np.float32))
    np.save(tmp_path / "bundle" / "svf_scales.npy", np.ones(4, np.float32))
    theta, label = load_king_theta(tmp_path / "bundle")
    assert theta.shape == (52,) and "bundle" in label


def test_king_from_a_folder_with_best_theta(tmp_path):
    np.save(tmp_path / "best_theta.npy", np.arange(5, dtype=np.float64))
    theta, label = load_king_theta(tmp_path)
    assert theta.tolist() == [0, 1, 2, 3, 4] and "best_theta.npy" in label
