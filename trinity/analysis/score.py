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
        # compare like with like; a measured live score is compared with both king bounds
        pairs = [(n, n) for n in comp if n in kcomp] or [(n, k) for n in comp for k in kcomp]
        margins = {(n if n == k else f"ours {n} − king {k}"): comp[n] - kcomp[k] for n, k in pairs}
        king = {"benchmarks": [score_bench(b).to_json() for b in king_benches], "composite": kcomp,
                "margin": margins, "dethrones": {n: bool(m >= DETHRONE_MARGIN) for n, m in margins.items()}}
        parts = [f"{n}: {m:+.4f} ({'≥' if m >= DETHRONE_MARGIN else '<'} {DETHRONE_MARGIN})" for n, m in margins.items()]
        dethrone = "margin over the king estimate — " + "; ".join(parts)
    else:
        best = max(comp.values())
        reach = (f"this run could dethrone a king scoring ≤ {best - DETHRONE_MARGIN:.4f} at best"
                 if best > DETHRONE_MARGIN else f"at {best:.4f} this run cannot dethrone any king")
        dethrone = (f"no king given: to dethrone a king, the composite must be ≥ the king's + {DETHRONE_MARGIN} "
                    f"({reach})")
    return ScoreReport(run, scores, comp, king, dethrone, list(notes or []))


# ---- run-based estimate ---------------------------------------------------------------------

def load_king_theta(spec: str | Path) -> tuple[np.ndarray, str]:
    """θ from a `.npy` file, a TinyRouter bundle directory (head_weights.npy + svf_scales.npy), or a
    folder holding `best_theta.npy` (a MiniRouter bundle or a run directory)."""
    from trinity.model.theta import HEAD_FILE, load_bundle_weights, load_theta

    path = Path(spec)
    if path.is_dir():
        if not (path / HEAD_FILE).exists() and (path / "best_theta.npy").exists():
            return load_theta(path / "best_theta.npy"), f"theta {path / 'best_theta.npy'}"
        return load_bundle_weights(path), f"bundle {path}"
    if not path.exists():
        raise InputError(f"king not found: {path}; pass a theta .npy file or a bundle directory")
    return load_theta(path), f"theta {path}"


def _bench_order(questions) -> list[str]:
    seen: list[str] = []
    for q in questions:
        if q.benchmark not in seen:
            seen.append(q.benchmark)
    return seen


def score_estimate(run_dir: str | Path, king: str | Path | None = None, eval_split: str = "val",
                   audit_split: str = "test", progress: Progress | None = None) -> ScoreReport:
    """The score estimate of a trained run (cached numbers computed now; live read from eval.json)."""
    from trinity.analysis.evaluate import read_eval
    from trinity.analysis.oracle import validate_solves
    from trinity.optim.routing import load_trained
    from trinity.optim.runinputs import load_run_inputs
    from trinity.runs.rundir import RunDir

    run = RunDir(run_dir)
    run.read_meta()
    if eval_split == audit_split:
        raise InputError(f"--eval-split and --audit-split are both {eval_split!r}; the overfit gap needs two splits")
    inputs = load_run_inputs(run)
    if inputs.matrix is None:
        raise InputError(f"{run.path}: the run has no outcome matrix; the cached score needs one")
    for s in (eval_split, audit_split):
        if s not in inputs.splits:
            raise InputError(f"{run.path}: the run records no {s!r} split")
    by_id = {q.id: q for q in inputs.questions}
    audit_q = [by_id[i] for i in inputs.splits[audit_split]]
    eval_q = [by_id[i] for i in inputs.splits[eval_split]]
    if not audit_q:
        raise InputError(f"{run.path}: the {audit_split} split is empty; nothing to score on")
    p = validate_solves(inputs.matrix.solves, f"{run.path} matrix").mean(axis=2)  # (Q, M)
    if progress:
        progress(0, 2 if king else 1, "routing")
    ours = load_trained(run.path)
    everything = audit_q + eval_q
    routing = ours.route(everything)
    rows = np.array([inputs.matrix.row(q.id) for q in everything], dtype=np.int64)
    correct = p[rows, np.asarray(routing.model_idx, dtype=np.int64)]  # (N,) expected correctness
    n_audit = len(audit_q)
    king_routing = king_correct = None
    notes = [f"cached accuracy: {audit_split} split, turn 1, mean of the k={inputs.matrix.k} recorded answers",
             f"overfit gap: {eval_split} − {audit_split} cached accuracy (local stand-in for eval − audit)"]
    if king is not None:
        from trinity.optim.routing import TrainedRouter

        theta, label = load_king_theta(king)
        if theta.shape != (ours.router.n_params,):  # say which file, not the run's best_theta.npy
            raise InputError(f"king {label} has {theta.size} parameters; this run's router has "
                             f"{ours.router.n_params} ({len(ours.models)} models): the king must come from "
                             "the same encoder and pool")
        king_router = TrainedRouter(ours.router, theta, ours.models, run_id="king")
        king_routing = king_router.route(audit_q)
        king_correct = p[rows[:n_audit], np.asarray(king_routing.model_idx, dtype=np.int64)]
        notes.append(f"king: {label}, routed with this run's encoder and pool")
        if progress:
            progress(1, 2, "routed the king")
    live = read_eval(run.path, "live", audit_split)
    live_bench = (live or {}).get("per_benchmark", {})
    benches, king_benches = [], []
    for b in _bench_order(audit_q):
        a_idx = np.array([i for i, q in enumerate(audit_q) if q.benchmark == b])
        e_idx = np.array([n_audit + i for i, q in enumerate(eval_q) if q.benchmark == b], dtype=np.int64)
        acc = float(correct[a_idx].mean())
        cached = Component(acc, f"cached, {audit_split} split, {a_idx.size} questions")
        if e_idx.size:
            gap_v = float(correct[e_idx].mean()) - acc
            # the standard error of a difference of two independent means: is the gap more than noise?
            # (sample variances, ddof=1: one question per side says nothing about the spread)
            if e_idx.size >= 2 and a_idx.size >= 2:
                se = float(np.sqrt(correct[e_idx].var(ddof=1) / e_idx.size
                                   + correct[a_idx].var(ddof=1) / a_idx.size))
                noise = f"standard error ±{se:.3f}"
            else:
                noise = "standard error unknown (a split has 1 question)"
            gap = Component(gap_v, f"cached, {eval_split} ({e_idx.size} q) − {audit_split} ({a_idx.size} q), "
                                   f"{noise}")
        else:
            gap = Component(None, f"no {eval_split} questions for {b}: penalty not applied")
        if b in live_bench:
            lb = live_bench[b]
            lv = Component(float(lb["accuracy"]), f"live eval.json, {audit_split} split, {lb['n']} questions "
                                                  f"× {live.get('samples', 1)} sessions")
            turns = Component(float(lb.get("avg_turns", 1.0)), "live eval.json")
        else:
            lv = Component(None, f"not measured (run trinity eval {run.path} --mode live)")
            turns = Component(None, "not measured (needs a live eval)")
        if king_routing is not None:
            nov_idx = a_idx[:NOVELTY_QUESTIONS]
            nov = Component(novelty((routing.model_idx[nov_idx], routing.role_idx[nov_idx]),
                                    (king_routing.model_idx[nov_idx], king_routing.role_idx[nov_idx])),
                            f"turn-1 (model, role) vs the king on {nov_idx.size} {audit_split} questions")
            kacc = float(king_correct[a_idx].mean())
            king_benches.append(BenchInputs(
                b, Component(kacc, f"king, cached, {audit_split} split, {a_idx.size} questions"),
                Component(None, "not measured for the king"), Component(None, "not measured for the king"),
                Component(None, f"unknown for the king; {NOVELTY_NO_KING} assumed (the no-king rule value)"),
                Component(None, "the king has passed its audit")))
        else:
            nov = Component(None, f"no king given: {NOVELTY_NO_KING} by rule")
        benches.append(BenchInputs(b, cached, lv, turns, nov, gap))
    if progress:
        progress(2 if king else 1, 2 if king else 1, "scored")
    return score_from_inputs(benches, king_benches=king_benches if king is not None else None,
                             run=str(run.path), notes=notes)
