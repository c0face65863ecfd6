"""`trinity bench serve`: what the router adds to a served session, and a bounded load test.

Routing overhead per turn = the wall time from a session asking for its turn's route to having it
(queueing in the encoder batcher, the encoder's incremental forward pass and the head), measured
inside the server at 1, 16 and 64 concurrent requests against the practice pool in a process of
its own answering after `--latency-ms` (2000: the turn time the target is stated against). The
load test sends `--load` sessions at once (a faster pool) and checks that every one is answered,
that the server's ledger equals what the pool billed, and that the spend stays under the cap.

The router is a run trained here (one cached generation on the practice questions) with each
`--encoder`; the practice questions are cycled (the pool answers only those), with the response
cache off so that every call is paid and every turn routed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from trinity.benchmarks.practice import practice_questions
from trinity.competition.text import router_text
from trinity.data.matrix import save_matrix
from trinity.data.questions import save_questions
from trinity.errors import InputError, TrinityError
from trinity.io import atomic_write_json, read_jsonl
from trinity.perf.server import spawn_practice_server

ROOT = Path(__file__).resolve().parents[2]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="routing overhead per turn of `trinity serve` and a loopback load test")
    p.add_argument("--encoder", action="append", help="encoder(s) to measure (default tiny-qwen3)")
    p.add_argument("--concurrency", default="1,16,64", help="concurrent requests per level (default 1,16,64)")
    p.add_argument("--latency-ms", type=int, default=2000, help="the practice pool's reply time (default 2000)")
    p.add_argument("--load", type=int, default=256, help="sessions at once in the load test (0: skip)")
    p.add_argument("--load-latency-ms", type=int, default=50)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1, help="the server's torch threads (default 1)")
    p.add_argument(
        "--dtype",
        choices=("float32", "bfloat16"),
        default=None,
        help="the encoder's dtype with --direct or --random-theta (default: the device's, float32 on a CPU)",
    )
    p.add_argument(
        "--run",
        metavar="RUN_DIR",
        help="serve this trained run (one --encoder: its own) instead of training one here; not changed",
    )
    p.add_argument(
        "--random-theta",
        action="store_true",
        help="with --run and --encoder: serve the run's pool and text with that encoder and a random θ of its shape "
        "(no training: the routing time does not depend on θ's values)",
    )
    p.add_argument(
        "--sessions",
        type=int,
        default=None,
        help="requests per concurrency level (default: the level, at least 4)",
    )
    p.add_argument(
        "--direct",
        action="store_true",
        help="time the session encoder itself (turn 1, then turn 2 incrementally) per batch size, no server",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bench_serve)


def train_run(encoder: str, root: Path, device: str) -> Path:
    """A router to serve: one cached generation on the practice questions with `encoder` (the
    real trainer, in a child process)."""
    from trinity.practice.simulation import practice_matrix  # lazy: kept off the CLI start (adds PyYAML here)

    qs = [q for q in practice_questions() if q.kind != "code"]
    save_questions(root / "q.jsonl", qs)
    save_matrix(root / "m.json", practice_matrix().subset([q.id for q in qs]))
    run = root / f"run-{encoder.replace('/', '_')}"
    argv = [sys.executable, "-m", "trinity", "train", "--config", str(ROOT / "configs" / "practice.yaml")]
    argv += ["--questions", str(root / "q.jsonl"), "--matrix", str(root / "m.json"), "--generations", "1"]
    argv += ["--popsize", "4", "--m", "4", "--encoder", encoder, "--device", device, "--run-dir", str(run)]
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or ["no message"])[-1]
        raise TrinityError(f"bench serve: training the router with {encoder} failed: {tail}")
    return run


def random_theta_run(template: Path, encoder: str, root: Path, device: str, dtype: str | None = None) -> Path:
    """A copy of the trained run `template` whose router is `encoder` with the router's initial θ
    plus N(0, 0.05) noise: serves like a trained run of that encoder (the same pool, text and
    protocol), made in seconds instead of a training run."""
    from trinity.config import validate_config  # lazy: kept off the CLI start (adds pydantic + PyYAML here)
    from trinity.model.theta import save_theta  # lazy: kept off the CLI start
    from trinity.optim.fitness import build_router  # lazy: brings the session and pool modules, kept off the CLI start
    from trinity.runs.records import parse_run_meta  # lazy: kept off the CLI start (adds pydantic here)
    from trinity.runs.rundir import RunDir  # lazy: kept off the CLI start (adds pydantic here)

    src = RunDir(template)
    meta = src.meta()
    config = {**meta.config.to_json(), "encoder": encoder, "device": device}
    if dtype is not None:
        config["dtype"] = dtype
    router = build_router(validate_config(config, where="bench serve"), len(meta.models))
    theta = router.initial_mean() + np.random.default_rng(0).normal(0, 0.05, router.n_params)
    run = root / f"run-{encoder.replace('/', '_')}-random"
    shutil.copytree(template, run, ignore=shutil.ignore_patterns("serve", "*.lock", "ledger.jsonl", "journal*"))
    copied = {**meta.to_json(), "config": config, "encoder": encoder, "n_params": int(router.n_params)}
    atomic_write_json(RunDir(run).run_json, parse_run_meta(copied, str(RunDir(run).run_json)).to_json())
    save_theta(RunDir(run).best_theta, theta)
    return run


def run_encoder(run: Path, asked: list[str] | None) -> str:
    """The encoder a trained run (`--run`) was trained with; one line when it is no run or `--encoder`
    names another."""
    from trinity.runs.rundir import RunDir  # lazy: kept off the CLI start (adds pydantic here)

    rd = RunDir(run)
    if not rd.run_json.exists():
        raise InputError(f"bench serve: {run} is not a run directory (no run.json)")
    meta = rd.meta()
    enc = meta.encoder or meta.config.encoder or ""
    if not enc:
        raise InputError(f"bench serve: {run}/run.json names no encoder")
    if asked and asked != [enc]:
        raise InputError(f"bench serve: {run} was trained with {enc}, not {', '.join(asked)}")
    return enc


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(xs, q)) if xs else float("nan")


async def fire(
    base_url: str, n: int, concurrency: int, questions: list[Any], walls: list[float] | None = None
) -> tuple[list[dict], list[int], float]:
    """`n` sessions, `concurrency` at once: (response bodies, statuses, wall seconds); `walls`
    gets each request's own wall seconds, in the order of `bodies`."""
    import httpx  # lazy: kept off the CLI start (adds httpx here)

    sem = asyncio.Semaphore(concurrency)
    bodies: list[dict] = []
    statuses: list[int] = []
    limits = httpx.Limits(max_connections=concurrency + 8, max_keepalive_connections=concurrency + 8)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:

        async def one(i: int) -> None:
            q = questions[i % len(questions)]
            body = {
                "model": "router",
                "messages": [{"role": "user", "content": q.question}],
                "trinity": {"kind": q.kind},
            }
            async with sem:
                t = time.perf_counter()
                r = await client.post(base_url + "/chat/completions", json=body)
                took = time.perf_counter() - t
            statuses.append(r.status_code)
            bodies.append(r.json())
            if walls is not None:
                walls.append(took)

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        wall = time.perf_counter() - t0
    return bodies, statuses, wall


def start_server(run: Path, base_url: str, budget_usd: float, max_sessions: int, threads: int = 1) -> tuple[Any, str]:
    """`trinity serve RUN` in a process of its own (the load generator must not share its GIL),
    on a free port: (the process, its base URL)."""
    argv = [sys.executable, "-m", "trinity", "serve", str(run), "--no-auth", "--port", "0", "--pool", "practice"]
    argv += ["--base-url", base_url, "--budget-usd", str(budget_usd), "--max-sessions", str(max_sessions)]
    argv += ["--no-cache", "--threads", str(threads)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = ""
    for _ in range(50):  # a library warning may come first: the line that says where
        line = proc.stderr.readline()
        if not line or " at http://" in line:
            break
    if " at http://" not in line:
        proc.kill()
        raise TrinityError(f"bench serve: the server did not start: {line.strip() or proc.stderr.read()[-300:]}")
    url = line.split(" at ", 1)[1].split()[0]

    threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep its pipe drained
    return proc, url


def measure(
    run: Path,
    base_url: str,
    *,
    concurrency: int,
    sessions: int,
    budget_usd: float,
    max_sessions: int,
    threads: int = 1,
) -> dict[str, Any]:
    import httpx  # lazy: kept off the CLI start (adds httpx here)

    questions = [q for q in practice_questions() if q.kind != "code"]
    served = run.parent / f"{run.name}-served-{concurrency}-{time.time_ns()}"
    shutil.copytree(run, served, ignore=shutil.ignore_patterns("serve", "*.lock"))
    proc, url = start_server(served, base_url, budget_usd, max_sessions, threads)
    try:
        walls: list[float] = []
        bodies, statuses, wall = asyncio.run(fire(url, sessions, concurrency, questions, walls))
        enc = httpx.get(url + "/models", timeout=60).json()["data"][0]["trinity"]["encoder"]
    finally:
        proc.send_signal(signal.SIGTERM)  # graceful: the ledger is closed after the sessions in flight
        try:
            proc.wait(timeout=120)
        except Exception:
            proc.kill()
    routes = [t["route_ms"] for b in bodies if "trinity" in b for t in b["trinity"]["turns"]]
    # The router's share of each session's wall time (the request's, seen by the client).
    shares = [b["trinity"]["route_ms"] / (1000 * w) for b, w in zip(bodies, walls) if "trinity" in b and w > 0]
    path = served / "serve" / "ledger.jsonl"
    ledger = read_jsonl(path) if path.exists() else []
    return {
        "concurrency": concurrency,
        "sessions": sessions,
        "answered": sum(s in (200, 402) for s in statuses),
        "ok": sum(s == 200 for s in statuses),
        "statuses": {str(s): statuses.count(s) for s in sorted(set(statuses))},
        "turns": len(routes),
        "route_ms_p50": round(pct(routes, 50), 2),
        "route_ms_p99": round(pct(routes, 99), 2),
        "session_share_p50": round(pct(shares, 50), 4),
        "session_share_p99": round(pct(shares, 99), 4),
        "encoder_calls": enc["calls"],
        "mean_batch": round(enc["texts"] / enc["calls"], 2) if enc["calls"] else 0.0,
        "encode_ms_mean": round(1000 * enc["seconds"] / enc["calls"], 2) if enc["calls"] else 0.0,
        "encode_cpu_ms_mean": round(1000 * enc.get("cpu_seconds", 0.0) / enc["calls"], 2) if enc["calls"] else 0.0,
        "max_batch": enc.get("max_batch"),
        "max_encode_ms": enc.get("max_call_ms"),
        "wait_ms_p50": enc.get("wait_ms_p50"),
        "wait_ms_p99": enc.get("wait_ms_p99"),
        "to_thread_ms_p50": enc.get("to_thread_ms_p50"),
        "to_thread_ms_p99": enc.get("to_thread_ms_p99"),
        "back_ms_p50": enc.get("back_ms_p50"),
        "back_ms_p99": enc.get("back_ms_p99"),
        "resume_ms_p50": enc.get("resume_ms_p50"),
        "resume_ms_p99": enc.get("resume_ms_p99"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(wall, 2),
        "ledger_usd": sum(r["cost_micro_usd"] for r in ledger) / 1e6,
        "ledger_calls": len(ledger),
    }


def load_test(run: Path, args: argparse.Namespace) -> dict[str, Any]:
    """`--load` sessions at once, twice: with room in the budget (every one answered 200, the
    ledger equal to the pool's bill), then under a cap of half that spend (every one answered,
    200 or 402, and the pool's bill under the cap)."""
    from urllib.request import urlopen  # lazy: urllib.request + http.client kept off the CLI start

    out: dict[str, Any] = {}
    cap = 100.0
    for name in ("room", "capped"):
        proc, base = spawn_practice_server(args.load_latency_ms)
        try:
            row = measure(
                run,
                base,
                concurrency=args.load,
                sessions=args.load,
                budget_usd=cap,
                max_sessions=args.load,
                threads=args.threads,
            )
            stats = json.loads(urlopen(base.rstrip("/") + "/stats").read())
        finally:
            proc.kill()
            proc.wait()
        row["budget_usd"] = cap
        row["pool_billed_usd"] = stats.get("billed_usd")
        row["pool_completions"] = stats.get("completions")
        row["under_cap"] = bool(row["pool_billed_usd"] <= cap + 1e-9)
        out[name] = row
        print(
            f"load ({name}, cap ${cap:.6f}): {row['answered']}/{row['sessions']} answered {row['statuses']}, ledger "
            f"${row['ledger_usd']:.6f} / pool billed ${row['pool_billed_usd']:.6f}, {row['ledger_calls']} calls / "
            f"{row['pool_completions']} completions, route p99 {row['route_ms_p99']} ms, wall {row['wall_s']} s",
            file=sys.stderr,
        )
        cap = round(row["pool_billed_usd"] / 2, 6)
    return out


def direct_overhead(
    encoder: str, sizes: list[int], device: str, threads: int = 1, dtype: str | None = None
) -> list[dict[str, Any]]:
    """The encoder + head time of one turn step with `B` sessions in the batch, without a server:
    turn 1 (the question), then turn 2 (the question and a Worker turn: only the added tokens are
    read), with the serve encoder (`StreamKeepingEncoder`) and a random θ of the right shape."""
    import torch  # lazy: kept off the CLI start (adds torch here)

    from trinity.model.encoder import load_encoder  # lazy: kept off the CLI start (adds torch + transformers here)
    from trinity.model.router import Router  # lazy: kept off the CLI start (adds torch + transformers here)

    # lazy: kept off the CLI start (adds torch + transformers here)
    from trinity.serve.batcher import StreamKeepingEncoder

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    router = Router(load_encoder(encoder, device=device, dtype=dtype or "float32", seed=0), n_models=3)
    theta = np.random.default_rng(0).normal(0, 0.05, router.n_params)
    text = router_text("tinyrouter")
    qs = [q for q in practice_questions() if q.kind != "code"]
    worker = "Working through it step by step, the result follows. The final answer is $\\boxed{42}$."
    rows = []
    warm = StreamKeepingEncoder(router, theta[None, :])  # one-time costs (the SVF layer's factors) first
    warm.logits([text.question_input(qs[0], ())], np.zeros(1, dtype=np.int64), ["warm"])
    for b in sizes:
        enc = StreamKeepingEncoder(router, theta[None, :])
        picked = [qs[i % len(qs)] for i in range(b)]
        streams = [f"s{i}" for i in range(b)]
        t1 = [text.question_input(q, ()) for q in picked]
        t2 = [text.question_input(q, (("Worker", "simulated/mathlete", worker),)) for q in picked]
        times = []
        for texts in (t1, t2):
            read = enc.tokens_read
            t0, c0 = time.perf_counter(), time.thread_time()
            enc.logits(texts, np.zeros(b, dtype=np.int64), streams)
            times.append((time.perf_counter() - t0, enc.tokens_read - read, time.thread_time() - c0))
        rows.append(
            {
                "batch": b,
                "turn1_ms": round(1000 * times[0][0], 1),
                "turn1_tokens": times[0][1],
                "turn2_ms": round(1000 * times[1][0], 1),
                "turn2_new_tokens": times[1][1],
                "turn1_cpu_ms": round(1000 * times[0][2], 1),
                "turn2_cpu_ms": round(1000 * times[1][2], 1),
                "load_average": round(os.getloadavg()[0], 2),
            }
        )
        print(
            f"{encoder:>20} batch {b:<3} turn 1 {rows[-1]['turn1_ms']:9.1f} ms ({times[0][1]} tokens)  "
            f"turn 2 {rows[-1]['turn2_ms']:9.1f} ms ({times[1][1]} new tokens)  CPU {rows[-1]['turn1_cpu_ms']} / "
            f"{rows[-1]['turn2_cpu_ms']} ms",
            file=sys.stderr,
        )
    return rows


def cmd_bench_serve(args: argparse.Namespace) -> int:
    if args.direct:
        sizes = [int(x) for x in str(args.concurrency).split(",") if x.strip()]
        res = {
            enc: direct_overhead(enc, sizes, args.device, args.threads, args.dtype)
            for enc in (args.encoder or ["tiny-qwen3"])
        }
        if args.json:
            print(json.dumps({"direct": res}, indent=2))
        return 0

    encoders = args.encoder or ["tiny-qwen3"]
    if args.dtype and not args.random_theta:
        raise InputError("bench serve: --dtype needs --direct or --random-theta (a trained run keeps its own)")
    if args.random_theta and not (args.run and args.encoder and len(args.encoder) == 1):
        raise InputError("bench serve: --random-theta needs --run (a trained run to copy) and one --encoder")
    if args.run and not args.random_theta:
        encoders = [run_encoder(Path(args.run), args.encoder)]
    levels = [int(x) for x in str(args.concurrency).split(",") if x.strip()]
    out: dict[str, Any] = {"latency_ms": args.latency_ms, "encoders": {}, "load": None}
    runs: dict[str, Path] = {}
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        root = Path(tmp)
        proc, base = spawn_practice_server(args.latency_ms)
        try:
            for enc in encoders:
                t0 = time.perf_counter()
                if args.random_theta:
                    run = random_theta_run(Path(args.run), enc, root, args.device, args.dtype)
                else:
                    run = Path(args.run) if args.run else train_run(enc, root, args.device)
                runs[enc] = run
                rows = []
                for c in levels:
                    row = measure(
                        run,
                        base,
                        concurrency=c,
                        sessions=args.sessions if args.sessions else max(c, 4),
                        budget_usd=100.0,
                        max_sessions=max(c, 1),
                        threads=args.threads,
                    )
                    row["p99_share_of_turn"] = round(row["route_ms_p99"] / args.latency_ms, 4)
                    rows.append(row)
                    print(
                        f"{enc:>20} c={c:<3} route p50 {row['route_ms_p50']:8.2f} ms  p99 {row['route_ms_p99']:8.2f} ms "
                        f"({100 * row['p99_share_of_turn']:.1f}% of a {args.latency_ms} ms turn; "
                        f"{100 * row['session_share_p50']:.1f}% / {100 * row['session_share_p99']:.1f}% of a "
                        "session's wall, p50 / p99)  "
                        f"mean batch {row['mean_batch']}  wait p99 {row['wait_ms_p99']} ms  encoder call "
                        f"{row['encode_ms_mean']} ms ({row['encode_cpu_ms_mean']} ms CPU)  {row['turns']} turns  "
                        f"load {row['load_average'][0]}",
                        file=sys.stderr,
                    )
                out["encoders"][enc] = {"levels": rows, "setup_s": round(time.perf_counter() - t0, 1)}
        finally:
            proc.kill()
            proc.wait()
        if args.load:
            out["load"] = load_test(runs[encoders[0]], args)
    if args.json:
        print(json.dumps(out, indent=2))
    return 0
