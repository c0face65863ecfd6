"""The forecast with nothing named: what is on disk (an earlier run of the same pool, the response
cache's answers) stands in for a pilot, and with nothing measured the priors are wide and say
so. Checked against real runs over loopback on the practice pool and on a stand-in whose models
answer at very different lengths."""

from __future__ import annotations

import json

import pytest

from trinity.config import load_config
from trinity.optim.forecast import describe, earlier_run, forecast
from trinity.optim.runinputs import inputs_from_config
from trinity.perf.forecast_check import LENGTHS, check
from trinity.pool.cache import ResponseCache


def _cfg(questions_file, tmp_path, **over):
    base = {
        "mode": "live",
        "pool": "practice",
        "base_url": "http://127.0.0.1:9",  # nothing is called: the forecast is arithmetic on disk
        "cache_path": str(tmp_path / "responses.sqlite"),
        "questions": str(questions_file),
        "encoder": "tiny-qwen3",
        "popsize": 4,
        "m": 3,
        "generations": 2,
    }
    return load_config(None, {**base, **over})


def _forecast(cfg, **kw):
    inputs = inputs_from_config(cfg)
    train = set(inputs.splits["train"])
    return forecast(cfg, [q for q in inputs.questions if q.id in train], **kw)


def test_nothing_measured_is_wide_and_says_so(questions_file, tmp_path):
    f = _forecast(_cfg(questions_file, tmp_path))
    assert f["answer_lengths_from"] == "prior" and "nothing measured" in f["measured_from"]
    assert f["usd"]["p95"] > 20 * f["usd"]["p05"]  # honest about not knowing: over an order of magnitude
    assert "not measured for this pool" in describe(f)


def test_the_response_cache_measures_answer_lengths(questions_file, tmp_path):
    cfg = _cfg(questions_file, tmp_path)
    cache = ResponseCache(cfg.cache_path)
    lengths = {"simulated/mathlete": 900, "simulated/scholar": 90, "simulated/coder": 9}
    for model, ct in lengths.items():
        for i in range(5):
            cache.put(f"{model}-{i}", "practice", model, {"text": "x", "completion_tokens": ct + i - 2})
    cache.put("other", "another-pool", "simulated/coder", {"completion_tokens": 5000})  # not this pool
    f = _forecast(cfg)
    assert f["answer_lengths_from"] == "cached" and "response cache" in f["measured_from"]
    for model, ct in lengths.items():
        assert f["completion_tokens_per_call"][model] == pytest.approx(ct, rel=0.25)
    prior = _forecast(_cfg(questions_file, tmp_path / "empty"))
    assert f["usd"]["p95"] / f["usd"]["p05"] < prior["usd"]["p95"] / prior["usd"]["p05"]


def test_an_earlier_run_of_the_same_pool_is_found(questions_file, tmp_path):
    cfg = _cfg(questions_file, tmp_path)
    root = tmp_path / "runs"

    def fake_run(name, **conf):
        d = root / name
        d.mkdir(parents=True)
        (d / "run.json").write_text(json.dumps({"id": name, "config": {"mode": "live", "pool": "practice", **conf}}))
        turn = {"model": "simulated/scholar", "role": "Worker", "prompt_tokens": 90, "completion_tokens": 40}
        (d / "traces.jsonl").write_text(json.dumps({"gen": 1, "candidate": 0, "qid": "q", "turns": [turn]}) + "\n")
        return d

    assert earlier_run(cfg, root) is None  # no runs root yet
    fake_run("a-other-models", pool_models=["simulated/coder"])
    fake_run("b-cached", mode="cached")
    fake_run("c-other-pool", pool="openrouter")
    same = fake_run("d-same")
    assert earlier_run(cfg, root) == same
    assert earlier_run(cfg, root, exclude=same) is None  # a run never pilots itself; the others do not fit
    f = _forecast(cfg, runs_root=root)
    assert f["answer_lengths_from"] == "measured" and str(same) in f["measured_from"]


@pytest.mark.slow
@pytest.mark.parametrize("pool", ["practice", "lengthy"])
def test_the_interval_holds_on_real_runs(pool):
    import torch

    threads = torch.get_num_threads()
    try:
        out = check(pool, reps=2, generations=2)
    finally:
        torch.set_num_threads(threads)
    runs = out["runs"]
    assert all(r["exit_code"] == 0 for r in runs)
    firsts, seconds = runs[0::2], runs[1::2]
    assert all(r["answers_from"] == "prior" for r in firsts)
    assert all(r["answers_from"] == "measured" and "earlier run" in r["measured_from"] for r in seconds)
    # a 90 % interval misses one run in ten: of four runs at least three inside (a calibrated
    # forecast fails this 5 % of the time on a fresh draw; these seeds are fixed). Measured over
    # 24 runs (6 reps x 2 pools): 23 inside; the one outside is a second run whose questions
    # came back 3 times in 6 draws, with the earlier run's answers cached.
    assert sum(r["p05"] <= r["actual_usd"] <= r["p95"] for r in runs) >= 3, (pool, runs)
    for first, second in zip(firsts, seconds):  # what the earlier run measured narrows the interval
        assert second["p95"] / second["p05"] < first["p95"] / first["p05"], (first, second)
    if pool == "lengthy":  # measured per model: the long reasoner's answers against the one-liner's
        tokens = seconds[0]["completion_tokens_per_call"]
        assert tokens["simulated/mathlete"] > 5 * tokens["simulated/coder"], tokens
        assert LENGTHS["simulated/mathlete"][0] > 5 * LENGTHS["simulated/coder"][0]


def test_a_collected_matrix_measures_answer_lengths_not_turns(questions_file, tmp_path):
    from trinity.optim.forecast import load_pilot

    cfg = _cfg(questions_file, tmp_path, max_turns=5)
    answers = tmp_path / "pilot.answers.jsonl"
    rows = [
        {"qid": f"q{i}", "model": model, "sample": 0, "text": "x" * (4 * n)}
        for i in range(6)
        for model, n in (("simulated/mathlete", 400), ("simulated/scholar", 60), ("simulated/coder", 12))
    ]
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    f = _forecast(cfg, pilot=load_pilot(tmp_path / "pilot.json"))
    assert f["completion_tokens_per_call"]["simulated/mathlete"] == pytest.approx(400, rel=0.3)
    assert f["completion_tokens_per_call"]["simulated/coder"] == pytest.approx(12, rel=0.3)
    # one single-turn answer per model and question says nothing of a session's turns
    assert 2.0 < f["expected_turns"] < 4.0
