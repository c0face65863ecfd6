"""Ray as an optional extra: import it with a one-line message, connect or start a local instance."""

from __future__ import annotations

import os
from typing import Any, Callable

from trinity.errors import ConfigError

RAY_EXTRA = 'pip install -e ".[ray]"'


def require_ray() -> Any:
    try:
        import ray  # lazy: a missing module is reported, not raised at import
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] == "ray":
            raise ConfigError(f"Ray is not installed; sweeps and --workers need it: {RAY_EXTRA}") from None
        raise
    return ray


def connect(address: str | None = None, num_cpus: int | None = None) -> tuple[Any, bool]:
    """The Ray module, connected: to `address` (HOST:PORT of a running cluster, or 'auto'), else
    to the instance this process already joined, else to a new local one (the box's CPUs and
    GPUs). Returns (ray, started_here) — the caller shuts down only what it started."""
    ray = require_ray()
    if ray.is_initialized():
        return ray, False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if address:
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise ConfigError(
                f"cannot join the Ray cluster at {address}: {str(e).splitlines()[0]}; "
                "start it with `ray start --head` or drop --address"
            ) from None
        return ray, True
    if num_cpus is not None:
        kwargs["num_cpus"] = num_cpus
    # Ray starts its workers at nice 15; a trial or a population worker is the run's main work,
    # not background work, so keep it at the priority a plain `trinity train` has
    os.environ.setdefault("RAY_worker_niceness", "0")
    ray.init(**kwargs)
    return ray, True


def worker_placement(ray: Any, workers: int, device: str | None) -> tuple[bool, dict[str, Any]]:
    """Where `--workers N` actors go: (on_gpu, the actor options): one GPU each when the cluster
    has GPUs and the run's device is CUDA (or unset), else one CPU each. More workers than the
    cluster can hold is refused here: Ray would otherwise keep the actors waiting for resources
    that never come (up to the gather timeout, an hour)."""
    resources = ray.cluster_resources()
    on_gpu = float(resources.get("GPU", 0)) >= 1 and (device or "cuda").startswith("cuda")
    kind = "GPU" if on_gpu else "CPU"
    have = float(resources.get(kind, 0))
    if have < workers:
        raise ConfigError(
            f"--workers {workers} needs {workers} {kind}s (one per worker) but the Ray "
            f"cluster has {have:g}; lower --workers or join a bigger cluster (--ray-address)"
        )
    options: dict[str, Any] = {"num_gpus": 1, "num_cpus": 0} if on_gpu else {"num_cpus": 1}
    return on_gpu, options


def replace_dead_actors(ray: Any, actors: list[Any], new_actor: Callable[[], Any]) -> list[int]:
    """Ping every actor; kill and replace (in place, with `new_actor()`) those that do not answer.
    Returns the indices replaced; the caller warms them again."""
    dead = []
    for i, a in enumerate(actors):
        try:
            ray.get(a.pid.remote(), timeout=60)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            dead.append(i)
    for i in dead:
        try:
            ray.kill(actors[i])
        except Exception:  # noqa: BLE001 - already gone
            pass
        actors[i] = new_actor()
    return dead


def cause_line(cause: BaseException) -> str:
    """What killed a worker, in one short line for the run's log and its recovery record."""
    return str(cause).splitlines()[0][:200] if str(cause) else type(cause).__name__
