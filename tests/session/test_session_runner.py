"""SessionRunner's turn rules, one by one, with a scripted pool client (the client's `chat`
interface, returning real `ChatResult`s) and scripted router logits: which (model, role) each turn
gets is fixed, so each rule is checked on its own. Grading is the real grader."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from trinity.data.questions import Question
from trinity.model import ROLES, policy
from trinity.pool.client import ChatResult
from trinity.session.loop import SessionRunner, SessionSpec, _stable_seed

MODELS = ["m0", "m1", "m2"]
Q = Question("q-17x23", "practice", "What is 17 \\times 23?", "391", "math")
RIGHT = "17 times 23: 17*20 + 17*3 = 340 + 51.\n\nThe final answer is $\\boxed{391}$."
WRONG = "Rounding a little, the final answer is $\\boxed{400}$."


class ScriptedClient:
    """Answers each call with the next reply of its role's script; records every call."""

    def __init__(self, replies: dict[str, list[str | None]]):
        self.replies = {r: list(v) for r, v in replies.items()}
        self.calls: list[tuple[str, str, str]] = []  # (model, role, journal key)

    async def chat(self, model, messages, purpose="train", journal_key=None, **_):
        role = messages[0]["content"].split("\n", 1)[0].split()[3]  # "You are the <Role> in …"
        self.calls.append((model, role, journal_key))
        text = self.replies[role].pop(0)
        if text is None:  # a call that failed after its retries
            return ChatResult(text="", ok=False, error="HTTP 503 after 3 attempts", status=503, model=model)
        return ChatResult(
            text=text,
            ok=True,
            error=None,
            status=200,
            prompt_tokens=10,
            completion_tokens=20,
            cost_usd=0.001,
            model=model,
        )


def scripted_logits(plan: list[tuple[int, str]]):
    """logits_fn choosing plan[turn-1] = (model index, role) under argmax, for every session."""
    step = {"n": 0}

    def fn(texts, cands, streams):
        model, role = plan[step["n"]]
        step["n"] += 1
        row = np.zeros(len(MODELS) + 3)
        row[model] = 5.0
        row[len(MODELS) + ROLES.index(role)] = 5.0
        return np.tile(row, (len(texts), 1))

    return fn


def run(client, logits_fn, **spec):
    runner = SessionRunner(client, logits_fn, SessionSpec(MODELS, key_prefix="g0", **spec))
    return asyncio.run(runner.run([(0, Q)]))[0]


def test_a_verifier_accept_before_any_worker_output_does_not_end_the_session():
    client = ScriptedClient({"Verifier": ["Looks fine.\nVERDICT: ACCEPT"], "Worker": [WRONG, RIGHT], "Thinker": []})
    t = run(client, scripted_logits([(2, "Verifier"), (0, "Worker"), (1, "Worker")]), max_turns=3)
    assert t.turns[0].verdict == "ACCEPT"  # ACCEPT with nothing to accept: the session goes on
    assert [u.role for u in t.turns] == ["Verifier", "Worker", "Worker"]
    assert t.correct and t.answer == "391"  # the newest Worker answer is scored


def test_accept_after_a_worker_output_ends_the_session():
    client = ScriptedClient(
        {"Worker": [RIGHT], "Verifier": ["Checked every step.\nVERDICT: ACCEPT"], "Thinker": ["never asked"]}
    )
    t = run(client, scripted_logits([(0, "Worker"), (1, "Verifier"), (2, "Thinker")]), max_turns=5)
    assert [u.role for u in t.turns] == ["Worker", "Verifier"]
    assert t.done and t.correct and t.answer == "391"
    assert len(client.calls) == 2


def test_revise_goes_on_until_max_turns():
    client = ScriptedClient({"Worker": [WRONG, WRONG, WRONG], "Verifier": ["VERDICT: REVISE"] * 2, "Thinker": []})
    plan = [(0, "Worker"), (1, "Verifier"), (0, "Worker"), (1, "Verifier"), (0, "Worker")]
    t = run(client, scripted_logits(plan), max_turns=5)
    assert len(t.turns) == 5 and not t.correct and t.answer == "400"


def test_a_failed_call_ends_the_session_with_no_reward():
    client = ScriptedClient({"Worker": [RIGHT], "Thinker": [None], "Verifier": []})
    t = run(client, scripted_logits([(0, "Worker"), (1, "Thinker"), (0, "Worker")]), max_turns=5)
    assert len(t.turns) == 2 and not t.turns[1].ok
    assert t.done and t.failed and not t.correct  # the right Worker answer before it is not scored
    assert t.reason.startswith("call failed: HTTP 503")
    assert len(client.calls) == 2  # nothing was asked after the failure


def test_the_scored_answer_is_the_newest_non_verifier_turn_with_an_answer():
    # Worker right, then a Thinker whose prose has no boxed answer, then a Verifier quoting a
    # wrong boxed answer: the Worker's answer is scored (Thinker: none; Verifier: never).
    client = ScriptedClient(
        {
            "Worker": [WRONG, RIGHT],
            "Thinker": ["Plan: multiply, then check the units digit."],
            "Verifier": ["It should be $\\boxed{400}$.\nVERDICT: REVISE"],
        }
    )
    plan = [(0, "Worker"), (1, "Worker"), (2, "Thinker"), (1, "Verifier")]
    t = run(client, scripted_logits(plan), max_turns=4)
    assert [u.role for u in t.turns] == ["Worker", "Worker", "Thinker", "Verifier"]
    assert t.answer == "391" and t.correct and t.answer_text == RIGHT


def test_no_extractable_answer_is_wrong_with_a_reason():
    client = ScriptedClient({"Thinker": ["Think about place values first."], "Worker": [], "Verifier": []})
    t = run(client, scripted_logits([(2, "Thinker")]), max_turns=1)
    assert not t.correct and t.answer is None and "no extractable answer" in t.reason


def test_journal_keys_name_generation_candidate_question_turn_model_role():
    client = ScriptedClient({"Worker": [WRONG, RIGHT], "Verifier": [], "Thinker": []})
    run(client, scripted_logits([(0, "Worker"), (2, "Worker")]), max_turns=2)
    assert [k for _, _, k in client.calls] == ["g0/c0/q-17x23/t1/m0/Worker", "g0/c0/q-17x23/t2/m2/Worker"]


def test_sample_draws_with_the_model_policy_from_a_per_session_seed():
    """`sample` is `trinity.model.policy.sample` (the cached fitness's draw) on a RandomState
    seeded by (seed, key prefix, candidate, question, turn): the same logits and seed give the
    same draw in the live loop as policy.sample gives, and again on a resume."""
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(40, len(MODELS) + 3))
    trajs = [type("T", (), {"candidate": c, "qid": f"q{c % 7}"})() for c in range(40)]
    spec = SessionSpec(MODELS, policy="sample", temperature=0.7, seed=3, key_prefix="g4")
    mi, ri, mp, rp = SessionRunner(None, None, spec)._decide(logits, trajs, turn=2)
    for k, t in enumerate(trajs):
        want = policy.sample(
            logits[k], len(MODELS), np.random.RandomState(_stable_seed(3, "g4", t.candidate, t.qid, 2)), 0.7
        )
        assert (mi[k], ri[k]) == (int(want[0]), int(want[1]))
    again = SessionRunner(None, None, spec)._decide(logits, trajs, turn=2)
    assert np.array_equal(again[0], mi) and np.array_equal(again[1], ri)
    # Not a constant: different sessions draw different models, and the shown probabilities are
    # the temperature-1 softmax of each group.
    assert len(set(mi.tolist())) > 1
    want_mp, want_rp = policy.group_probs(logits, len(MODELS))
    assert np.allclose(mp, want_mp) and np.allclose(rp, want_rp)


def test_sample_frequencies_follow_the_tempered_softmax():
    logits = np.array([[2.0, 0.0, -1.0, 0.0, 1.0, 0.0]])
    spec = SessionSpec(MODELS, policy="sample", temperature=2.0, seed=0, key_prefix="g")
    n = 4000
    trajs = [type("T", (), {"candidate": c, "qid": "q"})() for c in range(n)]
    mi, ri, _, _ = SessionRunner(None, None, spec)._decide(np.repeat(logits, n, axis=0), trajs, turn=1)
    p_models, p_roles = policy.group_probs(logits[0], len(MODELS), 2.0)
    assert np.allclose(np.bincount(mi, minlength=3) / n, p_models, atol=0.03)
    assert np.allclose(np.bincount(ri, minlength=3) / n, p_roles, atol=0.03)


def test_argmax_is_the_default_and_ties_go_to_the_lower_index():
    logits = np.array([[1.0, 1.0, 0.0, 0.0, 3.0, 3.0]])
    mi, ri, _, _ = SessionRunner(None, None, SessionSpec(MODELS))._decide(logits, [None], turn=1)
    assert (int(mi[0]), int(ri[0])) == (0, 1)


@pytest.mark.parametrize("max_turns", [1, 3])
def test_sessions_stop_at_max_turns(max_turns):
    client = ScriptedClient({"Worker": [WRONG] * 5, "Verifier": [], "Thinker": []})
    t = run(client, scripted_logits([(0, "Worker")] * 5), max_turns=max_turns)
    assert len(t.turns) == max_turns
