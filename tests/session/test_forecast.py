"""`trinity plan` and forecast.json: a live run's cost forecast before it spends, checked
against what a run the test makes actually spends (practice pool over loopback)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from trinity.cli import main
from trinity.config import load_config
from trinity.optim.forecast import forecast, load_pilot
from trinity.optim.runinputs import inputs_from_config
from trinity.practice.server import start_practice_server


def _cfg(questions_file, **over):
    base = {
        "mode": "live",
        "pool": "practice",
        "questions": str(questions_file),
        "encoder": "tiny-qwen3",
        "popsize": 4,
        "m": 3,
        "generations": 1,
        "device": "cpu",
    }
    return load_config(None, {**base, **over})


def _cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture
def loopback(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with start_practice_server(port=0) as server:
        monkeypatch.setenv("TRINITY_POOL_BASE_URL", server.base_url)
        yield server


@pytest.mark.slow
def test_the_forecast_interval_holds_on_a_run(questions_file, tmp_path, loopback):
    import torch

    from trinity.optim.engine import start_run

    torch.set_num_threads(1)
    pilot_dir, run_dir = tmp_path / "pilot", tmp_path / "run"
    assert start_run(_cfg(questions_file, generations=1), run_dir=pilot_dir).exit_code == 0
    rc, out, _ = _cli(
        "plan", "--pool", "practice", "--questions", str(questions_file), "--encoder", "tiny-qwen3",
        "--popsize", "4", "--m", "3", "--generations", "3", "--pilot", str(pilot_dir), "--json",
    )  # fmt: skip
    assert rc == 0
    plan = json.loads(out)
    from trinity.session.racing import race_sessions

    # the race recipe: successive halving, and the incumbent again on all 3 questions
    assert plan["sessions"] == 3 * (race_sessions(4, 3) + 3) and plan["measured_from"].startswith("pilot")
    billed0 = loopback.stats.billed_usd
    cfg = _cfg(questions_file, generations=3)
    assert start_run(cfg, run_dir=run_dir, pilot=str(pilot_dir)).exit_code == 0
    written = json.loads((run_dir / "forecast.json").read_text())
    assert written["usd"]["p05"] < written["usd"]["p95"] and written["pilot_calls"] == plan["pilot_calls"]
    rc, out, _ = _cli("ledger", "report", str(run_dir), "--json")
    rep = json.loads(out)["forecast"]
    actual = loopback.stats.billed_usd - billed0  # what the server billed for this run
    assert rep["actual_usd"] == pytest.approx(actual, abs=1e-6 * 200)
    assert rep["complete"] and rep["inside"], (rep, written)
    assert written["usd"]["p05"] <= actual <= written["usd"]["p95"]


def test_plan_says_when_the_upper_bound_passes_the_budget(questions_file, tmp_path, loopback):
    rc, out, _ = _cli(
        "plan", "--pool", "practice", "--questions", str(questions_file), "--encoder", "tiny-qwen3",
        "--popsize", "8", "--m", "4", "--generations", "50", "--budget-usd", "0.01",
    )  # fmt: skip
    assert rc == 0
    assert "OVER BUDGET" in out and "the budget buys about" in out
    cfg = _cfg(questions_file, generations=50, popsize=8, m=4, budget_usd=0.01)
    inputs = inputs_from_config(cfg)
    f = forecast(cfg, [q for q in inputs.questions if q.id in set(inputs.splits["train"])])
    g = f["generations_budget_buys"]
    assert f["over_budget"] and 0 <= g["at_p95"] <= g["median"] < 50
    # the budget buys what its median generation costs, within rounding down
    assert g["median"] == int(0.01 // f["usd_per_generation"]["median"])


def test_more_generations_or_candidates_cost_more(questions_file, loopback):
    def median(**over):
        cfg = _cfg(questions_file, **over)
        inputs = inputs_from_config(cfg)
        return forecast(cfg, [q for q in inputs.questions if q.id in set(inputs.splits["train"])])["usd"]["median"]

    assert median(generations=10) > median(generations=2) > 0
    assert median(popsize=16, generations=2) > median(popsize=4, generations=2)


def test_a_bad_pilot_is_one_line(questions_file, tmp_path, loopback):
    bad = tmp_path / "traces.jsonl"
    bad.write_text("{not json\n")
    rc, out, err = _cli(
        "plan", "--pool", "practice", "--questions", str(questions_file), "--pilot", str(bad),
    )  # fmt: skip
    assert rc != 0 and err.count("\n") == 1 and "pilot" in err and "line 1" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(Exception, match="no traces.jsonl"):
        load_pilot(empty)


def test_question_draws_follow_the_trainers_draws():
    import numpy as np

    from trinity.optim.forecast import question_draws

    rng = np.random.default_rng(0)
    fresh, distinct = question_draws(rng, 24, 3, 2, 0, 20000)
    # generation 1: 3 new; generation 2: each of 3 is new with chance 21/24
    assert fresh.mean() == pytest.approx((3 + 3 * 21 / 24) / 6, abs=0.005)
    assert distinct.min() >= 3 and distinct.max() <= 6
    seen_all, _ = question_draws(rng, 24, 3, 2, 24, 100)  # an earlier run went through every question
    assert (seen_all == 0).all()
    one, _ = question_draws(rng, 1, 3, 4, 0, 10)  # one question: new once, then again
    assert np.allclose(one, 0.25)


def test_a_pilot_splits_its_calls_by_whether_the_question_came_back():
    from trinity.optim.forecast import Pilot, PilotCall

    def call(sid, paid):
        return PilotCall(sid, 1, "simulated/coder", "Worker", 50, 10, paid)

    calls = [call("1/0/a/0", True), call("1/1/a/1", False), call("1/0/x/y/2", True)]
    calls += [call("2/0/a/3", False), call("2/0/b/4", True), call("3/0/x/y/5", False)]
    fresh, repeat = Pilot("p", calls, []).calls_by_question_novelty()
    # a question's first generation is new for every candidate; a qid may hold slashes
    assert [c.session for c in fresh] == ["1/0/a/0", "1/1/a/1", "1/0/x/y/2", "2/0/b/4"]
    assert [c.session for c in repeat] == ["2/0/a/3", "3/0/x/y/5"]
    answers_only = Pilot("p", calls, [], sessions_known=False).calls_by_question_novelty()
    assert len(answers_only[0]) == 6 and not answers_only[1]


def test_the_forecast_says_patience_may_end_the_run_sooner(questions_file, tmp_path):
    from trinity.config import load_config
    from trinity.optim.forecast import describe, forecast
    from trinity.optim.runinputs import inputs_from_config

    base = {
        "mode": "live",
        "pool": "practice",
        "base_url": "http://127.0.0.1:9",
        "cache_path": str(tmp_path / "responses.sqlite"),
        "questions": str(questions_file),
        "encoder": "tiny-qwen3",
        "popsize": 4,
        "m": 3,
        "generations": 10,
    }
    for patience, says in ((None, False), (3, True)):
        cfg = load_config(None, {**base, **({"patience": patience} if patience else {})})
        inputs = inputs_from_config(cfg)
        train = set(inputs.splits["train"])
        f = forecast(cfg, [q for q in inputs.questions if q.id in train])
        assert f["patience"] == patience and f["generations"] == 10  # the interval covers all of them
        assert ("with --patience 3 the run ends once" in describe(f)) is says
