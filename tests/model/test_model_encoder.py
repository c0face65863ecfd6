"""Encoder loading: built-ins, local paths, clear errors; tiny-qwen3 is deterministic."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from trinity.errors import ConfigError, ModelLoadError
from trinity.model import ROLES
from trinity.model.encoder import load_encoder
from trinity.model.router import Router
from trinity.model.text import encoder_input

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [encoder_input("What is 3*7?"), encoder_input("Name a prime above 100.", [("Worker", "m", "101")])]


def _features(encoder) -> np.ndarray:
    router = Router(encoder, n_models=3)
    rng = np.random.RandomState(0)
    thetas = router.initial_mean() + 0.1 * rng.randn(2, router.n_params)
    return router.population_features(thetas, TEXTS)


def test_encoder_input_format():
    assert encoder_input("Q?") == "QUERY:\nQ?\n<Head Input>"
    text = encoder_input("Q?", [("Thinker", "m1", "plan"), ("Worker", "m2", "42")])
    # TinyRouter's format (the default): parts joined by a blank line, roles in lower case
    assert text == "QUERY:\nQ?\n\n[Turn 1 | thinker | m1]\nplan\n\n[Turn 2 | worker | m2]\n42\n<Head Input>"
    assert (
        encoder_input("Q?", [("Worker", "m2", "42")], competition="minirouter")
        == "QUERY:\nQ?\n\n[Turn 1 | worker | m2]\n42"
    )
    assert ROLES == ("Thinker", "Worker", "Verifier")


def test_tiny_qwen3_shape_and_frozen(tiny_encoder):
    enc = tiny_encoder
    assert (enc.hidden_size, enc.num_layers, enc.device.type, enc.dtype) == (64, 4, "cpu", torch.float32)
    assert not enc.model.training
    assert not any(p.requires_grad for p in enc.model.parameters())
    ids = enc.token_ids("QUERY:\nhi")
    assert ids[-1] == enc.tokenizer.eos_token_id and enc.tokenizer.eos_token_id not in ids[:-1]
    router = Router(enc, n_models=3)
    # 7 matrices, each min(out, in) = hidden; layer num_layers - 2.
    assert router.svf_size == 7 * 64 and router.svf_layer == 2
    assert router.n_params == 6 * 64 + 7 * 64


def test_tiny_qwen3_is_deterministic_from_its_seed(tiny_encoder):
    again = load_encoder("tiny-qwen3", device="cpu", seed=0)
    np.testing.assert_array_equal(_features(tiny_encoder), _features(again))
    other = load_encoder("tiny-qwen3", device="cpu", seed=1)
    assert np.abs(_features(other) - _features(tiny_encoder)).max() > 1e-3


def test_tiny_qwen3_same_in_another_process(tiny_encoder, tmp_path):
    code = (
        "import numpy as np\n"
        "from trinity.model.encoder import load_encoder\n"
        "from trinity.model.router import Router\n"
        "from trinity.model.text import encoder_input\n"
        "router = Router(load_encoder('tiny-qwen3', device='cpu', seed=0), n_models=3)\n"
        "rng = np.random.RandomState(0)\n"
        "thetas = router.initial_mean() + 0.1 * rng.randn(2, router.n_params)\n"
        f"np.save({str(tmp_path / 'f.npy')!r}, router.population_features(thetas, {TEXTS!r}))\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)
    np.testing.assert_array_equal(np.load(tmp_path / "f.npy"), _features(tiny_encoder))


def test_local_path_loads_through_transformers(tiny_encoder, tmp_path):
    tiny_encoder.model.save_pretrained(tmp_path / "enc")
    tiny_encoder.tokenizer.save_pretrained(tmp_path / "enc")
    loaded = load_encoder(str(tmp_path / "enc"), device="cpu")
    assert (loaded.hidden_size, loaded.num_layers) == (64, 4)
    np.testing.assert_allclose(_features(loaded), _features(tiny_encoder), atol=1e-6)


def test_unknown_model_id_says_what_to_do(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # no network retries
    with pytest.raises(ModelLoadError) as err:
        load_encoder("no-such-org/no-such-model-zz9", device="cpu")
    msg = str(err.value)
    assert "no-such-org/no-such-model-zz9" in msg and "--encoder tiny-qwen3" in msg and "local path" in msg
    assert "\n" not in msg


def test_local_dir_without_a_model_is_a_load_error(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(ModelLoadError, match="local path.*--encoder tiny-qwen3"):
        load_encoder(str(tmp_path), device="cpu")
    with pytest.raises(ModelLoadError, match="no such directory"):
        load_encoder(str(tmp_path / "missing"), device="cpu")


def test_bad_device_and_dtype():
    with pytest.raises(ConfigError, match="dtype"):
        load_encoder("tiny-qwen3", device="cpu", dtype="float7")
    with pytest.raises(ConfigError, match="device"):
        load_encoder("tiny-qwen3", device="tpu9")
    with pytest.raises(ModelLoadError):
        load_encoder("  ")
