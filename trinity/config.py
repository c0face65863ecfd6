"""Training configuration: `TrainConfig` (pydantic) and `load_config(path, overrides)`.

A config file is YAML with the keys of `TrainConfig`; unknown keys are errors, except a
top-level `practice:` section (the simulated pool of `configs/practice.yaml`, read by
`trinity.practice.simulation`). Flags override file values. `questions: practice` / `matrix: practice`
mean the built-in practice set.

Relative paths (questions, matrix, cache_path) in a config file are taken from the file's own
directory, so a config and its data travel together and work from any working directory; given
as flags they are taken from the current directory. Either way they are stored absolute in the
resolved config, so `trinity resume` finds them from anywhere.

The app's "new run" form validates through `TrainConfig` too: `field_errors(data)` gives one
message per bad field instead of raising.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from trinity.errors import ConfigError
from trinity.io import canonical_json, safe_yaml, yaml_error

PRACTICE = "practice"
PATH_KEYS = ("questions", "matrix", "cache_path")  # file paths a config may give
# package data, so a non-editable install has it; configs/trinity.yaml in the checkout links here
DEFAULT_CONFIG = Path(__file__).resolve().parent / "optim" / "trinity.yaml"
# the label warm start's targets (trinity.optim.warmstart's module doc); the config, `train
# --label-targets` and `bench learning --live --label-targets` all take these
LabelTargets = Literal["group", "question", "best"]
LABEL_TARGETS: tuple[str, ...] = get_args(LabelTargets)
# best: measured closest to the per-topic ceiling from a few collected answers per topic (docs/perf/live-dollar.md)
DEFAULT_LABEL_TARGETS: LabelTargets = "best"
# the live recipe's collect (`trinity collect --per-group N`): training questions asked per topic; with
# best targets, 8 one-answer labels a topic named each topic's specialist on both bench seeds, 6 did not.
# Asking close topics again (`--max-k 4` on 6 questions a topic) measured the same on the live bench's
# 16 seeds (0.958 of the ceiling in expectation either way, pooled $ 0.115x vs 0.118x), so the recipe
# keeps one answer a cell on 8
RECIPE_PER_GROUP = 8
WarmStart = Literal["auto", "labels", "roles", "none"]
WARM_STARTS: tuple[str, ...] = get_args(WarmStart)

# Keys that may change between a run and its resume without making the checkpoint foreign:
# they change neither which candidates are sampled nor how they are scored.
RESUMABLE_KEYS = (
    "generations",
    "patience",
    "device",
    "max_batch_tokens",
    "budget_usd",
    "base_url",
    "models_yaml",
    "cache_path",
    "prices",
    "price_in",
    "price_out",
    "read_timeout_s",
    "fail_threshold",
    "workers",
    "ray_address",
    "live_schedule",
)

# Keys added after runs already existed, with the value that reproduces a run made before them:
# at that value a key is left out of the config hash (an older checkpoint stays valid), and
# `trinity resume` gives it to a run whose run.json lacks the key.
LEGACY_VALUES: dict[str, Any] = {
    "warm_start": "none",
    "lambda_turns": 0.0,
    "lambda_cost": 0.0,
    "split_seed": None,
    "stratify": False,
    "select_on": "pooled",
    "competition": None,
    "protocol": None,
    "objective": None,
    "live_schedule": "barrier",
    "live_recipe": "plain",
    "es_mirrors": 0.0,
    "label_targets": "question",
}


class Splits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    train: float = Field(default=0.6, ge=0, le=1)
    val: float = Field(default=0.2, ge=0, le=1)
    test: float = Field(default=0.2, ge=0, le=1)
    audit: float = Field(
        default=0.0, ge=0, le=1, description="an untouched overfit-check split (TinyRouter's audit set)"
    )

    @model_validator(mode="after")
    def _sum_to_one(self) -> "Splits":
        total = self.train + self.val + self.test + self.audit
        if abs(total - 1.0) > 1e-9:
            what = "train + val + test + audit" if self.audit else "train + val + test"
            raise ValueError(f"{what} must sum to 1 (got {total:g})")
        if self.train <= 0:
            raise ValueError("train must be > 0")
        return self

    def as_tuple(self) -> tuple[float, float, float]:
        """(train, val, test + audit): the audit split is carved out of the test part (optim.runinputs.carve_audit)."""
        return (self.train, self.val, self.test + self.audit)


class TrainConfig(BaseModel):
    """Everything that defines a training run (docs/CONTRACTS.md, Trainer). Defaults = configs/trinity.yaml."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    mode: Literal["cached", "live"] = "cached"
    encoder: str = Field("Qwen/Qwen3-0.6B", min_length=1)
    encoder_seed: int = Field(0, ge=0, description="init seed of random-weight encoders (tiny-qwen3)")
    questions: str | None = Field(None, description="questions JSONL path, or 'practice'")
    matrix: str | None = Field(None, description="outcome matrix JSON path, or 'practice'")
    practice_config: str | None = Field(
        None, description="file whose practice: section defines the simulated pool (set by load_config)"
    )
    benchmarks: list[str] | None = Field(None, description="keep only these benchmarks (default: all)")
    pool: str | None = Field(None, description="pool name (live mode: a provider pool of configs/models.yaml)")
    competition: Literal["tinyrouter", "minirouter"] | None = Field(
        None,
        description="whose router text the head trains on (encoder input, transcript, question "
        "rendering); default from the pool: openrouter -> tinyrouter, chutes -> minirouter",
    )
    protocol: Literal["tinyrouter", "minirouter", "open"] | None = Field(
        None,
        description="the session protocol the pool models see (role prompts, transcript, verdicts, stop "
        "rule, decoding): a competition's, or open (ours); default: the competition's when the run names "
        "--competition or runs a competition's pool, else open; runs made before it: open",
    )
    objective: Literal["competition", "reward"] | None = Field(
        None,
        description="live mode: what a candidate is scored by: competition (the competition's own score "
        "on the minibatch) or reward (correct - lambda_turns·(turns-1)/4 - lambda_cost·cost); default: "
        "competition for a live run under a competition's protocol, else reward",
    )
    base_url: str | None = Field(
        None,
        description="live mode: the pool's OpenAI-compatible base URL, overriding "
        "configs/models.yaml (e.g. a local vLLM server)",
    )
    models_yaml: str | None = Field(
        None,
        description="live mode: the providers file the pool is read from (default configs/models.yaml): "
        "its base URL, models, prices, retry and timeouts",
    )
    pool_models: list[str] | None = Field(
        None,
        description="live mode: the pool's model ids in θ order, overriding configs/models.yaml "
        "(e.g. what a local vLLM / llama.cpp server serves)",
    )
    cache_path: str | None = Field(None, description="live mode: response cache file (default: the pool's)")
    popsize: int = Field(32, ge=2, le=4096)
    generations: int = Field(60, ge=0, le=100_000)  # 0: the warm start alone (a resume can extend it)
    patience: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="stop once the chosen θ (by validation, or the live race's incumbent) has stood "
        "unbeaten for N generations; default: every generation runs",
    )
    m: int = Field(16, ge=1, description="training questions per candidate per generation")
    sigma0: float = Field(0.1, gt=0, le=10)
    es_mirrors: float = Field(
        0.0,
        ge=0,
        le=0.5,
        description="mirrored sampling in the ES: this fraction of each generation's candidates are "
        "mirror images of others (pycma CMA_mirrors, selective with delay); 0 = pycma's default "
        "(mirrors only below 6 candidates)",
    )
    seed: int = Field(0, ge=0, le=2**32 - 2)  # numpy seeds are 32-bit (the batch RNG takes seed + 1)
    split_seed: int | None = Field(
        None,
        ge=0,
        le=2**32 - 1,
        description="seed of the train/val/test split (default: seed); "
        "trinity train --seeds keeps it fixed across seeds",
    )
    budget_usd: float | None = Field(None, ge=0, le=1e9, allow_inf_nan=False)
    prices: dict[str, Any] | None = Field(
        None,
        description="live mode: USD per 1M tokens per model, {MODEL: {price_in, price_out}}, for models "
        "configs/models.yaml does not price (a budget needs every model's worst case)",
    )
    price_in: float | None = Field(
        None,
        ge=0,
        le=10_000,
        allow_inf_nan=False,
        description="live mode: USD per 1M prompt tokens of every unpriced model",
    )
    price_out: float | None = Field(
        None,
        ge=0,
        le=10_000,
        allow_inf_nan=False,
        description="live mode: USD per 1M completion tokens of every unpriced model",
    )
    read_timeout_s: float | None = Field(None, gt=0, description="live mode: the pool's read timeout per attempt")
    fail_threshold: float = Field(
        0.5, gt=0, le=1, description="live mode: stop when more than this share of a generation's calls failed"
    )
    policy: Literal["argmax", "sample"] = "argmax"
    temperature: float = Field(1.0, gt=0)
    max_batch_tokens: int = Field(8192, ge=64)
    device: str | None = Field(None, description="cpu, cuda, cuda:N (default: cuda when available)")
    dtype: Literal["float32", "bfloat16", "float16"] | None = None
    splits: Splits = Field(default_factory=Splits)
    val_every: int = Field(1, ge=0, description="validate every N generations (0: never)")
    max_turns: int = Field(5, ge=1, le=5)
    concurrency: int = Field(8, ge=1, le=256, description="live mode: parallel sessions")
    shaping: bool = Field(False, description="live mode: format bonus / turn penalty in the training reward")
    format_bonus: float = Field(0.05, ge=0)
    turn_penalty: float = Field(0.02, ge=0)
    workers: int = Field(
        1,
        ge=1,
        le=1024,
        description="Ray actors that evaluate a generation's "
        "candidates (live: the sessions' encoder work; 1: in this process; the [ray] extra)",
    )
    ray_address: str | None = Field(None, description="HOST:PORT of a Ray cluster for --workers (default: a local one)")
    warm_start: WarmStart = Field(
        "auto",
        description="fit the head's model rows on the training split's correctness labels before "
        "generation 1 (labels; with the role rows' default: Worker on a bare query, Verifier once the "
        "transcript has turns); roles = those role rows alone (the live default before); auto = labels "
        "whenever a matrix is given (cached, or live on a collected matrix), else roles (live) or none (cached)",
    )
    label_targets: LabelTargets = Field(
        DEFAULT_LABEL_TARGETS,
        description="label warm start: fit each question to the one-hot of its benchmark/kind group's "
        "best model by the group's mean correctness (best: route each topic as a whole, a tie shared), "
        "its correctness shrunk towards the group's mean by how much of the spread the draws per cell can "
        "tell from noise (group; k = 1: the group's mean), or its own labels (question, the first fit)",
    )
    live_recipe: Literal["race", "plain"] = Field(
        "race",
        description="live mode: race = common random numbers, successive halving within a generation and "
        "the incumbent re-evaluated; plain = every candidate on every question",
    )
    live_schedule: Literal["pipelined", "barrier"] = Field(
        "pipelined",
        description="live mode: pipelined = a session's next turn goes out as soon as its own call returns; "
        "barrier = every turn step waits for the slowest call (same rewards and spend)",
    )
    lambda_turns: float = Field(0.1, ge=0, description="live reward: - lambda_turns * (turns - 1) / 4")
    lambda_cost: float = Field(0.0, ge=0, description="live reward: - lambda_cost * session cost in USD")
    stratify: bool = Field(
        True,
        description="several benchmarks: every minibatch holds each benchmark's share (at least one question of each)",
    )
    select_on: Literal["pooled", "benchmark_mean"] = Field(
        "pooled",
        description="best-θ rule: validation accuracy over all val questions, or the mean of the "
        "per-benchmark accuracies (TinyRouter's composite)",
    )
    traces: Literal["all", "best", "none"] = Field(
        "all", description="cached mode: trace every candidate x question, only the best candidate's, or none"
    )

    @field_validator("benchmarks", "pool_models", mode="before")
    @classmethod
    def _comma_list(cls, v: Any) -> Any:
        # `benchmarks: math500,mmlu` (a string) reads as the list it means
        if isinstance(v, str):
            return [b.strip() for b in v.split(",") if b.strip()] or None
        return v

    @field_validator("pool_models")
    @classmethod
    def _distinct_models(cls, v: list[str] | None) -> list[str] | None:
        if v is not None:
            if not v or any(not m.strip() for m in v):
                raise ValueError("list at least one model id, none empty")
            if len(set(v)) != len(v):
                raise ValueError("a model id appears twice; θ has one row per model")
        return v

    @model_validator(mode="after")
    def _inputs_present(self) -> "TrainConfig":
        if self.mode == "cached" and (self.questions is None) != (self.matrix is None):
            raise ValueError("cached mode needs both questions and matrix (or neither, to be set later)")
        return self

    def resolved(self) -> dict[str, Any]:
        """JSON-ready dict, paths made absolute (stored in run.json)."""
        data = self.model_dump(mode="json")
        for key in ("questions", "matrix", "practice_config", "cache_path", "models_yaml"):
            v = data.get(key)
            if v and v != PRACTICE:
                # questions/matrix may list one file per benchmark, comma-separated
                data[key] = ",".join(str(Path(p).expanduser().resolve()) for p in v.split(",") if p)
        return data

    def hash(self) -> str:
        """Identity of the run's randomness and scoring; a checkpoint carries it."""
        data = self.resolved()
        for key in RESUMABLE_KEYS:
            data.pop(key, None)
        for key, legacy in LEGACY_VALUES.items():
            if data.get(key) == legacy:
                data.pop(key, None)
        if isinstance(data.get("splits"), dict) and not data["splits"].get("audit"):
            data["splits"].pop("audit", None)  # no audit split: the hash of a run made before it existed
        return hashlib.sha256(canonical_json(data).encode()).hexdigest()[:16]


def _loc(err: ErrorDetails) -> str:
    return ".".join(str(p) for p in err.get("loc", ())) or "config"


def _message(err: ErrorDetails) -> str:
    if err.get("type") == "extra_forbidden":
        return "unknown key; remove it (see configs/trinity.yaml for the valid keys)"
    msg = str(err.get("msg", "invalid"))
    return msg.removeprefix("Value error, ")


def field_errors(data: dict[str, Any]) -> dict[str, str]:
    """Per-field messages for `data` (empty when it is a valid TrainConfig). For forms."""
    try:
        TrainConfig.model_validate(data)
    except ValidationError as e:
        return {_loc(err): _message(err) for err in e.errors()}
    return {}


def validate_config(data: dict[str, Any], where: str = "config", sources: dict[str, str] | None = None) -> TrainConfig:
    """TrainConfig from a dict, or a one-line ConfigError naming the first bad key (and the
    file or flag it came from, when `sources` maps keys to where they were set)."""
    try:
        return TrainConfig.model_validate(data)
    except ValidationError as e:
        errs = e.errors()
        first = errs[0]
        top = str(first.get("loc", ("",))[0]) if first.get("loc") else ""
        origin = (sources or {}).get(top, where)
        more = f" (+{len(errs) - 1} more)" if len(errs) > 1 else ""
        # a whole-config rule (a model validator) has no key to name: just say where
        what = origin if origin.startswith("--") or not first.get("loc") else f"{origin}: {_loc(first)}"
        raise ConfigError(f"{what}: {_message(first)}{more}") from None


def read_config_file(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        doc = safe_yaml(path.read_text(encoding="utf-8"), path)
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text (a binary file?); pass a YAML config") from None
    except yaml.YAMLError as e:
        raise yaml_error(path, e) from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: a config must be a mapping of keys to values")
    return doc


def absolute_paths(doc: dict[str, Any], base: Path) -> dict[str, Any]:
    """`doc` with its relative file paths (PATH_KEYS) taken from `base` and made absolute."""
    out = dict(doc)
    for key in PATH_KEYS:
        v = out.get(key)
        if isinstance(v, str) and v and v != PRACTICE:
            out[key] = ",".join(str((base / Path(p).expanduser()).resolve()) for p in v.split(",") if p)
    return out


def load_config(
    path: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    defaults: str | Path | None = DEFAULT_CONFIG,
) -> TrainConfig:
    """Defaults file (configs/trinity.yaml) < config file < overrides (flags; None = not given)."""
    data: dict[str, Any] = {}
    sources: dict[str, str] = {}
    if defaults is not None and Path(defaults).is_file():
        base = read_config_file(defaults)
        base.pop(PRACTICE, None)
        data.update(base)
        sources.update({k: str(defaults) for k in base})
    if path is not None:
        doc = read_config_file(path)
        section = doc.pop(PRACTICE, None)
        if section is not None:
            if not isinstance(section, dict):
                raise ConfigError(f"{path}: practice: must be a mapping (the simulated pool)")
            data["practice_config"] = str(Path(path).resolve())
        data.update(absolute_paths(doc, Path(path).resolve().parent))
        sources.update({k: str(path) for k in doc})
    for k, v in (overrides or {}).items():
        if v is not None:
            data[k] = v
            sources[k] = "--" + k.replace("_", "-")
    return validate_config(data, str(path) if path else "config", sources)
