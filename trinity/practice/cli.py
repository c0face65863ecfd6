"""`trinity pool serve-practice`: the SIMULATED practice pool over OpenAI-compatible HTTP.

trinity pool serve-practice [--port P] [--latency-ms MS] [--fault-429 F] …

The first line on stdout is the server's base URL (scripts and benches read it). The command
sits in the `trinity pool` group; the composition root (trinity.cli) adds it there, since the
simulator is above the pool and the pool imports nothing of it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

from trinity.benchmarks import get_benchmark
from trinity.errors import ConfigError
from trinity.practice.server import Faults, PracticeServer, serve_forever


def _rate(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"a rate must be in [0, 1], got {v}")
    return v


def _port(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535 (0: any free port), got {v}")
    return v


def register(psub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `serve-practice` to the `trinity pool` subcommands `psub`."""
    s = psub.add_parser("serve-practice", help="serve the SIMULATED practice models over OpenAI-compatible HTTP")
    s.add_argument("--port", type=_port, default=8765, help="port on 127.0.0.1 (0: any free port; default 8765)")
    s.add_argument(
        "--latency-ms",
        type=int,
        default=None,
        help="latency added to every reply (default: each model's profile latency)",
    )
    s.add_argument(
        "--latency-p99-ms",
        type=float,
        default=None,
        dest="latency_p99_ms",
        help="heavy-tailed latency: lognormal with median --latency-ms and this 99th percentile",
    )
    s.add_argument("--seed", type=int, default=None, help="simulation seed (default: configs/practice.yaml)")
    s.add_argument("--fault-429", type=_rate, default=0.0, metavar="RATE", help="fraction of requests answered 429")
    s.add_argument(
        "--retry-after",
        type=float,
        default=1.0,
        metavar="S",
        help="Retry-After seconds sent with a 429 (negative: send none)",
    )
    s.add_argument("--retry-after-date", action="store_true", help="send Retry-After as an HTTP date")
    s.add_argument("--fault-500", type=_rate, default=0.0, metavar="RATE", help="fraction answered 500")
    s.add_argument(
        "--fault-error-body", type=_rate, default=0.0, metavar="RATE", help="fraction answered 200 with an error body"
    )
    s.add_argument(
        "--fault-no-choices",
        type=_rate,
        default=0.0,
        metavar="RATE",
        help="fraction answered 200 with usage but no choices",
    )
    s.add_argument("--fault-slow", type=_rate, default=0.0, metavar="RATE", help="fraction answered slowly")
    s.add_argument("--slow-ms", type=int, default=2000, help="extra latency of a slow reply (default 2000)")
    s.add_argument(
        "--credit-after",
        type=int,
        default=None,
        metavar="N",
        help="answer 402 (out of credit) once N completions were served",
    )
    s.add_argument(
        "--benchmark",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer this benchmark's questions (repeatable; simulated answers, graded)",
    )
    s.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="FILE",
        help="local dataset file of the matching --benchmark (in order)",
    )
    s.add_argument(
        "--require-key-env",
        default=None,
        metavar="VAR",
        help="answer 401 unless requests carry `Bearer $VAR` (the key itself never goes in argv)",
    )
    s.set_defaults(func=cmd_serve_practice)


def _faults(args: argparse.Namespace) -> Faults:
    try:
        return Faults(
            rate_429=args.fault_429,
            retry_after_s=None if args.retry_after < 0 else args.retry_after,
            retry_after_as_date=args.retry_after_date,
            rate_500=args.fault_500,
            rate_error_body=args.fault_error_body,
            rate_no_choices=args.fault_no_choices,
            rate_slow=args.fault_slow,
            slow_ms=args.slow_ms,
            credit_after=args.credit_after,
        )
    except ValueError as e:
        raise ConfigError(f"serve-practice: {e}") from None


def cmd_serve_practice(args: argparse.Namespace) -> int:
    faults = _faults(args)
    questions = []
    if len(args.data) > len(args.benchmark):
        raise ConfigError("--data needs a --benchmark before it (one file per benchmark, in order)")
    if args.benchmark:
        for i, name in enumerate(args.benchmark):
            questions += get_benchmark(name).load(args.data[i] if i < len(args.data) else None)
    api_key = None
    if args.require_key_env:
        api_key = os.environ.get(args.require_key_env)
        if not api_key:
            raise ConfigError(f"--require-key-env {args.require_key_env}: that variable is not set")

    def announce(server: PracticeServer) -> None:
        # First line: the base URL (scripts and benches read it).
        print(server.base_url, flush=True)
        print(
            f"practice pool (SIMULATED models: {', '.join(server.responder.models)}), seed {server.seed}; "
            "Ctrl-C to stop",
            file=sys.stderr,
            flush=True,
        )

    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None  # main() runs as asyncio.run's task
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        try:
            await serve_forever(
                args.port,
                faults,
                args.latency_ms,
                args.seed,
                announce=announce,
                api_key=api_key,
                questions=questions,
                latency_p99_ms=args.latency_p99_ms,
            )
        except OSError as e:
            raise ConfigError(f"cannot listen on 127.0.0.1:{args.port} ({e.strerror}); pick another --port") from None

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        pass
    return 0
