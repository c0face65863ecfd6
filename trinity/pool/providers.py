"""Providers and pools from `configs/models.yaml` → `PoolConfig`.

`load_pool(name)` accepts a provider name (`openrouter`, `chutes`, `local`, `practice`) or a pool
alias (`tinyrouter`, `minirouter`). Overrides (base_url, models, concurrency, …) come from flags;
a `practice` pool needs the practice server's base_url (`start_practice_server().base_url`).

A provider with `models_from: NAME` takes its model ids and prices from the model source
registered under NAME (`register_model_source`): the practice simulator (`trinity.practice`, a
package above this one) registers `practice` when it is imported, so the pool imports nothing of
the simulator, the graders or the datasets.
"""

from __future__ import annotations

import copy
import hashlib
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from trinity.errors import ConfigError
from trinity.io import safe_yaml, yaml_error
from trinity.pool.faults import RetryPolicy
from trinity.pool.keys import resolve_key

# package data, so a non-editable install has it; configs/models.yaml in the checkout links here
MODELS_YAML = Path(__file__).resolve().with_name("models.yaml")
REASONING_STYLES = ("openrouter", "reasoning_effort", "none")
# A response body above this many bytes is a failed call (a provider cannot need more for one chat
# completion; a hostile one could fill memory, the journal and the cache). Per provider:
# `max_body_bytes:` in configs/models.yaml.
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_TOTAL_S = 900.0  # `timeouts.total_s`: the deadline of one attempt


@dataclass(frozen=True)
class Timeouts:
    connect_s: float = 10.0
    read_s: float = 600.0  # a completion with long reasoning can take minutes
    write_s: float = 30.0
    # one attempt's whole time, head to last byte: the read timeout restarts on every byte, so a
    # server trickling a byte at a time would otherwise hold a call for as long as it likes
    total_s: float = 900.0


@dataclass(frozen=True)
class Price:
    input_per_1m: float  # USD per 1M prompt tokens
    output_per_1m: float  # USD per 1M completion tokens

    def cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_1m + completion_tokens * self.output_per_1m) / 1e6


@dataclass(frozen=True)
class PoolConfig:
    name: str  # provider name (goes into the ledger and the cache key)
    base_url: str
    models: tuple[str, ...]  # pool order = the router's model order
    prices: dict[str, Price]
    key_env: str | None = None
    key_optional: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    decoding: dict[str, Any] = field(default_factory=dict)  # defaults of every request
    reasoning_style: str = "none"
    request_usage_cost: bool = False
    max_concurrency: int = 16
    timeouts: Timeouts = Timeouts()
    retry: RetryPolicy = RetryPolicy()
    simulated: bool = False
    cache_namespace: str = ""  # response-cache identity of this endpoint (never the key)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    def unpriced(self) -> list[str]:
        """The pool's models without a known price: their worst case cannot be reserved."""
        return [m for m in self.models if m not in self.prices]

    def require_prices(self) -> None:
        """ConfigError naming the unpriced models and both ways to give them a price."""
        missing = self.unpriced()
        if missing:
            raise ConfigError(
                f"pool {self.name!r} has no price for {', '.join(missing)}: the budget cannot reserve a "
                "call's worst case without one; give prices per model (`prices: {MODEL: {price_in: X, "
                "price_out: Y}}` in the config, USD per 1M tokens) or for all of them with --price-in X "
                "--price-out Y (0 0 for a free local server)"
            )

    def price(self, model: str) -> Price:
        p = self.prices.get(model)
        if p is None:
            return Price(0.0, 0.0)
        return p

    def check_model(self, model: str) -> None:
        if model not in self.models:
            raise ConfigError(
                f"model {model!r} is not in the {self.name} pool "
                f"({', '.join(self.models) or 'no models'}); check configs/models.yaml"
            )

    def to_json(self) -> dict[str, Any]:
        """A description safe to store in run.json (no key, only the key's variable name)."""
        return {
            "name": self.name,
            "base_url": self.base_url,
            "models": list(self.models),
            "key_env": self.key_env,
            "simulated": self.simulated,
            "prices": {m: [p.input_per_1m, p.output_per_1m] for m, p in self.prices.items()},
            "decoding": dict(self.decoding),
            "max_concurrency": self.max_concurrency,
        }


_MODELS_YAML: dict[tuple[str, str], dict[str, Any]] = {}  # (path, sha256 of its text) → parsed file


def read_models_yaml(path: Path) -> dict[str, Any]:
    """configs/models.yaml (or another models file) parsed and checked for its 'providers' section.
    Parsed once per content of the file (pure-Python YAML takes ~0.3 s for it; a forecast reads
    it several times); every caller gets its own copy."""
    if not path.exists():
        raise ConfigError(f"models config not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text (a binary file?); pass a YAML providers file") from None
    except OSError as e:
        raise ConfigError(f"cannot read the models config {path}: {e.strerror or e}") from None
    key = (str(path.resolve()), hashlib.sha256(text.encode("utf-8")).hexdigest())
    if key not in _MODELS_YAML:
        try:
            doc = safe_yaml(text, path) or {}
        except yaml.YAMLError as e:
            raise yaml_error(path, e) from None
        if not isinstance(doc, dict) or not isinstance(doc.get("providers"), dict):
            raise ConfigError(f"{path}: missing 'providers' section")
        if len(_MODELS_YAML) > 16:
            _MODELS_YAML.clear()
        _MODELS_YAML[key] = doc
    return copy.deepcopy(_MODELS_YAML[key])


def section_mapping(value: Any, where: str) -> dict[str, Any]:
    """A section of the models file: a mapping, {} when absent or empty; else a ConfigError."""
    if not value:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a mapping, got {type(value).__name__}")
    return value


def known_pools(doc: dict[str, Any]) -> set[str]:
    """The pool names a models file defines: its providers and their aliases (`pools:`)."""
    return set(doc["providers"]) | set(doc.get("pools") or {})


# No real model costs more than this (USD per 1M tokens); a larger figure is a typo or an attack
# (1e308 overflows the money arithmetic).
MAX_PRICE_PER_1M = 10_000.0


def _num(sec: dict[str, Any], key: str, default: float, where: str, most: float = 1e9) -> float:
    v = sec.get(key, default)
    try:
        v = float(v)
    except (TypeError, ValueError, OverflowError):
        raise ConfigError(f"{where}: {key} must be a number, got {str(v)[:40]!r}") from None
    if not math.isfinite(v) or v < 0 or v > most:
        raise ConfigError(f"{where}: {key} must be a finite number from 0 to {most:g}, got {v:g}")
    return v


def _int(v: Any, what: str, least: int = 1, most: int = 1_000_000) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not least <= v <= most:
        raise ConfigError(f"{what} must be a whole number from {least} to {most}, got {str(v)[:40]!r}")
    return v


# `models_from: NAME` -> the pool's model ids (router order) and their prices
ModelSource = Callable[[], tuple[tuple[str, ...], dict[str, Price]]]
_MODEL_SOURCES: dict[str, ModelSource] = {}


def register_model_source(name: str, source: ModelSource) -> None:
    """Let providers with `models_from: NAME` read their models and prices from `source`."""
    _MODEL_SOURCES[name] = source


def _models_from(name: Any, where: str) -> tuple[tuple[str, ...], dict[str, Price]]:
    source = _MODEL_SOURCES.get(name) if isinstance(name, str) else None
    if source is None:
        known = ", ".join(sorted(_MODEL_SOURCES)) or "none is loaded"
        raise ConfigError(f"{where}.models_from: no model source {str(name)[:40]!r} ({known})")
    return source()


def _provider_section(name: str, models_yaml: str | os.PathLike[str] | None) -> tuple[str, dict[str, Any], str, Path]:
    path = Path(models_yaml) if models_yaml else MODELS_YAML
    doc = read_models_yaml(path)
    providers: dict[str, Any] = doc["providers"]
    aliases = section_mapping(doc.get("pools"), f"{path}: pools")
    pname = aliases.get(name, name)
    if pname is not None and not isinstance(pname, str):  # None: "unknown pool" below
        raise ConfigError(f"{path}: pools.{name} must name a provider, got {pname!r}")
    if pname not in providers:
        known = sorted(known_pools(doc))
        raise ConfigError(f"unknown pool {name!r}; known: {', '.join(known)} (see {path})")
    where = f"{path}: providers.{pname}"
    return pname, section_mapping(providers[pname], where), where, path


def _models_and_prices(sec: dict[str, Any], where: str) -> tuple[tuple[str, ...], dict[str, Price]]:
    if sec.get("models_from") is not None:
        return _models_from(sec["models_from"], where)
    raw = sec.get("models") or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}.models must be a mapping of model id -> prices")
    prices = {}
    for m, p in raw.items():
        p = p or {}
        if not isinstance(p, dict) or ("price_in" not in p and "price_out" not in p):
            continue  # no known price: live mode refuses it until one is given
        w = f"{where}.models.{m}"
        prices[m] = Price(_num(p, "price_in", 0.0, w, MAX_PRICE_PER_1M), _num(p, "price_out", 0.0, w, MAX_PRICE_PER_1M))
    return tuple(raw), prices


def price_overrides(
    prices: dict[str, Any] | None,
    price_in: float | None,
    price_out: float | None,
    models: tuple[str, ...] | list[str],
    known: dict[str, Price],
) -> dict[str, Price]:
    """Prices from a run's config: `prices` per model ({price_in, price_out} or [in, out]), then
    `price_in`/`price_out` for every model still without one (USD per 1M tokens)."""
    out: dict[str, Price] = {}
    for m, p in (prices or {}).items():
        if isinstance(p, (list, tuple)) and len(p) == 2:
            p = {"price_in": p[0], "price_out": p[1]}
        if not isinstance(p, dict):
            raise ConfigError(f"prices.{m} must be {{price_in: X, price_out: Y}} (USD per 1M tokens)")
        out[m] = Price(
            _num(p, "price_in", 0.0, f"prices.{m}", MAX_PRICE_PER_1M),
            _num(p, "price_out", 0.0, f"prices.{m}", MAX_PRICE_PER_1M),
        )
    if (price_in is None) != (price_out is None):
        raise ConfigError("give both --price-in and --price-out (USD per 1M tokens), or neither")
    if price_in is not None:
        for m in models:
            if m not in known and m not in out:
                out[m] = Price(
                    _num({"--price-in": price_in}, "--price-in", 0, "prices", MAX_PRICE_PER_1M),
                    _num({"--price-out": price_out}, "--price-out", 0, "prices", MAX_PRICE_PER_1M),
                )
    return out


def pool_prices(name: str, models_yaml: str | os.PathLike[str] | None = None) -> dict[str, Price]:
    """The prices configs/models.yaml gives for the pool's models (unpriced ones left out)."""
    _, sec, where, _ = _provider_section(name, models_yaml)
    return _models_and_prices(sec, where)[1]


def pool_model_ids(name: str, models_yaml: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """The pool's model ids in router order, without needing its base URL (the practice server
    may start later)."""
    pname, sec, where, path = _provider_section(name, models_yaml)
    models, _ = _models_and_prices(sec, where)
    if not models:
        raise ConfigError(
            f"pool {name!r} has no models; list them in {path}, or pass them "
            "(train: --pool-models or pool_models: in the config; collect: --models)"
        )
    return models


def load_pool(
    name: str,
    models_yaml: str | os.PathLike[str] | None = None,
    *,
    base_url: str | None = None,
    models: list[str] | None = None,
    max_concurrency: int | None = None,
    decoding: dict[str, Any] | None = None,
    retry: RetryPolicy | None = None,
    timeouts: Timeouts | None = None,
    cache_namespace: str | None = None,
    prices: dict[str, Price] | None = None,
    read_timeout_s: float | None = None,
) -> PoolConfig:
    pname, sec, where, path = _provider_section(name, models_yaml)
    pool_models, table = _models_and_prices(sec, where)
    prices = {**table, **(prices or {})}  # a model without a price stays out: see require_prices
    if models:
        pool_models = tuple(models)
    if not pool_models:
        raise ConfigError(
            f"pool {name!r} has no models; list them in {path}, or pass them "
            "(train: --pool-models or pool_models: in the config; collect: --models)"
        )

    url = base_url or sec.get("base_url")
    if not url:
        hint = "start `trinity pool serve-practice` and pass its base URL" if pname == "practice" else "pass --base-url"
        raise ConfigError(f"pool {name!r} has no base_url; {hint}")
    if not str(url).startswith(("http://", "https://")):
        raise ConfigError(f"pool {name!r}: base_url {url!r} must start with http:// or https://")
    url = str(url).rstrip("/")

    rs = sec.get("reasoning_style", "none")
    if rs not in REASONING_STYLES:
        raise ConfigError(f"{where}.reasoning_style must be one of {', '.join(REASONING_STYLES)}")
    t = section_mapping(sec.get("timeouts"), f"{where}.timeouts")
    r = section_mapping(sec.get("retry"), f"{where}.retry")
    dec = {
        "temperature": 0,
        "max_tokens": 4096,
        **section_mapping(sec.get("decoding"), f"{where}.decoding"),
        **(decoding or {}),
    }
    conc = _int(max_concurrency or sec.get("max_concurrency") or 16, f"{where}: max_concurrency", 1, 100_000)
    if dec.get("max_tokens") is not None:
        _int(dec["max_tokens"], f"{where}: decoding.max_tokens", 1, 10_000_000)
    headers = {str(k): str(v) for k, v in section_mapping(sec.get("headers"), f"{where}.headers").items()}
    if any(k.lower() == "authorization" for k in headers):
        raise ConfigError(f"{where}.headers must not carry Authorization; name the key's env var in key_env")
    fixed_url = bool(sec.get("base_url")) and not base_url
    timeouts = timeouts or Timeouts(
        _num(t, "connect_s", 10, where),
        _num(t, "read_s", 600, where),
        _num(t, "write_s", 30, where),
        _num(t, "total_s", DEFAULT_TOTAL_S, where),
    )
    if read_timeout_s is not None:
        if not read_timeout_s > 0:
            raise ConfigError(f"read timeout must be > 0 seconds, got {read_timeout_s}")
        timeouts = replace(timeouts, read_s=float(read_timeout_s))
    max_body = int(_num(sec, "max_body_bytes", DEFAULT_MAX_BODY_BYTES, where))
    if max_body < 1024:
        raise ConfigError(f"{where}: max_body_bytes must be >= 1024")
    return PoolConfig(
        name=pname,
        base_url=url,
        models=pool_models,
        prices=prices,
        key_env=sec.get("key_env"),
        key_optional=bool(sec.get("key_optional", False)),
        headers=headers,
        decoding=dec,
        reasoning_style=rs,
        request_usage_cost=bool(sec.get("request_usage_cost", False)),
        max_concurrency=conc,
        timeouts=timeouts,
        max_body_bytes=max_body,
        retry=retry
        or RetryPolicy(
            int(_num(r, "max_retries", 5, where)),
            _num(r, "backoff_base_s", 1.0, where),
            _num(r, "backoff_max_s", 60, where),
            _num(r, "max_retry_after_s", 300, where),
        ),
        simulated=bool(sec.get("simulated", False)),
        # A named cloud endpoint is the same service wherever it is reached from; a local or
        # practice server is only the same service at the same address.
        cache_namespace=cache_namespace or (pname if fixed_url else f"{pname}@{url}"),
    )


def config_prices(cfg: Any) -> dict[str, Price]:
    """The run config's prices (`prices:`, `--price-in/--price-out`) for the models the table lacks."""
    models = list(getattr(cfg, "pool_models", None) or [])
    table = pool_prices(cfg.pool, getattr(cfg, "models_yaml", None))
    if not models:
        models = list(pool_model_ids(cfg.pool, getattr(cfg, "models_yaml", None)))
    return price_overrides(
        getattr(cfg, "prices", None), getattr(cfg, "price_in", None), getattr(cfg, "price_out", None), models, table
    )


def preflight(cfg: Any) -> None:
    """What a live run would fail on at its first call, checked before its run directory exists:
    a model without a price (the budget could not reserve its worst case) and a missing key."""
    pool = load_pool(
        cfg.pool,
        getattr(cfg, "models_yaml", None),
        base_url=getattr(cfg, "base_url", None) or "http://127.0.0.1:1",
        models=getattr(cfg, "pool_models", None),
        prices=config_prices(cfg),
    )
    pool.require_prices()
    resolve_key(pool.key_env, provider=pool.name, optional=pool.key_optional)
