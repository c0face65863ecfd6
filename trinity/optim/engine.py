"""Start or resume a training run: inputs → encoder → run directory → Trainer.

Everything a user can get wrong (config, questions, matrix, encoder, run dir, checkpoint) is
checked before the run directory is created or touched.
"""

from __future__ import annotations

import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import trinity.practice  # noqa: F401  the practice pool's models (`models_from: practice`), for pool_models
from trinity.competition.evalset import MINIROUTER_EVAL_ITEMS, minirouter_eval_ids
from trinity.competition.protocol import default_protocol, get_protocol
from trinity.competition.text import resolve_competition, theta_problem
from trinity.config import LEGACY_VALUES, TrainConfig, validate_config
from trinity.data.matrix import group_mean_rows
from trinity.errors import CheckpointError, ConfigError, InputError, TrinityError
from trinity.optim import checkpoint as ckpt
from trinity.optim.fitness import CachedFitness, Fitness, RouterLike, build_router, question_text
from trinity.optim.forecast import write_forecast
from trinity.optim.livepopulation import make_live_population_fitness
from trinity.optim.plan import run_forecast
from trinity.optim.population import check_population, make_population_fitness
from trinity.optim.runinputs import RunInputs, inputs_digest, inputs_from_config, load_run_inputs
from trinity.optim.trainer import Trainer, TrainResult
from trinity.pool.providers import pool_model_ids, preflight
from trinity.runs.records import RUN_FORMAT, RunConfig, RunMeta
from trinity.runs.rundir import RunDir, new_run_id, utc_now_iso
from trinity.session.fitness import make_live_fitness

if TYPE_CHECKING:
    from trinity.model.router import Router


def run_competition_of(cfg: TrainConfig) -> str:
    """The competition whose router text a run with `cfg` trains on (trinity.competition.text)."""
    return resolve_competition(cfg.competition, cfg.pool)


def run_protocol_of(cfg: TrainConfig, explicit_competition: bool) -> tuple[str, str]:
    """(protocol, objective) of a new run: `--protocol`, else the competition's protocol when the
    run names its competition or runs a competition's pool, else open; `--objective`, else
    competition for a live run under a competition's protocol, else reward."""
    if cfg.protocol:
        protocol = get_protocol(cfg.protocol).name
    else:
        protocol = default_protocol(run_competition_of(cfg), explicit_competition, cfg.pool)
    if cfg.objective == "competition" and cfg.mode != "live":
        raise ConfigError(
            "--objective competition scores live sessions (the competition's live and cached parts); "
            "use it with --mode live, or drop it (cached mode replays the matrix)"
        )
    if cfg.objective:
        objective = cfg.objective
    else:
        objective = "competition" if cfg.mode == "live" and protocol != "open" else "reward"
    return protocol, objective


def make_fitness(cfg: TrainConfig, run: RunDir, router: RouterLike, inputs: RunInputs, models: list[str]) -> Fitness:
    if (cfg.workers > 1 or cfg.ray_address) and cfg.mode == "live":
        return make_live_population_fitness(cfg, run, router, inputs, models)
    if cfg.workers > 1 or cfg.ray_address:
        return make_population_fitness(cfg, run, router, inputs, models)
    if cfg.mode == "cached":
        assert inputs.matrix is not None, "inputs_from_config requires a matrix in cached mode"
        return CachedFitness(
            router,
            inputs.matrix,
            models,
            policy=cfg.policy,
            temperature=cfg.temperature,
            seed=cfg.seed,
            traces=cfg.traces,
            text=question_text(run_competition_of(cfg)),
        )

    return make_live_fitness(cfg, run, router, inputs, models)


def make_validator(cfg: TrainConfig, router: RouterLike, inputs: RunInputs, models: list[str]) -> CachedFitness | None:
    """Live mode with an outcome matrix: validation accuracy from the matrix (free, cached)."""
    if cfg.mode == "cached" or inputs.matrix is None or list(inputs.matrix.models) != list(models):
        return None
    by_id = {q.id: q for q in inputs.questions}
    val = [by_id[i] for i in inputs.splits.get("val", [])]
    fill = group_mean_rows(inputs.matrix, val, inputs.questions)  # val questions without a row: their group's mean
    return CachedFitness(
        router, inputs.matrix, models, traces="none", text=question_text(run_competition_of(cfg)), fill=fill
    )


def pool_models(cfg: TrainConfig, inputs: RunInputs) -> list[str]:
    """θ's model order: the matrix's (the order of per_model keys in its first task); in live
    mode the pool's, which must then agree with the matrix. Checked before a run dir exists."""
    if cfg.mode == "cached":
        assert inputs.matrix is not None, "inputs_from_config requires a matrix in cached mode"
        return list(inputs.matrix.models)
    if not cfg.pool:
        raise ConfigError("live mode needs a pool: pass --pool practice|openrouter|chutes|<name>")

    ids = list(cfg.pool_models) if cfg.pool_models else list(pool_model_ids(cfg.pool, cfg.models_yaml))

    preflight(cfg)  # unpriced models, a missing key: refused before the run directory exists
    if inputs.matrix is not None and ids != list(inputs.matrix.models):
        raise ConfigError(
            f"pool {cfg.pool!r} has models {ids} but the matrix {cfg.matrix} has "
            f"{list(inputs.matrix.models)}; θ's rows follow one order: use a matrix "
            "collected from this pool (trinity collect), or no --matrix"
        )
    return ids


def _git_sha() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parents[2],
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("minertui", "numpy", "cma", "torch", "transformers"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def start_run(
    cfg: TrainConfig,
    run_dir: str | os.PathLike[str] | None = None,
    runs_root: str | os.PathLike[str] = "runs",
    on_event: Callable[[dict[str, Any]], None] | None = None,
    argv: list[str] | None = None,
    pilot: str | None = None,
) -> TrainResult:
    inputs = inputs_from_config(cfg)  # cross-checks: errors before anything is created
    models = pool_models(cfg, inputs)
    if cfg.workers > 1 or cfg.ray_address:
        check_population(cfg)
    if cfg.warm_start == "labels" and inputs.matrix is None:
        raise ConfigError(
            "--warm-start labels fits the head on an outcome matrix; pass --matrix FILE.json (or --warm-start none)"
        )
    run = RunDir(run_dir) if run_dir else RunDir(Path(runs_root) / new_run_id())
    if run.exists() and _failed_at_start(run):
        _clear_failed_start(run)  # a run that never started (no key, bad URL …): the retry takes its place
    if run.exists():
        raise InputError(
            f"{run.path} already holds a run; continue it with `trinity resume {run.path}` or pick another --run-dir"
        )
    if run.path.exists() and not run.path.is_dir():
        raise InputError(f"{run.path} is a file, not a directory; pick another --run-dir")
    if run.path.exists() and any(p.name != "engine.log" for p in run.path.iterdir()):
        raise InputError(f"{run.path} exists and is not empty; pick another --run-dir")
    explicit = cfg.competition is not None
    competition = run_competition_of(cfg)
    cfg = cfg.model_copy(update={"competition": competition})  # recorded, hashed: resume and eval read it
    protocol, objective = run_protocol_of(cfg, explicit)
    # open / reward are the values runs had before these keys existed: left None (out of the hash)
    cfg = cfg.model_copy(
        update={
            "protocol": None if protocol == "open" else protocol,
            "objective": None if objective == "reward" else objective,
        }
    )
    router = build_router(cfg, len(models))  # ModelLoadError before the run dir exists
    theta_note = _theta_check(competition, len(models), router, explicit)
    try:
        run.path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create the run directory {run.path}: {e.strerror}; pick another --run-dir") from None
    with run.lock():
        meta = RunMeta(
            format=RUN_FORMAT,  # trinity.runs.records: the run directory's format
            id=run.id,
            created=utc_now_iso(),
            status="created",
            status_message="",
            mode=cfg.mode,
            competition=competition,
            protocol=protocol,
            objective=objective,
            config=RunConfig.model_validate(cfg.resolved()),
            config_hash=cfg.hash(),
            models=models,
            pool=cfg.pool or (inputs.matrix.benchmark if inputs.matrix is not None else None),
            benchmarks=sorted({q.benchmark for q in inputs.questions}),
            encoder=cfg.encoder,
            n_params=int(router.n_params),
            splits=inputs.splits,
            inputs_digest=inputs_digest(inputs),
            git_sha=_git_sha(),
            versions=_versions(),
            pid=os.getpid(),
            budget_usd=cfg.budget_usd,
            argv=argv or [],
            torch_threads=_torch_threads(),
        )
        run.write_meta(meta)
        try:
            fitness = make_fitness(cfg, run, router, inputs, models)
        except Exception as e:  # never `created` forever: a retry into this directory is allowed
            run.set_status("failed", f"failed at start: {e}"[:500])
            raise
        try:
            trainer = Trainer(
                run,
                cfg,
                inputs,
                router,
                fitness,
                models,
                run_id=run.id,
                on_event=on_event,
                validator=make_validator(cfg, router, inputs, models),
                warm_up=True,
            )
            sp = inputs.splits
            trainer.event(
                "log",
                level="info",
                message=(
                    f"run {run.id} in {run.path}: {cfg.mode} mode, {len(sp['train'])}/{len(sp['val'])}/"
                    f"{len(sp['test'])} train/val/test questions, models {', '.join(models)}, "
                    f"θ {router.n_params} values, popsize {cfg.popsize}, m {cfg.m}, {cfg.generations} generations"
                ),
            )
            trainer.event(
                "log",
                level="info",
                message=f"router text: {competition}'s format (encoder input, transcript, question rendering)",
            )
            if cfg.mode == "live" and cfg.generations > 0:  # generations 0: the warm start alone, no paid call
                _write_forecast(trainer, run, cfg, inputs, pilot)
            if theta_note:
                trainer.event("log", level="warning", message=theta_note)
            for level, note in _eval_set_notes(competition, sp):
                trainer.event("log", level=level, message=note)
            for note in inputs.matrix.notes if inputs.matrix is not None else []:
                trainer.event("log", level="info", message=f"matrix: {note}")
            if cfg.m > len(sp["train"]):
                trainer.event(
                    "log",
                    level="warning",
                    message=(
                        f"m={cfg.m} is more than the {len(sp['train'])} training questions; "
                        "every generation uses all of them"
                    ),
                )
            return trainer.train()
        finally:
            fitness.close()


def _write_forecast(trainer: Trainer, run: RunDir, cfg: TrainConfig, inputs: RunInputs, pilot: str | None) -> None:
    """forecast.json before the first paid call (`trinity.optim.forecast`); a forecast that
    cannot be made is a warning, never a reason not to run."""
    try:
        f = run_forecast(cfg, inputs, pilot, runs_root=run.path.parent, exclude=run.path)
    except (TrinityError, OSError, ValueError) as e:
        trainer.event("log", level="warning", message=f"no cost forecast: {e}")
        return
    write_forecast(run.path, f)
    u = f["usd"]
    trainer.event(
        "log",
        level="info",
        message=f"forecast: ${u['median']:.4f} (90% interval ${u['p05']:.4f} .. ${u['p95']:.4f}) over "
        f"{f['generations']} generations, from {f['measured_from']} (forecast.json)",
    )
    if f.get("over_budget"):
        g = f["generations_budget_buys"]
        trainer.event(
            "log",
            level="warning",
            message=f"the forecast's upper bound ${u['p95']:.4f} exceeds the budget ${cfg.budget_usd:g}: it buys "
            f"about {g['median']} generations ({g['at_p95']} at the upper bound)",
        )


_START_FILES = (
    "run.json",
    "events.jsonl",
    "ledger.jsonl",
    "journal.jsonl",
    "journal.sent.jsonl",
    "traces.jsonl",
    "forecast.json",
    ".lock",
)


def _failed_at_start(run: RunDir) -> bool:
    """A run directory whose engine failed before its first call: status created/failed, no
    checkpoint, no history, nothing in its ledger or journal, and no engine holding it."""
    try:
        status = run.meta().status
    except InputError:
        return False
    if status not in ("created", "failed") or run.is_locked() or ckpt.has_checkpoint(run) or run.history.exists():
        return False
    return all(
        not (run.path / f).exists() or (run.path / f).stat().st_size == 0
        for f in ("ledger.jsonl", "journal.jsonl", "traces.jsonl")
    )


def _clear_failed_start(run: RunDir) -> None:
    for f in _START_FILES:
        (run.path / f).unlink(missing_ok=True)


def _theta_check(competition: str, n_models: int, router: Router, explicit: bool) -> str | None:
    """θ must have the length `competition`'s validator reads for this pool. Asked for by name
    (--competition) and impossible: refused before the run exists; taken by default: a warning."""
    problem = theta_problem(competition, n_models, int(router.n_params), int(router.hidden))
    if problem is None:
        return None
    if explicit:
        raise ConfigError(f"--competition {competition}: {problem}")
    return f"{problem}; a bundle from this run would be refused (pass --competition to choose another)"


def _eval_set_notes(competition: str, splits: dict[str, list[str]]) -> list[tuple[str, str]]:
    """MiniRouter scores 20 MATH-500 test items (shuffled with seed 0): say where they are in
    this run's splits, and warn when training sees some (a local score on them is then not
    held out)."""
    ids = set(minirouter_eval_ids())
    where = {name: sorted(ids & set(splits.get(name, ()))) for name in ("train", "val", "test")}
    if competition != "minirouter" or not any(where.values()):
        return []
    info = (
        f"MiniRouter's validator scores {MINIROUTER_EVAL_ITEMS} MATH-500 items (test, shuffled with seed 0, "
        f"first {MINIROUTER_EVAL_ITEMS}); in this run: {len(where['train'])} in train, "
        f"{len(where['val'])} in val, {len(where['test'])} in test"
    )
    out = [("info", info)]
    if where["train"]:
        shown = ", ".join(where["train"][:5]) + (" …" if len(where["train"]) > 5 else "")
        warning = (
            f"{len(where['train'])} of the items MiniRouter scores are in the training split ({shown}): "
            "a local estimate on them is not held out"
        )
        out.append(("warning", warning))
    return out


def _torch_threads() -> int:
    import torch  # lazy: torch loaded only when used

    return int(torch.get_num_threads())


def _match_threads(recorded: object, router: Router) -> str | None:
    """On the CPU, a matmul split over another number of threads sums in another order: resume
    with the thread count the run started with (unless OMP_NUM_THREADS says otherwise), so the
    resumed generations equal the uninterrupted run's bit for bit. Returns a line for the log."""
    import torch  # lazy: torch loaded only when used

    if not isinstance(recorded, int) or recorded < 1 or router.encoder.device.type != "cpu":
        return None
    now = torch.get_num_threads()
    if now == recorded:
        return None
    if os.environ.get("OMP_NUM_THREADS"):
        return (
            f"this run started with {recorded} torch threads and resumes with {now} (OMP_NUM_THREADS): "
            "results may differ from an uninterrupted run in the last bits"
        )
    torch.set_num_threads(recorded)
    return f"resuming with {recorded} torch threads, as the run started (this process had {now})"


def _inside_run(run: RunDir, key: str, value: Any) -> str:
    """A path run.json gives (`config.<key>`), resolved against the run directory; refused when
    it points outside it (a crafted run.json must not make a resume write elsewhere)."""
    if not isinstance(value, str):
        raise InputError(f"{run.run_json}: config.{key} must be a path, got {str(value)[:60]!r}")
    p = Path(value)
    full = (p if p.is_absolute() else run.path / p).resolve()
    if not full.is_relative_to(run.path.resolve()):
        raise InputError(
            f"{run.run_json}: config.{key} {value!r} points outside the run directory; "
            f"resume with --cache PATH to use a cache there"
        )
    return str(full)


def resume_run(
    run_dir: str | os.PathLike[str],
    overrides: dict[str, Any] | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> TrainResult:
    """Continue a run from its last checkpoint (from scratch when it has none yet).

    `overrides` may change only keys that leave the checkpoint valid (trinity.config.RESUMABLE_KEYS)."""
    run = RunDir(run_dir)
    meta = run.meta()
    data = meta.config.to_json()  # what the run recorded (a key it predates is left out)

    for key, legacy in LEGACY_VALUES.items():  # a run made before the key existed ran at this value
        data.setdefault(key, legacy)
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    if data.get("cache_path") and "cache_path" not in given:
        data["cache_path"] = _inside_run(run, "cache_path", data["cache_path"])
    data.update(given)
    cfg = validate_config(data, where=f"{run.run_json} config")
    with run.lock():  # a second engine is refused here, before anything is read or written
        state = None
        if ckpt.has_checkpoint(run):
            manifest, state = ckpt.read_checkpoint(run, run_id=meta.id, config_hash=cfg.hash())
            if manifest.generation >= cfg.generations and meta.status == "finished":
                raise InputError(
                    f"{run.path} already ran {manifest.generation} of {cfg.generations} generations; "
                    "nothing to resume (pass --generations N to extend it)"
                )
        elif run.history.exists() or run.best_theta.exists():
            # the checkpoint is written before history.json and best_theta.npy: those without it
            # mean it was lost, and starting over would append a second generation 1 to this run
            raise CheckpointError(
                f"{run.path} has finished generations (history.json) but no checkpoint "
                f"({run.checkpoint_dir / ckpt.MANIFEST} missing); restore checkpoint/ "
                "from a copy, or start a new run (trinity train)"
            )
        inputs = load_run_inputs(run)
        models = list(meta.models or pool_models(cfg, inputs))
        router = build_router(cfg, len(models))
        threads_note = _match_threads(meta.torch_threads, router)
        fitness = make_fitness(cfg, run, router, inputs, models)
        try:
            trainer = Trainer(
                run,
                cfg,
                inputs,
                router,
                fitness,
                models,
                run_id=meta.id,
                on_event=on_event,
                validator=make_validator(cfg, router, inputs, models),
                warm_up=True,
            )
            if state is not None:
                trainer.load_state(state)
            if threads_note:
                trainer.event("log", level="info", message=threads_note)
            run.update_meta(config=cfg.resolved(), pid=os.getpid(), budget_usd=cfg.budget_usd)
            return trainer.train(resume=True)
        finally:
            fitness.close()
