"""`trinity bench pool --live-generation`: the wall time of one live generation.

P candidates × m questions of multi-turn sessions (tiny encoder) against the practice server — a
separate process, as a provider is — with a fixed simulated latency per call and the pool's
concurrency raised to 512. Because each turn
step sends every active session's call at once, the wall time should approach
turns × latency; the figure to compare is what the seed repos' pattern would take (candidates one
after another, 8 calls in flight), computed from the same trajectories.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from trinity.benchmarks.practice import practice_questions
from trinity.errors import ConfigError
from trinity.perf.server import proc_cpu_s, spawn_practice_server
from trinity.pool.providers import load_pool, pool_model_ids
from trinity.session.live import LiveRun
from trinity.session.loop import SessionRunner, SessionSpec


def live_generation(
    args=None,
    *,
    popsize: int = 32,
    m: int = 16,
    latency_ms: int = 2000,
    concurrency: int = 512,
    seed: int = 0,
    p99_ms: float | None = None,
    schedules: tuple[str, ...] = ("pipelined",),
) -> dict:
    """One live generation per schedule (pipelined, barrier) on the same population and
    questions; `p99_ms`: lognormal latency with median `latency_ms` and this 99th percentile.
    The first schedule's figures are the top-level keys; with two, `schedules` holds each and
    `pipelined_vs_barrier` the ratio of their wall times."""
    from trinity.model.encoder import load_encoder  # lazy: torch + transformers loaded only when used
    from trinity.model.router import Router  # lazy: torch + transformers loaded only when used

    popsize = getattr(args, "popsize", None) or popsize
    m = getattr(args, "m", None) or m
    arg_latency = getattr(args, "latency_ms", None)
    latency_ms = arg_latency if arg_latency is not None else latency_ms
    if popsize < 1 or m < 1 or latency_ms < 0:
        raise ConfigError("bench pool: --lg-popsize and --lg-m must be >= 1, --lg-latency-ms >= 0")
    rng = np.random.RandomState(seed)
    qs = practice_questions()
    if m > len(qs):
        raise ConfigError(f"bench pool: --lg-m is at most {len(qs)} (the practice questions)")
    questions = [qs[i] for i in rng.choice(len(qs), size=m, replace=False)]
    t_enc = time.perf_counter()
    encoder = getattr(args, "encoder", None) or "tiny-qwen3"
    # The encoder first: a bad name fails before the server process exists.
    router = Router(
        load_encoder(encoder, device=getattr(args, "device", None) or "cpu"), len(pool_model_ids("practice"))
    )
    enc_load_s = time.perf_counter() - t_enc
    arg_p99 = getattr(args, "p99_ms", None)
    p99_ms = arg_p99 if arg_p99 is not None else p99_ms
    arg_sched = getattr(args, "schedules", None)
    if arg_sched:
        schedules = tuple(x.strip() for x in str(arg_sched).split(",") if x.strip())
    if not schedules or any(x not in ("pipelined", "barrier") for x in schedules):
        raise ConfigError("bench pool: --lg-schedules is a comma-separated list of pipelined, barrier")
    # A population as CMA-ES would sample it around the initial mean (σ = 0.1).
    thetas = router.initial_mean()[None, :] + 0.1 * rng.randn(popsize, router.n_params)
    server, base_url = spawn_practice_server(latency_ms, p99_ms)
    try:
        runs = {
            sched: _measure_generation(
                router,
                server,
                base_url,
                questions,
                popsize,
                m,
                latency_ms,
                concurrency,
                thetas,
                enc_load_s,
                encoder,
                bool(getattr(args, "full_reencode", False)),
                sched,
                p99_ms,
            )
            for sched in schedules
        }
        out = dict(runs[schedules[0]])
        if len(runs) > 1:
            out["schedules"] = runs
            if "pipelined" in runs and "barrier" in runs:
                out["pipelined_vs_barrier"] = round(runs["pipelined"]["wall_s"] / runs["barrier"]["wall_s"], 3)
        return out
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=10)


class _BenchLogits:
    """The bench's logits function: the incremental session encoder (or the paired path), timed;
    `end_streams` lets the pipelined schedule drive it."""

    def __init__(self, router, thetas, full_reencode: bool, pipelined: bool):
        self.router, self.thetas, self.full = router, thetas, full_reencode
        self.sessions = router.session_encoder(thetas)
        self.sessions.keep_absent = pipelined
        self.encode_s = [0.0, 0.0]  # total, this step
        self.peak_mb = 0.0
        self.tokens = [0, 0]  # this step, total so far
        if pipelined:
            self.end_streams = self.sessions.end_streams

    def __call__(self, texts, cands, streams):
        router, sessions = self.router, self.sessions
        t = time.perf_counter()
        if self.full:  # the whole transcript every turn: the comparison figure
            out = router.paired_logits(self.thetas, texts, cands)
            sessions.tokens_seen += sum(len(i) - 1 for i in router.encoder.token_ids_many(texts))
        else:
            out = sessions.logits(texts, cands, streams)
        dt = time.perf_counter() - t
        self.encode_s[0] += dt
        self.encode_s[1] += dt
        self.peak_mb = max(self.peak_mb, sessions.nbytes / 2**20)
        self.tokens[0] = sessions.tokens_seen - self.tokens[1]
        self.tokens[1] = sessions.tokens_seen
        return out


def _measure_generation(
    router,
    server,
    base_url,
    questions,
    popsize,
    m,
    latency_ms,
    concurrency,
    thetas,
    enc_load_s,
    encoder,
    full_reencode,
    schedule="barrier",
    p99_ms=None,
) -> dict:
    pool = load_pool("practice", base_url=base_url, max_concurrency=concurrency)
    steps: list[dict] = []
    logits_fn = _BenchLogits(router, thetas, full_reencode, schedule == "pipelined")
    sessions, encode_s, tokens = logits_fn.sessions, logits_fn.encode_s, logits_fn.tokens

    last = [time.perf_counter()]

    def on_step(turn: int, done: int) -> None:
        now = time.perf_counter()
        steps.append(
            {
                "turn": turn,
                "finished": done,
                "secs": round(now - last[0], 3),
                "encoder_s": round(encode_s[1], 3),
                "encoder_tokens": tokens[0],
            }
        )
        encode_s[1] = 0.0
        last[0] = now

    pairs = [(c, q) for c in range(popsize) for q in questions]
    with (
        tempfile.TemporaryDirectory() as tmp,
        LiveRun(
            pool,
            run_id="bench",
            ledger_path=Path(tmp) / "ledger.jsonl",
            journal_path=Path(tmp) / "journal.jsonl",
            cache=False,
            budget="none",
        ) as live,
    ):

        async def main():
            runner = SessionRunner(
                live.client,
                logits_fn,
                SessionSpec(list(pool.models), key_prefix="bench", schedule=schedule),
                on_step=on_step,
            )
            last[0] = time.perf_counter()
            t0 = time.perf_counter()
            trajs = await runner.run(pairs)
            return trajs, time.perf_counter() - t0, live.client.stats, getattr(runner, "pipeline_stats", None)

        cpu0 = proc_cpu_s(server.pid)
        trajs, wall, stats, pstats = live.run(main())
        cpu1 = proc_cpu_s(server.pid)
    turns = np.array([len(t.turns) for t in trajs]).reshape(popsize, m)
    lat = latency_ms / 1000.0
    # The seed repos' pattern: one candidate after another, 8 sessions in flight at a time; a
    # batch of 8 takes its longest session's turns × latency (calls only, no encoder time).
    sequential_s = float(sum(turns[c, a : a + 8].max() * lat for c in range(popsize) for a in range(0, m, 8)))
    max_turns = int(turns.max())
    return {
        "popsize": popsize,
        "m": m,
        "sessions": popsize * m,
        "latency_ms": latency_ms,
        "latency_p99_ms": p99_ms,
        "schedule": schedule,
        "encoder_batches": int(pstats["batches"]) if pstats else len(steps),
        "concurrency": concurrency,
        "calls": int(turns.sum()),
        "max_turns": max_turns,
        "mean_turns": round(float(turns.mean()), 3),
        "wall_s": round(wall, 2),
        "ideal_s": round(max_turns * lat, 2),
        "target_s": round(1.5 * 5 * lat, 2),
        "encoder": "full re-encode (paired path)" if full_reencode else "incremental (SessionEncoder)",
        "encoder_model": encoder,
        "encoder_device": str(router.encoder.device),
        "encoder_s": round(encode_s[0], 2),
        "encoder_tokens_seen": sessions.tokens_seen,
        "encoder_tokens_read": sessions.tokens_read,
        "encoder_peak_mb": round(logits_fn.peak_mb, 1),
        "encoder_load_s": round(enc_load_s, 2),
        "sequential_8_in_flight_s": round(sequential_s, 1),
        "speedup_vs_sequential": round(sequential_s / wall, 1) if wall > 0 else None,
        "accuracy": round(float(np.mean([t.correct for t in trajs])), 3),
        "after_last_turn_s": round(wall - sum(st["secs"] for st in steps), 2),
        "server_cpu_s": round(cpu1 - cpu0, 2) if cpu0 is not None and cpu1 is not None else None,
        "steps": steps,
        "ledger_cost_usd": round(stats.cost_micro_usd / 1e6, 6),
        "correct": int(sum(bool(t.correct) for t in trajs)),
        "note": "SIMULATED practice pool; latency injected by the server",
    }
