"""The session's trained tiny run (tests/conftest.py: tiny-qwen3, the practice math and multiple-choice
questions) for the serve tests, and a served copy of it on 127.0.0.1 against the simulated practice pool."""

import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def served_run(tiny_run) -> Path:
    """The session's trained tiny run (tests/conftest.py), shared with the run-status and analysis tests."""
    return tiny_run


@pytest.fixture()
def run_copy(served_run, tmp_path, monkeypatch) -> Path:
    """A private copy per test (the server writes serve/ into it) and a response cache of its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    d = tmp_path / "run"
    shutil.copytree(served_run, d, ignore=shutil.ignore_patterns(".lock"))
    return d
