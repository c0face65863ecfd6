"""Competition profiles: what TinyRouter and MiniRouter each expect of a submission, as data.

A `Profile` is the one place that says, for one competition, how pool model ids are named in
its receipts, which θ length its validator runs, which receipt / summary keys it reads, how its
ledger is chained, which gates it runs (in which order, which of them block), how its PR is
titled and written, and how it scores. Code elsewhere reads the profile; it does not test the
competition's name.

Sources (read from the competitions' repositories; none of their code is copied here):
- TinyRouter (James-CUDA/Gittensor-TinyRouter @ 1767d1f): `src/trinity/submission/constants.py`,
  `gates.py`, `schema.py`, `src/trinity/llm/cost_ledger.py`, `openrouter_pricing.py`,
  `scripts/pr_eval.py`, `.github/PULL_REQUEST_TEMPLATE.md`, `SUBMITTING.md`,
  `docs/COMPETITION_RULES.md`, `scripts/repo_governance/pr_bot.py`.
- MiniRouter (mini-router/minirouter @ 6a1e0f4): `src/trinity/validate_submission.py`,
  `.github/workflows/submission-pr-check.yml`, `.github/PULL_REQUEST_TEMPLATE/submission.md`,
  `configs/models.chutes.yaml`, `configs/models.minibridge.light.yaml`,
  `validator/src/eval_backend/core/config.py`, `validator/.../services/github.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from trinity.competition.text import (  # one source: the router-input side owns names and θ rule
    MINIROUTER,
    MINIROUTER_BRIDGE_NAMES,
    MINIROUTER_CHUTES_NAMES,
    ROUTER_TEXTS,
    TINYROUTER,
    TINYROUTER_NAMES,
    RouterText,
    resolve_competition,
    theta_length,
)
from trinity.competition.text import run_competition as _run_competition_name
from trinity.errors import TrinityError


def _frozen(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class GateSpec:
    """One gate of the competition, under our name, with the competition's own name for it.
    `blocking`: a failure rejects the submission (the competition's gate); otherwise the gate is
    an advisory that only warns (the competition reports it and never rejects on it)."""

    name: str  # our gate name (trinity check prints it)
    theirs: str | None  # the competition's gate name (None: they have no such gate)
    blocking: bool


@dataclass(frozen=True)
class Scoring:
    """The competition's scoring rule, with the numbers its code uses."""

    rule: str  # "pr_eval" | "promotion"
    # pr_eval (TinyRouter): bench = (0.70 cached + 0.15 live + 0.10 eff + 0.05 novelty) × penalty
    w_cached: float = 0.0
    w_live: float = 0.0
    w_efficiency: float = 0.0
    w_novelty: float = 0.0
    max_turns: int = 5
    novelty_first_benchmark_only: bool = True  # pr_eval: `if bench == benchmarks[0] else 0.0`
    novelty_neutral: float = 0.5  # no king: trinity.novelty.NEUTRAL_NOVELTY
    novelty_questions: int = 50  # min(50, len(eval_items))
    overfit_reject: float = 0.0  # gap > this rejects the WHOLE submission
    overfit_penalise: float = 0.0  # gap > this multiplies the benchmark by the factor
    overfit_factor: float = 1.0
    rules_doc_overfit: tuple[float, float] | None = None  # what COMPETITION_RULES.md says instead
    win_margin: float = 0.0  # composite ≥ king + margin
    # promotion (MiniRouter): score ≥ threshold and > king (king defaults to the threshold)
    benchmark: str | None = None
    split: str | None = None
    n_items: int = 0
    shuffle_seed: int | None = None
    threshold: float = 0.0

    def efficiency(self, avg_turns: float, live_acc: float) -> float:
        """pr_eval's efficiency term: max(0, (max_turns − avg_turns) / (max_turns − 1)) × live_acc."""
        if live_acc <= 0:
            return 0.0
        return max(0.0, (self.max_turns - avg_turns) / (self.max_turns - 1)) * live_acc

    def parts(
        self, cached_acc: float | None, live_acc: float, avg_turns: float, novelty: float | None = None
    ) -> dict[str, float]:
        """The score and its parts, before any overfit penalty: pr_eval's
        `w_cached·cached + w_live·live + w_eff·efficiency + w_novelty·novelty` (novelty None: the
        neutral value pr_eval gives when there is no king), or the promotion rule's pass rate."""
        if self.rule == "pr_eval":
            cached = float(cached_acc or 0.0)
            nov = self.novelty_neutral if novelty is None else float(novelty)
            eff = self.efficiency(avg_turns, live_acc)
            score = self.w_cached * cached + self.w_live * live_acc + self.w_efficiency * eff + self.w_novelty * nov
            return {
                "score": score,
                "cached": cached,
                "live": float(live_acc),
                "efficiency": eff,
                "novelty": nov,
                "avg_turns": float(avg_turns),
            }
        return {"score": float(live_acc), "live": float(live_acc), "avg_turns": float(avg_turns)}

    def overfit(self, gap: float | None) -> tuple[float, bool]:
        """(multiplier, rejected) for a hidden − audit accuracy gap (None: not measured → 1, not
        rejected): gap > overfit_reject rejects, gap > overfit_penalise multiplies by overfit_factor."""
        if gap is None or self.overfit_reject <= 0:
            return 1.0, False
        if gap > self.overfit_reject:
            return 0.0, True
        if gap > self.overfit_penalise:
            return self.overfit_factor, False
        return 1.0, False


@dataclass(frozen=True)
class Profile:
    name: str  # tinyrouter | minirouter
    title: str  # TinyRouter | MiniRouter
    bundle_format: str  # the bundle layout `trinity pack --format` writes
    repository: str  # owner/name on GitHub
    # -- pool ---------------------------------------------------------------------------------
    validator_pools: Mapping[str, tuple[str, ...]]  # the pools its validator runs: name -> names
    model_names: Mapping[str, str]  # our model id -> the name its receipts use
    # -- bundle ---------------------------------------------------------------------------------
    receipt_benchmark: str | None  # the receipt's `benchmark` (None: the run's)
    competition_benchmarks: tuple[str, ...]
    receipt_required: tuple[str, ...]  # fields their schema gate requires
    summary_recommended: tuple[str, ...]  # keys their validator warns about when missing
    history_row_key: str  # every fitness_history row carries this key
    min_history_rows: int  # ≥ 3 rows (their receipt gate)
    ledger_format: str | None  # "mpc-chain": {"m","p","c"} sha256 chain
    ledger_prices: Mapping[str, tuple[float, float]]  # $/1M (in, out) their ledger total uses
    ledger_tolerance_usd: float
    # -- gates ----------------------------------------------------------------------------------
    gates: tuple[GateSpec, ...]
    advisories: tuple[str, ...]  # the competition's report-only checks
    duplicate_threshold: float  # head cosine > threshold is a duplicate
    duplicate_strict: bool  # True: `>`; False: `≥`
    rate_window_s: int
    rate_max: int
    rate_source: str | None  # "leaderboard.json" | None (no rate limit)
    max_abs_weight: float
    frozen_files: tuple[str, ...]  # glob patterns a submission PR must not touch
    # -- PR -------------------------------------------------------------------------------------
    branch_template: str  # str.format(miner=, n=)
    title_template: str  # str.format(miner=, n=, benchmark=)
    verdict_pass: str  # the competition's wording
    verdict_fail: str  # str.format(reason=)
    # -- score ----------------------------------------------------------------------------------
    scoring: Scoring = field(default_factory=lambda: Scoring("none"))

    # -- router input: `trinity.competition.text` owns it -----------------------------------
    @property
    def router_text(self) -> RouterText:
        return ROUTER_TEXTS[self.name]

    @property
    def encoder_marker(self) -> bool:
        """Whether the encoder reads "\n<Head Input>" after the transcript."""
        return bool(self.router_text.head_marker)

    @property
    def transcript_style(self) -> str:
        return self.router_text.name

    def short_name(self, model_id: str) -> str:
        """The name the competition's receipts use for one of our pool model ids."""
        return self.model_names.get(model_id, model_id)

    def short_names(self, model_ids: list[str]) -> list[str]:
        return [self.short_name(m) for m in model_ids]

    def expected_n_models(self, pool_names: list[str] | None = None) -> int:
        """How many models the validator's pool has: the validator pool whose names are
        `pool_names` (in any order), else the first validator pool."""
        if pool_names:
            for names in self.validator_pools.values():
                if set(names) == set(pool_names):
                    return len(names)
            return len(pool_names)
        return len(next(iter(self.validator_pools.values())))

    def expected_theta_length(self, pool_names: list[str] | None = None) -> int:
        return theta_length(self.expected_n_models(pool_names))

    def branch(self, miner: str, n: int | None) -> str:
        return self.branch_template.format(miner=miner, n=n if n is not None else 1)

    def gate(self, name: str) -> GateSpec | None:
        return next((g for g in self.gates if g.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "bundle_format": self.bundle_format,
            "repository": self.repository,
            "encoder_marker": self.encoder_marker,
            "transcript_style": self.transcript_style,
            "validator_pools": {k: list(v) for k, v in self.validator_pools.items()},
            "gates": [{"name": g.name, "theirs": g.theirs, "blocking": g.blocking} for g in self.gates],
            "advisories": list(self.advisories),
            "scoring": self.scoring.rule,
        }


# ---- TinyRouter -----------------------------------------------------------------------------

# constants.py DEFAULT_POOL_MODELS, in router order; our configs/models.yaml `openrouter` ids.
_TR_POOL = tuple(TINYROUTER_NAMES.values())

TINYROUTER_PROFILE = Profile(
    name=TINYROUTER,
    title="TinyRouter",
    bundle_format=TINYROUTER,
    repository="James-CUDA/Gittensor-TinyRouter",
    validator_pools=_frozen({"openrouter": _TR_POOL}),
    model_names=_frozen(TINYROUTER_NAMES),
    receipt_benchmark="composite",
    competition_benchmarks=("math500", "mmlu", "livecodebench"),
    receipt_required=("benchmark", "total_cost_usd", "fitness_history", "generations", "pool_models", "n_total"),
    summary_recommended=(),
    history_row_key="generation",
    min_history_rows=3,
    ledger_format="mpc-chain",
    # openrouter_pricing.py OPENROUTER_POOL_PRICES ($/1M prompt, completion)
    ledger_prices=_frozen(
        {"qwen3.5-35b-a3b": (0.14, 1.00), "gemini-3.1-flash-lite": (0.25, 1.50), "deepseek-v4-flash": (0.09, 0.18)}
    ),
    ledger_tolerance_usd=0.05,
    gates=(
        GateSpec("rate_limit", "rate_limit", True),
        GateSpec("weight_sanity", "weights", True),
        GateSpec("duplicate", "duplicate", True),
        GateSpec("receipt", "receipt", True),
        GateSpec("ledger", "ledger_cost", True),
        GateSpec("schema", "pack_schema", True),
        GateSpec("theta_roundtrip", "theta_integrity", True),
        GateSpec("frozen_files", None, True),
    ),  # COMPETITION_RULES.md: rejected by maintainer
    advisories=("fitness_history_sequence", "ledger_call_volume", "head_routing_diversity"),
    duplicate_threshold=0.99,
    duplicate_strict=True,
    rate_window_s=86_400,
    rate_max=1,
    rate_source="leaderboard.json",
    max_abs_weight=1e6,
    frozen_files=(
        "scripts/pr_eval.py",
        "scripts/build_benchmark.py",
        "src/trinity/orchestration/reward.py",
        "src/trinity/submission/*.py",
        "leaderboard.json",
    ),
    branch_template="submission/{miner}-gen{n}",
    title_template="[submission] {miner} gen {n} — {benchmark}",
    verdict_pass="All offline gates passed.",
    verdict_fail="[preflight] REJECTED: {reason}",
    scoring=Scoring(
        "pr_eval",
        w_cached=0.70,
        w_live=0.15,
        w_efficiency=0.10,
        w_novelty=0.05,
        max_turns=5,
        novelty_first_benchmark_only=True,
        novelty_neutral=0.5,
        novelty_questions=50,
        overfit_reject=0.15,
        overfit_penalise=0.08,
        overfit_factor=0.85,
        rules_doc_overfit=(0.05, 0.10),
        win_margin=0.02,
    ),
)

# ---- MiniRouter -----------------------------------------------------------------------------

_MR_CHUTES = MINIROUTER_CHUTES_NAMES
_MR_BRIDGE = MINIROUTER_BRIDGE_NAMES

MINIROUTER_PROFILE = Profile(
    name=MINIROUTER,
    title="MiniRouter",
    bundle_format=MINIROUTER,
    repository="mini-router/minirouter",
    validator_pools=_frozen({"chutes": tuple(_MR_CHUTES.values()), "minibridge": tuple(_MR_BRIDGE.values())}),
    model_names=_frozen({**_MR_CHUTES, **_MR_BRIDGE}),
    receipt_benchmark=None,
    competition_benchmarks=("math500",),
    receipt_required=(),
    summary_recommended=("benchmark", "n_total", "best_fitness", "pool"),
    history_row_key="generation",
    min_history_rows=1,
    ledger_format=None,
    ledger_prices=_frozen({}),
    ledger_tolerance_usd=0.0,
    gates=(
        GateSpec("rate_limit", None, False),
        GateSpec("weight_sanity", "validate_submission", True),
        GateSpec("duplicate", None, False),
        GateSpec("receipt", None, False),
        GateSpec("ledger", None, False),
        GateSpec("schema", "validate_submission", False),
        GateSpec("theta_roundtrip", None, False),
    ),
    advisories=(),
    duplicate_threshold=0.99,
    duplicate_strict=True,
    rate_window_s=0,
    rate_max=0,
    rate_source=None,
    max_abs_weight=float("inf"),
    frozen_files=(),
    branch_template="sn74-{miner}",
    title_template="sn74: {miner} final_model submission ({benchmark})",
    verdict_pass="OK — bundle looks submit-ready.",
    verdict_fail="FAILED — {reason}. Fix before opening a PR.",
    scoring=Scoring("promotion", benchmark="math500", split="test", n_items=20, shuffle_seed=0, threshold=0.8),
)

PROFILES: Mapping[str, Profile] = _frozen({TINYROUTER: TINYROUTER_PROFILE, MINIROUTER: MINIROUTER_PROFILE})


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except (KeyError, TypeError):
        raise TrinityError(f"unknown competition {name!r}; use one of: {', '.join(PROFILES)}") from None


def competition_for_pool(pool: str | None) -> str:
    """The default competition of a pool: openrouter → tinyrouter, chutes / minibridge →
    minirouter, anything else → tinyrouter."""
    return resolve_competition(None, pool)


def run_competition(meta: dict[str, Any], override: str | None = None) -> Profile:
    """The profile of a run: `override` (a --competition flag), else run.json's `competition`,
    else the default of the run's pool."""
    if override:
        return get_profile(override)
    return get_profile(_run_competition_name(meta if isinstance(meta, dict) else {}))
