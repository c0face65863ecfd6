"""`--objective competition`: a live TinyRouter run scores each candidate by pr_eval's formula on
its minibatch (the turn-1 model's cached answer, asked once per (question, model) the way their
`build_benchmark` asks, + live accuracy + efficiency + neutral novelty); the generation record
carries the best candidate's score and parts, equal to the formula worked here by hand from the
run's traces and journal."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import numpy as np
import pytest
from train_argv import train_argv

from trinity.io import read_jsonl
from trinity.practice.server import start_practice_server

FIX = Path(__file__).parents[1] / "fixtures" / "protocol"


def _their_worker_system() -> str:
    g = json.loads((FIX / "tinyrouter_golden.json").read_text(encoding="utf-8"))
    sess = g["sessions"][0]
    return next(c["messages"][0]["content"] for c, (_a, r) in zip(sess["calls"], sess["plan"]) if r == "Worker")


@pytest.mark.slow
@pytest.mark.parametrize("recipe", ["plain", "race"])
def test_tinyrouter_objective_is_pr_eval_on_the_minibatch(tmp_path, capsys, monkeypatch, recipe):
    """Plain: every candidate on every question. Race: each candidate is scored over its own
    sessions (an eliminated one over fewer), and the winner is the best of those that ran to the
    last stage."""
    from trinity.benchmarks.practice import practice_questions
    from trinity.cli import main
    from trinity.competition.text import router_text
    from trinity.grading import grade_question

    h = start_practice_server(port=0)
    h.server.recent = collections.deque(maxlen=10_000)
    monkeypatch.setenv("TRINITY_POOL_BASE_URL", h.base_url)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run = tmp_path / "run"
    try:
        rc = main(
            train_argv(
                run, "--pool", "practice", "--warm-start", "none", "--competition", "tinyrouter",
                "--live-recipe", recipe, "--json", mode="live", questions="practice", generations=1, popsize=4, m=4, seed=5,
            )
        )  # fmt: skip
        out = capsys.readouterr()
        assert rc == 0, out.out + out.err
        bodies = list(h.server.recent)
    finally:
        h.stop()
    meta = json.loads((run / "run.json").read_text())
    assert meta["protocol"] == "tinyrouter" and meta["objective"] == "competition"

    by_id = {q.id: q for q in practice_questions()}
    journal = {r["key"]: r["result"] for r in read_jsonl(run / "journal.jsonl")}
    cached_keys = [k for k in journal if k.startswith("cached/tinyrouter/")]
    assert cached_keys
    # the cached asks: their build_benchmark body (Worker contract, empty transcript, no reasoning)
    asks = [b for b in bodies if "reasoning_effort" not in b]
    assert len(asks) == len(cached_keys)  # once per (question, model)
    system = _their_worker_system()
    for b in asks:
        assert list(b) == ["model", "messages", "temperature", "top_p", "max_tokens"]
        assert (b["temperature"], b["top_p"], b["max_tokens"]) == (0.0, 1.0, 4096)
        assert b["messages"][0] == {"role": "system", "content": system}
        assert b["messages"][1]["content"].endswith("\n\nTRANSCRIPT SO FAR:\n(no prior turns yet)")

    def cached_right(qid: str, model: str) -> float:
        res = journal[f"cached/tinyrouter/{qid}/{model}"]
        return float(grade_question(by_id[qid], res["text"]).correct)

    per: dict[int, list[tuple[float, float, float]]] = collections.defaultdict(list)
    for tr in read_jsonl(run / "traces.jsonl"):
        turns = 5 if any(not t["ok"] for t in tr["turns"]) else len(tr["turns"])
        per[tr["candidate"]].append((cached_right(tr["qid"], tr["turns"][0]["model"]), float(tr["correct"]), turns))
        assert router_text("tinyrouter").render_question(by_id[tr["qid"]])  # a question the run knows
    scores = []
    for c in sorted(per):
        hidden, live, turns = (float(np.mean(x)) for x in zip(*per[c]))
        eff = max(0.0, (5 - turns) / 4) * live if live > 0 else 0.0
        scores.append((0.70 * hidden + 0.15 * live + 0.10 * eff + 0.05 * 0.5, hidden, live, eff, turns))
    gen = [e for e in read_jsonl(run / "events.jsonl") if e["type"] == "generation"][-1]
    if recipe == "race":
        n_sessions = [len(per[c]) for c in sorted(per)]
        assert len(set(n_sessions)) > 1  # the race stopped some candidates early
        finalists = [s for s, n in zip(scores, n_sessions) if n == max(n_sessions)]
        assert gen["competition_score"] == pytest.approx(max(f[0] for f in finalists))
        return
    best = max(scores, key=lambda s: s[0])
    assert gen["competition_score"] == pytest.approx(best[0])
    assert gen["best"] == pytest.approx(best[0])  # the ES's fitness is the competition score
    assert gen["mean"] == pytest.approx(np.mean([s[0] for s in scores]))
    assert (gen["score_cached"], gen["score_live"], gen["score_efficiency"], gen["score_avg_turns"]) == pytest.approx(
        best[1:]
    )
    assert gen["score_novelty"] == 0.5
    # the app's Train mode shows the same number for the final generation
    from minertui.runmodel import RunModel
    from minertui.screens.train import stats_text

    rm = RunModel(run)
    rm.poll()
    assert f"score {best[0]:.3f}" in stats_text(rm.snapshot()).plain


def test_scoring_parts_by_hand():
    from trinity.competition.profiles import MINIROUTER_PROFILE, TINYROUTER_PROFILE

    p = TINYROUTER_PROFILE.scoring.parts(0.5, 0.6, 2.0)
    assert p["efficiency"] == pytest.approx(0.75 * 0.6)
    assert p["score"] == pytest.approx(0.70 * 0.5 + 0.15 * 0.6 + 0.10 * 0.45 + 0.05 * 0.5)
    assert TINYROUTER_PROFILE.scoring.parts(0.5, 0.0, 1.0)["efficiency"] == 0.0
    assert MINIROUTER_PROFILE.scoring.parts(None, 0.85, 3.0)["score"] == 0.85


class _T:  # the parts of a Trajectory the objective reads
    def __init__(self, correct, n_turns, first_model="a", failed=False):
        self.correct, self.failed = correct, failed
        self.turns = [type("Turn", (), {"model": first_model})()] * n_turns


def _fitness(competition):
    from trinity.competition.profiles import get_profile
    from trinity.session.fitness import LiveFitness

    fit = LiveFitness.__new__(LiveFitness)  # only the scoring parts: no pool stack
    fit.scoring = get_profile(competition).scoring
    fit.cfg = type("Cfg", (), {"max_turns": 5})()
    return fit


def test_minirouter_objective_is_the_pass_rate():
    from trinity.data.questions import Question

    qs = [Question(id=f"q{i}", benchmark="math500", kind="math", question="x", answer="1") for i in range(2)]
    trajs = [_T(True, 2), _T(False, 5), _T(True, 1), _T(True, 3)]
    rewards, parts = _fitness("minirouter").competition_rewards(trajs, qs, 2, 2)
    assert rewards.tolist() == [[1.0, 0.0], [1.0, 1.0]]
    assert parts["score"].tolist() == [0.5, 1.0] and parts["avg_turns"].tolist() == [3.5, 2.0]


def test_tinyrouter_objective_rows_average_to_pr_eval():
    from trinity.data.questions import Question

    qs = [Question(id=f"q{i}", benchmark="math500", kind="math", question="x", answer="1") for i in range(2)]
    # candidate 0: right live on q0 in 2 turns, a failed session on q1 (counts 5 turns)
    # candidate 1: wrong live on both, 1 turn each, but picked model "b" whose cached answers are right
    trajs = [_T(True, 2, "a"), _T(False, 1, "a", failed=True), _T(False, 1, "b"), _T(False, 1, "b")]
    fit = _fitness("tinyrouter")
    fit.cached_correct = lambda items: {(q.id, m): m == "b" for q, m in items}
    rewards, parts = fit.competition_rewards(trajs, qs, 2, 2)
    eff0 = max(0.0, (5 - 3.5) / 4) * 0.5
    s0 = 0.70 * 0.0 + 0.15 * 0.5 + 0.10 * eff0 + 0.05 * 0.5
    s1 = 0.70 * 1.0 + 0.15 * 0.0 + 0.10 * 0.0 + 0.05 * 0.5
    assert rewards.mean(axis=1) == pytest.approx([s0, s1])
    assert parts["score"] == pytest.approx([s0, s1]) and parts["cached"].tolist() == [0.0, 1.0]
    assert parts["avg_turns"].tolist() == [3.5, 1.0]
