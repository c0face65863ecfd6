"""Honest evaluation of a Milestone-1 head on the test split, on the same cached features:

- the competition's score (composite, domain accuracy, macro-F1, difficulty exact / ±1, joint),
  with percentile-bootstrap intervals over prompts;
- baselines on the same features: majority (the train split's most common domain and median
  difficulty), kNN (k nearest train prompts by cosine, a vote per label) and nearest centroid;
- the domain confusion matrix;
- the king rule: challenger merges when composite ≥ king + 0.02, with the bootstrap probability
  (prompts resampled in pairs) that the challenger's true composite clears it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trinity.analysis.stats import bootstrap_ci, bootstrap_means
from trinity.benchmarks.tinyrouter_m1 import M1Row, load_m1
from trinity.competition import m1
from trinity.errors import InputError
from trinity.m1.features import Features
from trinity.m1.run import TrainConfig, best_weights, load_encoder_for, split_features, split_indices
from trinity.runs.rundir import RunDir

KNN_K = 5


@dataclass
class Preds:
    domain: list[str]
    difficulty: list[int]


def pooled(feats: Features, query: np.ndarray | None) -> np.ndarray:
    """(N, d_h) head inputs: the penultimate features, or each sequence pooled by `query`
    (the zero query = their mean-pool start)."""
    if feats.X is not None:
        return feats.X
    assert feats.seqs is not None
    q = np.zeros(feats.seqs[0].shape[1], np.float32) if query is None else query
    return np.stack([m1.attentive_pool(H, q) for H in feats.seqs])


def majority(train: list[M1Row], n: int) -> Preds:
    dom = Counter(r.domain for r in train).most_common(1)[0][0]
    mid = int(np.median([r.difficulty for r in train]))
    return Preds([dom] * n, [mid] * n)


def _unit(X: np.ndarray) -> np.ndarray:
    return np.asarray(m1.l2_normalise(X), dtype=np.float64)


def knn(Xtr: np.ndarray, train: list[M1Row], Xte: np.ndarray, k: int = KNN_K) -> Preds:
    sims = _unit(Xte) @ _unit(Xtr).T
    near = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    dom, dif = [], []
    for row in near:
        dom.append(Counter(train[j].domain for j in row).most_common(1)[0][0])
        dif.append(Counter(train[j].difficulty for j in row).most_common(1)[0][0])
    return Preds(dom, dif)


def centroid(Xtr: np.ndarray, train: list[M1Row], Xte: np.ndarray) -> Preds:
    U, V = _unit(Xtr), _unit(Xte)

    def nearest(keys: list) -> list:
        uniq = sorted(set(keys))
        C = _unit(np.stack([U[[i for i, x in enumerate(keys) if x == u]].mean(0) for u in uniq]))
        return [uniq[i] for i in np.argmax(V @ C.T, axis=1)]

    return Preds(nearest([r.domain for r in train]), nearest([r.difficulty for r in train]))


def report(rows: list[M1Row], p: Preds, seed: int = 0) -> dict[str, Any]:
    y_dom, y_diff = [r.domain for r in rows], [r.difficulty for r in rows]
    s = m1.score(y_dom, y_diff, p.domain, p.difficulty)
    dom_ok = np.array([a == b for a, b in zip(y_dom, p.domain)], dtype=float)
    dif_ok = np.array([a == b for a, b in zip(y_diff, p.difficulty)], dtype=float)
    w1 = np.array([abs(a - b) <= 1 for a, b in zip(y_diff, p.difficulty)], dtype=float)
    out = s.as_dict()
    out["ci"] = {
        "composite": bootstrap_ci(m1.row_composite(dom_ok, dif_ok), seed=seed).to_json(),
        "domain_accuracy": bootstrap_ci(dom_ok, seed=seed).to_json(),
        "difficulty_exact": bootstrap_ci(dif_ok, seed=seed).to_json(),
        "difficulty_within_1": bootstrap_ci(w1, seed=seed).to_json(),
        "joint_accuracy": bootstrap_ci(dom_ok * dif_ok, seed=seed).to_json(),
    }
    return out


def confusion(rows: list[M1Row], p: Preds, config: str) -> dict[str, Any]:
    names = list(m1.domains_of(config))
    idx = {d: i for i, d in enumerate(names)}
    M = np.zeros((len(names), len(names)), dtype=int)
    for r, d in zip(rows, p.domain):
        M[idx[r.domain], idx[d]] += 1
    return {"labels": names, "rows_true_cols_pred": M.tolist()}


def per_domain(rows: list[M1Row], p: Preds, config: str) -> list[dict[str, Any]]:
    """Per domain of the config, in its order: test prompts (n), prompts predicted as it, accuracy
    on its prompts (the score's per-domain accuracy; None where it has none), precision and F1
    (as the competition's macro-F1 computes them)."""
    y = [r.domain for r in rows]
    acc = m1.score(y, [r.difficulty for r in rows], p.domain, p.difficulty).per_domain_accuracy
    prf = m1.domain_prf(y, p.domain)
    out = []
    for d in m1.domains_of(config):
        prec, _, f1 = prf.get(d, (0.0, 0.0, 0.0))
        n = y.count(d)
        out.append(
            {
                "domain": d,
                "n": n,
                "predicted": p.domain.count(d),
                "accuracy": acc.get(d) if n else None,
                "precision": prec if p.domain.count(d) else None,
                "f1": f1 if d in prf else None,
            }
        )
    return out


def clear_probability(
    chal: Preds, king: Preds, rows: list[M1Row], margin: float = m1.WIN_MARGIN, seed: int = 0
) -> float:
    """P(challenger composite − king composite ≥ margin) over a paired bootstrap of prompts."""

    def per_row(p: Preds) -> np.ndarray:
        d = np.array([r.domain == x for r, x in zip(rows, p.domain)], dtype=float)
        f = np.array([r.difficulty == x for r, x in zip(rows, p.difficulty)], dtype=float)
        return m1.row_composite(d, f)

    diff = per_row(chal) - per_row(king)
    draws = bootstrap_means(diff, 4000, seed)
    return float(np.mean(draws >= margin - 1e-12))


class RunEval:
    """A trained run with its test split, features and predictions."""

    def __init__(self, run_dir: str | Path, test_data: str | None = None, split: str = "test"):
        self.rd = RunDir(run_dir)
        self.cfg = cfg = TrainConfig.of_run(self.rd.meta(), self.rd.path)
        self.config = cfg.m1_config
        self.weights = best_weights(self.rd)
        self.test = load_m1(self.config, split, test_data or cfg.test_data)
        rows = load_m1(self.config, "train", cfg.train_data, cfg.limit)
        tr_idx, _ = split_indices(len(rows), cfg.seed, cfg.val_fraction)
        self.train = [rows[i] for i in tr_idx]
        self.encoder = load_encoder_for(cfg)
        self.f_test = split_features(self.rd, cfg, self.encoder, self.test)
        self.f_train = split_features(self.rd, cfg, self.encoder, rows).subset(tr_idx)
        self.X_test = pooled(self.f_test, self.weights.query)

    def head_preds(self, pack: m1.M1Pack | None = None) -> Preds:
        if pack is None:
            pack = m1.M1Pack(
                self.config,
                self.cfg.pool,
                self.weights.W_domain.shape[1],
                self.weights.W_domain,
                self.weights.W_diff,
            )
            X = self.X_test
        else:
            bad = pack.problems()
            if bad:
                raise InputError(f"the pack is refused by the competition's checks: {bad[0]}")
            if m1.canonical_config(pack.config) != self.config:
                raise InputError(f"the pack is for {pack.config}, the run for {self.config}")
            if pack.d_h != self.weights.W_domain.shape[1]:
                raise InputError(
                    f"the pack's d_h {pack.d_h} is not this run's encoder width {self.weights.W_domain.shape[1]}"
                )
            X = pooled(self.f_test, pack.attention_query) if pack.pool == "attentive" else self._penultimate_test()
        d, f = pack.predict(X)
        return Preds(d, f)

    def _penultimate_test(self) -> np.ndarray:
        if self.f_test.X is not None:
            return self.f_test.X
        return split_features(self.rd, self.cfg, self.encoder, self.test, pool="penultimate").X  # type: ignore[return-value]

    def evaluate(self, seed: int = 0) -> dict[str, Any]:
        head = self.head_preds()
        Xtr = pooled(self.f_train, None if self.weights.query is None else self.weights.query)
        systems = {
            "head": head,
            "majority": majority(self.train, len(self.test)),
            "knn": knn(Xtr, self.train, self.X_test),
            "centroid": centroid(Xtr, self.train, self.X_test),
        }
        return {
            "run": self.rd.id,
            "m1_config": self.config,
            "pool": self.cfg.pool,
            "n_test": len(self.test),
            "systems": {k: report(self.test, p, seed) for k, p in systems.items()},
            "per_domain": per_domain(self.test, head, self.config),
            "confusion": confusion(self.test, head, self.config),
        }
