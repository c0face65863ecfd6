"""Fixtures shared by test packages (each package keeps its own helpers next to its tests)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def torch_one_thread():
    """One torch thread in this process for a test module, and so in its Ray actors (a worker
    takes the driver's count, for the same sums). On a 2-core box two actors with two threads
    each oversubscribe the cores several times over; one thread each is also the bit-identical
    setup the worker tests compare against, since the in-process run uses the same count."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
