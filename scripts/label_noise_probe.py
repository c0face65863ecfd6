"""Where the live recipe's warm start loses held-out accuracy: label noise or the encoder's features?

On the practice pool (60 questions, 3 topics, 3 simulated models each best on one topic) with
tiny-qwen3's frozen features, repeated random splits (30 train / 21 held out, as `trinity bench
learning --live`), each fit routed on the held-out questions and scored by the simulator's
expected accuracy (64 draws a cell):

- `group, k=1`: the default recipe (4 collected questions a topic, one draw a cell; the other
  training questions get their topic's mean) through `warm_start_theta`;
- `group, k=4`: the same with 4 draws a cell;
- `best, k=1` / `k=4`: `--label-targets best`, each training question's target the one-hot of its
  topic's best model by the same collected draws (through `warm_start_theta`, λ by CV);
- `true best one-hot`: the one-hot of the topic's truly best model (labels without noise).

Usage: python scripts/label_noise_probe.py [--reps 40]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from trinity.benchmarks.practice import practice_questions
from trinity.config import load_config
from trinity.model.text import encoder_input
from trinity.optim.fitness import build_router
from trinity.optim.warmstart import fit_logistic, frozen_features, routed_accuracy, warm_start_theta
from trinity.practice.simulation import practice_matrix


class Fixed:
    """Features fixed per text, the router's θ layout (3 model rows + 3 role rows of H)."""

    def __init__(self, feats: dict[str, np.ndarray], hidden: int) -> None:
        self.feats, self.hidden = feats, hidden

    def initial_mean(self) -> np.ndarray:
        return np.zeros(6 * self.hidden)

    def features(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.feats[t] for t in texts])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--per-topic", type=int, default=4)
    args = ap.parse_args()
    qs = practice_questions()
    kinds = np.array([q.kind for q in qs])
    X = frozen_features(
        build_router(load_config(None, {"encoder": "tiny-qwen3"}), 3), [encoder_input(q.question) for q in qs]
    )
    H = X.shape[1]
    P = practice_matrix(k=64).solves.mean(axis=2)  # (60, 3) expected accuracy
    true_best = {k: int(np.argmax(P[kinds == k].mean(0))) for k in set(kinds)}
    rng = np.random.RandomState(0)
    out: dict[str, list[float]] = {
        k: []
        for k in (
            "group, k=1",
            "group, k=4",
            "best (--label-targets best), k=1",
            "best (--label-targets best), k=4",
            "true best one-hot",
            "ceiling",
            "best single",
        )
    }
    for rep in range(args.reps):
        perm = rng.permutation(len(qs))
        tr, te = perm[:30], perm[39:]
        draws = (rng.rand(len(qs), 3, 4) < P[:, :, None]).astype(float)
        groups = [str(kinds[i]) for i in tr]
        lab = np.zeros(len(tr), bool)
        for k in set(groups):
            lab[[j for j, g in enumerate(groups) if g == k][: args.per_topic]] = True
        texts = [f"{rep}-{i}" for i in tr]
        router = Fixed(dict(zip(texts, X[tr])), H)

        for k, name in ((1, "group, k=1"), (4, "group, k=4")):
            acc = draws[:, :, :k].mean(2)[tr]
            theta, _ = warm_start_theta(
                router, router.initial_mean(), 3, texts, acc, groups=groups, labelled=lab, k=k, label_targets="group"
            )
            out[name].append(routed_accuracy(theta[: 3 * H].reshape(3, H), X[te], P[te]))
        for k in (1, 4):
            theta, _ = warm_start_theta(
                router, router.initial_mean(), 3, texts, draws[:, :, :k].mean(2)[tr], groups=groups, labelled=lab,
                k=k, label_targets="best",
            )  # fmt: skip
            out[f"best (--label-targets best), k={k}"].append(
                routed_accuracy(theta[: 3 * H].reshape(3, H), X[te], P[te])
            )
        Yt = np.array([np.eye(3)[true_best[g]] for g in groups])
        out["true best one-hot"].append(routed_accuracy(fit_logistic(X[tr], Yt, 1e-4), X[te], P[te]))
        out["ceiling"].append(float(np.mean([P[i, true_best[str(kinds[i])]] for i in te])))
        out["best single"].append(float(P[te].mean(0).max()))
    ceiling = float(np.mean(out["ceiling"]))
    summary = {
        k: {"held_out": round(float(np.mean(v)), 3), "of_ceiling": round(float(np.mean(v)) / ceiling, 3)}
        for k, v in out.items()
    }
    print(json.dumps({"reps": args.reps, "per_topic": args.per_topic, "results": summary}, indent=1))


if __name__ == "__main__":
    main()
