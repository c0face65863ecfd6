"""Fixtures shared by the optimiser's tests."""

import pytest


@pytest.fixture
def one_thread():
    """torch on one thread for the test: a matmul split over another number of threads sums in
    another order, and runs compared here (in-process against a killed child run with
    OMP_NUM_THREADS=1, or one run against another) must agree bit for bit."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
