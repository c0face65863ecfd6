"""`trinity bench grading`'s per-benchmark rates grade real right and wrong cases."""

from __future__ import annotations

from trinity.perf.grading import BENCH_CASES, _benchmark_rates, _humaneval_figures


def test_rates_cover_each_new_benchmark_with_right_and_wrong_cases():
    res = _benchmark_rates(passes=1)
    assert set(res) == set(BENCH_CASES) == {"gpqa", "mmlu_pro", "aime", "bbh", "ifeval", "bfcl_simple"}
    for name, r in res.items():
        assert 0 < r["right"] < r["cases"], name  # both verdicts occur
        assert r["cases_per_s"] > 0


def test_humaneval_figures_on_two_shipped_problems():
    h = _humaneval_figures(2, 2)
    assert (h["problems"], h["grades"], h["verdicts_as_expected"]) == (2, 4, 4)
    assert h["parallel_verdicts_same"] and h["sandbox_overhead_ms_per_problem_median"] > 0
