"""Shared helpers of the sweep tests: a spec file, a run dir's results without wall times."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PRACTICE = ROOT / "configs" / "practice.yaml"


def write_spec(path: Path, **sections) -> Path:
    doc = {
        "base": str(PRACTICE),
        "config": {"encoder": "tiny-qwen3", "generations": 3, "popsize": 4, "m": 8, "traces": "none"},
    }
    for k, v in sections.items():
        if k == "base" and v is None:
            doc.pop("base")
        elif k == "config":
            doc["config"] = {**doc["config"], **v}
        else:
            doc[k] = v
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def results(run_dir: Path) -> tuple[bytes, list[dict]]:
    """best_theta.npy bytes and history.json without the wall-clock field."""
    hist = json.loads((run_dir / "history.json").read_text())
    return (run_dir / "best_theta.npy").read_bytes(), [{k: v for k, v in h.items() if k != "secs"} for h in hist]
