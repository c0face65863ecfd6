"""The router reads what each competition's validator feeds its encoder (issue 11, points 6, 9, 11).

Golden strings written by hand from their code (TinyRouter 1767d1f: `orchestration/session.py`
`_transcript_text`, `coordinator/slm.py` `HEAD_INPUT_SUFFIX`, `adapters/loaders.py` `_format_mcq`,
`roles/postprocess.py`; MiniRouter 6a1e0f4: the same files, `slm.py` without the suffix), and a
reference coordinator written here from their published algorithm (tokenise the transcript
[+ suffix] without special tokens, append EOS, rebuild the SVF layer's 7 weights as
U diag(s ⊙ z) Vᵀ, final hidden state at −2, L2-normalise, argmax of each head group) against
which our live session loop's decisions are compared at turns 1–3 on tiny-qwen3.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from reference_coordinator import ROLE_ORDER, ReferenceCoordinator
from reference_coordinator import postprocess as _postprocess

from trinity.competition.text import (
    ELISION_MARKER,
    MINIROUTER,
    TINYROUTER,
    resolve_competition,
    router_text,
    run_competition,
    theta_length,
    theta_problem,
)
from trinity.data.questions import Question
from trinity.errors import ConfigError

MATH = Question("math500-7", "math500", "What is $1+1$?", "2", "math")
MMLU = Question(
    "mmlu-3",
    "mmlu",
    "  Which gas do plants absorb?\n",
    "B",
    "mc",
    {"choices": ["Oxygen", "Carbon dioxide", "Nitrogen", "Helium"], "subject": "biology"},
)
CODE = Question(
    "livecodebench-abc", "livecodebench", "Read n and print n*n.\n", None, "code", {"starter_code": "", "tests": []}
)

MMLU_QUERY = (
    "Which gas do plants absorb?\n\nA. Oxygen\nB. Carbon dioxide\nC. Nitrogen\nD. Helium\n\n"
    "Answer with the single letter of the correct option."
)
QUERY = {"math": "What is $1+1$?", "mmlu": MMLU_QUERY, "code": "Read n and print n*n.\n"}
QUESTION = {"math": MATH, "mmlu": MMLU, "code": CODE}

TR_MODELS = ("qwen/qwen3.5-35b-a3b", "google/gemini-3.1-flash-lite", "deepseek/deepseek-v4-flash")
MR_MODELS = ("deepseek-ai/DeepSeek-V3.2-TEE", "zai-org/GLM-5-TEE", "moonshotai/Kimi-K2.5-TEE")
# (role, model index, raw output) of turns 1 and 2; raw outputs carry the whitespace a model sends
TURNS = [("Thinker", 0, "  Plan: add the numbers.\n\n"), ("Worker", 1, "The answer is \\boxed{2}.\n")]

# Written out by hand: turn 1, 2, 3 of each kind, TinyRouter then MiniRouter.
GOLDEN = {
    (TINYROUTER, "math"): [
        "QUERY:\nWhat is $1+1$?\n<Head Input>",
        "QUERY:\nWhat is $1+1$?\n\n[Turn 1 | thinker | qwen3.5-35b-a3b]\nPlan: add the numbers.\n<Head Input>",
        (
            "QUERY:\nWhat is $1+1$?\n\n[Turn 1 | thinker | qwen3.5-35b-a3b]\nPlan: add the numbers.\n\n"
            "[Turn 2 | worker | gemini-3.1-flash-lite]\nThe answer is \\boxed{2}.\n<Head Input>"
        ),
    ],
    (TINYROUTER, "mmlu"): [
        (
            "QUERY:\nWhich gas do plants absorb?\n\nA. Oxygen\nB. Carbon dioxide\nC. Nitrogen\nD. Helium\n\n"
            "Answer with the single letter of the correct option.\n<Head Input>"
        ),
        (
            "QUERY:\nWhich gas do plants absorb?\n\nA. Oxygen\nB. Carbon dioxide\nC. Nitrogen\nD. Helium\n\n"
            "Answer with the single letter of the correct option.\n\n[Turn 1 | thinker | qwen3.5-35b-a3b]\n"
            "Plan: add the numbers.\n<Head Input>"
        ),
        (
            "QUERY:\nWhich gas do plants absorb?\n\nA. Oxygen\nB. Carbon dioxide\nC. Nitrogen\nD. Helium\n\n"
            "Answer with the single letter of the correct option.\n\n[Turn 1 | thinker | qwen3.5-35b-a3b]\n"
            "Plan: add the numbers.\n\n[Turn 2 | worker | gemini-3.1-flash-lite]\nThe answer is \\boxed{2}.\n"
            "<Head Input>"
        ),
    ],
    (TINYROUTER, "code"): [
        "QUERY:\nRead n and print n*n.\n\n<Head Input>",
        (
            "QUERY:\nRead n and print n*n.\n\n\n[Turn 1 | thinker | qwen3.5-35b-a3b]\nPlan: add the numbers.\n"
            "<Head Input>"
        ),
        (
            "QUERY:\nRead n and print n*n.\n\n\n[Turn 1 | thinker | qwen3.5-35b-a3b]\nPlan: add the numbers.\n\n"
            "[Turn 2 | worker | gemini-3.1-flash-lite]\nThe answer is \\boxed{2}.\n<Head Input>"
        ),
    ],
    (MINIROUTER, "math"): [
        "QUERY:\nWhat is $1+1$?",
        "QUERY:\nWhat is $1+1$?\n\n[Turn 1 | thinker | deepseek-v3p2]\nPlan: add the numbers.",
        (
            "QUERY:\nWhat is $1+1$?\n\n[Turn 1 | thinker | deepseek-v3p2]\nPlan: add the numbers.\n\n"
            "[Turn 2 | worker | glm-5]\nThe answer is \\boxed{2}."
        ),
    ],
    (MINIROUTER, "mmlu"): [
        (
            "QUERY:\nWhich gas do plants absorb?\n\nA. Oxygen\nB. Carbon dioxide\nC. Nitrogen\nD. Helium\n\n"
            "Answer with the single letter of the correct option."
        ),
        (
            "QUERY:\nWhich gas do plants absorb?\n\nA. Oxygen\nB. Carbon dioxide\nC. Nitrogen\nD. Helium\n\n"
            "Answer with the single letter of the correct option.\n\n[Turn 1 | thinker | deepseek-v3p2]\n"
            "Plan: add the numbers."
        ),
        (
            "QUERY:\nWhich gas do plants absorb?\n\nA. Oxygen\nB. Carbon dioxide\nC. Nitrogen\nD. Helium\n\n"
            "Answer with the single letter of the correct option.\n\n[Turn 1 | thinker | deepseek-v3p2]\n"
            "Plan: add the numbers.\n\n[Turn 2 | worker | glm-5]\nThe answer is \\boxed{2}."
        ),
    ],
    (MINIROUTER, "code"): [
        "QUERY:\nRead n and print n*n.\n",
        "QUERY:\nRead n and print n*n.\n\n\n[Turn 1 | thinker | deepseek-v3p2]\nPlan: add the numbers.",
        (
            "QUERY:\nRead n and print n*n.\n\n\n[Turn 1 | thinker | deepseek-v3p2]\nPlan: add the numbers.\n\n"
            "[Turn 2 | worker | glm-5]\nThe answer is \\boxed{2}."
        ),
    ],
}


@pytest.mark.parametrize("competition, kind", sorted(GOLDEN))
def test_encoder_input_golden_turns_1_to_3(competition, kind):
    rt = router_text(competition)
    models = TR_MODELS if competition == TINYROUTER else MR_MODELS
    turns = [(role, models[j], out) for role, j, out in TURNS]
    assert rt.render_question(QUESTION[kind]) == QUERY[kind]
    for k in range(3):
        assert rt.question_input(QUESTION[kind], turns[:k]) == GOLDEN[competition, kind][k]


def test_mcq_rendering_edges():
    rt = router_text(TINYROUTER)
    # more than 8 options: their letters stop at H (zip truncates)
    many = Question("mmlu-9", "mmlu", "Pick", "A", "mc", {"choices": [str(i) for i in range(10)]})
    assert rt.render_question(many).splitlines()[2:10] == [f"{c}. {i}" for i, c in enumerate("ABCDEFGH")]
    assert "I. 8" not in rt.render_question(many)
    # no choices recorded (e.g. a practice question with the options in its text): as it is
    bare = Question("p-1", "practice", "Which is largest? (A) 1 (B) 2", "B", "mc")
    assert rt.render_question(bare) == "Which is largest? (A) 1 (B) 2"
    gpqa = Question("gpqa-1", "gpqa", "Q", "A", "mc", {"choices": ["x", "y"]})
    assert rt.render_question(gpqa) == "Q\n\nA. x\nB. y\n\nAnswer with the single letter of the correct option."


def test_output_postprocess_matches_theirs():
    rt = router_text(MINIROUTER)
    assert rt.output_text("  \n x \n") == "x"
    assert rt.output_text(None) == ""
    long = "a" * 4000 + "b" * 5000  # 9000 > 8000: budget 8000 - 21 = 7979, head 3989, tail 3990
    assert len(ELISION_MARKER) == 21
    out = rt.output_text(long)
    assert out == "a" * 3989 + "\n... [truncated] ...\n" + "b" * 3990
    assert rt.output_text(out) == out  # idempotent: already processed text passes unchanged
    assert rt.output_text("x" * 8000) == "x" * 8000


def test_model_names_roles_and_resolution():
    tr, mr = router_text(TINYROUTER), router_text(MINIROUTER)
    assert [tr.model_name(m) for m in TR_MODELS] == ["qwen3.5-35b-a3b", "gemini-3.1-flash-lite", "deepseek-v4-flash"]
    assert tr.model_name("meta/llama-x") == "llama-x"  # their pool names are the slug's tail
    assert [mr.model_name(m) for m in MR_MODELS] == ["deepseek-v3p2", "glm-5", "kimi-k2p5"]
    assert mr.model_name("openai/gpt-oss-120b") == "gpt-oss-120b"
    assert mr.model_name("some/unknown") == "some/unknown"
    assert [tr.role_name(r) for r in ("Thinker", "Worker", "Verifier")] == ["thinker", "worker", "verifier"]
    assert resolve_competition(None, "openrouter") == TINYROUTER
    assert resolve_competition(None, "chutes") == MINIROUTER
    assert resolve_competition(None, "minibridge") == MINIROUTER
    assert resolve_competition(None, "practice") == TINYROUTER
    assert resolve_competition(None, None) == TINYROUTER
    assert resolve_competition("MiniRouter", "openrouter") == MINIROUTER
    with pytest.raises(ConfigError, match="unknown competition 'kaggle'"):
        resolve_competition("kaggle", None)
    assert run_competition({"competition": "minirouter", "config": {"pool": "openrouter"}}) == MINIROUTER
    assert run_competition({"config": {"pool": "chutes"}}) == MINIROUTER  # a run from before the key


def test_theta_length_rule():
    assert theta_length(3) == 13_312 and theta_length(4) == 14_336
    assert theta_problem(TINYROUTER, 3, 13_312, 1024) is None
    assert theta_problem(MINIROUTER, 4, 14_336, 1024) is None
    msg = theta_problem(TINYROUTER, 4, 14_336, 1024)
    assert "13,312" in msg and "14,336" in msg and "(7, 1024)" in msg
    msg = theta_problem(MINIROUTER, 5, 15_360, 1024)
    assert "15,360" in msg and "13,312" in msg and "14,336" in msg
    assert theta_problem(TINYROUTER, 2, 123, 64) is None  # a test encoder's θ is no submission


# ---- decisions: our live session loop vs a reference coordinator -------------------------------


class ScriptedClient:
    """The session loop's client interface, answering from a script (no pool, no HTTP)."""

    def __init__(self):
        self.raw: dict[tuple[int, str, int], str] = {}  # (candidate, question id, turn) -> raw output

    async def chat(self, model, messages, purpose="train", journal_key=""):
        from trinity.pool.client import ChatResult

        parts = journal_key.split("/")  # g1/c{cand}/{qid}/t{turn}/{model id with /}/{role}
        cand, qid, turn = int(parts[1][1:]), parts[2], int(parts[3][1:])
        body = f"  Step {turn} by {model} for c{cand}: x = {len(messages[1]['content']) % 97}.\n"
        if turn == 2 and cand == 1 and qid == MATH.id:
            body = "  " + "long reasoning " * 560 + "\\boxed{7}  \n"  # > 8000 characters: elided
        self.raw[cand, qid, turn] = body
        return ChatResult(text=body, ok=True, error=None, status=200, model=model)


@pytest.fixture(scope="module")
def encoder():
    from trinity.model.encoder import load_encoder

    return load_encoder("tiny-qwen3", device="cpu", dtype="float32", seed=0)


@pytest.mark.parametrize("competition", [TINYROUTER, MINIROUTER])
def test_live_decisions_equal_reference_coordinator(encoder, competition):
    from trinity.model.router import Router
    from trinity.session.loop import SessionRunner, SessionSpec

    models = TR_MODELS if competition == TINYROUTER else MR_MODELS
    router = Router(encoder, len(models))
    rng = np.random.RandomState(7)
    P = 3
    thetas = np.tile(router.initial_mean(), (P, 1))
    n_head = router.n_outputs * router.hidden
    thetas[:, :n_head] = rng.randn(P, n_head)
    thetas[:, n_head:] += 0.2 * rng.randn(P, router.svf_size)
    questions = [MATH, MMLU, CODE]
    pairs = [(c, q) for c in range(P) for q in questions]
    spec = SessionSpec(list(models), max_turns=3, key_prefix="g1", competition=competition)
    client = ScriptedClient()
    runner = SessionRunner(client, router.session_encoder(thetas).logits, spec)
    trajs = asyncio.run(runner.run(pairs))

    suffix = "\n<Head Input>" if competition == TINYROUTER else ""
    # their coordinator on transformers' model and tokenizer, with the encoder's weights
    ref = ReferenceCoordinator(
        encoder.model.to_transformers(), encoder.tokenizer.to_transformers(), len(models), suffix
    )
    names = [router_text(competition).model_name(m) for m in models]
    checked = 0
    for c in range(P):
        ref.configure(thetas[c], router.hidden)
        for (cand, q), traj in zip(pairs, trajs):
            if cand != c:
                continue
            query = QUERY[{"math": "math", "mc": "mmlu", "code": "code"}[q.kind]]
            history = []
            for t in traj.turns:  # every turn's decision, given the same history
                want_model, want_role = ref.decide(ref.transcript(query, history))
                assert (names[models.index(t.model)], t.role.lower()) == (names[want_model], want_role), (
                    competition,
                    c,
                    q.id,
                    len(history) + 1,
                )
                raw = client.raw[c, q.id, len(history) + 1]
                history.append((t.role.lower(), names[models.index(t.model)], _postprocess(raw)))
                checked += 1
    assert checked == P * len(questions) * 3  # three turns each (no Verifier ACCEPT in the script)
    # the long output was elided the competitions' way in what the router read
    long_turns = [tr.turns[1].output for (c, q), tr in zip(pairs, trajs) if (c, q.id) == (1, MATH.id)]
    assert len(long_turns) == 1 and "\n... [truncated] ...\n" in long_turns[0] and len(long_turns[0]) == 8000

    # cached mode (turn 1, the fast batched path) and a trained run's routing give the same decisions
    from trinity.optim.fitness import question_text

    texts = [question_text(competition)(q) for q in questions]
    lg = router.population_logits(thetas, texts)  # (P, 3, M + 3)
    for c in range(P):
        ref.configure(thetas[c], router.hidden)
        for i, q in enumerate(questions):
            query = QUERY[{"math": "math", "mc": "mmlu", "code": "code"}[q.kind]]
            m, r = ref.decide(ref.transcript(query, []))
            assert (int(lg[c, i, : len(models)].argmax()), ROLE_ORDER[int(lg[c, i, len(models) :].argmax())]) == (m, r)
    ref.restore()


def test_formats_never_share_a_cache_entry(encoder):
    from trinity.model.router import Router

    router = Router(encoder, 3)
    a = router_text(TINYROUTER).question_input(MMLU)
    b = router_text(MINIROUTER).question_input(MMLU)
    router.layer_inputs([a, b])
    assert len(router.cache) == 2  # keyed on the token ids of the rendered text


@pytest.mark.parametrize("competition", [TINYROUTER, MINIROUTER])
def test_incremental_session_features_exact_for_both_formats(encoder, competition):
    """A turn reads only the tokens its transcript added (K/V kept): with or without the marker
    at the end, the features equal a whole forward of each text."""
    from trinity.model.router import Router

    models = TR_MODELS if competition == TINYROUTER else MR_MODELS
    router = Router(encoder, len(models))
    rng = np.random.RandomState(3)
    thetas = np.tile(router.initial_mean(), (2, 1))
    thetas[:, router.n_outputs * router.hidden :] += 0.2 * rng.randn(2, router.svf_size)
    rt = router_text(competition)
    se = router.session_encoder(thetas)
    qs = [MATH, MMLU, CODE]
    turns = [(role, models[j], out) for role, j, out in TURNS]
    for k in range(3):
        texts = [rt.question_input(q, turns[:k]) for q in qs] * 2
        cand = np.repeat([0, 1], len(qs))
        got = se.features(texts, cand, list(range(len(texts))))
        for c in (0, 1):
            want = router.reference_features(thetas[c], texts[c * 3 : c * 3 + 3])
            assert np.abs(got[c * 3 : c * 3 + 3] - want).max() < 1e-5
    assert se.tokens_read < se.tokens_seen  # turns 2 and 3 reused the kept prefix
