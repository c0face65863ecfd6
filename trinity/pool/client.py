"""`PoolClient`: the async OpenAI-compatible chat client every live call goes through.

One `chat()` = journal → cache → budget reservation → HTTP with the fault policy
(`trinity.pool.faults`) → ledger → journal → cache. Built to be driven by hundreds of concurrent
trajectories from one asyncio loop: a free list of at most `max_concurrency` keep-alive lanes
bounds requests in flight (waiting calls cost nothing), a shared cool-down slows the whole pool
after a 429, and the ledger/journal fsyncs are group-committed off the event loop.

    pool = load_pool("practice", base_url=server.base_url)
    async with PoolClient(pool, run_id=run.id, ledger=Ledger(run.ledger, run.id),
                          cache=ResponseCache(), budget=Budget(5.0),
                          journal=CallJournal(run.journal)) as client:
        r = await client.chat(pool.models[0], messages, purpose="train", journal_key="3/7/q12/1")

Raises only `OutOfCredit` (402), `BudgetExceeded` (the cap would be passed), `AbsurdCharge` (a
provider reported usage far past the request's worst case) and `ProviderError`
(400/401/403/404/…: retrying cannot help); every other provider fault ends as a failed
`ChatResult` (ok=False, reward 0) after bounded retries (malformed 200 bodies — not JSON, empty,
HTML — are retried like a 5xx). After the first `OutOfCredit`, `BudgetExceeded` or
`AbsurdCharge`, every later paid call raises the same at once (journal and cache hits still
answer); calls already in flight finish and are recorded.

A hostile provider is held to: a body cap (`PoolConfig.max_body_bytes`, a failed call; nothing
over it reaches the journal or the cache), validated usage (`check_usage`: token counts are
non-negative integers, a cost a finite non-negative number, both within `SANE_MULTIPLE` of the
request's worst case; otherwise the call is billed from the price table, `cost_source`
"invalid", the provider's raw figures kept in the ledger's `note`), a reply that echoes the key
redacted before anything stores it, and `failing()`: the share of failed calls since
`start_window()` (the live trainer stops a generation where most calls failed). Identical
concurrent cacheable requests are sent once (single flight); the others get the answer free.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import math
import random
import ssl
import time
import urllib.request
from dataclasses import asdict, dataclass, field, fields
from typing import Any, TypeAlias
from urllib.parse import urlsplit

import httpcore
import httpx

from trinity.errors import (
    AbsurdCharge,
    BudgetExceeded,
    ConfigError,
    OutOfCredit,
    PoolFailing,
    PoolStop,
    PoolUnreachable,
    ProviderError,
    check_stop,
)
from trinity.pool.budget import SANE_MULTIPLE, SANE_SLACK_USD, Budget, BudgetLike, to_micro
from trinity.pool.cache import ResponseCache, cache_key
from trinity.pool.faults import Cooldown, is_retryable, parse_retry_after, stoppable_sleep
from trinity.pool.journal import CallJournal
from trinity.pool.keys import redact, resolve_key
from trinity.pool.ledger import PURPOSES, Ledger
from trinity.pool.providers import PoolConfig
from trinity.pool.transport import ACCEPT_ENCODING, BodyTooLarge, LaneTransport, UnknownEncoding, read_capped

# One keep-alive connection of the pool (see `PoolClient._new_lane`).
Lane: TypeAlias = LaneTransport | httpx.AsyncHTTPTransport

ERROR_EXCERPT = 300  # chars of a provider's error body kept in a message


# Calls in a row that gave up on "connection refused"-type errors (each after all its retries)
# before the pool counts as unreachable: a dead server or a wrong base URL, not a flaky call.
UNREACHABLE_AFTER = 3


# Reported usage above SANE_MULTIPLE × the request's worst case (tokens: the prompt estimate and
# max_tokens; USD: their table price), plus the slack, is absurd: the run stops (the budget's guards
# are sized by the same figures: `trinity.pool.budget`).
SANE_SLACK_TOKENS = 1024
SETTLE_POLL_S = 0.05  # a call waiting for room under the cap looks again at least this often
DEFAULT_FAIL_THRESHOLD = 0.5  # a generation where more than this share of calls failed is not trained on
FAIL_MIN_CALLS = 4  # ... when it made at least this many calls


def check_usage(
    usage: dict[str, Any], worst_prompt: int, max_out: int, worst_usd: float
) -> tuple[int | None, int | None, float | None, str | None, str | None]:
    """(prompt_tokens, completion_tokens, cost, problem, absurd) from a provider's `usage`.

    A figure that is not a valid number comes back None with `problem` saying why; `absurd` is
    set when a figure is valid but past SANE_MULTIPLE × the worst case (it names the figure)."""
    problems: list[str] = []
    absurd: str | None = None
    out: list[int | None] = []
    for name, cap in (("prompt_tokens", worst_prompt), ("completion_tokens", max_out)):
        v = usage.get(name)
        if v is None:
            out.append(None)
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            problems.append(f"{name}={v!r} is not a non-negative integer")
            out.append(None)
            continue
        if v > SANE_MULTIPLE * cap + SANE_SLACK_TOKENS and absurd is None:
            absurd = f"{name}={v} (the request's worst case is {cap})"
        out.append(v)
    cost = usage.get("cost")
    if cost is not None:
        if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost) or cost < 0:
            problems.append(f"cost={cost!r} is not a finite non-negative number")
            cost = None
        elif cost > SANE_MULTIPLE * worst_usd + SANE_SLACK_USD and absurd is None:
            absurd = f"cost=${float(cost):.6g} (the request's worst case is ${worst_usd:.6g})"
    return out[0], out[1], (None if cost is None else float(cost)), "; ".join(problems) or None, absurd


@dataclass
class ChatResult:
    text: str
    ok: bool
    error: str | None
    status: int  # the final HTTP status (0: no HTTP answer, e.g. a timeout)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_source: str = "none"  # reported | estimated | none (not billed) | cache
    cache_hit: bool = False
    latency_s: float = 0.0
    attempts: int = 0
    model: str = ""
    provider: str = ""
    finish_reason: str | None = None
    journal_hit: bool = False  # returned from the call journal: no call was made now
    server_ms: float | None = None  # the server's own time (Server-Timing), when it says
    usage_note: str | None = None  # invalid usage: why, and the provider's raw figures
    fault: str | None = None  # a failed call's cause: "500", "429", "malformed", "timeout", …

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "ChatResult":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class PoolStats:
    requests: int = 0  # HTTP attempts
    calls: int = 0  # calls that reached the model and were billed (ledger records)
    ok: int = 0
    failed: int = 0  # calls that ended without a usable answer
    retries: int = 0
    n_429: int = 0
    n_5xx: int = 0
    timeouts: int = 0  # timeouts and connection errors
    cache_hits: int = 0
    journal_hits: int = 0
    cost_micro_usd: int = 0
    cooldown_s: float = 0.0
    per_model: dict[str, int] = field(default_factory=dict)  # billed calls per model
    n_malformed: int = 0  # 200s whose body was not a JSON object (retried)
    n_too_large: int = 0  # bodies over the cap (failed calls)
    invalid_usage: int = 0  # billed from the price table because the reported usage was invalid
    excess_micro_usd: int = 0  # billed above the call's reserved worst case, summed
    excess_calls: int = 0
    lost_mid_body: int = 0  # answers lost after the request went out (possibly billed)
    lost_worst_micro_usd: int = 0  # ... their worst case, summed
    single_flight: int = 0  # identical concurrent requests answered by the one in flight

    @property
    def cost_usd(self) -> float:
        return self.cost_micro_usd / 1e6

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["cost_usd"] = self.cost_usd
        return d


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _proxy_for(url: str) -> str | None:
    """The proxy the environment asks for to reach `url` (HTTPS_PROXY / NO_PROXY …), if any.
    Never for a server on this machine."""
    if _is_loopback(url):
        return None
    parts = urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def parse_event_stream(content: bytes) -> dict[str, Any] | None:
    """A `text/event-stream` chat reply (`data: {chunk}` lines, `data: [DONE]`) as the one
    chat.completion body it stands for: the deltas' text joined, the last finish reason, the last
    `usage` seen (absent when no chunk carried one), an `error` a chunk carried. None when no line
    is a JSON chunk."""
    text: list[str] = []
    finish: Any = None
    usage: Any = None
    error: Any = None
    chunks = 0
    for raw in content.split(b"\n"):
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            break
        try:
            obj = json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError):
            continue
        if not isinstance(obj, dict):
            continue
        chunks += 1
        if obj.get("usage") is not None:
            usage = obj["usage"]
        if obj.get("error") is not None:
            error = obj["error"]
        for c in obj.get("choices") or []:
            if not isinstance(c, dict):
                continue
            delta = c.get("delta") if isinstance(c.get("delta"), dict) else c.get("message")
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                text.append(delta["content"])
            if c.get("finish_reason") is not None:
                finish = c["finish_reason"]
    if not chunks:
        return None
    body: dict[str, Any] = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(text)}, "finish_reason": finish}]
    }
    if usage is not None:
        body["usage"] = usage
    if error is not None:
        body["error"] = error
    return body


def estimate_tokens(text: str) -> int:
    """~4 characters a token (used only when a provider reports no usage)."""
    return (len(text) + 3) // 4


def _server_ms(headers: httpx.Headers) -> float | None:
    st = headers.get("server-timing")
    if not st:
        return None
    for part in st.split(";"):
        part = part.strip()
        if part.startswith("dur="):
            try:
                return float(part[4:])
            except ValueError:
                return None
    return None


class PoolClient:
    def __init__(
        self,
        pool: PoolConfig,
        *,
        run_id: str,
        ledger: Ledger | None = None,
        cache: ResponseCache | None = None,
        budget: Budget | BudgetLike | None = None,
        journal: CallJournal | None = None,
        env_file: str | None = None,
        seed: int | None = None,
    ):
        if budget is not None and budget.cap_micro is not None:
            pool.require_prices()  # a cap cannot hold on calls whose worst case is unknown
        self.pool = pool
        self.run_id = run_id
        self.ledger = ledger
        self.cache = cache
        self.budget = budget
        self.journal = journal
        self._key = resolve_key(pool.key_env, provider=pool.name, env_file=env_file, optional=pool.key_optional)
        self.stats = PoolStats()
        self.cooldown = Cooldown()
        self._rng = random.Random(seed)
        self._url = f"{pool.base_url}/chat/completions"
        self._open = False
        self.stopped: OutOfCredit | BudgetExceeded | PoolStop | None = None  # first 402 / cap hit / pool stop
        self._connect_fail_streak = 0  # calls in a row that gave up on connection errors
        self._last_connect_error = ""
        self._price_ratio: dict[str, float] = {}  # reported / table cost, highest seen (>= 1)
        self._per_token_usd: dict[str, float] = {}  # reported cost per token, highest seen
        self._bill_ratio: dict[str, float] = {}  # a bill past its reservation / the table's worst case, highest seen
        # cache key -> the identical call in flight (its cached form, None when it failed)
        self._in_flight: dict[str, asyncio.Future[dict[str, Any] | None]] = {}
        self.start_window()

    def start_window(self) -> None:
        """Start counting calls and failures afresh (the live trainer: once per generation)."""
        self.window_calls = 0
        self.window_causes: dict[str, int] = {}

    def failing(
        self,
        threshold: float = DEFAULT_FAIL_THRESHOLD,
        then: str = "the generation was not trained on — check the provider, then resume the run",
    ) -> PoolFailing | None:
        """PoolFailing when more than `threshold` of the calls since `start_window()` failed;
        `then` says what the caller does about it (the trainer's words by default)."""
        failed = sum(self.window_causes.values())
        if self.window_calls < FAIL_MIN_CALLS or failed <= threshold * self.window_calls:
            return None
        causes = ", ".join(f"{k} ×{n}" for k, n in sorted(self.window_causes.items(), key=lambda kv: -kv[1]))
        return PoolFailing(
            f"provider failing ({failed} of {self.window_calls} calls failed: {causes}) at {self.pool.base_url}; {then}"
        )

    def unreachable(self) -> PoolUnreachable | None:
        """The error to stop a run with when the last UNREACHABLE_AFTER calls could not connect
        (a caller that trains stops instead of scoring those calls as wrong answers); else None."""
        if self._connect_fail_streak < UNREACHABLE_AFTER:
            return None
        return PoolUnreachable(
            f"pool {self.pool.name} is unreachable at {self.pool.base_url}: the last "
            f"{self._connect_fail_streak} calls could not connect ({self._last_connect_error}); "
            "start the server or fix the base URL, then resume the run"
        )

    # ---- lifecycle ---------------------------------------------------------------------------
    async def __aenter__(self) -> "PoolClient":
        # only the codings `read_capped` decodes (under the body cap), whatever httpx could do
        headers = {"Content-Type": "application/json", "Accept-Encoding": ACCEPT_ENCODING.decode(), **self.pool.headers}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        self._headers = headers
        t = self.pool.timeouts
        self._timeout = {"connect": t.connect_s, "read": t.read_s, "write": t.write_s, "pool": None}
        self._url_obj = httpx.URL(self._url)
        self._extensions = {"timeout": self._timeout}
        # What the lanes send, built once: httpcore's URL and the raw header list httpx would
        # build for this request (Host from the URL), to which each call adds its Content-Length.
        u = self._url_obj
        self._core_url = httpcore.URL(scheme=u.raw_scheme, host=u.raw_host, port=u.port, target=u.raw_path)
        self._raw_headers = [
            (k, v) for k, v in httpx.Request("POST", u, headers=headers).headers.raw if k.lower() != b"content-length"
        ]
        # One TLS context for every connection (building one per lane costs ~10 ms each).
        self._ssl = ssl.create_default_context()
        self._proxy = _proxy_for(self._url)
        self._free: asyncio.Queue[Lane] = asyncio.Queue()
        self._settled = asyncio.Event()
        self._lanes: list[Lane] = []
        self._open = True
        return self

    def _new_lane(self) -> Lane:
        """A direct connection (http or https) is a `LaneTransport`: httpcore on plain asyncio,
        head and body in one send (`trinity.pool.transport`). Through a proxy from the
        environment, httpx's own transport with a one-connection pool, as before."""
        if self._proxy is None:
            return LaneTransport(ssl_context=self._ssl)
        return httpx.AsyncHTTPTransport(
            verify=self._ssl, proxy=self._proxy, limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)
        )

    async def _acquire(self) -> Lane:
        """A free lane: one keep-alive connection each, at most `max_concurrency` of them.

        Why not one `httpx.AsyncClient` with a 64-connection pool: httpcore's pool does work per
        waiting request on every release (encode/httpx#3215), ~4–19 ms of CPU a call at 64 in
        flight here. One connection per lane with this O(1) free list costs ~0.8 ms; sending
        through the lane's transport (no client-level auth/redirect/cookie layers, which these
        calls never use) brings it to ~0.6 ms, and httpcore on plain asyncio with head and body in
        one send (`LaneTransport`) to ~0.45 ms."""
        if self._free.empty() and len(self._lanes) < self.pool.max_concurrency:
            lane = self._new_lane()
            self._lanes.append(lane)
            return lane
        return await self._free.get()

    async def _post_by_deadline(self, lane: Lane, payload: bytes) -> httpx.Response:
        """`_post` within the attempt's total deadline (`timeouts.total_s`): the read timeout
        restarts on every byte, so a server trickling a byte at a time is stopped here."""
        t = self.pool.timeouts
        total = max(t.total_s, t.read_s)  # a longer --read-timeout than the deadline widens it
        try:
            return await asyncio.wait_for(self._post(lane, payload), total)
        except TimeoutError:
            raise httpx.ReadTimeout(f"no whole answer within the {total:g} s deadline per attempt") from None

    async def _post(self, lane: Lane, payload: bytes) -> httpx.Response:
        if isinstance(lane, LaneTransport):
            return await lane.send(
                b"POST",
                self._core_url,
                [*self._raw_headers, (b"Content-Length", str(len(payload)).encode())],
                payload,
                self._extensions,
                max_body=self.pool.max_body_bytes,
            )
        req = httpx.Request(
            "POST", self._url_obj, content=payload, headers=self._headers, extensions={"timeout": self._timeout}
        )
        resp = await lane.handle_async_request(req)
        try:
            try:
                content = await read_capped(
                    resp.aiter_raw(), self.pool.max_body_bytes, encoding=resp.headers.get("content-encoding")
                )
            except UnknownEncoding:
                content = b""  # a coding we did not ask for: an empty (malformed) body
        finally:
            await resp.aclose()
        headers = [(k, v) for k, v in resp.headers.items() if k.lower() not in ("content-encoding", "content-length")]
        return httpx.Response(resp.status_code, headers=headers, content=content)

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if getattr(self, "_open", False):
            self._open = False
            await asyncio.gather(*(lane.aclose() for lane in self._lanes), return_exceptions=True)
            self._lanes = []

    # ---- helpers -----------------------------------------------------------------------------
    def _redact(self, text: str) -> str:
        return redact(text, [self._key])

    def _body(self, model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "messages": messages}
        style = params.get("_reasoning_style") or self.pool.reasoning_style  # a session protocol may set it
        for k, v in params.items():
            if v is None or k.startswith("_"):
                continue
            if k == "reasoning_effort":
                if style == "openrouter":
                    body["reasoning"] = {"effort": v}
                elif style == "reasoning_effort":
                    body["reasoning_effort"] = v
                continue  # "none": the provider does not take it
            body[k] = v
        if self.pool.request_usage_cost:
            body["usage"] = {"include": True}
        return body

    @staticmethod
    def _worst_tokens(messages: list[dict[str, Any]], params: dict[str, Any]) -> tuple[int, int]:
        # Worst case: a token is at least ~2 bytes of prompt text in practice (so this over-counts),
        # plus a little framing per message, and the full max_tokens of output.
        prompt_bytes = sum(len(json.dumps(m.get("content", ""), ensure_ascii=False).encode()) for m in messages)
        return prompt_bytes // 2 + 16 * len(messages), int(params.get("max_tokens") or 4096)

    def _worst_case_usd(self, model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> float:
        prompt_tokens, max_out = self._worst_tokens(messages, params)
        raw = self.pool.price(model).cost_usd(prompt_tokens, max_out)
        table = raw * self._price_ratio.get(model, 1.0)
        # A model the price table calls free (or does not know) but that was billed: reserve at the
        # highest cost per token seen so far.
        seen = self._per_token_usd.get(model, 0.0) * (prompt_tokens + max_out)
        # A provider that billed past a call's table worst case (reasoning tokens max_tokens does
        # not bound): reserve its later calls at the worst bill ÷ table worst case seen.
        return max(table, seen, raw * self._bill_ratio.get(model, 0.0))

    def _learn_price(self, model: str, res: "ChatResult") -> None:
        """Keep reservations honest when the price table is stale: if a provider reports a higher
        cost than the table gives for the same tokens, later reservations scale up to match."""
        if res.cost_source != "reported" or res.cost_usd <= 0:
            return
        tokens = res.prompt_tokens + res.completion_tokens
        if tokens:
            self._per_token_usd[model] = max(self._per_token_usd.get(model, 0.0), res.cost_usd / tokens)
        est = self.pool.price(model).cost_usd(res.prompt_tokens, res.completion_tokens)
        if est > 0 and res.cost_usd > est:
            self._price_ratio[model] = max(self._price_ratio.get(model, 1.0), res.cost_usd / est)

    def _fault_message(self, status: int, model: str, resp: httpx.Response | None) -> str:
        detail = ""
        if resp is not None:
            try:
                body = resp.json()
                err = body.get("error") if isinstance(body, dict) else None
                detail = (err.get("message") if isinstance(err, dict) else err) or resp.text
            except (ValueError, AttributeError):
                detail = resp.text
            detail = self._redact(" ".join(str(detail).split()))[:ERROR_EXCERPT]
        return f"provider {self.pool.name} answered HTTP {status} for model {model}" + (f": {detail}" if detail else "")

    # ---- the call ----------------------------------------------------------------------------
    async def chat(
        self,
        model: str,
        messages: list[dict[str, Any]],
        *,
        purpose: str,
        journal_key: str | None = None,
        seed: int | None = None,
        **decoding: Any,
    ) -> ChatResult:
        if not self._open:
            raise RuntimeError("use `async with PoolClient(...)` before calling chat()")
        if purpose not in PURPOSES:
            raise ConfigError(f"call purpose must be one of {', '.join(PURPOSES)}, got {purpose!r}")
        self.pool.check_model(model)
        # Once the account is empty or the cap is reached, every later paid call stops the same
        # way (no more 402s sent to the provider, no call squeezing in under the cap while the
        # trainer checkpoints). Journal and cache hits below are free, so they still answer.
        stop = self.stopped

        if journal_key is not None and self.journal is not None:
            rec = self.journal.get(journal_key)
            if rec is not None:
                self.stats.journal_hits += 1
                res = ChatResult.from_json(rec)
                res.journal_hit = True
                return res

        # A session protocol (trinity.competition.protocol) sends its own decoding, in its order,
        # instead of the pool's (`decoding_exact`), and may say how reasoning goes on the wire.
        exact = bool(decoding.pop("decoding_exact", False))
        style = decoding.pop("reasoning_style", None)
        params = dict(decoding) if exact else {**self.pool.decoding, **decoding}
        if style:
            params["_reasoning_style"] = style
        if seed is not None:
            params["seed"] = seed
        ckey = None
        if self.cache is not None and self.cache.cacheable(params):
            ckey = cache_key(self.pool.cache_namespace, model, messages, params)
            hit = self.cache.get(ckey)
            if hit is None and ckey in self._in_flight:
                # The very same request is in flight: wait for it instead of paying twice.
                shared = await asyncio.shield(self._in_flight[ckey])
                if shared is not None:
                    self.stats.single_flight += 1
                    hit = shared
            if hit is not None:
                self.stats.cache_hits += 1
                res = ChatResult(
                    text=hit["text"],
                    ok=True,
                    error=None,
                    status=200,
                    prompt_tokens=hit.get("prompt_tokens", 0),
                    completion_tokens=hit.get("completion_tokens", 0),
                    cost_usd=0.0,
                    cost_source="cache",
                    cache_hit=True,
                    attempts=0,
                    model=model,
                    provider=self.pool.name,
                    finish_reason=hit.get("finish_reason"),
                )
                if journal_key is not None and self.journal is not None:
                    # Journal the hit too: a resume then replays it even if the cache was
                    # cleared or its namespace changed (a new port), instead of paying again.
                    await self.journal.record_async(journal_key, res.to_json())
                return res
            if ckey not in self._in_flight:
                flight = self._in_flight[ckey] = asyncio.get_running_loop().create_future()
                try:
                    res = await self._paid(model, messages, params, purpose, journal_key, ckey, stop)
                except BaseException:
                    flight.set_result(None)
                    raise
                finally:
                    self._in_flight.pop(ckey, None)
                if not flight.done():
                    flight.set_result(self._cached_form(res) if res.ok else None)
                return res
        return await self._paid(model, messages, params, purpose, journal_key, ckey, stop)

    @staticmethod
    def _cached_form(res: ChatResult) -> dict[str, Any]:
        return {
            "text": res.text,
            "prompt_tokens": res.prompt_tokens,
            "completion_tokens": res.completion_tokens,
            "finish_reason": res.finish_reason,
            "cost_usd": res.cost_usd,
        }

    async def _paid(
        self,
        model: str,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        purpose: str,
        journal_key: str | None,
        ckey: str | None,
        stop: OutOfCredit | BudgetExceeded | PoolStop | None,
    ) -> ChatResult:
        if stop is not None:
            raise type(stop)(str(stop))
        reservation = None
        worst = self._worst_case_usd(model, messages, params)
        prompt_tokens, max_out = self._worst_tokens(messages, params)
        raw_worst = self.pool.price(model).cost_usd(prompt_tokens, max_out)  # the table's, unscaled
        limits = (*self._worst_tokens(messages, params), worst)
        if self.budget is not None:
            while True:
                try:
                    reservation = self.budget.reserve(worst, what=f"a {model} call")
                    break
                except BudgetExceeded as e:
                    if self.stopped is None and self.budget.blocked_only_by_inflight(worst):
                        check_stop()
                        # calls in flight settle to their actual cost: wake on the next settle here
                        # (or after a short while: a shared budget also settles other runs' calls)
                        try:
                            await asyncio.wait_for(self._settled.wait(), SETTLE_POLL_S)
                        except TimeoutError:
                            pass
                        continue
                    self.stopped = e
                    raise
        actual_micro = 0
        absurd: AbsurdCharge | None = None
        try:
            if journal_key is not None and self.journal is not None:
                await self.journal.mark_sent_async(journal_key)  # a kill from here on: reported at resume
            res = await self._send(model, self._body(model, messages, params), limits, journal_key)
            billed = res.cost_source in ("reported", "estimated", "invalid")
            self.window_calls += 1
            if billed:
                if res.cost_source != "invalid":
                    self._learn_price(model, res)
                else:
                    self.stats.invalid_usage += 1
                actual_micro = to_micro(res.cost_usd)
                excess = 0
                if reservation is not None and actual_micro > reservation.micro_usd:
                    excess = actual_micro - reservation.micro_usd
                    self.stats.excess_micro_usd += excess
                    self.stats.excess_calls += 1
                    if raw_worst > 0:
                        ratio = actual_micro / to_micro(raw_worst) if to_micro(raw_worst) else 0.0
                        self._bill_ratio[model] = max(self._bill_ratio.get(model, 0.0), ratio)
                self.stats.calls += 1
                self.stats.cost_micro_usd += actual_micro
                self.stats.per_model[model] = self.stats.per_model.get(model, 0) + 1
                if self.ledger is not None:
                    await self.ledger.append_async(
                        provider=self.pool.name,
                        model=model,
                        prompt_tokens=res.prompt_tokens,
                        completion_tokens=res.completion_tokens,
                        cost_micro_usd=actual_micro,
                        cost_source=res.cost_source,
                        purpose=purpose,
                        note=res.usage_note,
                        excess_micro_usd=excess,
                    )
                if res.ok and ckey is not None and self.cache is not None:
                    # cached before it is journaled: a kill between the two leaves an answer a resume
                    # replays from the cache for free (its twins in flight too) instead of buying it again
                    self.cache.put(ckey, self.pool.name, model, self._cached_form(res))
                    ckey = None
                if journal_key is not None and self.journal is not None:
                    await self.journal.record_async(journal_key, res.to_json())
                if res.usage_note and res.usage_note.startswith("absurd"):
                    absurd = AbsurdCharge(
                        f"provider {self.pool.name} reported an absurd charge for model {model}: "
                        f"{res.usage_note.split(': ', 1)[1].split(';')[0]}; the call was billed "
                        "from the price table instead — check the provider's account, then "
                        "resume the run"
                    )
                    self.stopped = absurd
            if res.ok:
                self.stats.ok += 1
                if ckey is not None and self.cache is not None:
                    self.cache.put(ckey, self.pool.name, model, self._cached_form(res))
            else:
                self.stats.failed += 1
                cause = res.fault or "failed"
                self.window_causes[cause] = self.window_causes.get(cause, 0) + 1
        finally:
            if reservation is not None and self.budget is not None:
                self.budget.settle(reservation, actual_micro)
                self._settled.set()  # wakes the calls waiting for room under the cap
                self._settled = asyncio.Event()
        if absurd is not None:
            raise absurd
        return res

    async def _lost(self, model: str, journal_key: str | None, error: str, worst_usd: float) -> None:
        """An answer lost after the request went out: the provider may have billed it."""
        self.stats.lost_mid_body += 1
        self.stats.lost_worst_micro_usd += to_micro(worst_usd)
        if self.journal is not None:
            await self.journal.mark_lost_async(
                journal_key, model=model, error=error, worst_micro_usd=to_micro(worst_usd)
            )

    async def _send(
        self,
        model: str,
        body: dict[str, Any],
        limits: tuple[int, int, float] = (0, 4096, 0.0),
        journal_key: str | None = None,
    ) -> ChatResult:
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        policy = self.pool.retry
        t0 = time.perf_counter()
        attempt = 0
        last_error = ""
        last_status = 0
        connect_failed = False  # the last attempt could not even connect
        fault = "failed"
        while True:
            attempt += 1
            await self.cooldown.wait()
            resp: httpx.Response | None = None
            try:
                lane = await self._acquire()
                try:
                    await self.cooldown.wait()  # a 429 may have arrived while we queued
                    self.stats.requests += 1
                    resp = await self._post_by_deadline(lane, payload)
                finally:
                    self._free.put_nowait(lane)
            except BodyTooLarge as e:
                self.stats.n_too_large += 1
                self._connect_fail_streak = 0
                msg = (
                    f"provider {self.pool.name} sent a response body over the {e.limit}-byte cap for model "
                    f"{model} (a failed call, not retried; raise max_body_bytes in configs/models.yaml if "
                    "such answers are real)"
                )
                await self._lost(model, journal_key, msg, limits[2])
                return ChatResult(
                    text="",
                    ok=False,
                    error=msg,
                    status=200,
                    latency_s=time.perf_counter() - t0,
                    attempts=attempt,
                    model=model,
                    provider=self.pool.name,
                    fault="too large",
                )
            except httpx.TimeoutException as e:
                self.stats.timeouts += 1
                connect_failed = False  # slow is not down: a timeout never counts as unreachable
                last_status, last_error = 0, f"{type(e).__name__} talking to {self.pool.name} for model {model}"
                if "deadline" in str(e):
                    last_error += f" ({e})"
                fault = "timeout"
                if not isinstance(e, (httpx.ConnectTimeout, httpx.PoolTimeout)):
                    await self._lost(model, journal_key, last_error, limits[2])
                delay = policy.backoff(attempt, self._rng)
            except httpx.TransportError as e:
                self.stats.timeouts += 1
                connect_failed = isinstance(e, httpx.ConnectError)
                last_status = 0
                last_error = self._redact(f"{type(e).__name__} talking to {self.pool.name} for model {model}: {e}")
                fault = "connection" if connect_failed else "lost mid-body"
                if not connect_failed:  # the request went out; the answer did not come back whole
                    await self._lost(model, journal_key, last_error, limits[2])
                delay = policy.backoff(attempt, self._rng)
            else:
                status = resp.status_code
                connect_failed = False
                self._connect_fail_streak = 0  # the server answered: it is reachable
                res = None
                if status == 200:
                    res = self._parse_ok(model, resp, attempt, time.perf_counter() - t0, len(payload), limits)
                    if res is not None:
                        return res
                if status == 200:  # not JSON / empty / HTML: retried like a 5xx
                    self.stats.n_malformed += 1
                    last_status, fault = 200, "malformed 200"
                    last_error = (
                        f"provider {self.pool.name} sent a 200 with a body that is not a JSON object for model {model}"
                    )
                    delay = policy.backoff(attempt, self._rng)
                elif status == 402:
                    self.stopped = OutOfCredit(
                        f"provider {self.pool.name} is out of credit (HTTP 402 for model {model}); top up "
                        "the account, then resume the run"
                    )
                    raise self.stopped
                elif status == 429:
                    last_status, last_error, fault = status, self._fault_message(status, model, resp), "429"
                    self.stats.n_429 += 1
                    ra = parse_retry_after(resp.headers.get("retry-after"))
                    delay = min(ra, policy.max_retry_after_s) if ra is not None else policy.backoff(attempt, self._rng)
                    before = self.cooldown.total_s
                    self.cooldown.extend(delay)  # every request of the pool waits with us
                    self.stats.cooldown_s += self.cooldown.total_s - before
                    delay = 0.0  # the cool-down wait at the top of the loop covers it
                elif is_retryable(status):
                    last_status, last_error, fault = status, self._fault_message(status, model, resp), str(status)
                    if status >= 500:
                        self.stats.n_5xx += 1
                    ra = parse_retry_after(resp.headers.get("retry-after"))  # a 503 may say when
                    delay = min(ra, policy.max_retry_after_s) if ra is not None else policy.backoff(attempt, self._rng)
                else:
                    last_error = self._fault_message(status, model, resp)
                    raise ProviderError(last_error + " (not retried; check the model id, the key and the request)")
            if attempt > policy.max_retries:
                if connect_failed:
                    self._connect_fail_streak += 1
                    self._last_connect_error = last_error
                return ChatResult(
                    text="",
                    ok=False,
                    error=f"{last_error} (gave up after {attempt} attempts)",
                    status=last_status,
                    latency_s=time.perf_counter() - t0,
                    attempts=attempt,
                    model=model,
                    provider=self.pool.name,
                    fault=fault,
                )
            self.stats.retries += 1
            if delay > 0:
                await stoppable_sleep(delay)

    def _parse_ok(
        self,
        model: str,
        resp: httpx.Response,
        attempts: int,
        latency: float,
        prompt_chars: int,
        limits: tuple[int, int, float] = (0, 4096, 0.0),
    ) -> ChatResult | None:
        """The call's result from a 200; None when the body is not a JSON object (the caller
        retries it like a 5xx)."""
        base: dict[str, Any] = dict(
            model=model,
            provider=self.pool.name,
            attempts=attempts,
            latency_s=latency,
            status=200,
            server_ms=_server_ms(resp.headers),
        )
        stream = "text/event-stream" in resp.headers.get("content-type", "") or resp.content.lstrip()[:5] == b"data:"
        if stream:
            body = parse_event_stream(resp.content)
            if body is None:
                return None
        else:
            try:
                body = json.loads(resp.content)
            except (ValueError, UnicodeDecodeError, RecursionError):
                return None
            if not isinstance(body, dict):
                return None
        raw_usage = body.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        choices = body.get("choices")
        text, finish, error = "", None, None
        if body.get("error") is not None:
            err = body["error"]
            msg = err.get("message", err) if isinstance(err, dict) else err
            error = (
                f"provider {self.pool.name} sent a 200 carrying an error for model {model}: "
                + self._redact(" ".join(str(msg).split()))[:ERROR_EXCERPT]
            )
        elif not isinstance(choices, list) or not choices:
            error = f"provider {self.pool.name} sent a 200 without choices for model {model}"
        else:
            c0 = choices[0] if isinstance(choices[0], dict) else {}
            msg = c0["message"] if isinstance(c0.get("message"), dict) else {}
            text = msg.get("content") or ""
            if not isinstance(text, str):  # some servers send content parts
                text = "".join(p.get("text", "") for p in text if isinstance(p, dict)) if isinstance(text, list) else ""
            text = self._redact(text)  # a reply that echoes the key never reaches traces, journal, cache
            finish = c0.get("finish_reason")
            finish = finish if isinstance(finish, str) or finish is None else str(finish)

        worst_prompt, max_out, worst_usd = limits
        if stream and raw_usage is None and error is None:
            # An event stream that carries no usage: the call was billed, by how much is unknown;
            # it is recorded at its reservation (flagged) rather than left off the ledger.
            est_pt, est_ct = estimate_tokens("x" * prompt_chars), estimate_tokens(text)
            return ChatResult(
                text=text,
                ok=True,
                error=None,
                prompt_tokens=min(est_pt, worst_prompt or est_pt),
                completion_tokens=min(est_ct, max_out),
                cost_usd=worst_usd,
                cost_source="invalid",
                finish_reason=finish,
                usage_note="invalid: an event stream without usage; billed at the call's reservation",
                **base,
            )
        pt, ct, reported, problem, absurd = check_usage(usage, worst_prompt, max_out, worst_usd)
        if raw_usage is not None and not isinstance(raw_usage, dict):
            problem = f"usage is {type(raw_usage).__name__}, not an object"
        price = self.pool.price(model)
        if not problem and not absurd and pt is not None and ct is not None and worst_usd > 0:
            table_usd = price.cost_usd(pt, ct)
            if reported is None and table_usd > SANE_MULTIPLE * worst_usd + SANE_SLACK_USD:
                absurd = f"{pt}+{ct} tokens cost ${table_usd:.6g} (the request's worst case is ${worst_usd:.6g})"
            elif reported == 0 and table_usd > 0:
                # A reported cost of 0 for tokens the table prices: billed from the table, flagged.
                return ChatResult(
                    text=text,
                    ok=error is None,
                    error=error,
                    prompt_tokens=pt,
                    completion_tokens=ct,
                    cost_usd=table_usd,
                    cost_source="invalid",
                    finish_reason=finish,
                    usage_note=(
                        f"invalid: cost 0 reported for {pt}+{ct} tokens the price table prices at "
                        f"${table_usd:.6g}; billed from the table"
                    ),
                    fault=None if error is None else "200 error",
                    **base,
                )
        if problem or absurd:
            # Billed from the price table, on the valid figures (else estimates within the worst case).
            est_pt = min(worst_prompt or estimate_tokens("x" * prompt_chars), estimate_tokens("x" * prompt_chars))
            est_ct = min(max_out, estimate_tokens(text))
            if absurd:
                pt, ct = est_pt, est_ct
            pt = est_pt if pt is None else pt
            ct = est_ct if ct is None else ct
            try:
                raw = json.dumps(raw_usage, ensure_ascii=False, default=str)
            except (ValueError, TypeError, RecursionError):
                raw = repr(raw_usage)
            note = (f"absurd: {absurd}" if absurd else f"invalid: {problem}") + f"; raw usage: {raw[:300]}"
            return ChatResult(
                text=text,
                ok=error is None,
                error=error,
                prompt_tokens=pt,
                completion_tokens=ct,
                cost_usd=self.pool.price(model).cost_usd(pt, ct),
                cost_source="invalid",
                finish_reason=finish,
                usage_note=note,
                **base,
            )
        have_tokens = pt is not None and ct is not None
        if error is None and not have_tokens:
            # No usage at all: estimate from the text so the call is still accounted for.
            pt, ct, have_tokens = estimate_tokens("x" * prompt_chars), estimate_tokens(text), True
        pt, ct = (int(pt or 0), int(ct or 0)) if have_tokens else (0, 0)
        if reported is not None:
            cost, source = reported, "reported"
        elif have_tokens:
            cost, source = self.pool.price(model).cost_usd(pt, ct), "estimated"
        else:
            cost, source = 0.0, "none"  # a failed 200 that reports nothing is not billed
        if source == "none" and (pt or ct):
            source = "estimated"
        return ChatResult(
            text=text,
            ok=error is None,
            error=error,
            prompt_tokens=pt,
            completion_tokens=ct,
            cost_usd=cost,
            cost_source=source,
            finish_reason=finish,
            fault=None if error is None else "200 error",
            **base,
        )
