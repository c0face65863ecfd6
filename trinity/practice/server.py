"""The practice pool server: a real OpenAI-compatible HTTP server for the SIMULATED models.

    POST /v1/chat/completions   the three simulated models of configs/practice.yaml
    GET  /v1/models             their ids (all say "simulated")
    GET  /v1/stats              request counts per model / status (what tests and benches read)

It is the offline default pool and the test fixture: answers come from
`trinity.practice.replies` (deterministic, `simulate_correct`), `usage` and `usage.cost` are
reported like a real provider, and faults can be injected: a fraction of 429s (with Retry-After in
seconds or as an HTTP date), 500s, 200s carrying an error or no choices, slow replies, and 402
after N calls.

HTTP/1.1 keep-alive over a minimal asyncio protocol (Content-Length bodies; what httpx and the
OpenAI SDKs send) — stdlib `http.server` cannot serve 500 calls/s on 2 cores, this can. Replies
that may block (a Verifier grading code, the first wrong program of a code question) run in a
small thread pool, off the event loop.

In-process (tests): `with start_practice_server() as srv: … srv.base_url … srv.stats`.
As a process: `trinity pool serve-practice --port P` (prints the base URL on its first line).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Any, Literal, TypeAlias, cast

from trinity.data.questions import Question
from trinity.errors import ConfigError, TrinityError
from trinity.pool.faults import http_date
from trinity.practice.replies import BadRequest, PracticeResponder

# `prepare_chat`'s verdict: answered already ("done", status, payload, headers), or to be answered
# ("reply", model, messages, seed, request number, delay in seconds, fault).
Done: TypeAlias = tuple[Literal["done"], int, dict[str, Any], dict[str, str]]
Reply: TypeAlias = tuple[Literal["reply"], str, list[dict[str, Any]], int, int, float, str | None]

MAX_HEADER = 64 * 1024
MAX_BODY = 16 * 1024 * 1024
REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    402: "Payment Required",
    404: "Not Found",
    405: "Method Not Allowed",
    411: "Length Required",
    413: "Payload Too Large",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
}


@dataclass
class Faults:
    """Injected faults. Rates are fractions of chat requests, decided per request deterministically
    from (server seed, request number); 429 / 500 / error-body are exclusive, slowness is extra."""

    rate_429: float = 0.0
    retry_after_s: float | None = 1.0  # None: a 429 without Retry-After (client backs off itself)
    retry_after_as_date: bool = False  # send Retry-After as an HTTP date instead of seconds
    rate_500: float = 0.0
    rate_error_body: float = 0.0  # HTTP 200 whose body is {"error": …} (prompt tokens billed)
    rate_no_choices: float = 0.0  # HTTP 200 with usage but an empty `choices` list
    rate_slow: float = 0.0
    slow_ms: int = 0
    credit_after: int | None = None  # answer 402 once this many completions were served

    def __post_init__(self) -> None:
        for name in ("rate_429", "rate_500", "rate_error_body", "rate_no_choices", "rate_slow"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {v}")
        if self.rate_429 + self.rate_500 + self.rate_error_body + self.rate_no_choices > 1.0:
            raise ValueError("the 429, 500, error-body and no-choices rates must add up to <= 1")


@dataclass
class ServerStats:
    requests: int = 0  # chat completion requests
    completions: int = 0  # 200 answers with choices
    by_status: dict[int, int] = field(default_factory=dict)
    by_model: dict[str, int] = field(default_factory=dict)
    by_model_status: dict[str, int] = field(default_factory=dict)  # "model status" -> n
    billed_usd: float = 0.0  # sum of usage.cost of every answer that carried one (what was charged)

    def count(self, model: str, status: int) -> None:
        self.by_status[status] = self.by_status.get(status, 0) + 1
        self.by_model[model] = self.by_model.get(model, 0) + 1
        k = f"{model} {status}"
        self.by_model_status[k] = self.by_model_status.get(k, 0) + 1

    def snapshot(self) -> "ServerStats":
        return ServerStats(
            self.requests,
            self.completions,
            dict(self.by_status),
            dict(self.by_model),
            dict(self.by_model_status),
            self.billed_usd,
        )

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["by_status"] = {str(k): v for k, v in self.by_status.items()}
        return d


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _u(*parts: object) -> float:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big") / 2.0**64


def lognormal_ms(median_ms: float, p99_ms: float, u: float) -> float:
    """The `u` quantile of a lognormal latency with this median and 99th percentile."""
    if p99_ms <= median_ms:
        return float(median_ms)
    sigma = math.log(p99_ms / median_ms) / NormalDist().inv_cdf(0.99)
    u = min(max(u, 1e-9), 1 - 1e-9)
    return float(median_ms * math.exp(sigma * NormalDist().inv_cdf(u)))


class PracticeServer:
    def __init__(
        self,
        *,
        faults: Faults | None = None,
        latency_ms: int | None = 0,
        seed: int | None = None,
        responder: PracticeResponder | None = None,
        api_key: str | None = None,
        questions: list[Question] | None = None,
    ):
        # api_key: when set, requests must carry `Authorization: Bearer <api_key>` (else 401),
        # like a real provider; tests use it to check the client sends the key and leaks it nowhere.
        self.api_key = api_key
        self.responder = responder or PracticeResponder(seed=seed, questions=questions)
        self.seed = self.responder.setup.seed
        self.faults = faults or Faults()
        self.latency_ms = latency_ms  # None: each model's profile latency
        # set: each reply's latency is lognormal with median latency_ms and this 99th percentile
        # (a provider's heavy tail), drawn from (seed, request number)
        self.latency_p99_ms: float | None = None
        self.stats = ServerStats()
        self.recent: deque[dict[str, Any]] = deque(maxlen=64)  # the last request bodies (never headers): for tests
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="practice-grade")
        self._server: asyncio.AbstractServer | None = None
        self.conns: set[_Conn] = set()
        self.host, self.port = "127.0.0.1", 0

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Conn(self), host, port, backlog=1024)
        self.host, self.port = host, self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for conn in list(self.conns):  # Server.close_clients() is Python 3.13+
                if conn.transport is not None:
                    conn.transport.close()
            await self._server.wait_closed()
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ---- request handling --------------------------------------------------------------------
    def route(self, method: str, path: str) -> str | None:
        path = path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/chat/completions", "/chat/completions"):
            return "chat" if method == "POST" else "405"
        if path in ("/v1/models", "/models"):
            return "models" if method == "GET" else "405"
        if path in ("/v1/stats", "/stats", "/health"):
            return "stats" if method == "GET" else "405"
        return None

    def simple(self, what: str) -> tuple[int, dict[str, Any], dict[str, str]]:
        if what == "models":
            return (
                200,
                {
                    "object": "list",
                    "data": [{"id": m, "object": "model", "owned_by": "simulated"} for m in self.responder.models],
                },
                {},
            )
        return 200, {"simulated": True, "seed": self.seed, **self.stats.to_json()}, {}

    def _fault_for(self, n: int) -> str | None:
        f = self.faults
        u = _u(self.seed, "fault", n)
        for name, rate in (
            ("429", f.rate_429),
            ("500", f.rate_500),
            ("error", f.rate_error_body),
            ("empty", f.rate_no_choices),
        ):
            if u < rate:
                return name
            u -= rate
        return None

    def _delay_s(self, model: str, n: int) -> float:
        if self.latency_ms is None:
            prof = self.responder.setup.models.get(model)
            ms = prof.latency_ms if prof else 0
        else:
            ms = self.latency_ms
        if self.latency_p99_ms is not None and ms > 0:
            ms = round(lognormal_ms(ms, self.latency_p99_ms, _u(self.seed, "latency", n)))
        if self.faults.rate_slow and _u(self.seed, "slow", n) < self.faults.rate_slow:
            ms += self.faults.slow_ms
        return ms / 1000.0

    def prepare_chat(self, body: bytes) -> Done | Reply:
        """Parse + decide faults. Returns ("done", status, payload, headers) or
        ("reply", model, messages, seed, n, delay_s, fault)."""
        try:
            req = json.loads(body)
            model, messages = req["model"], req["messages"]
            if not isinstance(messages, list) or not isinstance(model, str):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            return ("done", 400, _err("request body must be JSON with 'model' and a 'messages' list"), {})
        self.recent.append(req)
        seed = req.get("seed")
        seed = int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else 0
        self.stats.requests += 1
        n = self.stats.requests
        f = self.faults
        if f.credit_after is not None and self.stats.completions >= f.credit_after:
            self.stats.count(model, 402)
            return ("done", 402, _err("simulated: insufficient credits; add credits to continue", code=402), {})
        fault = self._fault_for(n)
        if fault == "429":
            self.stats.count(model, 429)
            headers: dict[str, str] = {}
            if f.retry_after_s is not None:
                headers["Retry-After"] = (
                    http_date(time.time() + f.retry_after_s) if f.retry_after_as_date else f"{f.retry_after_s:g}"
                )
            return ("done", 429, _err("simulated: rate limit exceeded", code=429), headers)
        if fault == "500":
            self.stats.count(model, 500)
            return ("done", 500, _err("simulated: internal server error", code=500), {})
        return ("reply", model, messages, seed, n, self._delay_s(model, n), fault)

    def compose(self, model: str, messages: list[dict[str, Any]], seed: int) -> str | BadRequest:
        """The reply text (or the reason it cannot be given). Touches no stats, so it may run in
        the thread pool; `answer()` does the accounting on the event loop."""
        try:
            return self.responder.reply(model, messages, seed)
        except BadRequest as e:
            return e

    def answer(
        self,
        model: str,
        messages: list[dict[str, Any]],
        seed: int,
        n: int,
        fault: str | None,
        text: str | BadRequest | None = None,
    ) -> tuple[int, dict[str, Any]]:
        if text is None:
            text = self.compose(model, messages, seed)
        if isinstance(text, BadRequest):
            self.stats.count(model, 400)
            return 400, _err(str(text))
        prompt = sum(len(m.get("content") or "") for m in messages if isinstance(m, dict))
        pt = (prompt + 3) // 4
        price = self.responder.setup.models[model]
        if fault == "error":
            # An upstream failure the gateway reports inside a 200: the prompt was still processed.
            self.stats.count(model, 200)
            self.stats.billed_usd += round(pt * price.price_in / 1e6, 12)
            return 200, {
                "error": {"message": "simulated: upstream provider returned an error", "code": 502},
                "usage": {
                    "prompt_tokens": pt,
                    "completion_tokens": 0,
                    "total_tokens": pt,
                    "cost": round(pt * price.price_in / 1e6, 12),
                },
            }
        ct = _tokens(text)
        cost = round((pt * price.price_in + ct * price.price_out) / 1e6, 12)
        self.stats.billed_usd += cost
        if fault == "empty":
            # Billed as if generated, but the gateway lost the choices.
            self.stats.count(model, 200)
            return 200, {
                "id": f"chatcmpl-sim-{n}",
                "object": "chat.completion",
                "model": model,
                "choices": [],
                "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct, "cost": cost},
            }
        self.stats.completions += 1
        self.stats.count(model, 200)
        return 200, {
            "id": f"chatcmpl-sim-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": f"simulated-practice-seed{self.seed}",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct, "cost": cost},
        }


def _err(message: str, code: int | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"message": message, "type": "simulated_practice_error"}
    if code is not None:
        e["code"] = code
    return {"error": e}


class _Conn(asyncio.Protocol):
    """One keep-alive connection. Requests are answered in order (HTTP/1.1 pipelining safe)."""

    def __init__(self, server: PracticeServer):
        self.server = server
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.last: asyncio.Future[None] | None = None  # the previous in-flight reply on this connection
        self.closing = False
        self.continued = False  # a "100 Continue" was sent for the request being read

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream protocol's transport is one
        self.server.conns.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.server.conns.discard(self)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while not self.closing:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > MAX_HEADER:
                    self._send_now(431, _err("headers too large"), {}, keep_alive=False, t0=time.perf_counter())
                return
            t0 = time.perf_counter()
            try:
                head = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
                method, target, version = head[0].split(" ", 2)
                headers: dict[str, str] = {}
                for line in head[1:]:
                    k, _, v = line.partition(":")
                    headers[k.strip().lower()] = v.strip()
                length = int(headers.get("content-length", "0"))
            except ValueError:
                self._send_now(400, _err("malformed HTTP request"), {}, keep_alive=False, t0=t0)
                return
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self._send_now(411, _err("send a Content-Length body"), {}, keep_alive=False, t0=t0)
                return
            if length > MAX_BODY:
                self._send_now(413, _err("body too large"), {}, keep_alive=False, t0=t0)
                return
            if len(self.buf) < end + 4 + length:
                if (
                    headers.get("expect", "").lower() == "100-continue"
                    and not self.continued
                    and self.transport is not None
                ):
                    self.continued = True  # curl waits for this before sending a large body
                    self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                return  # wait for the rest of the body
            self.continued = False
            body = bytes(self.buf[end + 4 : end + 4 + length])
            del self.buf[: end + 4 + length]
            conn = headers.get("connection", "").lower()
            keep = conn != "close" and (version != "HTTP/1.0" or conn == "keep-alive")
            self._dispatch(method, target, headers, body, keep, t0)

    def _dispatch(self, method: str, target: str, headers: dict[str, str], body: bytes, keep: bool, t0: float) -> None:
        srv = self.server
        what = srv.route(method, target)
        if srv.api_key is not None and what == "chat" and headers.get("authorization") != f"Bearer {srv.api_key}":
            srv.stats.requests += 1
            srv.stats.count("?", 401)
            return self._reply_sync(401, _err("simulated: invalid API key"), {}, keep, t0)
        if what is None:
            return self._reply_sync(404, _err(f"no route {method} {target}"), {}, keep, t0)
        if what == "405":
            return self._reply_sync(405, _err(f"{method} not allowed on {target}"), {}, keep, t0)
        if what != "chat":
            return self._reply_sync(*srv.simple(what), keep, t0)
        prep = srv.prepare_chat(body)
        if prep[0] == "done":
            return self._reply_sync(prep[1], prep[2], prep[3], keep, t0)
        _, model, messages, seed, n, delay, fault = prep
        blocking = srv.responder.needs_thread(messages)
        if delay <= 0 and not blocking and self.last is None:
            status, payload = srv.answer(model, messages, seed, n, fault)
            return self._send_now(status, payload, {}, keep, t0)
        self.last = asyncio.ensure_future(
            self._later(self.last, model, messages, seed, n, fault, delay, blocking, keep, t0)
        )

    def _reply_sync(self, status: int, payload: dict[str, Any], headers: dict[str, str], keep: bool, t0: float) -> None:
        if self.last is None:
            self._send_now(status, payload, headers, keep, t0)
        else:
            self.last = asyncio.ensure_future(self._after(self.last, status, payload, headers, keep, t0))

    async def _after(
        self,
        prev: asyncio.Future[None],
        status: int,
        payload: dict[str, Any],
        headers: dict[str, str],
        keep: bool,
        t0: float,
    ) -> None:
        await prev
        self._send_now(status, payload, headers, keep, t0)
        if self.last is asyncio.current_task():
            self.last = None

    async def _later(
        self,
        prev: asyncio.Future[None] | None,
        model: str,
        messages: list[dict[str, Any]],
        seed: int,
        n: int,
        fault: str | None,
        delay: float,
        blocking: bool,
        keep: bool,
        t0: float,
    ) -> None:
        srv = self.server
        try:
            text: str | BadRequest | None = None
            if blocking:
                loop = asyncio.get_running_loop()
                work = loop.run_in_executor(srv._pool, srv.compose, model, messages, seed)
                if delay > 0:
                    await asyncio.sleep(delay)
                text = await work
            elif delay > 0:
                await asyncio.sleep(delay)
            status, payload = srv.answer(model, messages, seed, n, fault, text)
        except Exception as e:  # a bug must not hang the connection: answer 500 and say what
            srv.stats.count(model, 500)
            status, payload = 500, _err(f"practice server error: {type(e).__name__}: {e}")
        if prev is not None:
            await prev
        self._send_now(status, payload, {}, keep, t0)
        if self.last is asyncio.current_task():
            self.last = None

    def _send_now(
        self, status: int, payload: dict[str, Any], headers: dict[str, str], keep_alive: bool, t0: float
    ) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        dur = (time.perf_counter() - t0) * 1000.0
        lines = [
            f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            f"Server-Timing: app;dur={dur:.3f}",
            "Connection: keep-alive" if keep_alive else "Connection: close",
        ]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        self.transport.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        if not keep_alive:
            self.closing = True
            self.transport.close()


# ---- running it -------------------------------------------------------------------------------
class PracticeServerHandle:
    """A practice server running on its own event loop in a background thread."""

    def __init__(self, server: PracticeServer, loop: asyncio.AbstractEventLoop, thread: threading.Thread):
        self.server, self._loop, self._thread = server, loop, thread

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def stats(self) -> ServerStats:
        return self.server.stats.snapshot()

    @property
    def recent_requests(self) -> list[dict[str, Any]]:
        """The last 64 chat request bodies as received (for tests: what did the client send?)."""
        return list(self.server.recent)

    @property
    def faults(self) -> Faults:
        return self.server.faults

    def set_faults(self, faults: Faults) -> None:
        self.server.faults = faults  # replaced atomically; read once per request

    def stop(self) -> None:
        if self._loop.is_closed() or not self._thread.is_alive():
            return
        fut = asyncio.run_coroutine_threadsafe(self.server.close(), self._loop)
        try:
            fut.result(timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def __enter__(self) -> "PracticeServerHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_practice_server(
    port: int = 0,
    faults: Faults | None = None,
    latency_ms: int | None = 0,
    seed: int | None = None,
    host: str = "127.0.0.1",
    api_key: str | None = None,
    questions: list[Question] | None = None,
) -> PracticeServerHandle:
    """Start the server in a daemon thread; returns once it accepts connections.
    `seed`: the simulation seed (None: the one in configs/practice.yaml).
    `latency_ms`: added to every reply (None: each model's profile latency).
    `questions`: benchmark questions it answers beyond the practice set (`PracticeResponder`)."""
    server = PracticeServer(faults=faults, latency_ms=latency_ms, seed=seed, api_key=api_key, questions=questions)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(server.start(host, port))
        except BaseException as e:  # e.g. the port is taken
            failure.append(e)
            ready.set()
            loop.close()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    thread = threading.Thread(target=run, name="practice-server", daemon=True)
    thread.start()
    if not ready.wait(60):
        raise TrinityError("practice server did not start within 60 s (is the machine overloaded?)")
    if failure:
        raise ConfigError(
            f"practice server could not listen on {host}:{port} ({failure[0]}); pick another --port"
        ) from None
    return PracticeServerHandle(server, loop, thread)


async def serve_forever(
    port: int,
    faults: Faults | None,
    latency_ms: int | None,
    seed: int | None,
    host: str = "127.0.0.1",
    announce: Callable[[PracticeServer], object] = print,
    api_key: str | None = None,
    questions: list[Question] | None = None,
    latency_p99_ms: float | None = None,
) -> None:
    """Run in the current loop until cancelled (the CLI's `serve-practice`)."""
    server = PracticeServer(faults=faults, latency_ms=latency_ms, seed=seed, api_key=api_key, questions=questions)
    server.latency_p99_ms = latency_p99_ms
    await server.start(host, port)
    announce(server)
    try:
        await asyncio.Event().wait()
    finally:
        await server.close()
