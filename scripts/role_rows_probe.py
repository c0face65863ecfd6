"""How often the fitted role rows send a held-out bare query to a Verifier (a wasted session: no
Worker answer follows) and a later session state to a Worker, on the practice questions with
tiny-qwen3's frozen features: 20 random splits of 30 training / 30 held-out questions (5 session
states each, `trinity.optim.warmstart.role_transcripts`), for a few weights of the bare-query
class and L2 strengths. The fit is `fit_role_rows`'s (balanced classes, then the bare-query
class weighted `bare_w` times more).

Usage: OMP_NUM_THREADS=1 python scripts/role_rows_probe.py
"""

from __future__ import annotations

import numpy as np

from trinity.benchmarks.practice import practice_questions
from trinity.competition.text import router_text
from trinity.config import load_config
from trinity.model import ROLES
from trinity.optim import warmstart
from trinity.optim.fitness import build_router

WORKER, VERIFIER = ROLES.index("Worker"), ROLES.index("Verifier")


def fit(X: np.ndarray, y: np.ndarray, bare_w: float, lam: float) -> np.ndarray:
    counts = np.bincount(y, minlength=len(ROLES)).astype(np.float64)
    cw = np.where(counts > 0, counts.sum() / np.maximum(counts, 1), 0.0)
    cw[WORKER] *= bare_w
    return warmstart.fit_softmax(X, y, cw, lam)


def main() -> None:
    qs = practice_questions()
    router = build_router(load_config(None, {"encoder": "tiny-qwen3"}), 3)
    X, y = warmstart.role_features(router, router_text(None), qs, ["a", "b", "c"])
    n = len(y) // 5
    rng = np.random.RandomState(0)
    for bare_w, lam in [(1, 1e-3), (3, 1e-3), (10, 1e-3), (1, 1e-4), (3, 1e-4)]:
        bad_bare = bad_later = n_bare = n_later = 0
        for _ in range(20):
            perm = rng.permutation(n)
            rows_of = [np.arange(i * 5, i * 5 + 5) for i in perm]
            tr, te = np.concatenate(rows_of[:30]), np.concatenate(rows_of[30:])
            pick = np.argmax(X[te] @ fit(X[tr], y[tr], bare_w, lam).T, axis=1)
            bare = y[te] == WORKER
            bad_bare += int(np.sum(pick[bare] != WORKER))
            n_bare += int(bare.sum())
            bad_later += int(np.sum(pick[~bare] != VERIFIER))
            n_later += int((~bare).sum())
        print(
            f"bare-query weight {bare_w}, lambda {lam}: held-out bare queries sent to a non-Worker "
            f"{bad_bare}/{n_bare} = {bad_bare / n_bare:.3f}; later states sent to a non-Verifier "
            f"{bad_later}/{n_later} = {bad_later / n_later:.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
