"""The served router: one trained run's head, encoder, competition text and pool, and the whole
Thinker / Worker / Verifier session of one request.

`ServeEngine.load(run_dir, ...)` loads the router (slow: the encoder) and checks the pool;
`await engine.open()` opens, on the serving event loop, the pool client and what stands behind it
as in a live run: the hash-chained ledger and the call journal in `RUN_DIR/serve/` (purpose
`serve`), the response cache, the server's budget (`--budget-usd`, over that ledger's whole life)
and the encoder batcher. `await engine.session(question, key)` runs one session; `await
engine.close()` waits for the sessions in flight, then closes everything in reverse.

A key's budget is reserved call by call with the same worst case the pool client reserves
against the server's cap, and settled with the call's bill; its spend so far is read back from
the journal (keys `serve/<key name>/<request id>/…`), so a restart gives no money back.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trinity.analysis.live import session_config
from trinity.benchmarks.prompts import pool_question
from trinity.competition.protocol import run_protocol
from trinity.competition.text import run_competition
from trinity.data.questions import Question
from trinity.errors import BudgetExceeded, InputError
from trinity.io import iter_jsonl
from trinity.model import ROLES, policy
from trinity.optim.routing import load_trained
from trinity.pool.budget import Budget, to_micro
from trinity.pool.cache import ResponseCache
from trinity.pool.journal import CallJournal
from trinity.pool.ledger import Ledger
from trinity.runs.rundir import RunDir
from trinity.serve.batcher import EncoderBatcher, StreamKeepingEncoder
from trinity.session.live import resolve_pool
from trinity.session.loop import SessionRunner, SessionSpec, grade_answer
from trinity.session.transcript import Trajectory, Turn

SERVE_DIR = "serve"
LOCAL_KEY = "local"  # the key name of requests served with --no-auth


class KeyBudgetExceeded(BudgetExceeded):
    """The next call would pass the requesting key's budget."""


@dataclass
class TurnInfo:
    """One turn of a served session, as the response carries it."""

    turn: int
    model: str
    role: str
    model_probs: dict[str, float]
    role_probs: dict[str, float]
    route_ms: float  # encoder + head for this turn, queueing in the batcher included
    output: str
    verdict: str | None
    ok: bool
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    cache_hit: bool

    @property
    def model_prob(self) -> float:
        return self.model_probs[self.model]

    @property
    def role_prob(self) -> float:
        return self.role_probs[self.role]

    def to_json(self, with_output: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {
            "turn": self.turn,
            "model": self.model,
            "role": self.role,
            "model_prob": round(self.model_prob, 4),
            "role_prob": round(self.role_prob, 4),
            "model_probs": {k: round(v, 4) for k, v in self.model_probs.items()},
            "role_probs": {k: round(v, 4) for k, v in self.role_probs.items()},
            "route_ms": round(self.route_ms, 3),
            "verdict": self.verdict,
            "ok": self.ok,
            "error": self.error,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 8),
            "cache_hit": self.cache_hit,
        }
        if with_output:
            d["output"] = self.output
        return d


@dataclass
class ServedSession:
    id: str
    key: str
    question: Question
    turns: list[TurnInfo] = field(default_factory=list)
    answer_text: str = ""  # the final answer: the scored turn's whole output
    answer: str | None = None  # what a grader extracts from it
    correct: bool | None = None  # only when the request gave a reference answer
    failed: bool = False
    reason: str = ""
    stopped: str = ""  # "accepted" | "max_turns" | "failed" | "cancelled"

    @property
    def cost_usd(self) -> float:
        return sum(t.cost_usd for t in self.turns)

    @property
    def prompt_tokens(self) -> int:
        return sum(t.prompt_tokens for t in self.turns)

    @property
    def completion_tokens(self) -> int:
        return sum(t.completion_tokens for t in self.turns)

    def extension(self, with_output: bool = True) -> dict[str, Any]:
        """The response's `trinity` field."""
        return {
            "session": self.id,
            "turns": [t.to_json(with_output) for t in self.turns],
            "n_turns": len(self.turns),
            "stopped": self.stopped,
            "answer": self.answer,
            "correct": self.correct,
            "cost_usd": round(self.cost_usd, 8),
            "route_ms": round(sum(t.route_ms for t in self.turns), 3),
            "reason": self.reason,
        }


class KeyedClient:
    """The pool client as one key sees it: each call's worst case is reserved against the key's
    budget (the pool client reserves it against the server's too) and settled with its bill.
    When only the key's calls in flight are in the way (their worst cases, not their bills), the
    call waits for one of them to settle instead of failing, as the pool client does for the
    server's cap."""

    def __init__(self, client: Any, budget: Budget | None, key: str, settled: asyncio.Condition | None = None) -> None:
        self.client, self.budget, self.key = client, budget, key
        self.settled = settled or asyncio.Condition()

    async def _reserve(self, worst: float) -> Any:
        assert self.budget is not None and self.budget.cap_micro is not None
        async with self.settled:
            while True:
                try:
                    return self.budget.reserve(worst, "the next call")
                except BudgetExceeded:
                    if not self.budget.blocked_only_by_inflight(worst):
                        raise KeyBudgetExceeded(
                            f"the budget of key {self.key!r} (${self.budget.cap_micro / 1e6:.4f}) is spent: "
                            f"${self.budget.spent_usd:.4f} paid, the next call may cost up to ${worst:.4f}"
                        ) from None
                await self.settled.wait()

    async def chat(self, model: str, messages: list[dict[str, Any]], **kw: Any) -> Any:
        if self.budget is None or self.budget.cap_micro is None:
            return await self.client.chat(model, messages, **kw)
        decoding = {k: v for k, v in kw.items() if k not in ("purpose", "journal_key", "seed")}
        params = {**self.client.pool.decoding, **decoding}
        worst = self.client._worst_case_usd(model, messages, params)
        reservation = await self._reserve(worst)
        actual = 0
        try:
            res = await self.client.chat(model, messages, **kw)
            actual = to_micro(float(res.cost_usd or 0.0))
            return res
        finally:
            self.budget.settle(reservation, actual)
            async with self.settled:
                self.settled.notify_all()


OnTurn = Callable[[TurnInfo], Awaitable[None]]


class ServeEngine:
    def __init__(
        self,
        run: RunDir,
        trained: Any,
        cfg: Any,
        pool: Any,
        practice_server: Any,
        *,
        budget_usd: float | None,
        key_budgets: dict[str, float | None],
        max_turns: int,
        cache: bool = True,
        purpose: str = "serve",
        out_dir: Path | None = None,
        budget_scope: str = "ledger",
    ) -> None:
        self.run, self.trained, self.cfg, self.pool = run, trained, cfg, pool
        self.practice_server = practice_server
        self.models: list[str] = list(trained.models)
        self.text = trained.text
        self.budget_usd = budget_usd
        self.key_caps = dict(key_budgets)
        self.max_turns = max_turns
        self.use_cache = cache
        self.purpose = purpose
        self.budget_scope = budget_scope  # "ledger": the cap covers the ledger's whole life; "engine": this opening
        self.dir = out_dir or (run.path / SERVE_DIR)
        self.ledger: Any = None
        self.journal: Any = None
        self.cache: Any = None
        self.client: Any = None
        self.budget: Budget | None = None
        self.key_budgets: dict[str, Budget] = {}
        self.key_settled: dict[str, asyncio.Condition] = {}
        self.batcher: EncoderBatcher | None = None
        self.encoder: StreamKeepingEncoder | None = None
        self.active: set[asyncio.Task[Any]] = set()
        self.sessions_served = 0
        self.closing = False
        self.resume_waits: list[float] = []  # s from a turn's row handed over to its session running again

    # ---- loading ----

    @classmethod
    def load(
        cls,
        run_dir: str | os.PathLike[str],
        *,
        pool: str | None = None,
        base_url: str | None = None,
        budget_usd: float | None = None,
        key_budgets: dict[str, float | None] | None = None,
        max_turns: int | None = None,
        cache: bool = True,
        device: str | None = None,
        purpose: str = "serve",
        out_dir: Path | None = None,
        budget_scope: str = "ledger",
        trained: Any = None,
    ) -> "ServeEngine":
        """The run's router (or `trained`, already loaded) and pool, checked; nothing is opened
        or spent yet."""
        run = RunDir(run_dir)
        if not run.run_json.exists():
            raise InputError(f"{run.path} is not a run directory (no run.json); pass a trained run's folder")
        meta = run.meta()
        trained = trained if trained is not None else load_trained(run, device=device)
        cfg = session_config(meta.config, pool=pool, base_url=base_url, max_turns=max_turns)
        # the messages, decoding and stop rule the run was trained under (open for older runs)
        run_json = meta.to_json()  # the competition layer (below the run directory's records) reads the JSON
        cfg = cfg.model_copy(update={"competition": run_competition(run_json), "protocol": run_protocol(run_json).name})
        pool_cfg, server = resolve_pool(cfg)
        try:
            pool_cfg.require_prices()  # no call whose worst case cannot be reserved
            if list(pool_cfg.models) != list(trained.models):
                raise InputError(
                    f"pool {pool_cfg.name!r} models {list(pool_cfg.models)} differ from the run's model order "
                    f"{list(trained.models)}; serve the run with the pool it was trained on"
                )
        except BaseException:
            if server is not None:
                server.stop()
            raise
        return cls(
            run,
            trained,
            cfg,
            pool_cfg,
            server,
            budget_usd=budget_usd,
            key_budgets=key_budgets or {},
            max_turns=int(cfg.max_turns),
            cache=cache,
            purpose=purpose,
            out_dir=out_dir,
            budget_scope=budget_scope,
        )

    # ---- open / close (on the serving loop) ----

    def key_spent(self) -> dict[str, float]:
        """USD paid so far per key, from the journal (`serve/<key>/…`)."""
        spent: dict[str, float] = {}
        path = self.dir / "journal.jsonl"
        if path.exists():
            for _, obj in iter_jsonl(path):
                if not isinstance(obj, dict) or not isinstance(obj.get("key"), str):
                    continue
                parts = obj["key"].split("/")
                res = obj.get("result")
                if len(parts) > 2 and parts[0] == self.purpose and isinstance(res, dict):
                    spent[parts[1]] = spent.get(parts[1], 0.0) + float(res.get("cost_usd") or 0.0)
        return spent

    async def open(self) -> None:
        from trinity.pool.client import PoolClient  # lazy: httpx loaded only when used

        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            spent = self.key_spent()
            self.key_budgets = {
                name: Budget(cap, spent_usd=spent.get(name, 0.0)) for name, cap in self.key_caps.items()
            }
            self.ledger = Ledger(self.dir / "ledger.jsonl", self.run.id)
            self.journal = CallJournal(self.dir / "journal.jsonl")
            self.cache = ResponseCache(self.cfg.cache_path or None) if self.use_cache else None
            self.budget = Budget(
                self.budget_usd, spent_usd=self.ledger.total_usd if self.budget_scope == "ledger" else 0.0
            )
            self.client = PoolClient(
                self.pool,
                run_id=self.run.id,
                ledger=self.ledger,
                cache=self.cache,
                budget=self.budget,
                journal=self.journal,
                seed=self.cfg.seed,
            )
            await self.client.__aenter__()
            self.encoder = StreamKeepingEncoder(self.trained.router, self.trained.theta[None, :])
            await asyncio.to_thread(self._warm_up, self.encoder)
            self.batcher = EncoderBatcher(self.encoder.logits, end_fn=self.encoder.end)
            self.batcher.start()
        except BaseException:
            await self.close()
            raise

    def _warm_up(self, encoder: StreamKeepingEncoder) -> None:
        """One encoder call before the first request: its one-time costs (the tokenizer's and
        torch's first calls, the rotary tables) are not the first session's route time."""
        stream = ("warm-up",)
        encoder.logits([self.text.encoder_input("warm-up")], np.zeros(1, dtype=np.int64), [stream])
        encoder.end(stream)

    async def close(self) -> None:
        """Finish the sessions in flight, then close the batcher, client, files and server."""
        self.closing = True
        if self.active:
            await asyncio.gather(*list(self.active), return_exceptions=True)
        if self.batcher is not None:
            await self.batcher.stop()
            self.batcher = None
        if self.client is not None:
            client, self.client = self.client, None
            await client.aclose()
        for name in ("ledger", "journal", "cache"):
            part = getattr(self, name)
            if part is not None:
                setattr(self, name, None)
                part.close()
        if self.practice_server is not None:
            server, self.practice_server = self.practice_server, None
            server.stop()

    # ---- one session ----

    def encoder_stats(self) -> dict[str, Any]:
        """The batcher's encoder calls so far: how many, texts in all, wall and CPU seconds in all,
        the largest call, how long texts waited for their call to start, the hand-offs of a call
        to the encoder's thread and back to the loop, and how long a session waited for the loop
        once its row was there (p50 / p99, ms)."""
        st = self.batcher.stats if self.batcher is not None else None
        if st is None:
            return {"calls": 0, "texts": 0, "seconds": 0.0, "cpu_seconds": 0.0}
        out: dict[str, Any] = {
            "calls": st.calls,
            "texts": st.texts,
            "seconds": round(sum(st.seconds), 4),
            "cpu_seconds": round(sum(st.cpu_seconds), 4),
            "max_batch": max(st.sizes, default=0),
            "max_call_ms": round(1000 * max(st.seconds, default=0.0), 2),
        }
        named = (("wait", st.waits), ("to_thread", st.to_thread), ("back", st.back), ("resume", self.resume_waits))
        for name, xs in named:
            if xs:
                out[f"{name}_ms_p50"] = round(1000 * float(np.percentile(xs, 50)), 2)
                out[f"{name}_ms_p99"] = round(1000 * float(np.percentile(xs, 99)), 2)
        return out

    @property
    def spent_usd(self) -> float:
        return self.budget.spent_usd if self.budget is not None else 0.0

    def start_session(
        self,
        question: Question,
        key: str = LOCAL_KEY,
        on_turn: OnTurn | None = None,
        cancel: asyncio.Event | None = None,
    ) -> "asyncio.Task[ServedSession]":
        """Run `session` as a task of its own: a client that goes away does not cut a paid call
        short (the session stops after the call in flight, which is ledgered), and `close()`
        waits for it."""
        task = asyncio.get_running_loop().create_task(self.session(question, key, on_turn, cancel))
        self.active.add(task)
        task.add_done_callback(self.active.discard)
        # a session whose client went away may end on an error nobody awaits: mark it seen, so
        # asyncio does not log it with a traceback (the request already had its answer)
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return task

    async def session(
        self,
        question: Question,
        key: str = LOCAL_KEY,
        on_turn: OnTurn | None = None,
        cancel: asyncio.Event | None = None,
    ) -> ServedSession:
        assert self.batcher is not None and self.client is not None, "open() the engine first"
        sid = uuid.uuid4().hex[:16]
        out = ServedSession(sid, key, question)
        spec = SessionSpec(
            self.models,
            purpose=self.purpose,
            max_turns=self.max_turns,
            key_prefix=f"{self.purpose}/{key}/{sid}",
            competition=self.text.name,
            protocol=self.cfg.protocol,
        )
        settled = self.key_settled.setdefault(key, asyncio.Condition())
        client = KeyedClient(self.client, self.key_budgets.get(key), key, settled)
        runner = SessionRunner(client, lambda *a: np.zeros(0), spec)
        traj = Trajectory(candidate=0, qid=question.id)
        query = self.text.render_question(question)
        pool_query = pool_question(runner.protocol, question)  # the question as the pool sees it
        n = len(self.models)
        stream = sid
        try:
            for turn in range(1, self.max_turns + 1):
                if cancel is not None and cancel.is_set():
                    out.stopped = "cancelled"
                    break
                t0 = time.perf_counter()
                row, done_at = await self.batcher.logits_at(
                    self.text.encoder_input(query, traj.encoder_turns()), stream
                )
                t1 = time.perf_counter()
                logits = np.asarray(row, dtype=np.float64)[None, :]
                mp, rp = policy.group_probs(logits, n)
                mi, ri = policy.choose(logits, n)
                # the router's time: batcher queue + encoder + head; not the wait for this
                # coroutine's turn on the loop once the row is there (the batch's other sessions
                # starting their pool calls), which is kept apart in `resume_waits`
                route_ms = (done_at - t0 + time.perf_counter() - t1) * 1000
                self.resume_waits.append(t1 - done_at)
                model, role = self.models[int(mi[0])], ROLES[int(ri[0])]
                await runner._one_turn(question, pool_query, traj, model, role, mp[0], rp[0], turn)
                t: Turn = traj.turns[-1]
                info = TurnInfo(
                    turn=turn,
                    model=model,
                    role=role,
                    model_probs={m: float(p) for m, p in zip(self.models, mp[0])},
                    role_probs={r: float(p) for r, p in zip(ROLES, rp[0])},
                    route_ms=route_ms,
                    output=t.output,
                    verdict=t.verdict,
                    ok=t.ok,
                    error=t.error,
                    prompt_tokens=t.prompt_tokens,
                    completion_tokens=t.completion_tokens,
                    cost_usd=t.cost_usd,
                    cache_hit=t.cache_hit,
                )
                out.turns.append(info)
                if on_turn is not None:
                    await on_turn(info)
                if traj.done:
                    break
        finally:
            self.batcher.end(stream)
            self.sessions_served += 1
        if not out.stopped:
            out.stopped = "failed" if traj.failed else ("accepted" if traj.done else "max_turns")
        out.failed = traj.failed
        if runner._pick_answer(question, traj, runner.protocol) and traj.answer_text is not None:
            out.answer_text, out.answer = traj.answer_text, traj.answer
            if question.answer is not None:
                v = await asyncio.to_thread(grade_answer, question, traj.answer_text)
                out.correct = bool(v.correct)
        else:
            # No extractable answer: the newest Worker (else any) output is still the reply.
            for t in reversed(traj.turns):
                if t.ok and t.role != "Verifier" and t.output.strip():
                    out.answer_text = t.output
                    break
            if question.answer is not None and not traj.failed:
                out.correct = False
        out.reason = traj.reason
        return out
