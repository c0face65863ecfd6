"""Exact statistics: Wilson, exact McNemar, bootstrap determinism and pairing."""

import math

import numpy as np
import pytest

from trinity.analysis.stats import (
    accuracy_ci,
    binomial_two_sided_p,
    bootstrap_ci,
    mcnemar_exact,
    paired_bootstrap_ci,
    seed_interval,
    solved,
    wilson_ci,
)
from trinity.errors import InputError


def test_wilson_matches_the_textbook_value():
    lo, hi = wilson_ci(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4)
    assert hi == pytest.approx(0.7634, abs=1e-4)
    lo, hi = wilson_ci(0, 20)
    assert lo == 0.0 and 0.15 < hi < 0.17  # 0/20: upper bound ≈ 0.161


def test_mcnemar_exact_by_hand():
    # 3 questions only A solves, none only B: p = 2 · (1/2)^3
    r = mcnemar_exact([1, 1, 1, 0, 1], [0, 0, 0, 0, 1])
    assert (r.a_only, r.b_only, r.discordant) == (3, 0, 3)
    assert r.p_value == pytest.approx(0.25)
    # 10 vs 0: 2 / 1024
    assert mcnemar_exact([1] * 10, [0] * 10).p_value == pytest.approx(2 / 1024)
    # balanced discordance: p = 1
    assert mcnemar_exact([1, 0, 1, 0], [0, 1, 0, 1]).p_value == 1.0
    # no discordant pairs at all
    assert mcnemar_exact([1, 0], [1, 0]).p_value == 1.0
    # 2 vs 5 (n=7, k=2): 2 · (1 + 7 + 21) / 128
    assert binomial_two_sided_p(2, 7) == pytest.approx(2 * 29 / 128)
    assert binomial_two_sided_p(5, 7) == pytest.approx(2 * 29 / 128)


def test_mcnemar_refuses_fractions_and_mismatched_lengths():
    with pytest.raises(InputError, match="0/1"):
        mcnemar_exact([0.5, 1], [0, 1])
    with pytest.raises(InputError, match="same questions"):
        mcnemar_exact([1, 0, 1], [0, 1])


def test_bootstrap_is_deterministic_given_the_seed_and_brackets_the_mean():
    rng = np.random.default_rng(3)
    v = rng.random(50)
    a, b = bootstrap_ci(v, 500, seed=7), bootstrap_ci(v, 500, seed=7)
    assert a == b
    assert a.lo < v.mean() < a.hi
    assert bootstrap_ci(v, 500, seed=8) != a


def test_paired_bootstrap_of_identical_systems_is_exactly_zero():
    v = np.array([1, 0, 1, 1, 0, 0.5])
    ci = paired_bootstrap_ci(v, v, 300, seed=0)
    assert (ci.point, ci.lo, ci.hi) == (0.0, 0.0, 0.0)


def test_paired_bootstrap_uses_the_pairing():
    # b = a − 0.1 on every question: the paired difference has no spread at all, while the
    # unpaired accuracies vary a lot between questions
    a = np.linspace(0.2, 1.0, 30)
    ci = paired_bootstrap_ci(a, a - 0.1, 300, seed=0)
    assert ci.lo == pytest.approx(0.1) and ci.hi == pytest.approx(0.1)


def test_accuracy_ci_picks_wilson_for_binary_and_bootstrap_for_fractions():
    assert "Wilson" in accuracy_ci([1, 0, 1, 1]).method
    assert "bootstrap" in accuracy_ci([1, 0.5, 1, 0.25]).method


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(InputError, match="NaN"):
        bootstrap_ci([1.0, math.nan])
    with pytest.raises(InputError, match="no questions"):
        bootstrap_ci([])
    with pytest.raises(InputError):
        wilson_ci(3, 2)


def test_solved_and_seed_interval():
    assert solved([0.5, 0.49, 1, 0]).tolist() == [1, 0, 1, 0]
    ci = seed_interval(np.arange(101) / 100)
    assert ci.point == pytest.approx(0.5) and ci.lo == pytest.approx(0.025) and ci.hi == pytest.approx(0.975)


def test_exact_mcnemar_past_a_thousand_discordant_questions():
    # 2.0**n overflowed a float past n = 1023: a full MMLU matrix crashed `trinity oracle`
    from math import comb

    from trinity.analysis.stats import binomial_two_sided_p

    assert binomial_two_sided_p(6000, 12000) == 1.0
    p = binomial_two_sided_p(5000, 12000)
    assert 0 < p < 1e-70
    assert p == pytest.approx(9.798976022738526e-75, rel=1e-9)  # scipy.stats.binomtest(5000, 12000)
    assert binomial_two_sided_p(1250, 3000) == pytest.approx(
        2 * sum(comb(3000, i) for i in range(1251)) / 2**3000, rel=1e-12
    )
    assert binomial_two_sided_p(0, 5000) == 0.0  # underflows, no exception


def test_stratified_bootstrap_keeps_each_stratum_whole():
    import numpy as np

    from trinity.analysis.stats import stratified_paired_bootstrap_ci
    from trinity.errors import InputError

    # stratum 0: every difference +1; stratum 1: every difference 0 -> the mean is fixed at 0.5
    a = np.array([1, 1, 1, 0, 1, 0, 1, 0], dtype=float)
    b = np.array([0, 0, 0, 0, 1, 0, 1, 0], dtype=float)
    st = [0, 0, 0, 1, 1, 1, 1, 1]
    ci = stratified_paired_bootstrap_ci(a, b, st)
    assert ci.point == ci.lo == ci.hi == pytest.approx(3 / 8)
    plain = stratified_paired_bootstrap_ci(a, b, [0] * 8)  # one stratum: the ordinary paired bootstrap
    assert plain.lo < 3 / 8 < plain.hi
    with pytest.raises(InputError, match="pair the same questions"):
        stratified_paired_bootstrap_ci(a, b, [0, 1])
