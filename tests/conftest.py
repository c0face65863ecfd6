"""Fixtures shared by test packages (each package keeps its own helpers next to its tests)."""

from __future__ import annotations

import compileall
import os
import sys
from pathlib import Path

import pytest
from train_argv import train_argv

ROOT = Path(__file__).resolve().parents[1]

# Bytecode is cached for the suite, whatever the environment says: with PYTHONDONTWRITEBYTECODE=1
# (set on the machines this project runs on) every xdist worker re-rewrote the asserts of every
# test module on every run (collection 19.3 → 11.8 s CPU a worker with the cache), and every child
# process the tests start (`trinity train`, Ray actors, analysis jobs) compiled the package again.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def pytest_configure(config: pytest.Config) -> None:
    """In the process that starts the xdist workers (or the only one): compile the packages once,
    so that the workers and the children they start read bytecode instead of compiling each
    module again (a clean clone has none)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for package in ("trinity", "minertui"):
        compileall.compile_dir(ROOT / package, quiet=1, workers=1)


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread_per_xdist_worker():
    """Under `-n 2` on 2 cores, two workers with two torch threads each oversubscribe the cores,
    and torch's idle threads spin: an in-process training test took 7.6 s alone and 73 s beside
    the other worker at load 3. One thread per worker is what the cores hold. The worker's child
    processes (`trinity train`, analysis jobs) get one too, through OMP_NUM_THREADS: a matmul
    split over another thread count sums in another order, and tests compare across processes
    bit for bit."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch  # lazy: only under xdist, where every worker imports it anyway

        before = os.environ.get("OMP_NUM_THREADS")
        os.environ["OMP_NUM_THREADS"] = "1"
        torch.set_num_threads(1)
        yield
        if before is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = before
        return
    yield


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


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray instance with 2 logical CPUs for the whole session (the Ray modules share the
    xdist group "ray", so one worker holds it): the population tests need one CPU per worker
    (`--workers 2`), a sweep's trials run two at a time. Starting it once, not once per module,
    saves two Ray start-ups (4-8 s each on a busy 2-core box) and lets later modules reuse the
    worker processes earlier ones started."""
    ray = pytest.importorskip("ray", reason="the [ray] extra (pip install -e '.[ray]') runs these tests")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """A finished 3-generation cached run (tiny-qwen3, configs/practice.yaml on the practice math
    and multiple-choice questions: live sessions on code questions spend seconds per answer in the
    grading sandbox), trained once per test session by the real `trinity train` and shared by the
    run-status, analysis and serve tests, read-only (copy it to change it). Under xdist the
    workers share it (the xdist-documented FileLock pattern: the first trains, the others wait)."""
    from filelock import FileLock

    from trinity.benchmarks.practice import practice_questions
    from trinity.cli import main
    from trinity.data.matrix import save_matrix
    from trinity.data.questions import save_questions
    from trinity.practice.simulation import practice_matrix

    base = tmp_path_factory.getbasetemp()  # this session's own: never a run from an older session
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "tiny-run"
    with FileLock(str(shared) + ".lock"):
        if not (shared / "summary.json").exists():
            inputs = shared.parent / "tiny-run-inputs"
            inputs.mkdir(exist_ok=True)
            qs = [q for q in practice_questions() if q.kind != "code"]
            save_questions(inputs / "q.jsonl", qs)
            save_matrix(inputs / "m.json", practice_matrix().subset([q.id for q in qs]))
            argv = train_argv(
                shared,
                config=ROOT / "configs" / "practice.yaml",
                mode=None,
                encoder="tiny-qwen3",
                questions=inputs / "q.jsonl",
                matrix=inputs / "m.json",
                generations=3,
                popsize=4,
                m=8,
            )
            assert main(argv) == 0 and (shared / "best_theta.npy").exists()
    return shared
