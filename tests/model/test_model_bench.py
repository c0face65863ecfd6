"""`trinity bench candidates` runs end to end (tiny encoder; the real figures are in docs/perf)."""

import json

from trinity.cli import main


def test_bench_candidates_json(capsys):
    rc = main(
        [
            "bench",
            "candidates",
            "--encoder",
            "tiny-qwen3",
            "--popsize",
            "4",
            "--questions",
            "3",
            "--tokens",
            "40",
            "--ref-candidates",
            "1",
            "--warm-generations",
            "1",
            "--device",
            "cpu",
            "--json",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["popsize"] == 4 and out["questions"] == 3 and 34 <= out["tokens_mean"] <= 46
    assert out["ratio"] > 0 and out["fast_fraction_of_matmul"] > 0 and out["matmul_gflops_per_s"] > 0
    assert out["max_abs_feature_diff"] < 1e-4
