"""How often the live recipe's collect names each topic's best model, and what it costs: one answer
a cell on N questions a topic, N with 2 answers a cell, or N asked again where close
(`trinity collect --max-k`, `trinity.session.collect.close_groups`).

Offline, on the live bench's stand-in pool (`trinity.perf.standin`: its own chances of a right
answer per model and question, its prices and answer lengths): for each seed, each topic's N
collected questions are drawn from its 20, the other 10 held out; the labels' best model (ties
share) is what a `best`-target warm start routes the topic to with features that tell topics apart.
Reported: the held-out share of the per-topic ceiling that routing reaches (by the stand-in's own
chances: no draw noise), its 10th percentile over seeds, and the collect's expected $.

Usage: python scripts/adaptive_collect_probe.py [--seeds 600] [--per 5,6,7,8] [--z 0.5,1.0]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from trinity.benchmarks.practice import practice_questions
from trinity.data.questions import Question
from trinity.perf.standin import STANDIN_MODELS, TOPICS, Standin
from trinity.session.collect import close_groups

PROMPT_TOKENS = 150  # a Worker turn's prompt on a practice question, about


def call_usd() -> np.ndarray:
    """(M,) the expected $ of one Worker answer per model (lognormal length: median · e^{σ²/2})."""
    return np.array(
        [
            (m.price_in * PROMPT_TOKENS + m.price_out * m.tokens_median * math.exp(m.tokens_sigma**2 / 2)) / 1e6
            for m in STANDIN_MODELS
        ]
    )


def one_seed(qs: list[Question], seed: int, per: int, policy: str, z: float, max_k: int) -> tuple[float, float]:
    st = Standin(qs, seed=seed)
    models = [m.id for m in STANDIN_MODELS]
    P = np.array([[st.p_correct(m, q) for m in models] for q in qs])
    kinds = np.array([q.kind for q in qs])
    rng = np.random.RandomState(seed)
    cost = call_usd()
    got = ceiling = spent = 0.0
    for t in TOPICS:
        idx = np.flatnonzero(kinds == t)
        rng.shuffle(idx)
        tr, te = idx[:per], idx[10:]
        answers: dict[tuple[str, str, int], bool] = {}

        def ask(rows: np.ndarray, js: list[int], s: int, answers: dict[tuple[str, str, int], bool] = answers) -> float:
            for i in rows:
                for j in js:
                    answers[(qs[i].id, models[j], s)] = bool(rng.rand() < P[i, j])
            return float(len(rows) * cost[js].sum())

        spent += ask(tr, list(range(len(models))), 0)
        if policy == "k2":
            spent += ask(tr, list(range(len(models))), 1)
        for upto in range(2, max_k + 1) if policy == "adaptive" else ():
            close = close_groups([qs[i] for i in tr], models, answers, z)
            if not close:
                break
            (pair,) = close.values()
            for j in (models.index(m) for m in pair):
                for s in range(upto):
                    todo = np.array([i for i in tr if (qs[i].id, models[j], s) not in answers], dtype=np.int64)
                    spent += ask(todo, [j], s)
        means = np.array(
            [np.mean([v for (qid, m, _), v in answers.items() if m == mm]) for mm in models], dtype=np.float64
        )
        best = np.flatnonzero(means == means.max())
        true_best = int(np.argmax(P[kinds == t].mean(axis=0)))
        got += float(P[te][:, best].mean(axis=1).sum())
        ceiling += float(P[te, true_best].sum())
    return got / ceiling, spent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=600)
    ap.add_argument("--per", default="5,6,7,8", help="questions a topic, comma-separated")
    ap.add_argument("--z", default="0.5,0.75,1.0", help="--separate-z values, comma-separated")
    ap.add_argument("--max-k", type=int, default=4)
    args = ap.parse_args()
    qs = [q for q in practice_questions() if q.kind in TOPICS]
    print(f"{'per topic':>9} {'collect':>22} {'share of ceiling':>16} {'p10':>6} {'$':>8}")
    for per in (int(x) for x in args.per.split(",")):
        runs = [("k 1", "k1", 0.0), ("k 2", "k2", 0.0)]
        runs += [(f"max-k {args.max_k}, z {z}", "adaptive", float(z)) for z in args.z.split(",")]
        for name, policy, z in runs:
            r = np.array([one_seed(qs, s, per, policy, z, args.max_k) for s in range(args.seeds)])
            print(
                f"{per:>9} {name:>22} {r[:, 0].mean():>16.4f} {np.percentile(r[:, 0], 10):>6.3f} {r[:, 1].mean():>8.4f}"
            )


if __name__ == "__main__":
    main()
