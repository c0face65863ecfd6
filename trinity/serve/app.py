"""The OpenAI-compatible HTTP surface of `trinity serve` (a Starlette application).

Starlette on uvicorn is the field's standard ASGI stack for OpenAI-compatible servers (vLLM,
SGLang, LiteLLM and RouteLLM serve this API on it, or on FastAPI, which is Starlette), it streams
server-sent events natively, and uvicorn's shutdown waits for requests in flight.

Routes: `GET /v1/models` and `POST /v1/chat/completions` (model `router`; `stream` true or false).
Errors are OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, with a status a
client library maps: 400 bad request, 401 no or unknown key, 402 a budget is spent, 404 unknown
model, 413 body over 1 MiB, 429 over `--max-sessions`, 502 the pool failed, 503 shutting down.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from trinity.benchmarks.base import ANSWER_INSTRUCTIONS
from trinity.data.questions import Question
from trinity.errors import BudgetExceeded
from trinity.serve.engine import LOCAL_KEY, KeyBudgetExceeded, ServedSession, ServeEngine, TurnInfo
from trinity.serve.keys import KeyStore

MODEL_ID = "router"
MAX_BODY_BYTES = 1 << 20
SERVED_KINDS = tuple(ANSWER_INSTRUCTIONS)  # the kinds with an answer format of their own
DEFAULT_KIND = "math"
log = logging.getLogger("trinity.serve")


class HttpError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        type_: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.param = status, message, type_, code, param
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def _text_of(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if not isinstance(p, dict) or p.get("type") != "text" or not isinstance(p.get("text"), str):
                raise HttpError(400, f"{where}: only text content parts are supported", param="messages")
            parts.append(p["text"])
        return "\n".join(parts)
    raise HttpError(400, f"{where}: content must be a string or a list of text parts", param="messages")


def question_of(body: dict[str, Any]) -> Question:
    """The session's question: the last user message; `trinity.kind` (math, mc or code; default
    math) picks the answer format the Worker is asked for and the grader, `trinity.reference` the
    answer to grade against."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise HttpError(400, "messages must be a non-empty list of {role, content}", param="messages")
    users = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or "content" not in m:
            raise HttpError(400, f"messages[{i}] must be an object with role and content", param="messages")
        if m["role"] == "user":
            users.append(_text_of(m["content"], f"messages[{i}]"))
    if not users or not users[-1].strip():
        raise HttpError(400, "messages has no user message with text: the last one is the question", param="messages")
    ext = body.get("trinity") or {}
    if not isinstance(ext, dict):
        raise HttpError(400, "trinity must be an object {kind, reference}", param="trinity")
    kind = ext.get("kind", DEFAULT_KIND)
    if kind not in SERVED_KINDS:
        raise HttpError(
            400, f"trinity.kind must be one of {', '.join(SERVED_KINDS)}, got {kind!r}", param="trinity.kind"
        )
    reference = ext.get("reference")
    if reference is not None and not isinstance(reference, (str, int, float)):
        raise HttpError(400, "trinity.reference must be a string or a number", param="trinity.reference")

    text = users[-1]
    qid = "q-" + hashlib.sha256(text.encode()).hexdigest()[:12]
    return Question(qid, "serve", text, None if reference is None else str(reference), kind)


def route_headers(s: ServedSession) -> dict[str, str]:
    route = ";".join(f"{t.turn}:{t.model}:{t.role}:{t.model_prob:.4f}:{t.role_prob:.4f}" for t in s.turns)
    return {
        "X-Trinity-Route": route,
        "X-Trinity-Turns": str(len(s.turns)),
        "X-Trinity-Cost-Usd": f"{s.cost_usd:.8f}",
        "X-Trinity-Prompt-Tokens": str(s.prompt_tokens),
        "X-Trinity-Completion-Tokens": str(s.completion_tokens),
        "X-Trinity-Session": s.id,
    }


def usage_of(s: ServedSession) -> dict[str, int]:
    return {
        "prompt_tokens": s.prompt_tokens,
        "completion_tokens": s.completion_tokens,
        "total_tokens": s.prompt_tokens + s.completion_tokens,
    }


class ServeApp:
    def __init__(
        self,
        engine: ServeEngine,
        *,
        keys: KeyStore | None,
        max_sessions: int = 64,
        max_body_bytes: int = MAX_BODY_BYTES,
    ):
        self.engine, self.keys = engine, keys
        self.max_sessions = max_sessions
        self.max_body_bytes = max_body_bytes
        self.running = 0
        self.refused_busy = 0

    # ---- plumbing ----

    def auth(self, request: Request) -> str:
        if self.keys is None:
            return LOCAL_KEY
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header.lower().startswith("bearer ") else ""
        if not token:
            raise HttpError(
                401, "no API key: send Authorization: Bearer <key>", "authentication_error", "missing_api_key"
            )
        key = self.keys.check(token)
        if key is None:
            raise HttpError(401, "the API key is not one this server knows", "authentication_error", "invalid_api_key")
        return key.name

    async def read_json(self, request: Request) -> dict[str, Any]:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise HttpError(413, f"request body over {self.max_body_bytes} bytes", code="body_too_large")
        chunks, size = [], 0
        try:
            async for chunk in request.stream():
                size += len(chunk)
                if size > self.max_body_bytes:
                    raise HttpError(413, f"request body over {self.max_body_bytes} bytes", code="body_too_large")
                chunks.append(chunk)
        except ClientDisconnect:
            raise HttpError(400, "the client went away while sending the body") from None
        try:
            body = json.loads(b"".join(chunks))
        except (ValueError, UnicodeDecodeError) as e:
            raise HttpError(400, f"the body is not valid JSON ({e})", code="invalid_json") from None
        if not isinstance(body, dict):
            raise HttpError(400, "the body must be a JSON object")
        return body

    # ---- routes ----

    async def models(self, request: Request) -> Response:
        try:
            self.auth(request)
        except HttpError as e:
            return e.response()
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {
                        "id": MODEL_ID,
                        "object": "model",
                        "created": 0,
                        "owned_by": "trinity",
                        "trinity": {
                            "run": self.engine.run.id,
                            "pool": self.engine.pool.name,
                            "models": self.engine.models,
                            "competition": self.engine.text.name,
                            "max_turns": self.engine.max_turns,
                            "sessions_served": self.engine.sessions_served,
                            "encoder": self.engine.encoder_stats(),
                        },
                    }
                ],
            }
        )

    async def chat(self, request: Request) -> Response:
        try:
            if self.engine.closing:
                raise HttpError(503, "the server is shutting down", "server_error", "shutting_down")
            key = self.auth(request)
            body = await self.read_json(request)
            model = body.get("model")
            if model != MODEL_ID:
                raise HttpError(
                    404,
                    f"model {model!r} does not exist; this server serves {MODEL_ID!r}",
                    code="model_not_found",
                    param="model",
                )
            stream = body.get("stream", False)
            if not isinstance(stream, bool):
                raise HttpError(400, "stream must be true or false", param="stream")
            question = question_of(body)
            if self.running >= self.max_sessions:
                self.refused_busy += 1
                raise HttpError(
                    429,
                    f"{self.max_sessions} sessions are running; retry shortly",
                    "rate_limit_error",
                    "too_many_sessions",
                    headers={"Retry-After": "1"},
                )
        except HttpError as e:
            return e.response()
        self.running += 1
        if stream:
            include_usage = (
                bool((body.get("stream_options") or {}).get("include_usage"))
                if isinstance(body.get("stream_options"), dict)
                else False
            )
            return StreamingResponse(
                self._stream(question, key, include_usage),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache"},
            )
        try:
            task = self.engine.start_session(question, key)
            try:
                s = await asyncio.shield(task)
            except Exception as e:
                return self._failure(e).response()
        finally:
            self.running -= 1
        if s.failed:
            err = HttpError(502, f"the pool failed during the session: {s.reason}", "server_error", "pool_failed")
            return JSONResponse({**err.body(), "trinity": s.extension()}, status_code=502, headers=route_headers(s))
        return JSONResponse(self._completion(s), headers=route_headers(s))

    @staticmethod
    def _failure(e: BaseException) -> HttpError:
        if isinstance(e, KeyBudgetExceeded):
            return HttpError(402, str(e), "insufficient_quota", "key_budget_spent")
        if isinstance(e, BudgetExceeded):
            return HttpError(
                402,
                "the server's budget is spent; ask its operator to raise --budget-usd",
                "insufficient_quota",
                "server_budget_spent",
            )
        log.error("session failed: %s: %s", type(e).__name__, e)
        return HttpError(500, f"the session failed: {type(e).__name__}: {e}", "server_error")

    def _completion(self, s: ServedSession) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{s.id}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": MODEL_ID,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": s.answer_text},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": usage_of(s),
            "trinity": s.extension(),
        }

    async def _stream(self, question: Question, key: str, include_usage: bool):
        """SSE: a role chunk, one chunk per turn (`trinity.turn`, no content), the answer, the
        finish chunk (with `trinity`, the whole route), usage when asked, then [DONE]. A client
        that goes away ends the session after the call in flight (which is ledgered)."""
        turns: asyncio.Queue[TurnInfo | None] = asyncio.Queue()
        cancel = asyncio.Event()

        async def on_turn(info: TurnInfo) -> None:
            await turns.put(info)

        created = int(time.time())
        task = self.engine.start_session(question, key, on_turn, cancel)
        task.add_done_callback(lambda _t: turns.put_nowait(None))
        cid = "chatcmpl-pending"

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
            obj = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": MODEL_ID,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
                **extra,
            }
            return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n"

        try:
            yield chunk({"role": "assistant", "content": ""})
            while True:
                info = await turns.get()
                if info is None:
                    break
                yield chunk({}, trinity={"turn": info.to_json()})
            try:
                s = task.result()
            except Exception as e:
                yield f"data: {json.dumps(self._failure(e).body())}\n\n"
                yield "data: [DONE]\n\n"
                return
            cid = f"chatcmpl-{s.id}"
            if s.failed:
                err = HttpError(502, f"the pool failed during the session: {s.reason}", "server_error", "pool_failed")
                yield f"data: {json.dumps({**err.body(), 'trinity': s.extension(False)})}\n\n"
                yield "data: [DONE]\n\n"
                return
            if s.answer_text:
                yield chunk({"content": s.answer_text})
            yield chunk({}, "stop", trinity=s.extension(False))
            if include_usage:
                obj = {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": MODEL_ID,
                    "choices": [],
                    "usage": usage_of(s),
                }
                yield f"data: {json.dumps(obj)}\n\n"
            yield "data: [DONE]\n\n"
        finally:
            # the client went away (or we are done): stop after the call in flight, never cut it
            cancel.set()
            self.running -= 1

    def starlette(self) -> Starlette:
        @asynccontextmanager
        async def lifespan(app: Starlette):
            await self.engine.open()
            try:
                yield
            finally:
                await self.engine.close()

        return Starlette(
            routes=[
                Route("/v1/models", self.models, methods=["GET"]),
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
            ],
            lifespan=lifespan,
        )
