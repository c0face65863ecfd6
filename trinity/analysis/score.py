"""Local estimate of the TinyRouter score (per benchmark, then the composite).

    bench_score = (0.70·cached + 0.15·live + 0.10·efficiency + 0.05·novelty) × overfit_penalty
    efficiency  = max(0, (5 − avg_turns) / 4) × live_acc
    novelty     = 1 − agreement of turn-1 (model, role) choices with the king on ≤ 50 questions
                  (0.5 when there is no king)
    overfit     = eval − audit accuracy gap: > 0.15 rejects (score 0), > 0.08 multiplies by 0.85
    composite   = mean over benchmarks; a new king needs composite ≥ king + 0.02

Every component carries where its number came from. When no live evaluation exists the score is
shown twice, clearly labelled: with live taken as the cached accuracy over one turn (an optimistic
bound) and with live = 0 (a pessimistic bound) — never with an invented live number.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from trinity.errors import InputError

Progress = Callable[[int, int, str], None]

W_CACHED, W_LIVE, W_EFFICIENCY, W_NOVELTY = 0.70, 0.15, 0.10, 0.05
MAX_TURNS = 5
OVERFIT_REJECT = 0.15
OVERFIT_PENALISE = 0.08
OVERFIT_FACTOR = 0.85
DETHRONE_MARGIN = 0.02
NOVELTY_QUESTIONS = 50
NOVELTY_NO_KING = 0.5


@dataclass
class Component:
    value: float | None  # None = not measured
    source: str  # in words: split, number of questions, cached or live — or why it is absent


@dataclass
class BenchInputs:
    """What one benchmark's score needs, each with its source."""

    benchmark: str
    cached: Component
    live: Component  # value None when no live evaluation exists
    avg_turns: Component  # live average turns; None with live
    novelty: Component
    overfit_gap: Component  # eval − audit accuracy; None when not measurable


def efficiency(avg_turns: float, live_acc: float) -> float:
    return max(0.0, (MAX_TURNS - avg_turns) / (MAX_TURNS - 1)) * live_acc


def overfit_penalty(gap: float | None) -> tuple[float, bool]:
    """(multiplier, rejected) for an eval − audit gap (None: not measured → 1, not rejected)."""
    if gap is None:
        return 1.0, False
    if gap > OVERFIT_REJECT:
        return 0.0, True
    if gap > OVERFIT_PENALISE:
        return OVERFIT_FACTOR, False
    return 1.0, False


def bench_score(cached: float, live: float, avg_turns: float, novelty: float, gap: float | None) -> float:
    mult, _ = overfit_penalty(gap)
    return (W_CACHED * cached + W_LIVE * live + W_EFFICIENCY * efficiency(avg_turns, live)
            + W_NOVELTY * novelty) * mult


def novelty(ours: tuple[np.ndarray, np.ndarray], king: tuple[np.ndarray, np.ndarray]) -> float:
    """1 − fraction of questions where both turn-1 model and role agree; inputs (model_idx, role_idx)."""
    om, orole = (np.asarray(x) for x in ours)
    km, krole = (np.asarray(x) for x in king)
    if om.shape != km.shape or om.size == 0:
        raise InputError(f"novelty needs the same questions for both routers ({om.size} vs {km.size})")
    return float(1.0 - np.mean((om == km) & (orole == krole)))


@dataclass
class Scenario:
    """One way of filling in the live accuracy: measured, or a labelled bound."""

    name: str  # measured | live=cached (optimistic) | live=0 (pessimistic)
    live: float
    avg_turns: float
    efficiency: float
    score: float


@dataclass
class BenchScore:
    inputs: BenchInputs
    penalty: float
    rejected: bool
    scenarios: list[Scenario]

    def to_json(self) -> dict:
        return {**asdict(self.inputs), "penalty": self.penalty, "rejected": self.rejected,
                "scenarios": [asdict(s) for s in self.scenarios]}


def score_bench(b: BenchInputs) -> BenchScore:
    if b.cached.value is None:
        raise InputError(f"{b.benchmark}: the cached accuracy is required for a score estimate")
    nov = b.novelty.value if b.novelty.value is not None else NOVELTY_NO_KING
    gap = b.overfit_gap.value
    mult, rejected = overfit_penalty(gap)
    cases: list[tuple[str, float, float]] = []
    if b.live.value is not None:
        turns = b.avg_turns.value if b.avg_turns.value is not None else 1.0
        cases.append(("measured", b.live.value, turns))
    else:
        cases.append(("live=cached, 1 turn (optimistic)", b.cached.value, 1.0))
        cases.append(("live=0 (pessimistic)", 0.0, 1.0))
    scen = [Scenario(name, live, turns, efficiency(turns, live),
                     bench_score(b.cached.value, live, turns, nov, gap)) for name, live, turns in cases]
    return BenchScore(b, mult, rejected, scen)


@dataclass
class ScoreReport:
    run: str | None
    benchmarks: list[BenchScore]
    composite: dict[str, float]  # scenario name → mean over benchmarks
    king: dict | None  # the king's estimate under the same assumptions, and the margins
    dethrone: str  # in words
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"run": self.run, "benchmarks": [b.to_json() for b in self.benchmarks], "composite": self.composite,
                "king": self.king, "dethrone": self.dethrone, "dethrone_margin": DETHRONE_MARGIN,
                "weights": {"cached": W_CACHED, "live": W_LIVE, "efficiency": W_EFFICIENCY, "novelty": W_NOVELTY},
                "notes": self.notes}


def _composite(scores: list[BenchScore]) -> dict[str, float]:
    names = [s.name for s in scores[0].scenarios]
    if any([s.name for s in b.scenarios] != names for b in scores):
        # some benchmarks measured live and some not: combine measured with each bound
        names = ["live=cached, 1 turn (optimistic)", "live=0 (pessimistic)"]

    def pick(b: BenchScore, name: str) -> float:
        for s in b.scenarios:
            if s.name == name:
                return s.score
        return b.scenarios[0].score  # measured stands in for both bounds

    return {n: float(np.mean([pick(b, n) for b in scores])) for n in names}


def score_from_inputs(benches: list[BenchInputs], *, king_benches: list[BenchInputs] | None = None,
                      run: str | None = None, notes: list[str] | None = None) -> ScoreReport:
    """Score every benchmark, the composite, and (with a king estimate) the margins."""
    if not benches:
        raise InputError("no benchmarks to score")
    scores = [score_bench(b) for b in benches]
    comp = _composite(scores)
    king = None
    if king_benches is not None:
        kcomp = _composite([score_bench(b) for b in king_benches])
        margins = {n: comp[n] - kcomp.get(n, float("nan")) for n in comp}
        king = {"benchmarks": [score_bench(b).to_json() for b in king_benches], "composite": kcomp,
                "margin": margins, "dethrones": {n: bool(m >= DETHRONE_MARGIN) for n, m in margins.items()}}
        parts = [f"{n}: {m:+.4f} ({'≥' if m >= DETHRONE_MARGIN else '<'} {DETHRONE_MARGIN})" for n, m in margins.items()]
        dethrone = "margin over the king estimate — " + "; ".join(parts)
    else:
        best = max(comp.values())
        dethrone = (f"no king given: to dethrone a king, the composite must be ≥ the king's + {DETHRONE_MARGIN} "
                    f"(this run could dethrone a king scoring ≤ {best - DETHRONE_MARGIN:.4f} at best)")
    return ScoreReport(run, scores, comp, king, dethrone, list(notes or []))


# ---- run-based estimate ---------------------------------------------------------------------

def load_king_theta(spec: str | Path) -> tuple[np.ndarray, str]:
    """θ from a `.npy` file or a TinyRouter bundle directory (head_weights.npy + svf_scales.npy)."""
    from trinity.model.theta import load_bundle_weights, load_theta

    path = Path(spec)
    if path.is_dir():
        return load_bundle_weights(path), f"bundle {path}"
    if not path.exists():
        raise InputError(f"king not found: {path}; pass a theta .npy file or a bundle directory")
    return load_theta(path), f"theta {path}"
