"""Run a sweep's trials on Ray; keep `sweep.json`.

Sweep directory:

    SWEEP_DIR/sweep.json          spec, trials (id, overrides, dir, state, error, best_val_acc, ...)
    SWEEP_DIR/trials/<trial-id>/  an ordinary run directory (run.json, events, checkpoint, ledger…)

Each trial is one Ray task that runs `start_run` (or `resume_run` when its run dir already has a
run.json) in a Ray worker process, so a trial resumes from its own checkpoint exactly as
`trinity resume` does. A trial that fails records its error and the others go on. The driver
writes sweep.json (atomically) whenever a trial ends; a trial's live state is read from its
own run.json, so `trinity sweep status` is right even while the driver is gone.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trinity.config import validate_config
from trinity.errors import ConfigError, InputError, RunLockedError, TrinityError
from trinity.io import atomic_write_json, read_json
from trinity.runs.records import read_history, read_run_meta
from trinity.runs.rundir import RunDir, utc_now_iso
from trinity.sweep.spec import SweepSpec, describe, load_spec

SWEEP_JSON = "sweep.json"
TRIALS_DIR = "trials"
FORMAT = 1
DONE_STATES = ("finished",)
LOCK_WAIT_S = 60.0  # a trial of a killed driver may take a moment to die and free its run dir


def trial_state(run_path: Path) -> dict[str, Any]:
    """A trial's state from its run directory: pending (no run.json yet), or run.json's status
    (created, running, finished, stopped, failed); plus best validation accuracy, generations, spend."""
    # lazy: the engine, Ray and the pool stay off the app's first frame (the Train screen reads sweeps)
    from trinity.pool.ledger import verify_ledger

    run = RunDir(run_path)
    out: dict[str, Any] = {"state": "pending", "generations": 0, "best_val_acc": None, "cost_usd": 0.0}
    if not run.exists():
        return out
    try:
        meta = read_run_meta(run.path)
    except TrinityError as e:
        return {**out, "state": "failed", "error": str(e)}
    out["state"] = meta.status
    if out["state"] == "running" and not run.is_locked():
        out["state"] = "interrupted"  # said running, but no engine holds it: a killed process
    if meta.status_message:
        out["message"] = meta.status_message
    try:
        hist = read_history(run.history) if run.history.exists() else []
    except TrinityError:
        hist = []
    if hist:
        last = hist[-1]
        out["generations"] = last.gen
        out["cost_usd"] = last.cost_usd
        vals = [h.best_val_acc for h in hist if h.best_val_acc is not None]
        out["best_val_acc"] = vals[-1] if vals else None
    if run.ledger.exists():  # the spend is what the ledger says (calls of an unfinished generation too)
        out["cost_usd"] = verify_ledger(run.ledger).total_usd
    return out


@dataclass
class SweepDir:
    path: Path

    @property
    def sweep_json(self) -> Path:
        return self.path / SWEEP_JSON

    @property
    def trials_dir(self) -> Path:
        return self.path / TRIALS_DIR

    def trial_path(self, tid: str) -> Path:
        return self.trials_dir / tid

    def exists(self) -> bool:
        return self.sweep_json.is_file()

    def read(self) -> dict[str, Any]:
        if not self.sweep_json.is_file():
            raise InputError(
                f"{self.path} is not a sweep directory (no {SWEEP_JSON}); "
                "start one with `trinity sweep SPEC.yaml --run-dir DIR`"
            )
        doc = read_json(self.sweep_json, SWEEP_JSON)
        if not isinstance(doc, dict) or not isinstance(doc.get("trials"), list) or doc.get("kind") != "sweep":
            raise InputError(
                f"{self.sweep_json} is not a sweep file (kind: sweep, trials: [...]); "
                "restore it from a copy or start a new sweep"
            )
        return doc

    def write(self, doc: dict[str, Any]) -> None:
        atomic_write_json(self.sweep_json, doc)

    def refresh(self, doc: dict[str, Any]) -> dict[str, Any]:
        """sweep.json's trials with their live state from each run dir (errors recorded by the
        driver are kept while the run dir says failed)."""
        best: tuple[float, str] | None = None
        for t in doc["trials"]:
            st = trial_state(self.trial_path(t["id"]))
            err = t.get("error")
            t.update(st)
            if st["state"] == "finished":
                t.pop("error", None)
            elif err and "error" not in st and st["state"] in ("failed", "pending", "interrupted", "stopped"):
                t["error"] = err
            if t["state"] == "pending" and err:
                t["state"] = "failed"
            if isinstance(t.get("best_val_acc"), float) and (best is None or t["best_val_acc"] > best[0]):
                best = (t["best_val_acc"], t["id"])
        doc["best"] = {"trial": best[1], "best_val_acc": best[0]} if best else None
        counts: dict[str, int] = {}
        for t in doc["trials"]:
            counts[t["state"]] = counts.get(t["state"], 0) + 1
        doc["counts"] = counts
        doc["spent_usd"] = round(sum(float(t.get("cost_usd") or 0.0) for t in doc["trials"]), 6)
        return doc


# ---- the task that runs one trial, in a Ray worker --------------------------------------------
def run_trial(
    run_path: str,
    config: dict[str, Any],
    budget_actor: Any = None,
    force_cpu: bool = False,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Start or resume one trial in this process. Returns {state, error?}; never raises for a
    trial's own failure (a failing trial must not stop the others). `overrides`: resumable keys
    for its resume (`trinity sweep resume DIR --trial ID --generations N`)."""
    # lazy: the engine, Ray and the pool stay off the app's first frame (the Train screen reads sweeps)
    # lazy: the engine, Ray and the pool stay off the app's first frame (the Train screen reads sweeps)
    from trinity.optim.engine import resume_run, start_run

    # lazy: the engine, Ray and the pool stay off the app's first frame (the Train screen reads sweeps)
    from trinity.pool import budget as pool_budget
    from trinity.sweep.budget import SharedBudget

    run = RunDir(run_path)
    if budget_actor is not None:
        pool_budget.set_budget_wrapper(lambda local: SharedBudget(local, budget_actor))
    try:
        cfg = validate_config(config, where=f"{run_path} trial config")
        if force_cpu and cfg.device is None:
            cfg = cfg.model_copy(update={"device": "cpu"})
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                if run.exists():
                    if read_run_meta(run.path).status == "finished" and not (overrides or {}).get("generations"):
                        return {"state": "finished"}
                    over = {**({"device": cfg.device} if force_cpu else {}), **(overrides or {})}
                    res = resume_run(run.path, over or None)
                else:
                    _clear_unstarted(run)
                    res = start_run(cfg, run_dir=run.path, argv=["sweep-trial", str(run.path)])
                break
            except RunLockedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        out: dict[str, Any] = {"state": res.status, "exit_code": res.exit_code}
        if res.exit_code:
            out["error"] = res.message
        return out
    except TrinityError as e:
        return {"state": "failed", "error": str(e)}
    except Exception as e:  # noqa: BLE001 - recorded in sweep.json; the other trials go on
        return {"state": "failed", "error": f"{type(e).__name__}: {e}"[:500]}
    finally:
        if budget_actor is not None:
            pool_budget.set_budget_wrapper(None)


def _clear_unstarted(run: RunDir) -> None:
    """A trial killed between mkdir and run.json leaves a dir with only its lock file."""
    if run.path.is_dir() and not run.exists():
        left = [p for p in run.path.iterdir() if p.name != ".lock"]
        if not left and (run.path / ".lock").exists() and not run.is_locked():
            (run.path / ".lock").unlink()


# ---- the driver ---------------------------------------------------------------------------------
def sweep_of_trial(run_path: str | os.PathLike) -> tuple[SweepDir, str, dict[str, Any]] | None:
    """(its sweep, its trial id, sweep.json) when `run_path` is a trial's run dir
    (`SWEEP_DIR/trials/<id>/` listed in SWEEP_DIR/sweep.json), else None."""
    path = Path(run_path).resolve()
    if path.parent.name != TRIALS_DIR or not (path.parent.parent / SWEEP_JSON).is_file():
        return None
    sd = SweepDir(path.parent.parent)
    doc = sd.read()
    if not any(isinstance(t, dict) and t.get("id") == path.name for t in doc["trials"]):
        return None
    return sd, path.name, doc


def driver_pid(sd: SweepDir) -> int | None:
    """The pid of the driver running the sweep now (it holds SWEEP_DIR/.lock), else None."""
    run = RunDir(sd.path)
    if not run.is_locked():
        return None
    try:
        return int((sd.path / ".lock").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return -1


def trial_resume_command(sd: SweepDir, tid: str) -> str:
    return f"trinity sweep resume {sd.path} --trial {tid}"


def _hold_driver_lock(sd: SweepDir, trials: list[str] | None) -> Any:
    """One driver per sweep: it holds the sweep's budget (its holder actor); a second one would
    hold a second budget and the two could spend the cap twice."""
    try:
        return RunDir(sd.path).lock().acquire()
    except RunLockedError:
        pid = driver_pid(sd)
        again = trial_resume_command(sd, trials[0]) if trials else f"trinity sweep resume {sd.path}"
        raise RunLockedError(
            f"sweep {sd.path.name} is being run by its driver (pid {pid}), which holds the "
            f"sweep's budget; wait for it to end (or stop it), then `{again}`"
        ) from None


def new_sweep(spec_path: str | os.PathLike, sweep_dir: str | os.PathLike, budget_usd: float | None = None) -> SweepDir:
    """Check the spec (every trial's config), then create the sweep dir and sweep.json."""
    spec = load_spec(Path(spec_path))
    if budget_usd is not None:
        if budget_usd < 0:
            raise ConfigError(f"--budget-usd must be >= 0, got {budget_usd}")
        spec.budget_usd = budget_usd
    sd = SweepDir(Path(sweep_dir))
    if sd.exists():
        raise InputError(f"{sd.path} already holds a sweep; continue it with `trinity sweep resume {sd.path}`")
    if sd.path.exists() and (not sd.path.is_dir() or any(sd.path.iterdir())):
        raise InputError(f"{sd.path} exists and is not an empty directory; pick another --run-dir")
    trials = spec.trials()
    sd.trials_dir.mkdir(parents=True, exist_ok=True)
    doc = {
        "kind": "sweep",
        "format": FORMAT,
        "id": sd.path.name,
        "created": utc_now_iso(),
        "status": "created",
        "spec": spec.to_json(),
        "budget_usd": spec.budget_usd,
        "trials": [
            {
                "id": t.id,
                "dir": f"{TRIALS_DIR}/{t.id}",
                "overrides": t.overrides,
                "label": describe(t.overrides),
                "config": t.config.resolved(),
                "config_hash": t.config.hash(),
                "state": "pending",
            }
            for t in trials
        ],
    }
    sd.write(doc)
    return sd


def _resources(ray: Any, spec: SweepSpec) -> tuple[float, float]:
    have = ray.cluster_resources()
    cpus = spec.resources.cpus_per_trial
    gpus = spec.resources.gpus_per_trial
    if gpus is None:
        gpus = 1.0 if float(have.get("GPU", 0)) >= 1 else 0.0
    # a trial that no node can hold would wait forever: say so instead
    if gpus > float(have.get("GPU", 0)):
        raise ConfigError(
            f"resources.gpus_per_trial is {gpus:g} but the Ray cluster has {have.get('GPU', 0):g} GPUs; "
            "lower it (0 runs the trials on CPUs) or join a cluster with GPUs (--address)"
        )
    if cpus > float(have.get("CPU", 0)):
        raise ConfigError(
            f"resources.cpus_per_trial is {cpus:g} but the Ray cluster has {have.get('CPU', 0):g} CPUs; lower it"
        )
    return cpus, gpus


def run_sweep(
    sweep_dir: str | os.PathLike,
    address: str | None = None,
    num_cpus: int | None = None,
    budget_usd: float | None = None,
    on_event: Callable[[dict], None] | None = None,
    timeout_s: float | None = None,
    trials: list[str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run (or continue) every trial that has not finished — or only `trials` (ids), resumed with
    `overrides` — under the sweep's one budget (recovered from all its trials' ledgers); returns
    the refreshed sweep.json."""
    sd = SweepDir(Path(sweep_dir))
    doc = sd.read()
    if trials is not None:
        known = [t["id"] for t in doc["trials"]]
        unknown = [t for t in trials if t not in known]
        if unknown:
            raise InputError(f"sweep {sd.path.name} has no trial {', '.join(unknown)}; its trials: {', '.join(known)}")
    lock = _hold_driver_lock(sd, trials)
    try:
        return _run_sweep(sd, doc, address, num_cpus, budget_usd, on_event, timeout_s, trials, overrides)
    finally:
        lock.release()


def _run_sweep(
    sd: SweepDir,
    doc: dict[str, Any],
    address: str | None,
    num_cpus: int | None,
    budget_usd: float | None,
    on_event: Callable[[dict], None] | None,
    timeout_s: float | None,
    trials: list[str] | None,
    overrides: dict[str, Any] | None,
) -> dict[str, Any]:
    # lazy: the engine, Ray and the pool stay off the app's first frame (the Train screen reads sweeps)
    # lazy: the engine, Ray and the pool stay off the app's first frame (the Train screen reads sweeps)
    from trinity.optim.raysupport import connect
    from trinity.sweep.budget import make_holder, spent_micro_of

    spec = SweepSpec.from_json(doc["spec"])
    if budget_usd is not None:
        doc["budget_usd"] = spec.budget_usd = budget_usd
        doc["spec"]["budget_usd"] = budget_usd
    emit = on_event or (lambda ev: None)
    ray, started = connect(address, num_cpus)
    holder = None
    try:
        cpus, gpus = _resources(ray, spec)
        if trials is not None:  # these trials only (finished ones too when they get more generations)
            todo = [
                t
                for t in doc["trials"]
                if t["id"] in trials
                and (
                    (overrides or {}).get("generations")
                    or trial_state(sd.trial_path(t["id"]))["state"] not in DONE_STATES
                )
            ]
        else:
            todo = [t for t in doc["trials"] if trial_state(sd.trial_path(t["id"]))["state"] not in DONE_STATES]
        if doc.get("budget_usd") is not None:
            spent = spent_micro_of([sd.trial_path(t["id"]) for t in doc["trials"]])
            holder = make_holder(ray, doc["budget_usd"], spent)
            emit(
                {
                    "type": "log",
                    "message": f"one budget for the sweep: ${doc['budget_usd']:.4f}, "
                    f"${spent / 1e6:.6f} already spent by its trials' ledgers",
                }
            )
        doc["status"] = "running"
        doc["driver"] = {
            "pid": os.getpid(),
            "address": address or "local",
            "cpus_per_trial": cpus,
            "gpus_per_trial": gpus,
            "started": utc_now_iso(),
        }
        sd.write(sd.refresh(doc))
        task = ray.remote(run_trial).options(num_cpus=cpus, num_gpus=gpus, max_retries=0)
        pending: dict[Any, dict] = {}
        for t in todo:
            ref = task.remote(
                str(sd.trial_path(t["id"]).resolve()),
                t["config"],
                holder,
                gpus == 0,
                overrides if trials is not None else None,
            )
            pending[ref] = t
            t["state"] = "running"
        emit(
            {
                "type": "log",
                "message": f"{len(todo)} of {len(doc['trials'])} trials submitted ({cpus:g} CPU, {gpus:g} GPU each)",
            }
        )
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while pending:
            wait_s = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=wait_s)
            if not ready:
                raise TrinityError(
                    f"sweep timed out with {len(pending)} trials unfinished; "
                    f"continue with `trinity sweep resume {sd.path}`"
                )
            ref = ready[0]
            t = pending.pop(ref)
            try:
                res = ray.get(ref)
            except Exception as e:  # the worker died (killed, out of memory, node lost)
                res = {
                    "state": "failed",
                    "error": f"trial process lost: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[
                        :500
                    ],
                }
            t["state"] = res.get("state", "failed")
            if res.get("error"):
                t["error"] = res["error"]
            else:
                t.pop("error", None)
            sd.write(sd.refresh(doc))
            emit(
                {
                    "type": "trial",
                    "trial": t["id"],
                    "state": t["state"],
                    "error": t.get("error"),
                    "best_val_acc": t.get("best_val_acc"),
                    "label": t.get("label"),
                }
            )
        doc = sd.refresh(doc)
        doc["status"] = "finished" if all(t["state"] == "finished" for t in doc["trials"]) else "incomplete"
        doc["finished"] = utc_now_iso()
        sd.write(doc)
        return doc
    finally:
        if holder is not None:
            try:
                ray.kill(holder)
            except Exception:  # noqa: BLE001 - the cluster may be going down with us
                pass
        if started:
            ray.shutdown()


def sweep_status(sweep_dir: str | os.PathLike) -> dict[str, Any]:
    sd = SweepDir(Path(sweep_dir))
    return sd.refresh(sd.read())
