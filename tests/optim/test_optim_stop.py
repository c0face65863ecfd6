"""A stop request (the trainer's SIGINT/SIGTERM handler) ends long compute between steps: the
warm start's L-BFGS fit raises StopRequested instead of running to the end."""

import numpy as np
import pytest

from trinity.errors import StopRequested, clear_stop, request_stop
from trinity.optim.warmstart import fit_logistic


def test_a_stop_request_ends_the_warm_start_fit():
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(40, 8)), (rng.random((40, 3)) > 0.5).astype(float)
    W = fit_logistic(X, Y, lam=0.1)  # runs without a request
    assert W.shape == (3, 8) and np.all(np.isfinite(W))
    request_stop("SIGTERM")
    try:
        with pytest.raises(StopRequested, match="SIGTERM"):
            fit_logistic(X, Y, lam=0.1)
    finally:
        clear_stop()
