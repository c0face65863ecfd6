"""The practice setup: three SIMULATED models over the shipped practice benchmark
(`trinity.benchmarks.practice`).

Nothing here is a real model. The simulated models answer a practice question correctly with a
probability given by their per-kind skill in `configs/practice.yaml`, varied per question by a
deterministic offset (so that some questions suit one model better than its kind average says).
`simulate_correct` is the single source of truth: the cached outcome matrix (`practice_matrix`)
and the practice pool server (`trinity pool serve-practice`) both call it, so a `collect` against
the server reproduces the matrix exactly.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import yaml

from trinity.benchmarks.practice import practice_questions
from trinity.data.kinds import KINDS
from trinity.data.matrix import OutcomeMatrix
from trinity.errors import ConfigError
from trinity.io import safe_yaml, yaml_error

REPO_CONFIG = Path(__file__).with_name("practice.yaml")  # configs/practice.yaml links here
SIMULATED_LABEL = "practice (simulated pool)"


@dataclass(frozen=True)
class ModelProfile:
    id: str
    skill: dict[str, float]  # kind -> P(correct) of a Worker answer
    plan_boost: float  # fraction of the gap to 1 that a Thinker plan closes
    verifier_accuracy: float  # P(a VERDICT is right about the latest Worker answer)
    price_in: float  # simulated $ per 1M input tokens
    price_out: float  # simulated $ per 1M output tokens
    latency_ms: int = 0


@dataclass(frozen=True)
class PracticeSetup:
    models: dict[str, ModelProfile]  # in pool order
    k: int
    seed: int
    question_spread: float
    config_path: Path


def config_path() -> Path:
    env = os.environ.get("MINERTUI_PRACTICE_CONFIG")
    return Path(env) if env else REPO_CONFIG


@lru_cache(maxsize=8)
def _load_setup(path: Path) -> PracticeSetup:
    if not path.exists():
        raise ConfigError(f"practice config not found: {path} (set MINERTUI_PRACTICE_CONFIG to its path)")
    try:
        doc = safe_yaml(path.read_text(encoding="utf-8"), path) or {}
    except yaml.YAMLError as e:
        raise yaml_error(path, e) from None
    sec = doc.get("practice")
    if not isinstance(sec, dict) or not isinstance(sec.get("models"), dict) or not sec["models"]:
        raise ConfigError(f"{path}: missing 'practice.models' section")
    models: dict[str, ModelProfile] = {}
    for mid, p in sec["models"].items():
        if "simulated" not in mid:
            raise ConfigError(f"{path}: practice model id {mid!r} must say 'simulated'")
        try:
            skill = {k: float(v) for k, v in p["skill"].items()}
            price = p.get("price_per_1m", {})
            prof = ModelProfile(
                mid,
                skill,
                float(p.get("plan_boost", 0.0)),
                float(p.get("verifier_accuracy", 0.8)),
                float(price.get("input", 0.0)),
                float(price.get("output", 0.0)),
                int(p.get("latency_ms", 0)),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ConfigError(f"{path}: practice model {mid!r} has a bad profile ({e})") from None
        for kind in KINDS:
            if not 0.0 <= prof.skill.get(kind, -1) <= 1.0:
                raise ConfigError(f"{path}: practice model {mid!r} needs skill.{kind} in [0, 1]")
        models[mid] = prof
    return PracticeSetup(
        models, int(sec.get("k", 4)), int(sec.get("seed", 0)), float(sec.get("question_spread", 1.0)), path
    )


def practice_setup(path: str | Path | None = None) -> PracticeSetup:
    return _load_setup(Path(path) if path else config_path())


def practice_models(path: str | Path | None = None) -> dict[str, ModelProfile]:
    return practice_setup(path).models


def _uniform(*parts: object) -> float:
    """A deterministic uniform in [0, 1) from the given parts (stable across processes)."""
    h = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2.0**64


def _normal(*parts: object) -> float:
    u1 = max(_uniform("n1", *parts), 1e-12)
    u2 = _uniform("n2", *parts)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def p_correct(model: str, qid: str, kind: str, boosted: bool = False, setup: PracticeSetup | None = None) -> float:
    """P(a Worker answer of `model` to question `qid` is right)."""
    setup = setup or practice_setup()
    prof = setup.models[model]
    p = min(max(prof.skill[kind], 1e-4), 1 - 1e-4)
    logit = math.log(p / (1 - p)) + setup.question_spread * _normal(setup.seed, model, qid)
    p = 1.0 / (1.0 + math.exp(-logit))
    if boosted:
        p += prof.plan_boost * (1.0 - p)
    return p


def simulate_correct(
    model: str,
    qid: str,
    kind: str,
    role: str = "Worker",
    seed: int = 0,
    sample: int = 0,
    boosted: bool = False,
    setup: PracticeSetup | None = None,
) -> bool:
    """Whether `model` answers `qid` right as `role` for request seed `seed` / sample index.

    `seed` is the request's seed (collect sends the sample index); `sample` is an extra index for
    callers that draw several answers under one seed. Deterministic given the practice seed.
    """
    setup = setup or practice_setup()
    u = _uniform(setup.seed, model, qid, role, seed, sample)
    return u < p_correct(model, qid, kind, boosted, setup)


def verifier_is_right(model: str, qid: str, seed: int = 0, turn: int = 0, setup: PracticeSetup | None = None) -> bool:
    """Whether a simulated Verifier's verdict matches the truth for this (question, turn)."""
    setup = setup or practice_setup()
    return _uniform(setup.seed, "verify", model, qid, seed, turn) < setup.models[model].verifier_accuracy


def practice_matrix(k: int | None = None, seed: int | None = None, setup: PracticeSetup | None = None) -> OutcomeMatrix:
    """The cached outcome matrix of the simulated models: sample s = a Worker answer with seed s."""
    setup = setup or practice_setup()
    if seed is not None and seed != setup.seed:
        setup = PracticeSetup(setup.models, setup.k, seed, setup.question_spread, setup.config_path)
    k = k or setup.k
    qs = practice_questions()
    models = list(setup.models)
    solves = np.zeros((len(qs), len(models), k))
    for i, q in enumerate(qs):
        for j, m in enumerate(models):
            for s in range(k):
                solves[i, j, s] = simulate_correct(m, q.id, q.kind, "Worker", seed=s, setup=setup)
    answers = [q.answer if q.kind != "code" else None for q in qs]
    return OutcomeMatrix(
        "practice",
        models,
        [q.id for q in qs],
        solves,
        answers,
        notes=[f"SIMULATED: {SIMULATED_LABEL}, k={k}, seed={setup.seed}"],
    )
