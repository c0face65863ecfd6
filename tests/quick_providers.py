"""A copy of the shipped providers file whose `local` pool backs off in milliseconds: a test of
retries against a failing server keeps its retries, its stop rule and its resume, without the
half a second to ten seconds of sleep per failing call (`--models-yaml FILE`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trinity.pool.providers import MODELS_YAML


def quick_providers(path: Path, models: dict[str, Any] | None = None) -> Path:
    """Write the copy to `path` (its `local` pool priced with `models`, {id: {price_in, price_out}},
    when given) and return `path`."""
    doc = yaml.safe_load(MODELS_YAML.read_text(encoding="utf-8"))
    local = doc["providers"]["local"]
    local["retry"].update(backoff_base_s=0.005, backoff_max_s=0.02)
    if models is not None:
        local["models"] = models
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path
