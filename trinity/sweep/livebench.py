"""`trinity bench sweep --part live`: one live generation in this process vs on Ray workers
(docs/perf/ray-live.md).

P candidates × m questions of real multi-turn sessions against the practice pool started in this
process (simulated, no injected latency: the generation's wall time is then the encoder's and the
engine's, the part that workers can spread). Three variants, each its own run directory and
response cache so that each pays the same calls: `--workers 1` (this process, the sessions cut
into the same shards), 1 Ray worker (the same work through Ray: its pure overhead), and N Ray
workers. Per turn step the Ray path's overhead is the driver's wall time of the step minus the
busiest worker's compute for it. The rewards of the three must be equal bit for bit.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from trinity.benchmarks.practice import practice_questions
from trinity.config import load_config
from trinity.optim.fitness import GenerationHooks, build_router
from trinity.optim.livepopulation import LivePopulationFitness
from trinity.optim.raysupport import connect
from trinity.optim.trainer import make_es
from trinity.pool.providers import pool_model_ids
from trinity.runs.rundir import RunDir
from trinity.session.fitness import LiveFitness


def quiet_hooks() -> Any:
    """Generation hooks that record nothing (a benchmark's generation)."""
    return GenerationHooks(lambda done, total: None, lambda models, roles: None, lambda record: None)


def _fitness(cfg: Any, tmp: Path, name: str, router: Any, models: list[str]) -> Any:
    run = RunDir(tmp / name)
    run.path.mkdir(parents=True)
    cfg = cfg.model_copy(update={"cache_path": str(tmp / name / "responses.sqlite")})
    if name == "in_process":
        return LiveFitness(cfg, run, router, models)
    return LivePopulationFitness(cfg, run, router, models)


def bench_live_workers(
    encoder: str, popsize: int, m: int, workers: int, max_turns: int, repeats: int = 1
) -> dict[str, Any]:
    import torch  # lazy: torch loaded only when used

    cfg = load_config(
        None,
        {
            "mode": "live",
            "pool": "practice",
            "encoder": encoder,
            "device": "cpu",
            "popsize": popsize,
            "m": m,
            "max_turns": max_turns,
            "traces": "none",
            "concurrency": 256,
        },
    )
    models = list(pool_model_ids("practice"))
    qs = [q for q in practice_questions() if q.kind != "code"]  # graded in-process: the encoder is what is timed
    questions = qs[:m]
    t0 = time.perf_counter()
    router = build_router(cfg, len(models))
    t_load = time.perf_counter() - t0
    es = make_es(np.asarray(router.initial_mean()), 0.1, popsize, np.random.RandomState(0))
    thetas = np.asarray(es.ask(), dtype=np.float64)
    out: dict[str, Any] = {
        "encoder": encoder,
        "device": "cpu",
        "popsize": popsize,
        "m": m,
        "max_turns": max_turns,
        "sessions": popsize * m,
        "torch_threads": int(torch.get_num_threads()),
        "encoder_load_s": round(t_load, 2),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }
    tmp = Path(tempfile.mkdtemp(prefix="bench-live-workers-"))
    rewards: list[np.ndarray] = []
    calls: set[int] = set()
    variants = (("in_process", 1), ("ray_1", 1), (f"ray_{workers}", workers))
    ray, started = connect()
    try:
        for r in range(max(1, repeats)):  # rounds of the three, so that the box's load hits all alike
            for name, n in variants:
                row, rw = _one_generation(
                    cfg.model_copy(update={"workers": n}), tmp / f"r{r}", name, router, models, thetas, questions
                )
                rewards.append(rw)
                calls.add(row["calls"])
                if name not in out or row["generation_s"] < out[name]["generation_s"]:
                    out[name] = row
    finally:
        if started:
            ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    out["repeats"] = max(1, repeats)
    out["equal_rewards"] = all(np.array_equal(rewards[0], x, equal_nan=True) for x in rewards[1:])
    out["equal_calls"] = len(calls) == 1
    out[f"speedup_{workers}_vs_1_ray"] = round(out["ray_1"]["generation_s"] / out[f"ray_{workers}"]["generation_s"], 3)
    out[f"speedup_{workers}_vs_in_process"] = round(
        out["in_process"]["generation_s"] / out[f"ray_{workers}"]["generation_s"], 3
    )
    return out


def _one_generation(
    cfg: Any, tmp: Path, name: str, router: Any, models: list[str], thetas: np.ndarray, questions: list[Any]
) -> tuple[dict[str, Any], np.ndarray]:
    """One generation on a fresh fitness (its own run dir and response cache: every call paid)."""
    t = time.perf_counter()
    fit = _fitness(cfg, tmp, name, router, models)
    start = time.perf_counter() - t
    enc_s = [0.0]
    if name == "in_process":  # time this process's encoder work, as the workers time theirs
        plain = fit._logits_fn

        def timed_fn(th: np.ndarray, pairs: list[Any]) -> Any:
            fn = plain(th, pairs)

            def call(texts: list[str], cands: np.ndarray, streams: list[int]) -> np.ndarray:
                t1 = time.perf_counter()
                res = fn(texts, cands, streams)
                enc_s[0] += time.perf_counter() - t1
                return np.asarray(res)

            return call

        fit._logits_fn = timed_fn
    try:
        t = time.perf_counter()
        ev = fit.evaluate(1, thetas, questions, quiet_hooks())
        wall = time.perf_counter() - t
        calls = int(fit.calls)
        steps = list(getattr(fit, "turn_steps", []))
    finally:
        fit.close()
    row: dict[str, Any] = {
        "generation_s": round(wall, 3),
        "start_s": round(start, 2),
        "calls": calls,
        "avg_turns": round(float(ev.stats.avg_turns or 0.0), 3),
    }
    if steps:
        over = [s["wall_s"] - s["busy_s"] for s in steps]
        row.update(
            {
                "turn_steps": len(steps),
                "encoder_s": round(sum(s["busy_s"] for s in steps), 3),
                "ray_overhead_per_turn_ms": round(1000 * statistics.mean(over), 1),
                "ray_overhead_per_turn_max_ms": round(1000 * max(over), 1),
                "ray_overhead_pct_of_generation": round(100 * sum(over) / wall, 2),
                # the encoder work's split: its total over the busiest worker's (N when even)
                "compute_split_speedup": round(
                    sum(s["busy_sum_s"] for s in steps) / max(1e-9, sum(s["busy_s"] for s in steps)), 3
                ),
            }
        )
    else:
        row["encoder_s"] = round(enc_s[0], 3)
    return row, np.asarray(ev.rewards)
