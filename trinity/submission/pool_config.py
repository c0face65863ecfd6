"""What the submission side needs from `configs/models.yaml`: pool model lists (schema gate) and
the names of the environment variables that hold keys (secret scan before a commit)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from trinity.errors import ConfigError, TrinityError
from trinity.io import safe_yaml
from trinity.pool.keys import default_env_file, read_env_file
from trinity.pool.providers import MODELS_YAML
from trinity.practice.simulation import practice_models

DEFAULT_KEY_ENVS = ("OPENROUTER_API_KEY", "CHUTES_API_KEY", "GITHUB_TOKEN")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def models_yaml_paths() -> list[Path]:
    """`configs/models.yaml` of the current directory, then the one shipped with trinity."""
    out = [Path.cwd() / "configs" / "models.yaml", MODELS_YAML]
    return [p for i, p in enumerate(out) if p.is_file() and p.resolve() not in {q.resolve() for q in out[:i]}]


def _read(path: Path) -> dict[str, Any]:
    try:
        doc = safe_yaml(path.read_text(encoding="utf-8"), path) or {}
    except (OSError, yaml.YAMLError, TrinityError):
        return {}
    return doc if isinstance(doc, dict) else {}


def pool_models_for(name: str) -> tuple[list[str] | None, str]:
    """The configured models (router order) of pool or provider `name`, and where they came from."""
    for path in models_yaml_paths():
        doc = _read(path)
        providers = p if isinstance(p := doc.get("providers"), dict) else {}
        aliases = a if isinstance(a := doc.get("pools"), dict) else {}
        pname = aliases.get(name, name)
        sec = providers.get(pname)
        if not isinstance(sec, dict):
            continue
        if sec.get("models_from") == "practice":
            return list(practice_models()), f"{path} providers.{pname} (practice.yaml models)"
        models = sec.get("models")
        if isinstance(models, dict) and models:
            return [str(m) for m in models], f"{path} providers.{pname}"
    return None, f"pool {name!r} not found in configs/models.yaml"


def key_env_names() -> list[str]:
    """Env var names that may hold keys: every provider's `key_env`, plus the defaults."""
    names: list[str] = []
    for path in models_yaml_paths():
        providers = _read(path).get("providers")
        if isinstance(providers, dict):
            for sec in providers.values():
                v = sec.get("key_env") if isinstance(sec, dict) else None
                if isinstance(v, str) and ENV_NAME.match(v) and v not in names:
                    names.append(v)
    for v in DEFAULT_KEY_ENVS:
        if v not in names:
            names.append(v)
    return names


def key_values(min_len: int = 8) -> list[tuple[str, str]]:
    """(env name, value) of the key variables set in this process or in the private env file
    (`trinity.pool.keys.default_env_file()`), long enough to be a key."""
    file_values: dict[str, str] = {}
    if default_env_file().exists():
        try:
            file_values = read_env_file(default_env_file())
        except ConfigError:
            file_values = {}  # an unusable env file holds no key the pool could have used
    out: list[tuple[str, str]] = []
    for name in key_env_names():
        for value in (os.environ.get(name, "").strip(), file_values.get(name, "").strip()):
            if len(value) >= min_len and (name, value) not in out:
                out.append((name, value))
    return out
