"""pycma's noise tools on a noisy routing objective like live training's: which measure better?

The objective: a linear router over question features picks one of K models per question
(argmax of W x); a question's reward is 0/1, right with the chosen model's probability on that
question (models are strong on their own topic). A generation scores every candidate on the
same m-question minibatch with the same uniform draws (common random numbers, as the race
recipe does); the true objective is the expected accuracy of the ES mean on held-out questions.
The ES is the trainer's own separable CMA-ES (`trinity.optim.trainer.make_es`), with:

- `baseline`: as the trainer builds it;
- `mirrored`: mirrored sampling (`CMA_mirrors`, pycma's selective mirroring with delay);
- `noise-handler`: `cma.NoiseHandler` (Hansen et al. 2009): 2 candidates a generation scored again
  on a fresh minibatch, the rank changes measure the noise, σ grows while noise dominates; it
  costs those extra evaluations.

    python -m trinity.perf.es_noise --seeds 10 --generations 60
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from trinity.optim.trainer import import_cma, make_es

VARIANTS = ("baseline", "mirrored", "noise-handler")


@dataclass
class Problem:
    feats: np.ndarray  # (N, d) question features
    p: np.ndarray  # (N, K) chance each model answers each question right
    train: np.ndarray
    test: np.ndarray

    def choose(self, theta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        K, d = self.p.shape[1], self.feats.shape[1]
        return np.argmax(self.feats[idx] @ theta.reshape(K, d).T, axis=1)

    def true_acc(self, theta: np.ndarray) -> float:
        ch = self.choose(theta, self.test)
        return float(self.p[self.test, ch].mean())


def make_problem(seed: int, n: int = 600, d: int = 24, k: int = 4) -> Problem:
    rng = np.random.default_rng(1000 + seed)
    topic = rng.integers(0, k, size=n)
    centers = rng.normal(0, 1, size=(k, d))
    feats = centers[topic] + rng.normal(0, 1.5, size=(n, d))
    skill = np.full((k, k), 0.35) + np.eye(k) * 0.5  # model j on topic t: 0.85 on its own, 0.35 elsewhere
    p = np.clip(skill[topic] + rng.normal(0, 0.08, size=(n, k)), 0.02, 0.98)
    order = rng.permutation(n)
    return Problem(feats, p, order[: n // 2], order[n // 2 :])


def run_variant(
    variant: str, seed: int, *, generations: int, popsize: int, m: int, sigma0: float, mirrors: float = 0.5
) -> dict[str, Any]:
    cma = import_cma()

    prob = make_problem(seed)
    K, d = prob.p.shape[1], prob.feats.shape[1]
    es_rng = np.random.RandomState(seed)
    x0 = np.zeros(K * d)
    es = make_es(x0, sigma0, popsize, es_rng, mirrored=mirrors if variant == "mirrored" else 0.0)
    batch_rng = np.random.default_rng(seed + 1)
    nh = cma.NoiseHandler(K * d, maxevals=[1, 1, 1], reevals=2) if variant == "noise-handler" else None
    evals = 0
    curve = []

    def score(thetas: list[np.ndarray], idx: np.ndarray, u: np.ndarray) -> list[float]:
        out = []
        for th in thetas:
            ch = prob.choose(np.asarray(th), idx)
            out.append(-float((u < prob.p[idx, ch]).mean()))  # pycma minimises
        return out

    for _ in range(generations):
        idx = batch_rng.choice(prob.train, size=m, replace=False)
        u = batch_rng.random(m)  # common random numbers: one draw per question, shared by all candidates
        X = es.ask()
        f = score(X, idx, u)
        evals += len(X) * m
        es.tell(X, f)
        if nh is not None:
            idx2 = batch_rng.choice(prob.train, size=m, replace=False)
            u2 = batch_rng.random(m)

            def again(x: np.ndarray, idx2: np.ndarray = idx2, u2: np.ndarray = u2) -> float:
                return score([x], idx2, u2)[0]

            # both measurements of a re-evaluated candidate on the fresh minibatch would compare
            # like with like; NoiseHandler compares the first against the re-evaluation, so the
            # fresh minibatch is what it sees as noise, as live training's minibatch noise is
            es.sigma *= nh(X, f, again, es.ask)
            evals += nh.evaluations_just_done * m
        curve.append(prob.true_acc(np.asarray(es.mean)))
    return {"variant": variant, "seed": seed, "final": curve[-1], "curve": curve, "evals": evals}


def compare(
    seeds: int = 10, generations: int = 60, popsize: int = 8, m: int = 16, sigma0: float = 0.5, mirrors: float = 0.5
) -> dict[str, Any]:
    rows = {
        v: [
            run_variant(v, s, generations=generations, popsize=popsize, m=m, sigma0=sigma0, mirrors=mirrors)
            for s in range(seeds)
        ]
        for v in VARIANTS
    }
    base = np.array([r["final"] for r in rows["baseline"]])
    out: dict[str, Any] = {"seeds": seeds, "generations": generations, "popsize": popsize, "m": m, "variants": {}}
    for v, rs in rows.items():
        fin = np.array([r["final"] for r in rs])
        diff = fin - base
        half = float(np.mean([np.mean(r["curve"][generations // 2 :]) for r in rs]))
        out["variants"][v] = {
            "final_true_acc_mean": round(float(fin.mean()), 4),
            "second_half_mean": round(half, 4),
            "paired_diff_vs_baseline": round(float(diff.mean()), 4),
            "paired_diff_se": round(float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else 0.0, 4),
            "question_evals": int(np.mean([r["evals"] for r in rs])),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m trinity.perf.es_noise", description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--generations", type=int, default=60)
    ap.add_argument("--popsize", type=int, default=8)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--sigma0", type=float, default=0.5)
    ap.add_argument("--mirrors", type=float, default=0.5, help="CMA_mirrors for the mirrored variant")
    a = ap.parse_args(argv)
    print(json.dumps(compare(a.seeds, a.generations, a.popsize, a.m, a.sigma0, a.mirrors), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
