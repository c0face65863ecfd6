"""One owner for a live run's pool stack: `LiveRun` opens and closes, in one place, the pool
client, its hash-chained ledger, the call journal (+ journal.sent), the response cache, the
budget, the event loop the client lives on, and the in-process practice server when one was
started for the run.

Users: live training (`trinity.session.fitness.LiveFitness`, and through it live analysis),
`trinity collect` (files next to `--out`) and the live-generation benchmark (a temp dir).

    with LiveRun(pool, run_id=..., ledger_path=..., journal_path=...) as live:
        result = live.run(coro_using(live.client))

Budget: `budget="run"` is `trinity.pool.budget.run_budget` (the run's cap, inside the sweep's
shared one when a sweep installed its wrapper), `"local"` a plain `Budget` with the cap,
`"none"` no budget at all; both caps start from what the ledger already holds (a resume pays
nothing twice and its earlier spend counts).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Coroutine, Literal, Protocol, TypeVar

from trinity.config import TrainConfig
from trinity.errors import ConfigError
from trinity.pool.budget import Budget, run_budget
from trinity.pool.cache import ResponseCache
from trinity.pool.journal import CallJournal
from trinity.pool.ledger import Ledger
from trinity.pool.providers import config_prices, load_pool
from trinity.practice.server import start_practice_server  # (also gives the pool the practice models)

if TYPE_CHECKING:
    from trinity.pool.budget import Budget, BudgetLike
    from trinity.pool.cache import ResponseCache
    from trinity.pool.client import PoolClient
    from trinity.pool.journal import CallJournal
    from trinity.pool.ledger import Ledger
    from trinity.pool.providers import PoolConfig
    from trinity.runs.rundir import RunDir

T = TypeVar("T")
BudgetKind = Literal["run", "local", "none"]


class LocalServer(Protocol):
    """An in-process pool server a run started (the simulated practice pool); stopped on close."""

    @property
    def base_url(self) -> str: ...

    def stop(self) -> None: ...


BASE_URL_ENV = "TRINITY_POOL_BASE_URL"


def resolve_pool(cfg: TrainConfig, run: RunDir | None = None) -> tuple[PoolConfig, LocalServer | None]:
    """The run's pool config; for the practice pool with no base URL, start a simulated server
    in this process (returned as the second value so the caller can stop it)."""
    if not cfg.pool:
        raise ConfigError("live mode needs a pool: pass --pool practice|openrouter|chutes|<name>")
    base_url = cfg.base_url or os.environ.get(BASE_URL_ENV) or None
    server: LocalServer | None = None
    namespace = None
    if base_url is None and cfg.pool == "practice":
        practice = start_practice_server(port=0)
        server, base_url = practice, practice.base_url
        # The in-process server gets a new port each time; its answers depend only on the practice
        # setup. Key the response cache on that setup, not the port: otherwise an answer that was a
        # cache hit the first time (so never journaled) is bought again by every later evaluation.
        setup = practice.server.responder.setup
        namespace = (
            "practice@simulated/"
            + hashlib.sha256(repr((setup.seed, setup.question_spread, setup.models)).encode()).hexdigest()[:16]
        )
        if run is not None:
            run.log(f"started the SIMULATED practice pool in the engine process at {base_url}")

    return load_pool(
        cfg.pool,
        cfg.models_yaml,
        base_url=base_url,
        models=cfg.pool_models,
        cache_namespace=namespace,
        prices=config_prices(cfg),
        read_timeout_s=cfg.read_timeout_s,
    ), server


class LiveRun:
    """The pool client and everything behind it, opened together, closed together (in reverse)."""

    def __init__(
        self,
        pool: PoolConfig,
        *,
        run_id: str,
        ledger_path: str | os.PathLike[str],
        journal_path: str | os.PathLike[str],
        cache: bool = True,
        cache_path: str | None = None,
        budget_usd: float | None = None,
        budget: BudgetKind = "run",
        seed: int | None = None,
        env_file: str | None = None,
        server: LocalServer | None = None,
    ) -> None:
        from trinity.pool.client import PoolClient  # lazy: httpx loaded only when used

        self.pool = pool
        self.server = server  # an in-process practice server this run started (stopped on close)
        self._ledger: Ledger | None = None
        self._journal: CallJournal | None = None
        self.cache: ResponseCache | None = None
        self.budget: Budget | BudgetLike | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._client: PoolClient | None = None
        self._entered = False
        self._closed = False
        try:
            self._ledger = Ledger(Path(ledger_path), run_id)
            self._journal = CallJournal(Path(journal_path))
            self.cache = ResponseCache(cache_path or None) if cache else None
            spent = self._ledger.total_usd
            self.spent_at_open = spent
            self.budget = (
                run_budget(budget_usd, spent_usd=spent)
                if budget == "run"
                else Budget(budget_usd, spent_usd=spent)
                if budget == "local"
                else None
            )
            self.loop = asyncio.new_event_loop()
            self._client = PoolClient(
                pool,
                run_id=run_id,
                ledger=self._ledger,
                cache=self.cache,
                budget=self.budget,
                journal=self._journal,
                env_file=env_file,
                seed=seed,
            )
            self.loop.run_until_complete(self._client.__aenter__())
            self._entered = True
        except BaseException:
            self.close()
            raise

    @property
    def client(self) -> PoolClient:
        """The pool client (open from construction until `close()`)."""
        assert self._client is not None, "LiveRun did not open"
        return self._client

    @property
    def ledger(self) -> Ledger:
        """The run's hash-chained ledger."""
        assert self._ledger is not None, "LiveRun did not open"
        return self._ledger

    @property
    def journal(self) -> CallJournal:
        """The run's call journal (+ journal.sent)."""
        assert self._journal is not None, "LiveRun did not open"
        return self._journal

    @property
    def in_flight_at_open(self) -> list[str]:
        """Journal keys sent but never recorded when the files were last closed (a kill -9)."""
        return list(self.journal.in_flight_at_open)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` to completion on the run's event loop (where the client lives)."""
        assert self.loop is not None, "LiveRun is closed"
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        """Close the client, then the loop, the files and the server; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        loop, self.loop = self.loop, None
        try:
            if loop is not None:
                try:
                    if self._entered and self._client is not None:
                        loop.run_until_complete(self._client.aclose())
                    loop.run_until_complete(loop.shutdown_asyncgens())
                    loop.run_until_complete(loop.shutdown_default_executor())
                finally:
                    loop.close()
        finally:
            self._entered = False
            for part in (self._ledger, self._journal, self.cache):
                if part is not None:
                    part.close()
            if self.server is not None:
                server, self.server = self.server, None
                server.stop()

    def __enter__(self) -> "LiveRun":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_live_run(cfg: TrainConfig, run: RunDir, models: list[str] | None = None) -> LiveRun:
    """A training (or live analysis) run's stack: the pool of `cfg` (the simulated practice
    server started in-process when it has no URL), priced (no call whose worst case cannot be
    reserved) and in `models`' order (θ's rows), checked before any file is opened; its ledger
    and journal in the run directory, the response cache of `cfg.cache_path`, the run's budget
    (`run_budget`), and the run's seed."""
    pool, server = resolve_pool(cfg, run)
    try:
        pool.require_prices()  # no call whose worst case cannot be reserved
        if models is not None and list(pool.models) != list(models):
            raise ConfigError(
                f"pool {pool.name!r} models {list(pool.models)} differ from the run's "
                f"model order {list(models)}; θ rows follow the matrix/pool order"
            )
    except BaseException:
        if server is not None:
            server.stop()
        raise
    return LiveRun(
        pool,
        run_id=run.id,
        ledger_path=run.ledger,
        journal_path=run.journal,
        cache_path=cfg.cache_path or None,
        budget_usd=cfg.budget_usd,
        budget="run",
        seed=cfg.seed,
        server=server,
    )
