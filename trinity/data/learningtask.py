"""Generated routing tasks of known structure (issue 14): questions on T topics, an outcome matrix
for M models with per-topic skill edges, deterministic by seed.

Each topic has its own vocabulary of made-up words (so a frozen encoder, even a random-init one,
separates topics by their tokens), and questions mix topic words with shared filler. Each model
has a base skill; on each topic one model (a random one) gets `+edge` and another `-edge/2`; each
question adds its own difficulty noise. The k samples of a (question, model) cell are Bernoulli
draws of that probability. The best single model therefore gains little from routing unless
the features carry the topic: exactly what a router over the features should find.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trinity.data.matrix import OutcomeMatrix
from trinity.data.questions import Question

SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "so", "ta", "vi", "ze", "po", "qu", "fa", "de", "gi", "ho", "xu")
FILLER = ["what", "which", "how", "does", "the", "of", "in", "about", "explain", "value", "find", "why", "is", "a"]


@dataclass(frozen=True)
class TaskSpec:
    name: str
    topics: int
    models: int
    k: int
    edge: float
    n_per_topic: int
    seed: int = 0
    base_lo: float = 0.45
    base_hi: float = 0.65
    noise: float = 0.1


def _word(rng: np.random.RandomState) -> str:
    return "".join(rng.choice(SYLLABLES, rng.randint(2, 4)))


def generate_task(spec: TaskSpec) -> tuple[list[Question], OutcomeMatrix, np.ndarray]:
    """(questions, matrix, topic of each question)."""
    rng = np.random.RandomState(spec.seed)
    vocab = [[_word(rng) for _ in range(10)] for _ in range(spec.topics)]
    base = rng.uniform(spec.base_lo, spec.base_hi, size=spec.models)
    p_topic = np.tile(base, (spec.topics, 1))
    for t in range(spec.topics):
        good, bad = rng.choice(spec.models, size=2, replace=False)
        p_topic[t, good] += spec.edge
        p_topic[t, bad] -= spec.edge / 2
    models = [f"gen/model-{j}" for j in range(spec.models)]
    qs, rows, topic = [], [], []
    for t in range(spec.topics):
        for i in range(spec.n_per_topic):
            words = list(rng.choice(vocab[t], 4)) + list(rng.choice(FILLER, 3))
            rng.shuffle(words)
            qid = f"{spec.name}-t{t}-{i}"
            qs.append(Question(qid, spec.name, " ".join(words) + "?", "x", "math"))
            p = np.clip(p_topic[t] + rng.normal(0.0, spec.noise), 0.02, 0.98)
            rows.append((rng.random_sample((spec.models, spec.k)) < p[:, None]).astype(np.float64))
            topic.append(t)
    order = rng.permutation(len(qs))  # interleave topics, as a real question file would
    qs = [qs[i] for i in order]
    solves = np.stack(rows)[order]
    mat = OutcomeMatrix(spec.name, models, [q.id for q in qs], solves)
    return qs, mat, np.asarray(topic)[order]
