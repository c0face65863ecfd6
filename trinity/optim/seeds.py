"""`trinity train --seeds 0,1,2` (issue 14): the same recipe once per seed, into sibling run
directories, and a small summary that picks the best run by validation and shows the spread.

The runs share one train/val/test split (`split_seed` = the first seed unless the config sets
one), so their validation accuracies compare like with like; each seed changes the ES samples,
the minibatches and the warm start's cross-validation folds. Runs go one after another in this
process (the box's cores are the encoder's); each is an ordinary run dir (`trinity resume` works
on it). The summary, `<base>-seeds.json`, is rewritten after every run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from trinity.config import TrainConfig
from trinity.errors import InputError
from trinity.io import atomic_write_json
from trinity.runs.records import BestTheta, read_summary

if TYPE_CHECKING:
    from trinity.optim.trainer import TrainResult


def parse_seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in str(text).split(",") if s.strip()]
    except ValueError:
        raise InputError(f"--seeds {text!r}: give comma-separated non-negative integers, e.g. 0,1,2") from None
    if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise InputError(f"--seeds {text!r}: give distinct non-negative integers, e.g. 0,1,2")
    return seeds


def seed_dirs(base: Path, seeds: list[int]) -> dict[int, Path]:
    return {s: base.with_name(f"{base.name}-s{s}") for s in seeds}


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    a = np.asarray(values, dtype=np.float64)
    return {
        "mean": float(a.mean()),
        "std": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
        "min": float(a.min()),
        "max": float(a.max()),
        "n": len(a),
    }


def seeds_summary(dirs: dict[int, Path], results: dict[int, TrainResult]) -> dict[str, Any]:
    rows = []
    for s, d in dirs.items():
        row: dict[str, Any] = {"seed": s, "run_dir": str(d)}
        if s in results:
            row["status"] = results[s].status
        sp = d / "summary.json"
        if sp.exists():
            summ = read_summary(sp)
            bt = summ.best_theta or BestTheta()
            row.update(
                {
                    "val_acc": bt.val_acc,
                    "test_acc": summ.test_acc,
                    "best_from": bt.which,
                    "generations": summ.generations,
                }
            )
        rows.append(row)
    scored = [r for r in rows if isinstance(r.get("val_acc"), (int, float))]
    best = max(scored, key=lambda r: (r["val_acc"], -r["seed"])) if scored else None
    return {
        "rule": "best = highest best-θ validation accuracy (shared split); ties to the lower seed",
        "runs": rows,
        "best": best,
        "spread": {
            "val_acc": _spread([r["val_acc"] for r in scored]),
            "test_acc": _spread([r["test_acc"] for r in scored if isinstance(r.get("test_acc"), (int, float))]),
        },
    }


def train_seeds(
    cfg: TrainConfig,
    seeds: list[int],
    base: Path,
    start: Callable[..., TrainResult],
    on_line: Callable[[str], None] = print,
    **kw: Any,
) -> tuple[int, dict[str, Any]]:
    """Run `start(cfg_for_seed, run_dir=…, **kw)` per seed; returns (exit code, summary)."""
    dirs = seed_dirs(base, seeds)
    taken = [str(d) for d in dirs.values() if d.exists()]
    if taken:
        raise InputError(f"{', '.join(taken)} already exist(s); pick another --run-dir for --seeds")
    split_seed = cfg.split_seed if cfg.split_seed is not None else seeds[0]
    out_path = base.with_name(f"{base.name}-seeds.json")
    results: dict[int, TrainResult] = {}
    code = 0
    summary: dict[str, Any] = {}
    for s in seeds:
        on_line(f"seed {s}: {dirs[s]}")
        res = start(cfg.model_copy(update={"seed": s, "split_seed": split_seed}), run_dir=dirs[s], **kw)
        results[s] = res
        code = code or res.exit_code
        summary = seeds_summary(dirs, results)
        summary["split_seed"] = split_seed
        os.makedirs(out_path.parent, exist_ok=True)
        atomic_write_json(out_path, summary)
    b, sp = summary.get("best"), (summary.get("spread") or {}).get("val_acc")
    if b:
        spread = (
            f" (val over seeds: mean {sp['mean']:.3f}, sd {sp['std']:.3f}, {sp['min']:.3f}-{sp['max']:.3f})"
            if sp
            else ""
        )
        on_line(
            f"best seed {b['seed']}: val {b['val_acc']:.3f}"
            + (f", test {b['test_acc']:.3f}" if isinstance(b.get("test_acc"), float) else "")
            + f"{spread}; {out_path}"
        )
    return code, summary
