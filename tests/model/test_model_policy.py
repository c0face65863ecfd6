"""The routing policy: argmax per group, softmax per group, seeded sampling."""

import numpy as np
import pytest

from trinity.errors import ConfigError
from trinity.model.policy import choose, group_probs, sample


def test_argmax_per_group():
    logits = np.array([[0.1, 0.9, 0.3, 5.0, -1.0, 2.0], [2.0, 0.0, 0.0, -1.0, 3.0, 0.0]])
    model, role = choose(logits, n_models=3)
    assert model.tolist() == [1, 0] and role.tolist() == [0, 1]
    model, role = choose(np.zeros((2, 4, 6)), 3)  # ties: the first index
    assert model.shape == (2, 4) and not model.any() and not role.any()


def test_group_probs_softmax_each_group():
    logits = np.array([1.0, 2.0, 3.0, 0.0, 0.0, 1000.0])
    mp, rp = group_probs(logits, 3)
    np.testing.assert_allclose(mp, np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())
    np.testing.assert_allclose(rp, [0.0, 0.0, 1.0], atol=1e-12)  # stable at large logits
    hot, _ = group_probs(logits, 3, temperature=100.0)
    assert hot.max() - hot.min() < 0.05
    with pytest.raises(ConfigError, match="temperature"):
        group_probs(logits, 3, temperature=0.0)
    with pytest.raises(ConfigError, match="n_models \\+ 3"):
        choose(logits, 4)


def test_sampling_follows_probs_and_is_seeded():
    logits = np.tile(np.log([0.2, 0.3, 0.5, 0.1, 0.1, 0.8]), (20000, 1))
    m1, r1 = sample(logits, 3, np.random.RandomState(7))
    m2, r2 = sample(logits, 3, np.random.RandomState(7))
    assert np.array_equal(m1, m2) and np.array_equal(r1, r2)
    np.testing.assert_allclose(np.bincount(m1, minlength=3) / len(m1), [0.2, 0.3, 0.5], atol=0.015)
    np.testing.assert_allclose(np.bincount(r1, minlength=3) / len(r1), [0.1, 0.1, 0.8], atol=0.015)
