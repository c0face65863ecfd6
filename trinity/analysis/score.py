"""Local estimate of the competition score: TinyRouter's `scripts/pr_eval.py` formula (per
benchmark, then the composite), and MiniRouter's promotion rule as its own estimate.

TinyRouter (the numbers are `trinity.competition` TINYROUTER_PROFILE.scoring, as pr_eval's code has them):
    bench_score = (0.70·cached + 0.15·live + 0.10·efficiency + 0.05·novelty) × overfit_penalty
    efficiency  = max(0, (5 − avg_turns) / 4) × live_acc
    novelty     = FIRST benchmark only: 1 − agreement of turn-1 (model, role) choices with the king
                  on ≤ 50 questions (0.5 when there is no king); every other benchmark: 0
    overfit     = eval − audit accuracy gap of ANY benchmark > 0.15 rejects the whole submission;
                  > 0.08 multiplies that benchmark by 0.85 (COMPETITION_RULES.md says 0.05/0.10:
                  the code is followed, the document's numbers are shown beside)
    composite   = mean over benchmarks; a new king needs composite ≥ king + 0.02
The audit accuracy comes from the run's `audit` split when it has one (or from --eval-split /
--audit-split stand-ins the user names); otherwise the gap is unknown and said to be.

MiniRouter (validator `should_promote_submission`): the math500 test split, the first 20 items after
`random.Random(0).shuffle`, promoted when the score is ≥ 0.8 and above the king (0.8 without one).

Every component carries where its number came from. When no live evaluation exists the score is
shown twice, clearly labelled: with live taken as the cached accuracy over one turn (an optimistic
bound) and with live = 0 (a pessimistic bound) — never with an invented live number.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from trinity.analysis.evaluate import read_eval
from trinity.analysis.oracle import validate_solves
from trinity.competition.profiles import MINIROUTER_PROFILE, TINYROUTER_PROFILE, run_competition
from trinity.competition.protocol import run_protocol
from trinity.data.matrix import load_matrix
from trinity.errors import InputError
from trinity.model.theta import HEAD_FILE, load_bundle_weights, load_theta
from trinity.optim.routing import TrainedRouter, load_trained
from trinity.optim.runinputs import load_run_inputs
from trinity.runs.records import RunMeta, read_summary
from trinity.runs.rundir import RunDir

if TYPE_CHECKING:
    from trinity.competition.profiles import Profile
    from trinity.data.matrix import OutcomeMatrix
    from trinity.data.questions import Question
    from trinity.optim.runinputs import RunInputs
    from trinity.runs.rundir import RunDir

Progress = Callable[[int, int, str], None]

_TR = TINYROUTER_PROFILE.scoring
W_CACHED, W_LIVE, W_EFFICIENCY, W_NOVELTY = _TR.w_cached, _TR.w_live, _TR.w_efficiency, _TR.w_novelty
MAX_TURNS = _TR.max_turns
OVERFIT_REJECT = _TR.overfit_reject
OVERFIT_PENALISE = _TR.overfit_penalise
OVERFIT_FACTOR = _TR.overfit_factor
assert _TR.rules_doc_overfit is not None  # TinyRouter's profile records what its rules document says
RULES_DOC_OVERFIT: tuple[float, float] = _TR.rules_doc_overfit
DETHRONE_MARGIN = _TR.win_margin
NOVELTY_QUESTIONS = _TR.novelty_questions
NOVELTY_NO_KING = _TR.novelty_neutral


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
    return _TR.efficiency(avg_turns, live_acc)  # one source: the profile (the training curve uses it too)


def overfit_penalty(gap: float | None) -> tuple[float, bool]:
    """(multiplier, rejected) for an eval − audit gap (None: not measured → 1, not rejected)."""
    return _TR.overfit(gap)


def bench_score(cached: float, live: float, avg_turns: float, novelty: float, gap: float | None) -> float:
    mult, _ = overfit_penalty(gap)
    return _TR.parts(cached, live, avg_turns, novelty)["score"] * mult


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
    novelty_used: float = NOVELTY_NO_KING

    def to_json(self) -> dict[str, Any]:
        return {
            **asdict(self.inputs),
            "penalty": self.penalty,
            "rejected": self.rejected,
            "novelty_used": self.novelty_used,
            "scenarios": [asdict(s) for s in self.scenarios],
        }


def novelty_used(b: BenchInputs, first: bool) -> float:
    """pr_eval computes novelty for the first benchmark only (the king's, or 0.5 without one);
    every later benchmark scores novelty 0."""
    if not first and _TR.novelty_first_benchmark_only:
        return 0.0
    return b.novelty.value if b.novelty.value is not None else NOVELTY_NO_KING


def summary_avg_turns(run: RunDir) -> float | None:
    """The average turns a live run measured while training (summary.json `avg_turns`, the best
    θ's generation), or None (cached runs, no summary yet, or a value that is not a number)."""
    if not run.summary.exists():
        return None
    try:
        v = read_summary(run.summary).avg_turns
    except InputError:
        return None
    return v if v is not None and 1 <= v <= MAX_TURNS else None


def score_bench(b: BenchInputs, first: bool = True) -> BenchScore:
    if b.cached.value is None:
        raise InputError(f"{b.benchmark}: the cached accuracy is required for a score estimate")
    nov = novelty_used(b, first)
    gap = b.overfit_gap.value
    mult, rejected = overfit_penalty(gap)
    cases: list[tuple[str, float, float]] = []
    if b.live.value is not None:
        turns = b.avg_turns.value if b.avg_turns.value is not None else 1.0
        cases.append(("measured", b.live.value, turns))
    elif b.avg_turns.value is not None:  # turns measured in live training, accuracy not evaluated
        turns = b.avg_turns.value
        cases.append((f"live=cached, {turns:.2f} turns (training)", b.cached.value, turns))
        cases.append(("live=0 (pessimistic)", 0.0, turns))
    else:
        cases.append(("live=cached, 1 turn (optimistic)", b.cached.value, 1.0))
        cases.append(("live=0 (pessimistic)", 0.0, 1.0))
    scen = [
        Scenario(name, live, turns, efficiency(turns, live), bench_score(b.cached.value, live, turns, nov, gap))
        for name, live, turns in cases
    ]
    return BenchScore(b, mult, rejected, scen, nov)


@dataclass
class ScoreReport:
    run: str | None
    benchmarks: list[BenchScore]
    composite: dict[str, float]  # scenario name → mean over benchmarks
    king: dict[str, Any] | None  # the king's estimate under the same assumptions, and the margins
    dethrone: str  # in words
    notes: list[str] = field(default_factory=list)
    rejected: str | None = None  # pr_eval's reason when the whole submission is rejected
    promotion: dict[str, Any] | None = None  # MiniRouter's promotion estimate, when the run has math500 items
    competition: str = TINYROUTER_PROFILE.name

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "competition": self.competition,
            "benchmarks": [b.to_json() for b in self.benchmarks],
            "composite": self.composite,
            "rejected": self.rejected,
            "king": self.king,
            "dethrone": self.dethrone,
            "dethrone_margin": DETHRONE_MARGIN,
            "weights": {"cached": W_CACHED, "live": W_LIVE, "efficiency": W_EFFICIENCY, "novelty": W_NOVELTY},
            "overfit": {
                "reject_above": OVERFIT_REJECT,
                "penalise_above": OVERFIT_PENALISE,
                "factor": OVERFIT_FACTOR,
                "competition_rules_md_says": list(RULES_DOC_OVERFIT or ()),
            },
            "promotion": self.promotion,
            "notes": self.notes,
        }


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


def score_from_inputs(
    benches: list[BenchInputs],
    *,
    king_benches: list[BenchInputs] | None = None,
    run: str | None = None,
    notes: list[str] | None = None,
) -> ScoreReport:
    """Score every benchmark, the composite, and (with a king estimate) the margins."""
    if not benches:
        raise InputError("no benchmarks to score")
    scores = [score_bench(b, i == 0) for i, b in enumerate(benches)]
    comp = _composite(scores)
    rejected = next(
        (
            f"overfit_rejected ({s.inputs.benchmark}): eval-audit gap {s.inputs.overfit_gap.value:.4f} > "
            f"{OVERFIT_REJECT}"
            for s in scores
            if s.rejected
        ),
        None,
    )
    if rejected:
        # pr_eval returns _reject(...) at the first such benchmark: no composite, no king comparison
        comp = {n: 0.0 for n in comp}
        return ScoreReport(
            run,
            scores,
            comp,
            None,
            f"REJECTED as a whole by pr_eval — {rejected}: the submission is not scored (no margin over any king)",
            list(notes or []),
            rejected=rejected,
        )
    king = None
    if king_benches is not None:
        kcomp = _composite([score_bench(b, i == 0) for i, b in enumerate(king_benches)])
        # compare like with like; a measured live score is compared with both king bounds
        pairs = [(n, n) for n in comp if n in kcomp] or [(n, k) for n in comp for k in kcomp]
        margins = {(n if n == k else f"ours {n} − king {k}"): comp[n] - kcomp[k] for n, k in pairs}
        king = {
            "benchmarks": [score_bench(b, i == 0).to_json() for i, b in enumerate(king_benches)],
            "composite": kcomp,
            "margin": margins,
            "dethrones": {n: bool(m >= DETHRONE_MARGIN) for n, m in margins.items()},
        }
        parts = [
            f"{n}: {m:+.4f} ({'≥' if m >= DETHRONE_MARGIN else '<'} {DETHRONE_MARGIN})" for n, m in margins.items()
        ]
        dethrone = "margin over the king estimate — " + "; ".join(parts)
    else:
        best = max(comp.values())
        reach = (
            f"this run could dethrone a king scoring ≤ {best - DETHRONE_MARGIN:.4f} at best"
            if best > DETHRONE_MARGIN
            else f"at {best:.4f} this run cannot dethrone any king"
        )
        dethrone = (
            f"no king given: to dethrone a king, the composite must be ≥ the king's + {DETHRONE_MARGIN} ({reach})"
        )
    return ScoreReport(run, scores, comp, king, dethrone, list(notes or []))


# ---- run-based estimate ---------------------------------------------------------------------


def load_king_theta(spec: str | Path) -> tuple[np.ndarray, str]:
    """θ from a `.npy` file, a TinyRouter bundle directory (head_weights.npy + svf_scales.npy), or a
    folder holding `best_theta.npy` (a MiniRouter bundle or a run directory)."""
    path = Path(spec)
    if path.is_dir():
        if not (path / HEAD_FILE).exists() and (path / "best_theta.npy").exists():
            return load_theta(path / "best_theta.npy"), f"theta {path / 'best_theta.npy'}"
        return load_bundle_weights(path), f"bundle {path}"
    if not path.exists():
        raise InputError(f"king not found: {path}; pass a theta .npy file or a bundle directory")
    return load_theta(path), f"theta {path}"


def _bench_order(questions: Sequence[Question]) -> list[str]:
    seen: list[str] = []
    for q in questions:
        if q.benchmark not in seen:
            seen.append(q.benchmark)
    return seen


def protocol_warning(trained_under: str, prof: Profile) -> str:
    """The warning for a run whose sessions ran under another protocol than the competition's."""
    return (
        f"warning: this run was trained under the {trained_under} session protocol, not {prof.title}'s "
        f"(its role prompts, transcript, stop rule and decoding): the validator replays the head under "
        f"{prof.title}'s, so its live numbers may differ; train with --competition {prof.name}"
    )


def _cached_matrix(run: RunDir, meta: RunMeta, inputs: RunInputs, path: str | Path) -> OutcomeMatrix:
    """An outcome matrix given to `trinity score --matrix` for a run that has none: the run's
    models in the run's order, and every question of the run."""
    mat = load_matrix(path)
    models = list(meta.models)
    if models and list(mat.models) != models:
        raise InputError(f"{path}: the matrix's models {list(mat.models)} differ from the run's {models}")
    missing = [q.id for q in inputs.questions if q.id not in mat]
    if missing:
        raise InputError(
            f"{path}: {len(missing)} of the run's {len(inputs.questions)} questions are not in the matrix "
            f"(first: {missing[0]}); collect the run's questions (`--split all`)"
        )
    return mat


def promotion_items(questions: Sequence[Question], p: Profile = MINIROUTER_PROFILE) -> tuple[list[Question], int]:
    """MiniRouter's evaluation items: the benchmark's questions (in input order) shuffled by
    `random.Random(seed)`, the first `n_items` (its `load_tasks(..., max_items=20, seed=0)`)."""
    sc = p.scoring
    items = [q for q in questions if q.benchmark == sc.benchmark]
    random.Random(sc.shuffle_seed).shuffle(items)
    return items[: sc.n_items], len([q for q in questions if q.benchmark == sc.benchmark])


def promotion(score: float, king: float | None, p: Profile = MINIROUTER_PROFILE) -> bool:
    """MiniRouter's validator: promote iff score ≥ threshold and > the king (the threshold without one)."""
    thr = p.scoring.threshold
    return score >= thr and score > (thr if king is None else king)


def score_estimate(
    run_dir: str | Path,
    king: str | Path | None = None,
    eval_split: str | None = None,
    audit_split: str | None = None,
    progress: Progress | None = None,
    competition: str | None = None,
    matrix: str | Path | None = None,
) -> ScoreReport:
    """The score estimate of a trained run (cached numbers computed now; live read from eval.json).

    The overfit gap: with --eval-split/--audit-split, those splits (stand-ins, labelled); else the
    run's `audit` split when it has one (cached test − audit, as pr_eval's hidden − audit); else
    unknown (the penalty is not applied, and the report says so)."""
    run = RunDir(run_dir)
    meta = run.meta()
    prof = run_competition(meta.to_json(), competition)  # the competition layer reads run.json's JSON
    train_turns = summary_avg_turns(run)
    stand_in = eval_split is not None or audit_split is not None
    scored: str
    other: str | None
    if stand_in:
        eval_split, audit_split = eval_split or "val", audit_split or "test"
        if eval_split == audit_split:
            raise InputError(
                f"--eval-split and --audit-split are both {eval_split!r}; the overfit gap needs two splits"
            )
        scored, other, sign = audit_split, eval_split, 1.0  # gap = eval − audit = other − scored
    inputs = load_run_inputs(run)
    if matrix is not None:
        inputs = inputs._replace(matrix=_cached_matrix(run, meta, inputs, matrix))
    if inputs.matrix is None:
        pool = meta.pool or meta.config.pool or "POOL"
        raise InputError(
            f"{run.path}: the run has no outcome matrix, so the cached part of the score (the turn-1 "
            f"model's cached answer to each question) is unknown; collect one for the run's questions "
            f"with `trinity collect --benchmark B --pool {pool} --protocol {prof.name} --k 1 --split all "
            f"--out M.json` (the competition's single Worker turn) and pass it: `trinity score {run.path} --matrix M.json`"
        )
    has_audit = bool(inputs.splits.get("audit"))
    if not stand_in:
        scored, other, sign = "test", ("audit" if has_audit else None), -1.0  # gap = test − audit
    for sp in (scored, other):
        if sp is not None and sp not in inputs.splits:
            raise InputError(f"{run.path}: the run records no {sp!r} split")
    by_id = {q.id: q for q in inputs.questions}
    audit_q = [by_id[i] for i in inputs.splits[scored]]
    eval_q = [by_id[i] for i in inputs.splits[other]] if other else []
    if not audit_q:
        raise InputError(f"{run.path}: the {scored} split is empty; nothing to score on")
    validate_solves(inputs.matrix.solves, f"{run.path} matrix")
    p = inputs.matrix.accuracy()  # (Q, M): every sample of a cell (a ragged matrix's too)
    if progress:
        progress(0, 2 if king else 1, "routing")
    ours = load_trained(run.path)
    promo_q, promo_n = promotion_items(inputs.questions)
    everything = audit_q + eval_q + promo_q
    routing = ours.route(everything)
    missing = [q.id for q in everything if q.id not in inputs.matrix]
    if missing:
        raise InputError(
            f"{run.path}: the run's outcome matrix has no row for {len(missing)} of the scored questions "
            f"(e.g. {missing[0]}): it was collected for training only; collect the rest with `trinity collect "
            f"--split all` and pass it: `trinity score {run.path} --matrix M.json`"
        )
    rows = np.array([inputs.matrix.row(q.id) for q in everything], dtype=np.int64)
    correct = p[rows, np.asarray(routing.model_idx, dtype=np.int64)]  # (N,) expected correctness
    n_audit, n_eval = len(audit_q), len(eval_q)
    king_routing = king_correct = None
    if stand_in:
        gap_note = f"overfit gap: {eval_split} − {audit_split} cached accuracy (stand-ins you chose for eval − audit)"
    elif has_audit:
        gap_note = "overfit gap: test − audit cached accuracy (the run's audit split; pr_eval: hidden − audit)"
    else:
        gap_note = (
            "overfit gap: audit accuracy unknown — the run has no audit split (pass --eval-split/--audit-split "
            "to use stand-ins); no penalty applied here, pr_eval would apply it"
        )

    trained_under = run_protocol(meta.to_json())
    notes = [
        f"competition: {prof.title}",
        f"cached accuracy: {scored} split, turn 1, mean of the k={inputs.matrix.k} recorded answers",
        gap_note,
        f"overfit rule (pr_eval.py code): > {OVERFIT_PENALISE} ×{OVERFIT_FACTOR}, > {OVERFIT_REJECT} rejects the "
        f"whole submission; COMPETITION_RULES.md says {RULES_DOC_OVERFIT[0]}/{RULES_DOC_OVERFIT[1]} — the code "
        "is followed",
        "novelty: first benchmark only (pr_eval); later benchmarks score novelty 0",
    ]
    if trained_under.name != prof.name:
        notes.insert(0, protocol_warning(trained_under.name, prof))
    king_router = None
    if king is not None:
        theta, label = load_king_theta(king)
        if theta.shape != (ours.router.n_params,):  # say which file, not the run's best_theta.npy
            raise InputError(
                f"king {label} has {theta.size} parameters; this run's router has "
                f"{ours.router.n_params} ({len(ours.models)} models): the king must come from "
                "the same encoder and pool"
            )
        king_router = TrainedRouter(
            ours.router, theta, ours.models, run_id="king", competition=getattr(ours, "competition", None)
        )
        king_routing = king_router.route(audit_q + promo_q)
        kr = np.concatenate([rows[:n_audit], rows[n_audit + n_eval :]])
        king_correct = p[kr, np.asarray(king_routing.model_idx, dtype=np.int64)]
        notes.append(f"king: {label}, routed with this run's encoder and pool")
        if progress:
            progress(1, 2, "routed the king")
    live = read_eval(run.path, "live", scored)
    live_bench = live.per_benchmark if live is not None else {}
    benches, king_benches = [], []
    for b in _bench_order(audit_q):
        a_idx = np.array([i for i, q in enumerate(audit_q) if q.benchmark == b])
        e_idx = np.array([n_audit + i for i, q in enumerate(eval_q) if q.benchmark == b], dtype=np.int64)
        acc = float(correct[a_idx].mean())
        cached = Component(acc, f"cached, {scored} split, {a_idx.size} questions")
        if e_idx.size:
            gap_v = sign * (float(correct[e_idx].mean()) - acc)
            # the standard error of a difference of two independent means: is the gap more than noise?
            # (sample variances, ddof=1: one question per side says nothing about the spread)
            if e_idx.size >= 2 and a_idx.size >= 2:
                se = float(np.sqrt(correct[e_idx].var(ddof=1) / e_idx.size + correct[a_idx].var(ddof=1) / a_idx.size))
                noise = f"standard error ±{se:.3f}"
            else:
                noise = "standard error unknown (a split has 1 question)"
            first, second = (other, scored) if sign > 0 else (scored, other)
            n_first, n_second = (e_idx.size, a_idx.size) if sign > 0 else (a_idx.size, e_idx.size)
            gap = Component(gap_v, f"cached, {first} ({n_first} q) − {second} ({n_second} q), {noise}")
        elif other is None:
            gap = Component(None, "audit accuracy unknown (no audit split in the run): penalty not applied")
        else:
            gap = Component(None, f"no {other} questions for {b}: penalty not applied")
        if b in live_bench:
            lb = live_bench[b]
            samples = live.samples if live is not None else 1
            lv = Component(lb.accuracy, f"live eval.json, {scored} split, {lb.n} questions × {samples} sessions")
            turns = Component(lb.avg_turns, "live eval.json")
        else:
            lv = Component(None, f"not measured (run trinity eval {run.path} --mode live)")
            turns = (
                Component(float(train_turns), "live training, the best θ's generation (summary.json)")
                if train_turns is not None
                else Component(None, "not measured (needs a live eval)")
            )
        if king_routing is not None and king_correct is not None:  # set together above
            nov_idx = a_idx[:NOVELTY_QUESTIONS]
            nov = Component(
                novelty(
                    (routing.model_idx[nov_idx], routing.role_idx[nov_idx]),
                    (king_routing.model_idx[nov_idx], king_routing.role_idx[nov_idx]),
                ),
                f"turn-1 (model, role) vs the king on {nov_idx.size} {scored} questions",
            )
            kacc = float(king_correct[a_idx].mean())
            king_benches.append(
                BenchInputs(
                    b,
                    Component(kacc, f"king, cached, {scored} split, {a_idx.size} questions"),
                    Component(None, "not measured for the king"),
                    Component(None, "not measured for the king"),
                    Component(None, f"unknown for the king; {NOVELTY_NO_KING} assumed (the no-king rule value)"),
                    Component(None, "the king has passed its audit"),
                )
            )
        else:
            nov = Component(None, f"no king given: {NOVELTY_NO_KING} by rule")
        benches.append(BenchInputs(b, cached, lv, turns, nov, gap))
    if progress:
        progress(2 if king else 1, 2 if king else 1, "scored")
    rep = score_from_inputs(
        benches, king_benches=king_benches if king is not None else None, run=str(run.path), notes=notes
    )
    rep.competition = prof.name
    if promo_q:
        sc = MINIROUTER_PROFILE.scoring
        start = n_audit + n_eval
        ours_s = float(correct[start:].mean())
        king_s = float(king_correct[n_audit:].mean()) if king_correct is not None else None
        rep.promotion = {
            "rule": f"{sc.benchmark} {sc.split}, first {sc.n_items} items after random.Random({sc.shuffle_seed}).shuffle; "
            f"promote at ≥ {sc.threshold} and above the king ({sc.threshold} without one)",
            "items": len(promo_q),
            "available": promo_n,
            "score": ours_s,
            "king": king_s,
            "threshold": sc.threshold,
            "promotes": promotion(ours_s, king_s),
            "source": (
                f"cached turn-1 expected correctness on {len(promo_q)} of the run's {promo_n} {sc.benchmark} "
                f"questions (the validator draws from all 500 MATH-500 test items and runs the full live session)"
            ),
        }
    return rep
