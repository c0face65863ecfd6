"""The tests' one `trinity train` argv builder (tests/ is on the path: pyproject's pytest `pythonpath`).

`train_argv(run_dir, generations=..., popsize=..., m=...)` gives `["train", ...]` for a cached
run on tiny-qwen3 (no download); `extra` comes last, so a flag there wins over one set here.
Prefix `[sys.executable, "-m", "trinity"]` for a child process, or pass it to `trinity.cli.main`.
"""

from __future__ import annotations

from pathlib import Path


def train_argv(
    run_dir: str | Path | None,
    *extra: object,
    generations: int,
    popsize: int,
    m: int,
    questions: str | Path | None = None,
    matrix: str | Path | None = None,
    config: str | Path | None = None,
    mode: str | None = "cached",
    seed: int | None = None,
    encoder: str = "tiny-qwen3",
) -> list[str]:
    argv = ["train"]
    if config is not None:
        argv += ["--config", str(config)]
    if mode is not None:
        argv += ["--mode", mode]
    if questions is not None:
        argv += ["--questions", str(questions)]
    if matrix is not None:
        argv += ["--matrix", str(matrix)]
    argv += ["--encoder", encoder, "--generations", str(generations), "--popsize", str(popsize), "--m", str(m)]
    if seed is not None:
        argv += ["--seed", str(seed)]
    if run_dir is not None:
        argv += ["--run-dir", str(run_dir)]
    return [*argv, *map(str, extra)]
