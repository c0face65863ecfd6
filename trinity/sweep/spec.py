"""A sweep spec (YAML) and the trials it expands into.

    base: practice.yaml          # a TrainConfig file (relative to the spec), optional
    config: {generations: 6}     # TrainConfig keys on top of base, for every trial
    grid:                        # every combination of these values
      sigma0: [0.05, 0.1]
      popsize: [8, 16]
    random:                      # and/or draws (seeded: the same spec gives the same trials)
      samples: 4
      seed: 0
      params:
        sigma0: {loguniform: [0.02, 0.3]}
        m: {choice: [8, 16]}
        temperature: {uniform: [0.5, 2.0]}
        popsize: {randint: [8, 32]}    # inclusive
    seeds: [0, 1, 2]             # × seeds (default: the config's seed)
    resources: {cpus_per_trial: 1, gpus_per_trial: 0.5}   # default: 1 CPU; 1 GPU when the cluster has one
    budget_usd: 2.0              # one budget for the whole sweep (live mode), or --budget-usd

Trials = grid points × random draws × seeds, in that order; each trial's config is checked by
TrainConfig before anything runs, and a bad one is named (trial, key).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trinity.config import DEFAULT_CONFIG, TrainConfig, absolute_paths, load_config, read_config_file
from trinity.errors import ConfigError

SPEC_KEYS = ("base", "config", "grid", "random", "seeds", "resources", "budget_usd")
DISTRIBUTIONS = ("uniform", "loguniform", "choice", "randint")
MAX_TRIALS = 10_000


@dataclass
class Resources:
    cpus_per_trial: float = 1.0
    gpus_per_trial: float | None = None  # None: 1 when the cluster has GPUs, else 0


@dataclass
class Trial:
    id: str
    overrides: dict[str, Any]  # the keys this trial sets (grid, draws, seed) on top of base+config
    config: TrainConfig


@dataclass
class SweepSpec:
    source: str  # the spec file
    base: str | None  # absolute path of the base config, or None (the defaults)
    config: dict[str, Any]
    grid: dict[str, list[Any]]
    random: dict[str, Any] | None
    seeds: list[int] | None
    resources: Resources
    budget_usd: float | None
    raw: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "base": self.base,
            "config": self.config,
            "grid": self.grid,
            "random": self.random,
            "seeds": self.seeds,
            "resources": {
                "cpus_per_trial": self.resources.cpus_per_trial,
                "gpus_per_trial": self.resources.gpus_per_trial,
            },
            "budget_usd": self.budget_usd,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SweepSpec:
        r = d.get("resources") or {}
        return cls(
            source=d.get("source", ""),
            base=d.get("base"),
            config=dict(d.get("config") or {}),
            grid=dict(d.get("grid") or {}),
            random=d.get("random"),
            seeds=d.get("seeds"),
            resources=Resources(r.get("cpus_per_trial", 1.0), r.get("gpus_per_trial")),
            budget_usd=d.get("budget_usd"),
            raw=d,
        )

    def trials(self) -> list[Trial]:
        return expand(self)


def _where(path: str, key: str) -> str:
    return f"{path}: {key}"


def _num(v: Any, where: str, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"{where}: must be a number, got {v!r}")
    if positive and v <= 0:
        raise ConfigError(f"{where}: must be > 0, got {v!r}")
    return float(v)


def _check_key(key: Any, where: str) -> str:
    if not isinstance(key, str) or key not in TrainConfig.model_fields:
        raise ConfigError(f"{where}: {key!r} is not a TrainConfig key (see configs/trinity.yaml)")
    if key == "seed":
        raise ConfigError(f"{where}: sweep seeds with the top-level seeds: list, not as a parameter")
    return key


def load_spec(path: str | Path) -> SweepSpec:
    path = Path(path)
    doc = read_config_file(path)  # one-line errors: missing file, bad YAML, not a mapping
    src = str(path)
    for k in doc:
        if k not in SPEC_KEYS:
            raise ConfigError(f"{src}: unknown key {k!r}; a sweep spec has {', '.join(SPEC_KEYS)}")
    base_dir = path.resolve().parent
    base = doc.get("base")
    base_path: str | None = None
    if base is not None:
        if not isinstance(base, str) or not base:
            raise ConfigError(f"{src}: base: must be the path of a TrainConfig file")
        p = (base_dir / Path(base).expanduser()).resolve()
        if not p.is_file():
            raise ConfigError(f"{src}: base: config file not found: {p}")
        base_path = str(p)
    config = doc.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError(f"{src}: config: must be a mapping of TrainConfig keys")
    for k in config:
        _check_key(k, f"{src}: config")
    config = absolute_paths(config, base_dir)
    grid = doc.get("grid") or {}
    if not isinstance(grid, dict):
        raise ConfigError(f"{src}: grid: must map TrainConfig keys to lists of values")
    for k, vals in grid.items():
        _check_key(k, f"{src}: grid")
        if not isinstance(vals, list) or not vals:
            raise ConfigError(f"{src}: grid.{k}: must be a non-empty list of values")
        if k in ("questions", "matrix", "cache_path"):
            grid[k] = [absolute_paths({k: v}, base_dir)[k] for v in vals]
    random = doc.get("random")
    if random is not None:
        random = _check_random(random, src)
    seeds = doc.get("seeds")
    if seeds is not None:
        if (
            not isinstance(seeds, list)
            or not seeds
            or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds)
        ):
            raise ConfigError(f"{src}: seeds: must be a non-empty list of integers >= 0")
        if len(set(seeds)) != len(seeds):
            raise ConfigError(f"{src}: seeds: a seed appears twice")
    res_doc = doc.get("resources") or {}
    if not isinstance(res_doc, dict):
        raise ConfigError(f"{src}: resources: must be a mapping (cpus_per_trial, gpus_per_trial)")
    for k in res_doc:
        if k not in ("cpus_per_trial", "gpus_per_trial"):
            raise ConfigError(f"{src}: resources: unknown key {k!r} (cpus_per_trial, gpus_per_trial)")
    res = Resources()
    if "cpus_per_trial" in res_doc:
        res.cpus_per_trial = _num(res_doc["cpus_per_trial"], f"{src}: resources.cpus_per_trial", positive=True)
    if res_doc.get("gpus_per_trial") is not None:
        g = _num(res_doc["gpus_per_trial"], f"{src}: resources.gpus_per_trial")
        if g < 0:
            raise ConfigError(f"{src}: resources.gpus_per_trial: must be >= 0")
        res.gpus_per_trial = g
    budget = doc.get("budget_usd")
    if budget is not None and _num(budget, f"{src}: budget_usd") < 0:
        raise ConfigError(f"{src}: budget_usd: must be >= 0")
    spec = SweepSpec(
        source=str(path.resolve()),
        base=base_path,
        config=config,
        grid=grid,
        random=random,
        seeds=seeds,
        resources=res,
        budget_usd=None if budget is None else float(budget),
        raw=doc,
    )
    expand(spec)  # every trial's config is valid before anything runs
    return spec


def _check_random(random: Any, src: str) -> dict[str, Any]:
    if not isinstance(random, dict):
        raise ConfigError(f"{src}: random: must be a mapping (samples, seed, params)")
    for k in random:
        if k not in ("samples", "seed", "params"):
            raise ConfigError(f"{src}: random: unknown key {k!r} (samples, seed, params)")
    n = random.get("samples")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"{src}: random.samples: must be an integer >= 1")
    seed = random.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"{src}: random.seed: must be an integer >= 0")
    params = random.get("params")
    if not isinstance(params, dict) or not params:
        raise ConfigError(f"{src}: random.params: map TrainConfig keys to a distribution ({', '.join(DISTRIBUTIONS)})")
    for k, dist in params.items():
        _check_key(k, f"{src}: random.params")
        where = f"{src}: random.params.{k}"
        if not isinstance(dist, dict) or len(dist) != 1 or next(iter(dist)) not in DISTRIBUTIONS:
            raise ConfigError(
                f"{where}: one of {{uniform: [lo, hi]}}, {{loguniform: [lo, hi]}}, "
                "{randint: [lo, hi]}, {choice: [values]}"
            )
        kind, arg = next(iter(dist.items()))
        if not isinstance(arg, list) or not arg:
            raise ConfigError(f"{where}.{kind}: must be a non-empty list")
        if kind != "choice":
            if len(arg) != 2:
                raise ConfigError(f"{where}.{kind}: must be [lo, hi]")
            lo, hi = (_num(v, f"{where}.{kind}", positive=(kind == "loguniform")) for v in arg)
            if lo > hi:
                raise ConfigError(f"{where}.{kind}: lo must be <= hi")
            if kind == "randint" and not all(isinstance(v, int) for v in arg):
                raise ConfigError(f"{where}.randint: bounds must be integers")
    return {"samples": n, "seed": seed, "params": params}


def _draws(random: dict[str, Any] | None) -> list[dict[str, Any]]:
    if random is None:
        return [{}]
    rng = np.random.RandomState(random["seed"])
    out = []
    for _ in range(random["samples"]):
        d: dict[str, Any] = {}
        for k in sorted(random["params"]):  # sorted: the draws do not depend on YAML key order
            kind, arg = next(iter(random["params"][k].items()))
            if kind == "uniform":
                d[k] = float(rng.uniform(arg[0], arg[1]))
            elif kind == "loguniform":
                d[k] = float(math.exp(rng.uniform(math.log(arg[0]), math.log(arg[1]))))
            elif kind == "randint":
                d[k] = int(rng.randint(arg[0], arg[1] + 1))
            else:
                d[k] = arg[int(rng.randint(len(arg)))]
        out.append(d)
    return out


def expand(spec: SweepSpec) -> list[Trial]:
    keys = list(spec.grid)
    points = [dict(zip(keys, combo)) for combo in itertools.product(*(spec.grid[k] for k in keys))] or [{}]
    draws = _draws(spec.random)
    seeds: list[int | None] = list(spec.seeds) if spec.seeds else [None]
    n = len(points) * len(draws) * len(seeds)
    if n > MAX_TRIALS:
        raise ConfigError(f"{spec.source}: the spec expands to {n} trials (more than {MAX_TRIALS}); shrink it")
    width = max(3, len(str(n - 1)))
    trials = []
    for i, (pt, dr, seed) in enumerate(itertools.product(points, draws, seeds)):
        over = {**pt, **dr}
        if seed is not None:
            over["seed"] = seed
        tid = f"t{i:0{width}d}"
        try:
            cfg = load_config(spec.base, {**spec.config, **over}, defaults=DEFAULT_CONFIG)
        except ConfigError as e:
            raise ConfigError(f"{spec.source}: trial {tid} ({_describe(over)}): {e}") from None
        trials.append(Trial(tid, over, cfg))
    return trials


def _describe(over: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in over.items()) or "base"


describe = _describe
