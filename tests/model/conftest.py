"""Shared fixtures for the router model tests: one tiny-qwen3 encoder per test session."""

import pytest


@pytest.fixture(scope="session")
def tiny_encoder():
    from trinity.model.encoder import load_encoder

    return load_encoder("tiny-qwen3", device="cpu", dtype="float32", seed=0)
