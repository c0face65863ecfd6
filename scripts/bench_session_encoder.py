"""Incremental session encoding at Qwen3-0.6B size: `SessionEncoder.logits` vs re-encoding every
whole transcript (`Router.paired_logits`), turn by turn, on qwen3-0.6b-random (no download).

    OMP_NUM_THREADS=2 python scripts/bench_session_encoder.py   # figures: docs/perf/model.md
"""

import json
import time

import numpy as np
import torch

from trinity.benchmarks.practice import practice_questions
from trinity.model.encoder import load_encoder
from trinity.model.router import Router
from trinity.model.text import encoder_input

router = Router(load_encoder("qwen3-0.6b-random", device="cpu", dtype="float32"), 3)
rng = np.random.RandomState(0)
P, m, T = 4, 2, 4
thetas = router.initial_mean()[None] + 0.1 * rng.randn(P, router.n_params)
qs = [q.question for q in practice_questions()[:m]]
out_text = (
    "We check each case in turn. First, the input is read and parsed; then every value is "
    "compared with the running best, and the answer is printed at the end. "
) * 4
res = {"threads": torch.get_num_threads(), "streams": P * m, "turns": []}
se = router.session_encoder(thetas)
turns = {i: [] for i in range(P * m)}
for t in range(T):
    texts = [encoder_input(qs[i % m], turns[i]) for i in range(P * m)]
    cands = np.array([i // m for i in range(P * m)])
    ntok = sum(len(router.encoder.token_ids(x)) for x in texts)
    t0 = time.perf_counter()
    a = se.logits(texts, cands, list(range(P * m)))
    ts = time.perf_counter() - t0
    router.cache = type(router.cache)(router.cache.max_bytes)
    t0 = time.perf_counter()
    b = router.paired_logits(thetas, texts, cands)
    tp = time.perf_counter() - t0
    res["turns"].append(
        {
            "turn": t + 1,
            "tokens": ntok,
            "incremental_s": round(ts, 2),
            "full_reencode_s": round(tp, 2),
            "max_logit_diff": float(np.abs(a - b).max()),
        }
    )
    print(res["turns"][-1], flush=True)
    for i in range(P * m):
        turns[i].append(("Worker", f"m{i % 3}", out_text))
print(json.dumps(res))
