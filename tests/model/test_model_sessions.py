"""The incremental session encoder: a turn reads only its new tokens, and its features equal the
naive path's (the whole encoder on the whole text, SVF weights rebuilt) at every turn."""

import numpy as np
import pytest

from trinity.errors import InputError
from trinity.model.router import Router
from trinity.model.sessions import SessionEncoder, common_prefix
from trinity.model.text import encoder_input

QUESTIONS = [
    "What is 17 * 23?",
    "Which planet is largest? (A) Mars (B) Jupiter (C) Venus",
    "Write a program that reads n and prints n squared.",
]


@pytest.fixture(scope="module")
def router(tiny_encoder):
    return Router(tiny_encoder, n_models=3)


def thetas_for(router, P, seed=0, scale=0.3):
    rng = np.random.RandomState(seed)
    return router.initial_mean()[None, :] + scale * rng.randn(P, router.n_params)


def output(turn, i):
    return f"Step {turn}: we check case {i} carefully, 12 * {i + 3} = {12 * (i + 3)}.\n\nVERDICT: REVISE" * (1 + i % 3)


def reference(router, thetas, texts, cands):
    return np.stack([router.reference_features(thetas[c], [t])[0] for t, c in zip(texts, cands)])


def test_common_prefix():
    a = np.array([1, 2, 3, 4])
    assert common_prefix(a, np.array([1, 2, 3, 4, 5])) == 4
    assert common_prefix(a, np.array([1, 2, 9])) == 2
    assert common_prefix(a, np.array([7])) == 0
    assert common_prefix(a, np.array([], dtype=np.int64)) == 0


def test_features_match_reference_at_every_turn(router):
    P, n = 3, 7
    thetas = thetas_for(router, P)
    enc = SessionEncoder(router, thetas)
    turns = {i: [] for i in range(n)}
    read_before = 0
    prev_texts: list[str] = []
    for turn in range(4):
        texts = [encoder_input(QUESTIONS[i % 3], turns[i]) for i in range(n)]
        cands = np.array([i % P for i in range(n)])
        got = enc.features(texts, cands, list(range(n)))
        want = reference(router, thetas, texts, cands)
        assert np.abs(got - want).max() < 1e-5, turn
        # Logits are the head of each text's own candidate on those features.
        heads, _ = router.split_thetas(router.check_thetas(thetas))
        logits = enc.logits(texts, cands, list(range(n)))  # the same texts again: nothing new to read
        assert np.allclose(logits, np.einsum("nh,nch->nc", want, heads[cands]), atol=1e-4)
        total = sum(len(router.encoder.token_ids(t)) - 1 for t in texts)
        read = enc.tokens_read - read_before
        if turn == 0:
            # Streams 0, 3, 6 (and 1, 4 and 2, 5) share a question: each distinct text is read once.
            assert read == sum(len(router.encoder.token_ids(t)) - 1 for t in set(texts))
        else:
            # Only what the turn added (plus the moved `<Head Input>` marker) is read.
            added = sum(
                len(router.encoder.token_ids(t)) - len(router.encoder.token_ids(p)) for t, p in zip(texts, prev_texts)
            )
            if turn >= 2:
                assert read < total / 2
            assert added <= read <= added + 10 * len(set(texts))
        read_before = enc.tokens_read
        prev_texts = texts
        for i in range(n):
            turns[i].append(("Worker", f"m{i % 3}", output(turn, i)))


def test_paired_path_agrees(router):
    P = 4
    thetas = thetas_for(router, P, seed=3)
    texts = [encoder_input(q, [("Thinker", "m0", "Plan: do it.")]) for q in QUESTIONS] * 2
    cands = np.array([0, 1, 2, 3, 0, 1])
    enc = SessionEncoder(router, thetas)
    got = enc.features(texts, cands, [f"s{i}" for i in range(6)])
    assert np.abs(got - router.paired_features(thetas, texts, cands)).max() < 1e-5


def test_text_that_is_not_an_extension_is_read_in_full(router):
    """A stream whose new text shares only a short token prefix with the old one (another
    question) reuses only that prefix, and its features are still right."""
    thetas = thetas_for(router, 2, seed=1)
    enc = SessionEncoder(router, thetas)
    first = [encoder_input(QUESTIONS[0]), encoder_input(QUESTIONS[1])]
    enc.features(first, np.array([0, 1]), ["a", "b"])
    second = [
        encoder_input(QUESTIONS[2], [("Worker", "m1", "print(int(input())**2)")]),
        encoder_input(QUESTIONS[1], [("Verifier", "m2", "VERDICT: ACCEPT")]),
    ]
    got = enc.features(second, np.array([0, 1]), ["a", "b"])
    assert np.abs(got - reference(router, thetas, second, [0, 1])).max() < 1e-5


def test_stream_that_changes_candidate_starts_over(router):
    thetas = thetas_for(router, 2, seed=2)
    enc = SessionEncoder(router, thetas)
    t1 = encoder_input(QUESTIONS[0])
    enc.features([t1], np.array([0]), ["s"])
    t2 = encoder_input(QUESTIONS[0], [("Worker", "m0", "391")])
    got = enc.features([t2], np.array([1]), ["s"])
    assert np.abs(got - reference(router, thetas, [t2], [1])).max() < 1e-5


def test_memory_budget_forgets_streams_and_stays_right(router):
    P, n = 2, 6
    thetas = thetas_for(router, P, seed=4)
    small = SessionEncoder(router, thetas, budget_mb=0.05)  # ~50 KB: a few streams at most
    turns = {i: [] for i in range(n)}
    for turn in range(3):
        texts = [encoder_input(QUESTIONS[i % 3], turns[i]) for i in range(n)]
        cands = np.array([i % P for i in range(n)])
        got = small.features(texts, cands, list(range(n)))
        assert np.abs(got - reference(router, thetas, texts, cands)).max() < 1e-5
        assert small.nbytes <= small.budget
        assert len(small.streams) < n  # some were forgotten
        for i in range(n):
            turns[i].append(("Thinker", "m0", output(turn, i)))
    big = SessionEncoder(router, thetas)
    turns = {i: [] for i in range(n)}
    for turn in range(3):
        texts = [encoder_input(QUESTIONS[i % 3], turns[i]) for i in range(n)]
        big.features(texts, np.array([i % P for i in range(n)]), list(range(n)))
        for i in range(n):
            turns[i].append(("Thinker", "m0", output(turn, i)))
    assert small.tokens_read > big.tokens_read  # forgotten streams were read again in full


def test_bad_input_is_named(router):
    enc = SessionEncoder(router, thetas_for(router, 2))
    text = encoder_input(QUESTIONS[0])
    with pytest.raises(InputError, match="stream id appears twice"):
        enc.features([text, text], np.array([0, 1]), ["s", "s"])
    with pytest.raises(InputError, match="one candidate in 0..1"):
        enc.features([text], np.array([5]), ["s"])
    with pytest.raises(InputError, match="one candidate"):
        enc.features([text, text], np.array([0]), ["s", "t"])


def test_a_stream_missing_from_a_call_has_ended(router):
    thetas = thetas_for(router, 2, seed=5)
    enc = SessionEncoder(router, thetas)
    texts = [encoder_input(q) for q in QUESTIONS[:2]]
    enc.features(texts, np.array([0, 1]), ["a", "b"])
    nxt = encoder_input(QUESTIONS[0], [("Worker", "m0", "391")])
    got = enc.features([nxt], np.array([0]), ["a"])  # "b" finished
    assert list(enc.streams) == ["a"] and len(enc.prefixes) == 1  # nothing of "b" is kept
    assert np.abs(got - reference(router, thetas, [nxt], [0])).max() < 1e-5


def test_attention_parts_group_similar_lengths():
    from trinity.model.sessions import ATTENTION_PART_TEXTS, attention_parts

    assert attention_parts([0] * 40, [30] * 40) == [0, 40]  # equal lengths: one part
    new = sorted(10 + (i * 37) % 64 for i in range(64))  # a burst of sorted, very different lengths
    bounds = attention_parts([0] * 64, new)
    assert bounds[0] == 0 and bounds[-1] == 64 and len(bounds) > 2
    assert all(b - a >= ATTENTION_PART_TEXTS for a, b in zip(bounds[:-2], bounds[1:-1]))
    padded = sum((b - a) * new[b - 1] ** 2 for a, b in zip(bounds[:-1], bounds[1:]))
    assert padded < 64 * new[-1] ** 2 / 2  # far less padding than one part
