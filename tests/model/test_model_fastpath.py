"""Fast batched population path == naive reference path, plus the cache."""

import numpy as np
import pytest
import torch

from trinity.errors import InputError
from trinity.model.router import Router
from trinity.model.text import encoder_input

TEXTS = [
    encoder_input("What is 2+2?"),
    encoder_input("Which planet is largest? (A) Mars (B) Jupiter (C) Venus (D) Earth"),
    encoder_input(
        "Write a function that returns the n-th Fibonacci number.",
        [
            ("Thinker", "model-a", "Use iteration, not recursion; keep two running values."),
            (
                "Worker",
                "model-b",
                "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a",
            ),
        ],
    ),
    encoder_input("x"),
    encoder_input("Compute the remainder of 7^100 divided by 13. " * 4, [("Verifier", "m", "VERDICT: REVISE")]),
]


def _thetas(router, n, seed=0, spread=0.1):
    rng = np.random.RandomState(seed)
    thetas = router.initial_mean() + spread * rng.randn(n, router.n_params)
    return thetas


@pytest.mark.parametrize("max_batch_tokens", [8192, 150])  # one chunk; many chunks of texts and candidates
def test_fast_features_match_reference(tiny_encoder, max_batch_tokens):
    router = Router(tiny_encoder, n_models=3, max_batch_tokens=max_batch_tokens)
    lengths = {len(tiny_encoder.token_ids(t)) for t in TEXTS}
    assert len(lengths) == len(TEXTS)  # every text a different length: padding in every batch
    thetas = _thetas(router, 5)
    fast = router.population_features(thetas, TEXTS)
    assert fast.shape == (5, len(TEXTS), router.hidden) and fast.dtype == np.float32
    for c in range(5):
        ref = router.reference_features(thetas[c], TEXTS)
        assert np.abs(fast[c] - ref).max() < 1e-4
    np.testing.assert_allclose(np.linalg.norm(fast, axis=-1), 1.0, atol=1e-5)


def test_fast_logits_match_reference_and_paired(tiny_encoder):
    router = Router(tiny_encoder, n_models=3)
    thetas = _thetas(router, 4, seed=1)
    logits = router.population_logits(thetas, TEXTS)
    assert logits.shape == (4, len(TEXTS), 6) and logits.dtype == np.float32
    for c in range(4):
        assert np.abs(logits[c] - router.reference_logits(thetas[c], TEXTS)).max() < 1e-4
    cand = np.array([3, 0, 3, 1, 2])
    paired = router.paired_logits(thetas, TEXTS, cand)
    assert paired.shape == (len(TEXTS), 6)
    np.testing.assert_allclose(paired, logits[cand, np.arange(len(TEXTS))], atol=1e-5)


def test_reference_padding_does_not_change_features(tiny_encoder):
    router = Router(tiny_encoder, n_models=2)
    theta = _thetas(router, 1, seed=2)[0]
    batched = router.reference_features(theta, TEXTS)
    for i, text in enumerate(TEXTS):
        np.testing.assert_allclose(router.reference_features(theta, [text])[0], batched[i], atol=1e-5)


def test_unit_scales_reproduce_the_plain_encoder(tiny_encoder):
    """z = 1 rebuilds the original weights; feature = final hidden state at position -2."""
    router = Router(tiny_encoder, n_models=3)
    text = TEXTS[2]
    ids = torch.tensor([tiny_encoder.token_ids(text)])
    with torch.inference_mode():
        hidden = tiny_encoder.decoder(input_ids=ids).last_hidden_state[0, -2]
    expected = torch.nn.functional.normalize(hidden, dim=-1).numpy()
    mean = router.initial_mean()
    np.testing.assert_allclose(router.reference_features(mean, [text])[0], expected, atol=1e-5)
    np.testing.assert_allclose(router.population_features(mean[None], [text])[0, 0], expected, atol=1e-5)


def test_each_svf_matrix_matters_and_weights_are_restored(tiny_encoder):
    router = Router(tiny_encoder, n_models=3)
    before = [p.detach().clone() for p in tiny_encoder.model.parameters()]
    base = router.population_features(router.initial_mean()[None], TEXTS[:2])[0]
    start = router.n_outputs * router.hidden
    rng = np.random.RandomState(3)
    for f in router.svf.factors:  # scale one matrix at a time: both paths see the change
        theta = router.initial_mean()
        # Not uniform: q_norm/k_norm (RMSNorm per head) cancel a uniform scale of q or k.
        theta[start + f.offset : start + f.offset + f.rank] = 1 + 0.5 * rng.randn(f.rank)
        fast = router.population_features(theta[None], TEXTS[:2])[0]
        ref = router.reference_features(theta, TEXTS[:2])
        assert np.abs(fast - base).max() > 1e-3, f.name
        assert np.abs(fast - ref).max() < 1e-4, f.name
    after = list(tiny_encoder.model.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, after))


def test_layer_input_cache_hits_and_bounds(tiny_encoder):
    router = Router(tiny_encoder, n_models=3)
    thetas = _thetas(router, 2)
    first = router.population_features(thetas, TEXTS)
    assert router.cache.misses == len(TEXTS) and len(router.cache) == len(TEXTS)
    again = router.population_features(thetas, TEXTS)
    assert router.cache.misses == len(TEXTS) and router.cache.hits >= len(TEXTS)
    np.testing.assert_array_equal(first, again)
    # A cache that holds about one text evicts the oldest and still gives the same answers.
    small = Router(tiny_encoder, n_models=3, cache_mb=200 * 64 * 4 / 2**20)
    np.testing.assert_allclose(small.population_features(thetas, TEXTS), first, atol=1e-6)
    assert small.cache.bytes <= small.cache.max_bytes or len(small.cache) == 1
    assert len(small.cache) < len(TEXTS)


def test_bad_inputs_raise_one_line_errors(tiny_encoder):
    router = Router(tiny_encoder, n_models=3)
    with pytest.raises(InputError, match=r"\(P, 832\)"):
        router.population_logits(np.zeros((2, 10)), TEXTS)
    with pytest.raises(InputError, match="NaN"):
        router.population_logits(np.full((1, router.n_params), np.nan), TEXTS)
    with pytest.raises(InputError, match="candidate_of_text"):
        router.paired_logits(_thetas(router, 2), TEXTS[:2], np.array([0, 5]))
    with pytest.raises(InputError, match="list of strings"):
        router.population_features(_thetas(router, 1), TEXTS[0])
