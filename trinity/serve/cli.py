"""`trinity serve RUN_DIR` and `trinity serve-keys add FILE NAME`."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from trinity.errors import InputError
from trinity.serve.keys import KeyStore, add_key
from trinity.serve.server import LOOPBACK, bind, uvicorn_server

SWITCH_INTERVAL_S = 0.0005  # the GIL switch interval of the serving process (see cmd_serve)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve a trained router as an OpenAI-compatible endpoint (model 'router')",
        description="One request to /v1/chat/completions runs one whole Thinker/Worker/Verifier session of the "
        "run's router on its pool. Calls are reserved against --budget-usd and each key's budget, and recorded "
        "in RUN_DIR/serve/ (ledger, journal). See docs/SERVE.md.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="a trained run's directory (run.json, best_theta.npy)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--keys", metavar="FILE", help="API keys file (hashes and budgets; `trinity serve-keys add`)")
    p.add_argument("--no-auth", action="store_true", help="serve without keys (only on a loopback --host)")
    p.add_argument(
        "--budget-usd", type=float, required=True, help="cap on what the server spends, over its whole ledger"
    )
    p.add_argument("--max-sessions", type=int, default=64, help="sessions at once; more get HTTP 429 (default 64)")
    p.add_argument("--max-turns", type=int, default=None, help="turns per session (default: the run's)")
    p.add_argument("--pool", default=None, help="the pool (default: the run's)")
    p.add_argument("--base-url", default=None, help="the pool's URL (default: the pool's own)")
    p.add_argument("--device", default=None, help="the encoder's device (default: the run's)")
    p.add_argument("--no-cache", action="store_true", help="do not use the response cache")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads for the encoder on the CPU (default: torch's; 1 on a busy shared box)",
    )
    p.set_defaults(func=cmd_serve)

    k = sub.add_parser("serve-keys", help="API keys for `trinity serve` (stored as hashes)")
    ksub = k.add_subparsers(dest="keys_command", metavar="ACTION")
    ksub.required = True
    a = ksub.add_parser("add", help="make a key, store its hash and budget in FILE, print the key once")
    a.add_argument("file", metavar="FILE")
    a.add_argument("name", metavar="NAME")
    a.add_argument("--budget-usd", type=float, default=None, help="cap on what this key may spend")
    a.set_defaults(func=cmd_keys_add)


def cmd_keys_add(args: argparse.Namespace) -> int:
    key = add_key(args.file, args.name, args.budget_usd)
    print(key)
    print(
        f"key {args.name!r} added to {args.file} (only its hash is stored; this is the only time it is shown)",
        file=sys.stderr,
    )
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    if args.no_auth and args.keys:
        raise InputError("--no-auth and --keys exclude each other; pick one")
    if not args.no_auth and not args.keys:
        raise InputError(
            "pass --keys FILE (make one with `trinity serve-keys add FILE NAME`), or --no-auth on 127.0.0.1"
        )
    if args.no_auth and args.host not in LOOPBACK:
        raise InputError(f"--no-auth is only allowed on a loopback --host (127.0.0.1), not {args.host}")
    if args.budget_usd < 0:
        raise InputError(f"--budget-usd must be >= 0, got {args.budget_usd}")
    if args.max_sessions < 1:
        raise InputError(f"--max-sessions must be >= 1, got {args.max_sessions}")
    if args.threads is not None and args.threads < 1:
        raise InputError(f"--threads must be >= 1, got {args.threads}")
    if not 0 <= args.port <= 65535:
        raise InputError(f"--port must be 0-65535, got {args.port}")
    try:
        # lazy: a missing module is reported, not raised at import
        import starlette  # noqa: F401

        # lazy: a missing module is reported, not raised at import
        import uvicorn  # noqa: F401
    except ImportError:
        raise InputError("trinity serve needs Starlette and uvicorn: pip install 'minertui[serve]'") from None
    from trinity.serve.app import ServeApp  # lazy: kept off the CLI start (adds torch + transformers here)
    from trinity.serve.engine import ServeEngine  # lazy: kept off the CLI start (adds torch + transformers here)

    keys = KeyStore.load(args.keys) if args.keys else None
    # The encoder runs in a worker thread while the event loop serves HTTP and the pool: each of
    # the encoder's torch ops gives the GIL up and must get it back, and a busy loop holds it for
    # up to the switch interval (5 ms by default) each time. 0.5 ms keeps the encoder's calls
    # close to their CPU time when the loop is busy.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    if args.threads is not None:
        import torch  # lazy: kept off the CLI start (adds torch here)

        torch.set_num_threads(args.threads)
    engine = ServeEngine.load(
        args.run_dir,
        pool=args.pool,
        base_url=args.base_url,
        budget_usd=args.budget_usd,
        key_budgets={k.name: k.budget_usd for k in keys.keys} if keys else {},
        max_turns=args.max_turns,
        cache=not args.no_cache,
        device=args.device,
    )
    try:
        sock = bind(args.host, args.port)
    except BaseException:
        if engine.practice_server is not None:
            engine.practice_server.stop()
        raise
    app = ServeApp(engine, keys=keys, max_sessions=args.max_sessions)
    host, port = sock.getsockname()[:2]
    print(
        f"serving run {engine.run.id} as model 'router' at http://{host}:{port}/v1 "
        f"(pool {engine.pool.name}, budget ${args.budget_usd:.4f}, ledger {engine.dir / 'ledger.jsonl'})",
        file=sys.stderr,
    )

    # uvicorn shuts down gracefully on SIGINT / SIGTERM, then raises the signal again for the
    # handler that was there before it: a quiet one, so the command ends by saying what it did.
    stops: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: stops.append(signum))
    server = uvicorn_server(app.starlette(), log_level="info")
    asyncio.run(server.serve(sockets=[sock]))
    print(f"stopped: {engine.sessions_served} session(s) served, ${engine.spent_usd:.6f} spent", file=sys.stderr)
    return 0
