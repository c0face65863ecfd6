"""What a fitness hands the trainer for one generation (`trinity.optim.fitness.Fitness`): the
rewards and a small stats record, and the hooks it calls while it works. Defined here, below
trinity.optim, so that the live fitness of this package and the cached fitness of
trinity.optim return the same types (trinity.optim.fitness re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass
class GenerationHooks:
    progress: Callable[[int, int], None]
    choices: Callable[[np.ndarray, np.ndarray], None]
    trace: Callable[[dict[str, Any]], None]  # one traces.jsonl record


@dataclass(frozen=True)
class GenerationStats:
    """What one `evaluate` measured besides the rewards (None: not measured in this mode)."""

    avg_turns: float | None = None  # turns per session over the whole population
    candidate_turns: np.ndarray | None = None  # (P,) mean turns of each candidate's sessions
    accuracy: float | None = None  # graded correctness, before the turn/cost penalties
    cost_per_correct: float | None = None  # USD of the generation's sessions per right answer
    # --objective competition: each candidate's competition score and its parts on the minibatch
    # (name -> (P,) values: score, cached, live, efficiency, novelty, avg_turns)
    score_parts: dict[str, np.ndarray] | None = None
    extra: dict[str, float] | None = None  # more fields of the generation record (racing: the incumbent)

    def record(self, best: int) -> dict[str, float]:
        """The `generation` record's fields; `best`: the index of the generation's best candidate."""
        out: dict[str, float] = {}
        if self.avg_turns is not None:
            out["avg_turns"] = float(self.avg_turns)
        if self.candidate_turns is not None:
            out["best_avg_turns"] = float(self.candidate_turns[best])
        if self.accuracy is not None:
            out["accuracy"] = float(self.accuracy)
        if self.cost_per_correct is not None:
            out["cost_per_correct"] = float(self.cost_per_correct)
        if self.score_parts:
            # the generation's best candidate's competition score and its parts
            out["competition_score"] = float(self.score_parts["score"][best])
            for name, values in self.score_parts.items():
                if name != "score":
                    out[f"score_{name}"] = float(values[best])
        if self.extra:
            out.update(self.extra)
        return out


@dataclass(frozen=True)
class Evaluation:
    rewards: np.ndarray  # (P, m) float64; NaN where a raced candidate did not meet the question
    stats: GenerationStats = GenerationStats()
    # (P,) what the ES is told and the generation's best is picked by (higher is better), when it
    # is not the mean reward: a race's consistent ranking (trinity.session.racing)
    ranking: np.ndarray | None = None


LogFn = Callable[[str, str], None]  # (level, message)
