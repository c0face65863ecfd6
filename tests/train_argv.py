"""The tests' one `trinity train` argv builder (tests/ is on the path: pyproject's pytest `pythonpath`).

`train_argv(run_dir, generations=..., popsize=..., m=...)` gives `["train", ...]` for a cached
run on tiny-qwen3 (no download); `extra` comes last, so a flag there wins over one set here.
A size given as None (`m=None`) is left to the config, as is `mode=None`.
Prefix `[sys.executable, "-m", "trinity"]` for a child process, or pass it to `trinity.cli.main`.
"""

from __future__ import annotations

from pathlib import Path


def train_argv(
    run_dir: str | Path | None,
    *extra: object,
    generations: int | None,
    popsize: int | None,
    m: int | None,
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
    argv += ["--encoder", encoder]
    for flag, value in (("--generations", generations), ("--popsize", popsize), ("--m", m)):
        if value is not None:
            argv += [flag, str(value)]
    if seed is not None:
        argv += ["--seed", str(seed)]
    if run_dir is not None:
        argv += ["--run-dir", str(run_dir)]
    return [*argv, *map(str, extra)]
