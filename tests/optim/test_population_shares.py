"""The unit of a Ray worker's share and block (no Ray): a worker that computes some of
`warm_batches`' batches holds one process's bits for their texts, and a `text_groups` group
computed alone on lent inputs gives one process's features (trinity/optim/population.py)."""

from __future__ import annotations

import numpy as np
import torch

from trinity.benchmarks.practice import practice_questions
from trinity.model.batching import token_key
from trinity.model.encoder import load_encoder
from trinity.model.router import Router
from trinity.optim.fitness import WARM_CHUNK, default_text, warm_batches


def _router() -> Router:
    return Router(load_encoder("tiny-qwen3", device="cpu", seed=0), 5, max_batch_tokens=256)


def test_shares_and_blocks_are_bit_identical_to_one_process():
    texts = [default_text(q) for q in practice_questions()] * 2  # duplicates across warm-up chunks
    one = _router()
    for a in range(0, len(texts), WARM_CHUNK):  # CachedFitness.warm_up
        one.layer_inputs(texts[a : a + WARM_CHUNK])
    plan = warm_batches(one, texts)
    assert len(plan) > 2 and sorted(i for b in plan for i in b) == sorted(
        {t: i for i, t in reversed(list(enumerate(texts)))}.values()
    )  # each text once, at its first place
    workers, owner = [_router(), _router()], {}
    for j, batch in enumerate(plan):
        workers[j % 2].layer_inputs([texts[i] for i in batch])
        owner.update({token_key(one.token_ids([texts[i]])[0]): j % 2 for i in batch})
    assert sum(len(w.cache) for w in workers) == len(one.cache) and all(len(w.cache) for w in workers)
    for k, x in one.cache._items.items():
        assert torch.equal(workers[owner[k]].cache.get(k), x)
    rng = np.random.RandomState(1)
    thetas = one.initial_mean()[None] + 0.05 * rng.randn(8, one.n_params)
    batch = [texts[i] for i in rng.choice(60, 24, replace=False)]
    ids = one.token_ids(batch)
    keys, lengths = [token_key(i) for i in ids], [len(i) - 1 for i in ids]
    groups = one.text_groups(lengths)
    assert len(groups) > 1
    for ci, (a, b) in enumerate([(0, 3), (3, 5), (5, 8)]):
        feats = np.empty((b - a, len(batch), one.hidden), dtype=np.float32)
        for gi, g in enumerate(groups):  # on a worker that owns only some of the group: inputs lent
            xs = [workers[owner[keys[i]]].cache.get(keys[i]) for i in g]
            feats[:, g] = workers[(ci + gi) % 2].features_of_inputs(thetas[a:b], xs)
        assert np.array_equal(one.head_logits(thetas[a:b], feats), one.population_logits(thetas[a:b], batch))
