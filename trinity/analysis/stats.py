"""Small, exact statistics for paired accuracy comparisons (no scipy: it is not a dependency).

Conventions: the unit of variation is the *question*. Per-question values may be fractions (the
mean correctness over k recorded samples) or 0/1. Bootstrap intervals are percentile intervals
over questions resampled with replacement, drawn from `np.random.default_rng(seed)`, so a result
is a pure function of its inputs and the seed.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from trinity.errors import InputError

LEVEL = 0.95
# Resamples are drawn in blocks so memory stays bounded for large question sets.
_BLOCK_CELLS = 4_000_000


@dataclass(frozen=True)
class CI:
    """A point estimate with a two-sided interval; `method` says how the interval was made."""

    point: float
    lo: float
    hi: float
    method: str
    level: float = LEVEL

    def contains(self, x: float) -> bool:
        return self.lo <= x <= self.hi

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test: `a_only` = questions only A solves, `b_only` = only B solves."""

    a_only: int
    b_only: int
    p_value: float

    @property
    def discordant(self) -> int:
        return self.a_only + self.b_only

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "discordant": self.discordant, "method": "exact binomial (two-sided)"}


def _as_vector(values: npt.ArrayLike, what: str) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1:
        raise InputError(f"{what}: expected one value per question, got shape {v.shape}")
    if v.size == 0:
        raise InputError(f"{what}: no questions to compute a statistic over")
    if not np.all(np.isfinite(v)):
        raise InputError(f"{what}: contains NaN or infinite values; fix the inputs")
    return v


def is_binary(values: npt.ArrayLike) -> bool:
    v = np.asarray(values)
    return bool(np.all((v == 0) | (v == 1)))


def wilson_ci(successes: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (good at small n and near 0 or 1)."""
    if n <= 0:
        raise InputError("wilson_ci: need at least one trial")
    if not 0 <= successes <= n:
        raise InputError(f"wilson_ci: successes={successes} outside [0, {n}]")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)  # exact ends: no rounding residue
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi


def bootstrap_means(values: npt.ArrayLike, n_resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """(n_resamples,) means of `values` over questions resampled with replacement."""
    v = _as_vector(values, "bootstrap")
    if n_resamples < 1:
        raise InputError(f"bootstrap resamples must be >= 1, got {n_resamples}")
    rng = np.random.default_rng(seed)
    q = v.size
    block = max(1, _BLOCK_CELLS // q)
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, block):
        stop = min(n_resamples, start + block)
        idx = rng.integers(0, q, size=(stop - start, q))  # (b, Q)
        out[start:stop] = v[idx].mean(axis=1)
    return out


def _percentiles(draws: np.ndarray, level: float) -> tuple[float, float]:
    a = (1 - level) / 2
    lo, hi = np.quantile(draws, [a, 1 - a])
    return float(lo), float(hi)


def bootstrap_ci(values: npt.ArrayLike, n_resamples: int = 2000, seed: int = 0, level: float = LEVEL) -> CI:
    """Percentile bootstrap CI of the mean over questions."""
    v = _as_vector(values, "bootstrap_ci")
    lo, hi = _percentiles(bootstrap_means(v, n_resamples, seed), level)
    return CI(float(v.mean()), lo, hi, f"percentile bootstrap over {v.size} questions, {n_resamples} resamples", level)


def paired_bootstrap_ci(
    a: npt.ArrayLike, b: npt.ArrayLike, n_resamples: int = 2000, seed: int = 0, level: float = LEVEL
) -> CI:
    """CI of mean(a) − mean(b) where a[i], b[i] belong to the same question (resampled together)."""
    va, vb = _as_vector(a, "paired_bootstrap_ci (a)"), _as_vector(b, "paired_bootstrap_ci (b)")
    if va.shape != vb.shape:
        raise InputError(f"paired_bootstrap_ci: {va.size} vs {vb.size} questions; pair the same questions")
    d = va - vb
    lo, hi = _percentiles(bootstrap_means(d, n_resamples, seed), level)
    return CI(
        float(d.mean()), lo, hi, f"paired percentile bootstrap over {d.size} questions, {n_resamples} resamples", level
    )


def stratified_paired_bootstrap_ci(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    strata: npt.ArrayLike,
    n_resamples: int = 2000,
    seed: int = 0,
    level: float = LEVEL,
) -> CI:
    """CI of mean(a) − mean(b) over questions that fall in strata (e.g. the held-out sets of
    several seeds): each resample draws every stratum's questions from that stratum alone, so a
    stratum keeps its size and its own mix."""
    va, vb = _as_vector(a, "stratified bootstrap (a)"), _as_vector(b, "stratified bootstrap (b)")
    st = np.asarray(strata).reshape(-1)
    if va.shape != vb.shape or st.shape != va.shape:
        raise InputError(f"stratified bootstrap: {va.size}, {vb.size} and {st.size} values; pair the same questions")
    if n_resamples < 1:
        raise InputError(f"bootstrap resamples must be >= 1, got {n_resamples}")
    d = va - vb
    rng = np.random.default_rng(seed)
    sums = np.zeros(n_resamples)
    for k in sorted(set(st.tolist())):
        dk = d[st == k]
        sums += dk[rng.integers(0, dk.size, size=(n_resamples, dk.size))].sum(axis=1)
    lo, hi = _percentiles(sums / d.size, level)
    n_strata = len(set(st.tolist()))
    return CI(
        float(d.mean()),
        lo,
        hi,
        f"paired percentile bootstrap over {d.size} questions in {n_strata} strata, {n_resamples} resamples",
        level,
    )


def accuracy_ci(values: npt.ArrayLike, n_resamples: int = 2000, seed: int = 0, level: float = LEVEL) -> CI:
    """CI of an accuracy: Wilson when every value is 0/1, else a bootstrap over questions."""
    v = _as_vector(values, "accuracy")
    if is_binary(v):
        lo, hi = wilson_ci(int(v.sum()), v.size, level)
        return CI(float(v.mean()), lo, hi, f"Wilson score interval, n={v.size}", level)
    return bootstrap_ci(v, n_resamples, seed, level)


def binomial_two_sided_p(k: int, n: int) -> float:
    """Exact two-sided p-value of k successes in n fair-coin trials (doubling the smaller tail)."""
    if n == 0:
        return 1.0
    k = min(k, n - k)
    # exact integers: 2.0**n overflows a float past n = 1023 (a full MMLU matrix has more
    # discordant questions than that); int / int rounds correctly at any size
    term = tail = 1  # C(n, 0); then C(n, i + 1) = C(n, i)·(n − i)/(i + 1), exact and O(k) steps
    for i in range(k):
        term = term * (n - i) // (i + 1)
        tail += term
    return min(1.0, 2 * tail / (1 << n))


def mcnemar_exact(a_correct: npt.ArrayLike, b_correct: npt.ArrayLike) -> McNemar:
    """Exact McNemar test on two paired 0/1 vectors (the same questions, two systems)."""
    a = _as_vector(a_correct, "mcnemar (a)")
    b = _as_vector(b_correct, "mcnemar (b)")
    if a.shape != b.shape:
        raise InputError(f"mcnemar: {a.size} vs {b.size} questions; pair the same questions")
    if not (is_binary(a) and is_binary(b)):
        raise InputError("mcnemar: outcomes must be 0/1 per question; binarise them first")
    a_only = int(np.sum((a == 1) & (b == 0)))
    b_only = int(np.sum((a == 0) & (b == 1)))
    return McNemar(a_only, b_only, binomial_two_sided_p(a_only, a_only + b_only))


def solved(expected_correct: npt.ArrayLike) -> np.ndarray:
    """Binarise per-question expected correctness for McNemar: solved = right in ≥ half the samples."""
    return (np.asarray(expected_correct, dtype=np.float64) >= 0.5).astype(np.float64)


def seed_interval(values: npt.ArrayLike, level: float = LEVEL) -> CI:
    """Mean and central interval of a statistic across independent seeds (not a CI of the mean)."""
    v = _as_vector(values, "seed interval")
    lo, hi = _percentiles(v, level)
    return CI(float(v.mean()), lo, hi, f"central {level:.0%} of {v.size} seeds", level)
