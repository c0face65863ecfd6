"""θ layout and files: best_theta.npy ↔ head_weights.npy + svf_scales.npy."""

import numpy as np
import pytest

from trinity.errors import InputError
from trinity.model.theta import (
    join_theta,
    load_bundle_weights,
    load_theta,
    save_bundle_weights,
    save_theta,
    split_theta,
    theta_size,
)


def test_competition_size():
    assert theta_size(3, 1024, 7 * 1024) == 13_312


def test_split_join_layout():
    theta = np.arange(theta_size(3, 4, 28), dtype=np.float64)
    head, svf = split_theta(theta, 3, 4)
    assert head.shape == (6, 4) and svf.shape == (28,)
    assert head[1, 0] == 4  # C order: row 1 starts after the 4 values of row 0
    np.testing.assert_array_equal(join_theta(head, svf), theta)


def test_round_trip_through_both_layouts(tmp_path):
    rng = np.random.RandomState(0)
    theta = np.concatenate([0.1 * rng.randn(6 * 1024), 1 + 0.1 * rng.randn(7168)])
    save_theta(tmp_path / "best_theta.npy", theta)
    loaded = load_theta(tmp_path / "best_theta.npy", expected_size=13_312)
    assert loaded.dtype == np.float64
    np.testing.assert_array_equal(loaded, theta)

    head_path, svf_path = save_bundle_weights(tmp_path / "bundle", loaded, n_models=3, hidden=1024)
    head, svf = np.load(head_path), np.load(svf_path)
    assert (head.shape, head.dtype, svf.shape, svf.dtype) == ((6, 1024), np.float32, (7168,), np.float32)
    back = load_bundle_weights(tmp_path / "bundle")
    assert back.dtype == np.float64 and back.shape == theta.shape
    np.testing.assert_allclose(back, theta, rtol=1e-6, atol=1e-7)  # float32 precision
    save_theta(tmp_path / "again.npy", back)
    np.testing.assert_array_equal(load_theta(tmp_path / "again.npy"), back)


def test_bad_theta_files(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_theta(tmp_path / "missing.npy")
    (tmp_path / "corrupt.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(InputError, match="not a readable"):
        load_theta(tmp_path / "corrupt.npy")
    np.save(tmp_path / "ints.npy", np.arange(10))
    with pytest.raises(InputError, match="not floats"):
        load_theta(tmp_path / "ints.npy")
    np.save(tmp_path / "short.npy", np.zeros(10))
    with pytest.raises(InputError, match="needs 13312"):
        load_theta(tmp_path / "short.npy", expected_size=13_312)
    np.save(tmp_path / "matrix.npy", np.zeros((2, 5)))
    with pytest.raises(InputError, match="vector"):
        load_theta(tmp_path / "matrix.npy")
    np.save(tmp_path / "nan.npy", np.array([1.0, np.nan]))
    with pytest.raises(InputError, match="NaN"):
        load_theta(tmp_path / "nan.npy")
    with pytest.raises(InputError, match="head weights not found"):
        load_bundle_weights(tmp_path)
    np.save(tmp_path / "head_weights.npy", np.zeros(12, dtype=np.float32))
    np.save(tmp_path / "svf_scales.npy", np.ones(4, dtype=np.float32))
    with pytest.raises(InputError, match=r"\(n_models \+ 3, hidden\)"):
        load_bundle_weights(tmp_path)
