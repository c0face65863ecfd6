"""The run directory (docs/CONTRACTS.md, Run directory): the only state the engine and the app share. `RunDir` gives its
paths; `trinity.runs.records` types every file in it.

`RunDir` and its helpers are loaded on first use (module `__getattr__`): importing a light
submodule such as `trinity.runs.fmt` (the app's first frame does) must not bring the records and
pydantic with it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trinity.runs.rundir import RunDir, RunLock, list_runs, new_run_id

__all__ = ["RunDir", "RunLock", "list_runs", "new_run_id"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        # lazy: pydantic + the run records kept off the app's first frame (it imports trinity.runs.fmt)
        return getattr(importlib.import_module("trinity.runs.rundir"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
