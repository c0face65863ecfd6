"""`trinity bench serve` reads a trained run through its records (`trinity.runs.records`): the
encoder it was trained with, and the copy of a run with a random router."""

from __future__ import annotations

import json

import pytest

from minertui.synth import make_run
from trinity.errors import InputError
from trinity.perf.serve import random_theta_run, run_encoder
from trinity.runs.records import read_run_meta


def test_the_run_encoder_comes_from_run_json(tmp_path):
    run = make_run(tmp_path / "r", generations=2, traces_per_gen=2).path
    assert run_encoder(run, None) == "tiny-qwen3"
    assert run_encoder(run, ["tiny-qwen3"]) == "tiny-qwen3"
    with pytest.raises(InputError, match="was trained with tiny-qwen3, not other"):
        run_encoder(run, ["other"])
    # a run that recorded its encoder only in the config (older runs)
    meta = json.loads((run / "run.json").read_text())
    meta.pop("encoder")
    (run / "run.json").write_text(json.dumps(meta))
    assert run_encoder(run, None) == "tiny-qwen3"
    with pytest.raises(InputError, match="is not a run directory"):
        run_encoder(tmp_path, None)


def test_a_random_theta_copy_is_a_valid_run_json(tmp_path):
    run = make_run(tmp_path / "r", generations=2, traces_per_gen=2).path
    copy = random_theta_run(run, "tiny-qwen3", tmp_path / "bench", "cpu")
    meta = read_run_meta(copy)
    assert meta.encoder == "tiny-qwen3" and meta.config.encoder == "tiny-qwen3" and meta.config.device == "cpu"
    assert meta.n_params and (copy / "best_theta.npy").exists()
    assert meta.models == read_run_meta(run).models
