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


def live_generation(
    args=None, *, popsize: int = 32, m: int = 16, latency_ms: int = 2000, concurrency: int = 512, seed: int = 0
) -> dict:
    from trinity.bench.server import spawn_practice_server
    from trinity.data.practice import practice_questions
    from trinity.model.encoder import load_encoder
    from trinity.model.router import Router
    from trinity.pool.providers import pool_model_ids

    popsize = getattr(args, "popsize", None) or popsize
    m = getattr(args, "m", None) or m
    arg_latency = getattr(args, "latency_ms", None)
    latency_ms = arg_latency if arg_latency is not None else latency_ms
    if popsize < 1 or m < 1 or latency_ms < 0:
        from trinity.errors import ConfigError

        raise ConfigError("bench pool: --lg-popsize and --lg-m must be >= 1, --lg-latency-ms >= 0")
    rng = np.random.RandomState(seed)
    qs = practice_questions()
    if m > len(qs):
        from trinity.errors import ConfigError

        raise ConfigError(f"bench pool: --lg-m is at most {len(qs)} (the practice questions)")
    questions = [qs[i] for i in rng.choice(len(qs), size=m, replace=False)]
    t_enc = time.perf_counter()
    encoder = getattr(args, "encoder", None) or "tiny-qwen3"
    # The encoder first: a bad name fails before the server process exists.
    router = Router(
        load_encoder(encoder, device=getattr(args, "device", None) or "cpu"), len(pool_model_ids("practice"))
    )
    enc_load_s = time.perf_counter() - t_enc
    server, base_url = spawn_practice_server(latency_ms)
    try:
        return _measure_generation(
            router,
            server,
            base_url,
            questions,
            popsize,
            m,
            latency_ms,
            concurrency,
            rng,
            enc_load_s,
            encoder,
            bool(getattr(args, "full_reencode", False)),
        )
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(timeout=10)


def _measure_generation(
    router, server, base_url, questions, popsize, m, latency_ms, concurrency, rng, enc_load_s, encoder, full_reencode
) -> dict:
    from trinity.bench.server import proc_cpu_s
    from trinity.pool.providers import load_pool
    from trinity.session.live import LiveRun
    from trinity.session.loop import SessionRunner, SessionSpec

    pool = load_pool("practice", base_url=base_url, max_concurrency=concurrency)
    # A population as CMA-ES would sample it around the initial mean (σ = 0.1).
    thetas = router.initial_mean()[None, :] + 0.1 * rng.randn(popsize, router.n_params)
    steps: list[dict] = []
    encode_s = [0.0, 0.0]  # total, this step
    peak_mb = [0.0]
    tokens = [0, 0]  # this step, total so far

    sessions = router.session_encoder(thetas)

    def logits_fn(texts, cands, streams):
        t = time.perf_counter()
        if full_reencode:  # the whole transcript every turn: the comparison figure
            out = router.paired_logits(thetas, texts, cands)
            sessions.tokens_seen += sum(len(i) - 1 for i in router.encoder.token_ids_many(texts))
        else:
            out = sessions.logits(texts, cands, streams)
        dt = time.perf_counter() - t
        encode_s[0] += dt
        peak_mb[0] = max(peak_mb[0], sessions.nbytes / 2**20)
        encode_s[1] += dt
        tokens[0] = sessions.tokens_seen - tokens[1]
        tokens[1] = sessions.tokens_seen
        return out

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
                live.client, logits_fn, SessionSpec(list(pool.models), key_prefix="bench"), on_step=on_step
            )
            last[0] = time.perf_counter()
            t0 = time.perf_counter()
            trajs = await runner.run(pairs)
            return trajs, time.perf_counter() - t0, live.client.stats

        cpu0 = proc_cpu_s(server.pid)
        trajs, wall, stats = live.run(main())
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
        "encoder_peak_mb": round(peak_mb[0], 1),
        "encoder_load_s": round(enc_load_s, 2),
        "sequential_8_in_flight_s": round(sequential_s, 1),
        "speedup_vs_sequential": round(sequential_s / wall, 1) if wall > 0 else None,
        "accuracy": round(float(np.mean([t.correct for t in trajs])), 3),
        "after_last_turn_s": round(wall - sum(st["secs"] for st in steps), 2),
        "server_cpu_s": round(cpu1 - cpu0, 2) if cpu0 is not None and cpu1 is not None else None,
        "steps": steps,
        "ledger_cost_usd": round(stats.cost_micro_usd / 1e6, 6),
        "note": "SIMULATED practice pool; latency injected by the server",
    }
