"""`trinity bench sweep --part workers`: its in-process half runs up to the Ray connection."""

from __future__ import annotations

import pytest

pytest.importorskip("ray", reason="the [ray] extra (pip install -e '.[ray]') runs these tests")


class _ReachedRay(Exception):
    pass


def test_bench_workers_runs_in_process_up_to_ray(monkeypatch):
    """It once imported a removed helper (`null_hooks`) and failed before timing anything."""
    import trinity.optim.raysupport as raysupport
    from trinity.sweep.bench import bench_workers

    def stop() -> None:  # the in-process generation is done when the bench connects to Ray
        raise _ReachedRay

    monkeypatch.setattr(raysupport, "connect", stop)
    with pytest.raises(_ReachedRay):
        bench_workers("tiny-qwen3", popsize=2, m=2, workers=2, repeats=1)
