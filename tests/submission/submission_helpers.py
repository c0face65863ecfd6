"""Builders for the submission tests: run directories in the documented formats (with a real
hash-chained ledger written through `trinity.pool.ledger.Ledger`) and git repositories with bare
remotes standing in for the competition repo and the miner's fork."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from trinity.competition.profiles import TINYROUTER_PROFILE
from trinity.io import atomic_write_json
from trinity.pool.ledger import Ledger
from trinity.runs.rundir import RunDir

# TinyRouter's pool (configs/models.yaml `openrouter`, router order); receipts name them by the
# short names of TinyRouter's constants.py
MODELS = ["qwen/qwen3.5-35b-a3b", "google/gemini-3.1-flash-lite", "deepseek/deepseek-v4-flash"]
SHORT = ["qwen3.5-35b-a3b", "gemini-3.1-flash-lite", "deepseek-v4-flash"]
HIDDEN = 1024  # the competition layout: 13,312 parameters for 3 models


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    """Keep the tests away from the user's data dir, env file, tokens and current directory."""
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv("MINERTUI_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    for name in ("GITHUB_TOKEN", "GITHUB_API_URL", "OPENROUTER_API_KEY", "CHUTES_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    (tmp_path / "gitconfig").write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Miner")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "miner@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Miner")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "miner@example.invalid")


def make_run(
    path: Path,
    *,
    seed: int = 0,
    generations: int = 5,
    paid_calls: int = 3,
    status: str = "finished",
    models: list[str] | None = None,
    hidden: int = HIDDEN,
    theta: np.ndarray | None = None,
    eval_json: bool = False,
    pool: str | None = None,
    competition: str | None = None,
) -> RunDir:
    models = list(models or MODELS)
    run = RunDir(path)
    run.path.mkdir(parents=True, exist_ok=True)
    run.write_meta(
        {
            "id": run.id,
            "status": status,
            "mode": "live",
            "models": models,
            "pool": pool,
            "benchmarks": ["math500", "mmlu", "livecodebench"],
            "encoder": "Qwen/Qwen3-0.6B",
            "config": {"popsize": 32, "m": 16, "sigma0": 0.1, "seed": seed, "generations": generations},
            **({"competition": competition} if competition else {}),
        }
    )
    if theta is None:
        rng = np.random.RandomState(seed)
        n = len(models)
        theta = np.concatenate(
            [
                rng.randn((n + 3) * hidden) * 0.1,  # head (n+3, hidden)
                1.0 + 0.01 * rng.randn(7 * hidden),
            ]
        )  # SVF scales
    np.save(run.best_theta, np.asarray(theta, dtype=np.float64))
    hist = [
        {
            "gen": g,
            "best": 0.5 + 0.01 * g,
            "mean": 0.4 + 0.01 * g,
            "max": 0.5 + 0.01 * g,
            "sigma": 0.1,
            "evals": 512 * g,
        }
        for g in range(1, generations + 1)
    ]
    atomic_write_json(run.history, hist)
    atomic_write_json(
        run.summary,
        {
            "run_id": run.id,
            "models": models,
            "n_params": int(np.size(theta)),
            "generations": generations,
            "best_fitness": hist[-1]["best"] if hist else None,
        },
    )
    if eval_json:
        atomic_write_json(run.eval_json, {"test_acc": 0.6})
    if paid_calls:
        with Ledger(run.ledger, run.id) as led:
            for i in range(paid_calls):
                # priced near TinyRouter's own table (openrouter_pricing.py), so the exported
                # ledger's total at their prices agrees with ours within their $0.05
                model = models[i % len(models)]
                pin, pout = TINYROUTER_PROFILE.ledger_prices.get(model.rsplit("/", 1)[-1], (0.2, 0.8))
                led.append(
                    provider="openrouter",
                    model=model,
                    prompt_tokens=900_000,
                    completion_tokens=300_000,
                    cost_micro_usd=round(0.9e6 * pin + 0.3e6 * pout) + i,
                    cost_source="reported",
                    purpose="train",
                )
    return run


def git(cwd: Path, *args: str, check: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {out.stderr}")
    return out.stdout.strip()


def make_repo(root: Path) -> Path:
    """`root/upstream.git` (competition), `root/fork.git` (the miner's fork) and the clone
    `root/work`, whose remotes have GitHub URLs that `url.insteadOf` maps to the bare repos."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("upstream.git", "fork.git"):
        git(root, "init", "-q", "--bare", "-b", "main", name)
    seed = root / "seed"
    git(root, "init", "-q", "-b", "main", "seed")
    (seed / "README.md").write_text("# competition\n")
    (seed / "submissions").mkdir()
    (seed / "submissions" / ".gitkeep").write_text("")
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", "init")
    git(seed, "push", "-q", str(root / "upstream.git"), "main")
    git(seed, "push", "-q", str(root / "fork.git"), "main")
    git(root, "clone", "-q", "-o", "upstream", str(root / "upstream.git"), "work")
    work = root / "work"
    git(work, "remote", "set-url", "upstream", "https://github.com/comp-org/tinyrouter.git")
    git(work, "remote", "add", "origin", "git@github.com:alice/tinyrouter.git")
    git(work, "config", f"url.{root / 'upstream.git'}.insteadOf", "https://github.com/comp-org/tinyrouter.git")
    git(work, "config", f"url.{root / 'fork.git'}.insteadOf", "git@github.com:alice/tinyrouter.git")
    git(work, "fetch", "-q", "upstream")
    return work


def repo_snapshot(work: Path) -> dict[str, str]:
    """Everything a refused submit must leave alone: refs, HEAD, index and working tree status."""
    return {
        "refs": git(work, "for-each-ref", "--format=%(refname) %(objectname)"),
        "head": git(work, "symbolic-ref", "-q", "HEAD", check=False) + git(work, "rev-parse", "HEAD"),
        "status": git(work, "status", "--porcelain=v1", "--untracked-files=all"),
        "index": git(work, "ls-files", "-s"),
        "fork": git(work.parent / "fork.git", "for-each-ref", "--format=%(refname) %(objectname)"),
    }
