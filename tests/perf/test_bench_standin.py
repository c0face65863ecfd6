"""The skilled stand-in pool: over real loopback HTTP it bills exactly what it reports in `usage`,
its answers are graded by the benchmark's real grader as it meant them, each model is strong on
one topic, answer lengths are per-model distributions, and its Verifier is as trustworthy as stated."""

from __future__ import annotations

import hashlib
import statistics

import httpx
import pytest

from trinity.benchmarks.practice import practice_questions
from trinity.benchmarks.prompts import turn_messages
from trinity.competition.protocol import get_protocol
from trinity.grading import grade_question
from trinity.perf.standin import STANDIN_MODELS, Standin, pool_overrides, start_standin
from trinity.session.transcript import Turn

OPEN = get_protocol(None)


def _qs(kinds=("math", "mc")):
    return [q for q in practice_questions() if q.kind in kinds]


def test_it_bills_what_it_reports_over_http():
    qs = _qs(("math", "mc", "code"))[::4]
    with start_standin(qs, seed=3) as srv:
        price = {m.id: m for m in STANDIN_MODELS}
        total = 0.0
        with httpx.Client(base_url=srv.base_url, timeout=30) as c:
            for i, q in enumerate(qs):
                model = STANDIN_MODELS[i % 3].id
                r = c.post("/chat/completions", json={"model": model, "messages": turn_messages(OPEN, "Worker", q, [])})
                assert r.status_code == 200
                body = r.json()
                u = body["usage"]
                text = body["choices"][0]["message"]["content"]
                assert u["completion_tokens"] == (len(text) + 3) // 4 > 0 and u["prompt_tokens"] > 0
                want = (
                    u["prompt_tokens"] * price[model].price_in + u["completion_tokens"] * price[model].price_out
                ) / 1e6
                assert u["cost"] == pytest.approx(want, abs=1e-12)
                total += u["cost"]
            bad = c.post("/chat/completions", json={"model": "nobody", "messages": []})
            assert bad.status_code == 400 and "error" in bad.json()
        st = srv.stats()
        assert st.billed_usd == pytest.approx(total, abs=1e-9)
        assert sum(v["calls"] for v in st.by_model.values()) == len(qs)
    ov = pool_overrides(srv)
    assert ov["pool"] == "local" and set(ov["prices"]) == {m.id for m in STANDIN_MODELS}


def test_answers_grade_as_meant_each_model_has_its_topic_and_lengths_vary():
    qs = _qs()
    sd = Standin(qs, seed=0)
    right: dict[tuple[str, str], list[bool]] = {}
    lengths: dict[str, list[int]] = {m.id: [] for m in STANDIN_MODELS}
    for q in qs:
        for m in STANDIN_MODELS:
            for seed in range(3):
                text, usage = sd.reply(m.id, turn_messages(OPEN, "Worker", q, []), seed)
                truth = sd._truth[hashlib.sha256(text.strip().encode()).hexdigest()]
                assert bool(grade_question(q, text).correct) == truth  # the real grader agrees
                right.setdefault((m.id, q.kind), []).append(truth)
                lengths[m.id].append(usage["completion_tokens"])
    acc = {k: sum(v) / len(v) for k, v in right.items()}
    assert acc[("standin/small-math", "math")] > acc[("standin/mid-knowledge", "math")] + 0.15
    assert acc[("standin/mid-knowledge", "mc")] > acc[("standin/small-math", "mc")] + 0.15
    # lengths: distributions, not constants; the large model writes the most
    for m in STANDIN_MODELS:
        assert len(set(lengths[m.id])) > 5
    med = {m: statistics.median(v) for m, v in lengths.items()}
    assert med["standin/large-coder"] > med["standin/mid-knowledge"] > med["standin/small-math"]
    # the expected per-topic ceiling is each topic's best model; no single model reaches it
    ceil = sd.ceiling(qs)
    assert ceil["per_topic"]["math"]["best_model"] == "standin/small-math"
    assert ceil["per_topic"]["mc"]["best_model"] == "standin/mid-knowledge"
    assert max(ceil["singles"].values()) < ceil["per_topic_ceiling"] - 0.1


def test_the_verifier_is_as_trustworthy_as_stated():
    qs = _qs()
    sd = Standin(qs, seed=1)
    v = STANDIN_MODELS[2]
    honest = n = 0
    for q in qs:
        for seed in range(6):
            answer, _ = sd.reply("standin/small-math", turn_messages(OPEN, "Worker", q, []), seed)
            truth = bool(grade_question(q, answer).correct)
            turns = [Turn("standin/small-math", "Worker", [], [], output=answer)]
            verdict, _ = sd.reply(v.id, turn_messages(OPEN, "Verifier", q, turns), seed)
            accept = verdict.rstrip().endswith("VERDICT: ACCEPT")
            honest += accept == truth
            n += 1
    assert abs(honest / n - v.verifier_accuracy) < 0.08, honest / n
