"""The TinyRouter score formula, computed by hand."""

import json

import numpy as np
import pytest

from trinity.analysis.score import (
    BenchInputs,
    Component,
    bench_score,
    efficiency,
    load_king_theta,
    novelty,
    overfit_penalty,
    score_from_inputs,
)
from trinity.errors import InputError


def test_bench_score_by_hand():
    # efficiency = (5 − 3)/4 × 0.6 = 0.3; (0.70·0.8 + 0.15·0.6 + 0.10·0.3 + 0.05·0.5) × 0.85 (gap 0.10)
    assert efficiency(3, 0.6) == pytest.approx(0.3)
    assert bench_score(0.8, 0.6, 3, 0.5, 0.10) == pytest.approx(0.705 * 0.85)
    assert bench_score(0.8, 0.6, 3, 0.5, 0.0) == pytest.approx(0.705)
    assert efficiency(5, 1.0) == 0.0 and efficiency(7, 1.0) == 0.0 and efficiency(1, 0.5) == 0.5


@pytest.mark.parametrize(
    "gap, mult, rejected",
    [
        (None, 1.0, False),
        (-0.2, 1.0, False),
        (0.08, 1.0, False),
        (0.0801, 0.85, False),
        (0.15, 0.85, False),
        (0.1501, 0.0, True),
    ],
)
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
    return BenchInputs(
        name,
        Component(cached, "test"),
        Component(live, "test" if live is not None else "not measured"),
        Component(turns, "t"),
        Component(nov, "no king"),
        Component(gap, "g"),
    )


def test_without_live_both_bounds_are_shown_and_labelled():
    rep = score_from_inputs([_bench("math500", 0.8)])
    sc = {s.name: s.score for s in rep.benchmarks[0].scenarios}
    assert sc == pytest.approx(
        {"live=cached, 1 turn (optimistic)": 0.56 + 0.12 + 0.08 + 0.025, "live=0 (pessimistic)": 0.56 + 0.025}
    )
    assert "measured" not in sc
    assert "no king given" in rep.dethrone
    json.dumps(rep.to_json(), allow_nan=False)


def test_composite_is_the_mean_and_the_king_margin_is_reported():
    ours = [_bench("math500", 0.8, 0.6, 3, 0.4, 0.0), _bench("mmlu", 0.9, 0.9, 1, 0.4, 0.0)]
    rep = score_from_inputs(ours, king_benches=[_bench("math500", 0.7), _bench("mmlu", 0.9)])
    # pr_eval: novelty counts for the first benchmark only; mmlu's is 0 whatever the king
    s1 = 0.70 * 0.8 + 0.15 * 0.6 + 0.10 * 0.3 + 0.05 * 0.4
    s2 = 0.70 * 0.9 + 0.15 * 0.9 + 0.10 * 0.9 + 0.05 * 0.0
    assert rep.composite == pytest.approx({"measured": (s1 + s2) / 2})
    assert [b.novelty_used for b in rep.benchmarks] == [0.4, 0.0]
    k_opt = ((0.49 + 0.105 + 0.07 + 0.025) + (0.63 + 0.135 + 0.09 + 0.0)) / 2
    m = rep.king["margin"]
    key = "ours measured − king live=cached, 1 turn (optimistic)"
    assert m[key] == pytest.approx((s1 + s2) / 2 - k_opt)
    assert rep.king["dethrones"][key] == (m[key] >= 0.02)
    json.dumps(rep.to_json(), allow_nan=False)


def test_a_rejected_benchmark_scores_zero():
    rep = score_from_inputs([_bench("math500", 0.9, 0.9, 1, 0.5, 0.2)])
    assert rep.benchmarks[0].rejected and rep.composite["measured"] == 0.0
    # pr_eval rejects the submission: no "could dethrone a king scoring ≤ …"
    assert rep.rejected == "overfit_rejected (math500): eval-audit gap 0.2000 > 0.15"
    assert "REJECTED as a whole" in rep.dethrone and "could dethrone" not in rep.dethrone


def test_pr_eval_formula_by_hand_composite_novelty_and_whole_rejection():
    """Worked by hand from pr_eval.py: _compute_score per benchmark, novelty only for
    benchmarks[0], × 0.85 above a 0.08 gap, the whole submission rejected above 0.15."""
    benches = [
        _bench("math500", 0.80, 0.70, 2.0, None, 0.00),  # no king: novelty 0.5
        _bench("mmlu", 0.90, 0.80, 1.0, None, 0.09),  # 0.08 < gap ≤ 0.15: × 0.85
        _bench("livecodebench", 0.50, 0.40, 3.0, None, -0.02),
    ]
    rep = score_from_inputs(benches)
    m = 0.70 * 0.80 + 0.15 * 0.70 + 0.10 * (0.75 * 0.70) + 0.05 * 0.5  # 0.7425
    u = (0.70 * 0.90 + 0.15 * 0.80 + 0.10 * (1.0 * 0.80) + 0.0) * 0.85  # 0.7055
    lc = 0.70 * 0.50 + 0.15 * 0.40 + 0.10 * (0.5 * 0.40) + 0.0  # 0.43
    assert [s.scenarios[0].score for s in rep.benchmarks] == pytest.approx([0.7425, 0.7055, 0.43])
    assert rep.composite["measured"] == pytest.approx((m + u + lc) / 3) == pytest.approx(0.62600, abs=1e-5)
    assert rep.rejected is None and "0.6060" in rep.dethrone  # could dethrone a king ≤ composite − 0.02
    # the same, with livecodebench's gap at 0.16: pr_eval returns _reject(...) for the whole submission
    benches[2] = _bench("livecodebench", 0.50, 0.40, 3.0, None, 0.16)
    rep = score_from_inputs(benches)
    assert rep.rejected.startswith("overfit_rejected (livecodebench)") and rep.composite["measured"] == 0.0
    j = rep.to_json()
    assert j["overfit"] == {
        "reject_above": 0.15,
        "penalise_above": 0.08,
        "factor": 0.85,
        "competition_rules_md_says": [0.05, 0.10],
    }


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


def test_turns_measured_in_live_training_enter_the_estimate_without_a_live_eval():
    """No live eval, but summary.json's avg_turns (from live training): the scenarios use those
    turns, not the 1-turn assumption."""
    from trinity.analysis.score import BenchInputs, Component, score_bench

    b = BenchInputs(
        "math500",
        Component(0.6, "cached"),
        Component(None, "not measured"),
        Component(3.0, "live training"),
        Component(None, "no king"),
        Component(None, "unknown"),
    )
    names = [(sc.name, sc.avg_turns) for sc in score_bench(b).scenarios]
    assert names[0][1] == 3.0 and "3.00 turns" in names[0][0]
    one = BenchInputs(
        "math500",
        Component(0.6, "cached"),
        Component(None, "not measured"),
        Component(None, "not measured"),
        Component(None, "no king"),
        Component(None, "unknown"),
    )
    assert score_bench(one).scenarios[0].avg_turns == 1.0


def test_summary_avg_turns_reads_only_a_sane_number(tmp_path):
    import json

    from trinity.analysis.score import summary_avg_turns
    from trinity.runs.rundir import RunDir

    run = RunDir(tmp_path / "r")
    run.path.mkdir()
    assert summary_avg_turns(run) is None
    for value, want in ((2.5, 2.5), ("3", None), (9.0, None), (True, None)):
        run.summary.write_text(json.dumps({"run_id": "r", "n_params": 1, "generations": 1, "avg_turns": value}))
        assert summary_avg_turns(run) == want
