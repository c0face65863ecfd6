"""A trained tiny run (tiny-qwen3, the practice math and multiple-choice questions) shared by the
serve tests, and a served copy of it on 127.0.0.1 against the simulated practice pool."""

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def served_run(tmp_path_factory) -> Path:
    from filelock import FileLock

    from trinity.cli import main
    from trinity.data.matrix import save_matrix
    from trinity.practice.simulation import practice_matrix
    from trinity.benchmarks.practice import practice_questions
    from trinity.data.questions import save_questions

    shared = tmp_path_factory.getbasetemp().parent / "serve-tiny-run"
    with FileLock(str(shared) + ".lock"):
        if not (shared / "best_theta.npy").exists():
            inputs = shared.parent / "serve-inputs"
            inputs.mkdir(exist_ok=True)
            qs = [q for q in practice_questions() if q.kind != "code"]
            save_questions(inputs / "q.jsonl", qs)
            save_matrix(inputs / "m.json", practice_matrix().subset([q.id for q in qs]))
            argv = [
                "train",
                "--config",
                str(ROOT / "configs" / "practice.yaml"),
                "--questions",
                str(inputs / "q.jsonl"),
            ]
            argv += ["--matrix", str(inputs / "m.json"), "--generations", "1", "--popsize", "4", "--m", "4"]
            assert main([*argv, "--run-dir", str(shared)]) == 0
    return shared


@pytest.fixture()
def run_copy(served_run, tmp_path, monkeypatch) -> Path:
    """A private copy per test (the server writes serve/ into it) and a response cache of its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    d = tmp_path / "run"
    shutil.copytree(served_run, d, ignore=shutil.ignore_patterns(".lock"))
    return d
