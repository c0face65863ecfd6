"""The run directory (docs/CONTRACTS.md, Run directory): the only state the engine and the app share. `RunDir` gives its
paths; `trinity.runs.records` types every file in it."""

from trinity.runs.rundir import RunDir, RunLock, list_runs, new_run_id

__all__ = ["RunDir", "RunLock", "list_runs", "new_run_id"]
