"""Ray as an optional extra: import it with a one-line message, connect or start a local instance."""

from __future__ import annotations

import os
from typing import Any

from trinity.errors import ConfigError

RAY_EXTRA = 'pip install -e ".[ray]"'


def require_ray() -> Any:
    try:
        import ray
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
