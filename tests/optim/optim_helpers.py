"""Shared helpers of the optim tests: write synthetic inputs, run the stand-in trainer, run the CLI."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from optim_standin import MODELS, LinearRouter, synthetic_task
from trinity_main import trinity_main  # noqa: F401 (re-exported for the optim tests)

from trinity.cli import main
from trinity.config import TrainConfig
from trinity.data.matrix import save_matrix
from trinity.data.questions import save_questions
from trinity.optim.fitness import CachedFitness
from trinity.optim.runinputs import inputs_digest, inputs_from_config
from trinity.optim.trainer import Trainer
from trinity.runs.rundir import RunDir

ROOT = Path(__file__).resolve().parents[2]


def write_inputs(tmp: Path, n_per_cat: int = 30, seed: int = 0) -> tuple[Path, Path]:
    qs, mat = synthetic_task(n_per_cat=n_per_cat, seed=seed)
    q, m = tmp / "questions.jsonl", tmp / "matrix.json"
    save_questions(q, qs)
    save_matrix(m, mat)
    return q, m


def standin_trainer(
    run_path: Path, cfg: TrainConfig, run_id: str | None = None, on_event=None, fitness_cls=CachedFitness
) -> Trainer:
    """A Trainer over the stand-in router, with run.json written as `trinity train` would."""
    inputs = inputs_from_config(cfg)
    run = RunDir(run_path)
    run.path.mkdir(parents=True, exist_ok=True)
    rid = run_id or run.id
    if not run.exists():
        run.write_meta(
            {
                "id": rid,
                "status": "created",
                "mode": cfg.mode,
                "config": cfg.resolved(),
                "models": list(MODELS),
                "splits": inputs.splits,
                "inputs_digest": inputs_digest(inputs),
            }
        )
    router = LinearRouter(len(MODELS))
    fit = fitness_cls(
        router,
        inputs.matrix,
        list(MODELS),
        policy=cfg.policy,
        temperature=cfg.temperature,
        seed=cfg.seed,
        traces=cfg.traces,
        text=lambda q: q.question,
    )
    return Trainer(run, cfg, inputs, router, fit, list(MODELS), run_id=rid, on_event=on_event)


def trinity_inproc(capsys, *args: str) -> tuple[int, str, str]:
    """`trinity ARGS` in this process (same code path as the console script, no start-up cost)."""
    capsys.readouterr()
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def tree_digest(path: Path) -> dict[str, str]:
    """{relative file: sha256} of everything under `path` (to prove a dir was left as it was);
    the engine lock file (it holds the pid of the last engine) is not run content."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def history_sans_secs(path: Path) -> list[dict]:
    return [{k: v for k, v in rec.items() if k != "secs"} for rec in json.loads(path.read_text())]


class FixedFeatureRouter:
    """A stand-in router whose features are fixed per text (a dict text → vector), for the warm
    start's fits: 3 models + 3 roles = 6 outputs, hidden 8."""

    def __init__(self, feats):
        self.feats = feats

    def initial_mean(self):
        return np.zeros(6 * 8)

    def features(self, texts):
        return np.stack([self.feats[t] for t in texts])
