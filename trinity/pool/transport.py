"""The pool client's lanes: httpx transports whose httpcore connections run on plain asyncio.

httpcore does the HTTP (h11, keep-alive, connection reuse, TLS set-up order); this module only
supplies its network layer (`httpcore.AsyncNetworkBackend`, the documented extension point) on an
`asyncio.Protocol` instead of anyio's stream wrappers, and coalesces the request head and body
into one `send()`. Profiled at 64 calls in flight, anyio's cancel scopes around every read/write
and the two `send()`s a request were most of the pool client's CPU.

- Reads wait on one future per read (a `call_later` timer gives the read timeout) instead of an
  anyio cancel scope; writes are buffered until the next read — which always follows a request on
  HTTP/1.1 — or the end of the loop iteration, so head + body leave in one `send()`. A write of
  more than `FLUSH_BYTES` goes out at once and waits for the socket to drain (the write timeout).
- TLS: `loop.start_tls` on the same protocol (the stdlib's `ssl` module, the context the client
  passes in), so https providers take this path too.
- Errors are httpcore's (`ConnectError`, `ConnectTimeout`, `ReadError`, `ReadTimeout`,
  `WriteError`, `WriteTimeout`) and `LaneTransport` maps them to httpx's, as
  `httpx.AsyncHTTPTransport` does, so the client's fault policy sees the same exceptions.

Connections through a proxy keep httpx's own transport (anyio backend): `lane_transport()` decides.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import typing
import zlib

import httpcore
import httpx

FLUSH_BYTES = 64 * 1024  # a buffered write this large is sent at once (and drained) instead of batched
READ_HIGH_WATER = 1024 * 1024  # stop reading from the socket while this much is buffered unread
# httpcore's errors that httpx's transport turns into its own (`_to_httpx`)
_HTTPCORE_ERRORS = (
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
)


class BodyTooLarge(Exception):
    """The response body passed the caller's cap; reading stopped there and the connection closed."""

    def __init__(self, limit: int, seen: int) -> None:
        super().__init__(f"response body over {limit} bytes (stopped reading at {seen})")
        self.limit, self.seen = limit, seen


# The content codings the lanes ask for (Accept-Encoding) and decode themselves, capped.
ACCEPT_ENCODING = b"gzip, deflate"


class UnknownEncoding(Exception):
    """The server used a content coding the client did not ask for."""


def _decoder(encoding: str | bytes | None) -> typing.Any:
    """A zlib decompressor for the body's Content-Encoding (None: identity)."""
    enc = (encoding.decode("latin-1") if isinstance(encoding, bytes) else encoding or "").strip().lower()
    if enc in ("", "identity"):
        return None
    if enc in ("gzip", "x-gzip"):
        return zlib.decompressobj(zlib.MAX_WBITS | 16)
    if enc == "deflate":
        return zlib.decompressobj(zlib.MAX_WBITS | 32)  # zlib-wrapped (raw deflate is refused)
    raise UnknownEncoding(enc)


async def read_capped(
    stream: typing.AsyncIterable[bytes],
    limit: int | None,
    declared: str | bytes | None = None,
    encoding: str | bytes | None = None,
) -> bytes:
    """The whole body of `stream` (decoded from its Content-Encoding `encoding`), or BodyTooLarge
    as soon as it (or its Content-Length) passes `limit` bytes — the decoded bytes are counted
    while decoding, so a compression bomb stops at the cap: nothing over it is held in memory."""
    if limit is not None and declared is not None:
        try:
            if int(declared) > limit:
                raise BodyTooLarge(limit, int(declared))
        except ValueError:
            pass
    dec = _decoder(encoding)
    parts: list[bytes] = []
    n = 0
    room = (limit + 1) if limit is not None else 0  # max_length 0: no limit

    def take(data: bytes) -> None:
        nonlocal n
        n += len(data)
        if limit is not None and n > limit:
            raise BodyTooLarge(limit, n)
        parts.append(data)

    async for part in stream:
        if dec is None:
            take(part)
            continue
        try:
            take(dec.decompress(part, room))
            while dec.unconsumed_tail:  # more output than `room` from this part: over the cap
                take(dec.decompress(dec.unconsumed_tail, room))
        except zlib.error as e:
            raise UnknownEncoding(f"{encoding!r} body that does not decode: {e}") from None
    if dec is not None:
        take(dec.flush())
    return b"".join(parts)


class _LaneProtocol(asyncio.Protocol):
    """Buffers what the socket delivers and wakes the one reader (HTTP/1.1: one request at a time)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.data = b""
        self.eof = False  # the peer closed its side, or the connection is gone
        self.exc: BaseException | None = None  # why the connection was lost, if by an error
        self.waiter: asyncio.Future[bool | None] | None = None  # True: data or EOF; False: timed out
        self.paused = False  # the transport's write buffer is above its high-water mark
        self.drain_waiter: asyncio.Future[bool | None] | None = None  # None: drained; False: timed out
        self.reading_paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = typing.cast(asyncio.Transport, transport)  # a stream protocol's transport is one

    def data_received(self, data: bytes) -> None:
        self.data = self.data + data if self.data else data
        if len(self.data) > READ_HIGH_WATER and not self.reading_paused and self.transport is not None:
            self.reading_paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.exc = exc
        self._wake()
        self.paused = False
        w, self.drain_waiter = self.drain_waiter, None
        if w is not None and not w.done():
            w.set_result(None)

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        w, self.drain_waiter = self.drain_waiter, None
        if w is not None and not w.done():
            w.set_result(None)

    def _wake(self) -> None:
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(True)


def _expire(fut: asyncio.Future[bool | None]) -> None:
    if not fut.done():
        fut.set_result(False)


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection (plain TCP, or TLS after `start_tls`) as httpcore wants it."""

    def __init__(self, transport: asyncio.Transport, protocol: _LaneProtocol) -> None:
        self._transport = transport
        self._proto = protocol
        self._loop = asyncio.get_running_loop()
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._flush_scheduled = False
        self._closed = False

    # ---- writing -----------------------------------------------------------------------------
    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        if not self._transport.is_closing():
            self._transport.write(data)  # one send(); asyncio buffers whatever the socket refuses
        # else: the connection is gone; the read that follows reports it

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if self._closed or self._proto.exc is not None or self._transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        self._pending.append(buffer)
        self._pending_bytes += len(buffer)
        if self._pending_bytes < FLUSH_BYTES:
            if not self._flush_scheduled:  # safety net: normally the read right after flushes
                self._flush_scheduled = True
                self._loop.call_soon(self._flush)
            return
        self._flush()
        proto = self._proto
        if proto.paused:
            fut = proto.drain_waiter = self._loop.create_future()
            timer = self._loop.call_later(timeout, _expire, fut) if timeout is not None else None
            try:
                drained = await fut
            finally:
                if timer is not None:
                    timer.cancel()
            if drained is False and proto.paused:
                raise httpcore.WriteTimeout("timed out writing the request")
            if proto.exc is not None:
                raise httpcore.WriteError(str(proto.exc) or type(proto.exc).__name__)

    # ---- reading -----------------------------------------------------------------------------
    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._pending:
            self._flush()
        if self._closed:
            raise httpcore.ReadError("the connection is closed")
        proto = self._proto
        if not proto.data and not proto.eof:
            fut = proto.waiter = self._loop.create_future()
            timer = self._loop.call_later(timeout, _expire, fut) if timeout is not None else None
            try:
                await fut
            finally:
                proto.waiter = None
                if timer is not None:
                    timer.cancel()
            if not proto.data and not proto.eof:
                raise httpcore.ReadTimeout("timed out waiting for the response")
        data = proto.data
        if data:
            if len(data) > max_bytes:
                proto.data = data[max_bytes:]
                data = data[:max_bytes]
            else:
                proto.data = b""
            if proto.reading_paused and len(proto.data) <= READ_HIGH_WATER // 4:
                proto.reading_paused = False
                self._transport.resume_reading()
            return data
        if proto.exc is not None:
            raise httpcore.ReadError(str(proto.exc) or type(proto.exc).__name__)
        return b""  # end of stream: h11 turns it into "server disconnected"

    # ---- the rest ----------------------------------------------------------------------------
    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            if self._pending:
                self._flush()
            self._transport.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        if self._pending:
            self._flush()
        try:
            tls = await asyncio.wait_for(
                self._loop.start_tls(self._transport, self._proto, ssl_context, server_hostname=server_hostname),
                timeout,
            )
        except asyncio.TimeoutError as e:  # also the builtin TimeoutError (an OSError): first
            self._transport.close()
            raise httpcore.ConnectTimeout("timed out in the TLS handshake") from e
        except (OSError, ssl.SSLError, EOFError) as e:
            self._transport.close()
            raise httpcore.ConnectError(str(e) or type(e).__name__) from e
        except BaseException:
            self._transport.close()
            raise
        if tls is None:  # typeshed allows it; asyncio's loops always return the TLS transport
            self._transport.close()
            raise httpcore.ConnectError("the TLS handshake returned no transport")
        self._proto.transport = tls
        return AsyncioStream(tls, self._proto)

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "is_readable":
            # An idle keep-alive connection is readable when the server closed it (or sent
            # something it should not have): the pool then opens a fresh one instead.
            return bool(self._proto.data) or self._proto.eof or self._transport.is_closing()
        if info == "ssl_object":
            return self._transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        if info == "socket":
            return self._transport.get_extra_info("socket")
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend on the running asyncio loop (see the module docstring)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = (local_address, 0) if local_address else None
        try:
            transport, proto = await asyncio.wait_for(
                loop.create_connection(_LaneProtocol, host, port, local_addr=local, happy_eyeballs_delay=0.25), timeout
            )
        except asyncio.TimeoutError as e:  # the builtin TimeoutError is an OSError: catch it first
            raise httpcore.ConnectTimeout(f"timed out connecting to {host}:{port}") from e
        except OSError as e:
            raise httpcore.ConnectError(str(e) or type(e).__name__) from e
        sock = transport.get_extra_info("socket")
        if sock is not None:
            for option in socket_options or ():
                sock.setsockopt(*option)
        return AsyncioStream(transport, proto)  # asyncio already sets TCP_NODELAY

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: typing.Iterable[typing.Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            transport, proto = await asyncio.wait_for(loop.create_unix_connection(_LaneProtocol, path), timeout)
        except asyncio.TimeoutError as e:
            raise httpcore.ConnectTimeout(f"timed out connecting to {path}") from e
        except OSError as e:
            raise httpcore.ConnectError(str(e) or type(e).__name__) from e
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family != socket.AF_UNIX:  # pragma: no cover
            for option in socket_options or ():
                sock.setsockopt(*option)
        return AsyncioStream(transport, proto)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _to_httpx(exc: Exception) -> Exception:
    """httpcore's exception as the httpx exception of the same name (what httpx's own transport
    raises), the most specific one that exists; the exception itself when there is none."""
    for cls in type(exc).__mro__:
        target = getattr(httpx, cls.__name__, None)
        if isinstance(target, type) and issubclass(target, httpx.TransportError):
            return target(str(exc))
    return exc


class _MappedStream(httpx.AsyncByteStream):
    def __init__(self, stream: typing.AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> typing.AsyncIterator[bytes]:
        try:
            async for part in self._stream:
                yield part
        except _HTTPCORE_ERRORS as e:
            raise _to_httpx(e) from e

    async def aclose(self) -> None:
        aclose = getattr(self._stream, "aclose", None)
        if aclose is not None:
            await aclose()


class LaneTransport(httpx.AsyncBaseTransport):
    """An httpx transport holding ONE keep-alive httpcore connection (HTTP/1.1) on `AsyncioBackend`,
    for one request at a time — the pool client's free list of lanes guarantees that.

    It keeps what `httpx.AsyncHTTPTransport` with a one-connection pool did for these calls: the
    connection is reused while it stays open and idle, replaced when the server closed it or it
    sat idle longer than `keepalive_expiry`, and a request that finds it gone between the check and
    the send goes out on a fresh one (httpcore's `ConnectionNotAvailable`). httpcore's pool is not
    used: for a single connection it only added locking and bookkeeping on every request.

    `send(...)` is the pool client's path: it takes the already-encoded request, reads the whole
    response and returns it as an `httpx.Response`; `handle_async_request` is the ordinary httpx
    transport API (used by tests and anything that wants a streamed response).
    """

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        keepalive_expiry: float | None = 5.0,
        backend: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        self._ssl = ssl_context
        self._keepalive_expiry = keepalive_expiry
        self._backend = backend or AsyncioBackend()
        self._conn: httpcore.AsyncHTTPConnection | None = None
        self._busy = False
        self.connections_opened = 0  # fresh connections made (tests read it: keep-alive reuse)

    async def _connection(self, origin: httpcore.Origin) -> httpcore.AsyncHTTPConnection:
        conn = self._conn
        if conn is not None and (conn.is_closed() or conn.has_expired() or not conn.can_handle_request(origin)):
            self._conn = None
            await conn.aclose()
            conn = None
        if conn is None:
            conn = self._conn = httpcore.AsyncHTTPConnection(
                origin=origin,
                ssl_context=self._ssl,
                keepalive_expiry=self._keepalive_expiry,
                http1=True,
                http2=False,
                network_backend=self._backend,
            )
            self.connections_opened += 1
        return conn

    async def _request(self, request: httpcore.Request) -> httpcore.Response:
        if self._busy:
            raise RuntimeError("a LaneTransport carries one request at a time")
        self._busy = True
        try:
            while True:
                conn = await self._connection(request.url.origin)
                try:
                    return await conn.handle_async_request(request)
                except httpcore.ConnectionNotAvailable:
                    self._conn = None  # it closed between the check and the send: use a fresh one
                    await conn.aclose()
                except BaseException:
                    if not conn.is_idle():  # failed mid-request (httpcore closed it) or never connected
                        if self._conn is conn:
                            self._conn = None
                        await conn.aclose()
                    raise
        finally:
            self._busy = False

    async def send(
        self,
        method: bytes,
        url: httpcore.URL,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        extensions: dict[str, typing.Any],
        max_body: int | None = None,
    ) -> httpx.Response:
        """Send a request whose body is `body`, read the whole response, return it (closed).
        A body over `max_body` bytes raises BodyTooLarge (and drops the connection)."""
        req = httpcore.Request(method, url, headers=headers, content=body, extensions=extensions)
        try:
            resp = await self._request(req)
            try:
                declared = dict((k.lower(), v) for k, v in resp.headers).get(b"content-length")
                # an async connection's response stream is an async iterable (httpcore types it as
                # sync or async)
                encoding = dict((k.lower(), v) for k, v in resp.headers).get(b"content-encoding")
                content = await read_capped(
                    typing.cast(typing.AsyncIterable[bytes], resp.stream), max_body, declared, encoding
                )
            except (BodyTooLarge, UnknownEncoding) as e:
                conn, self._conn = self._conn, None  # never reuse a connection left mid-body
                if conn is not None:
                    await conn.aclose()
                if isinstance(e, BodyTooLarge):
                    raise
                content = b""  # a coding we did not ask for: an empty (malformed) body
            finally:
                await resp.aclose()
        except _HTTPCORE_ERRORS as e:
            raise _to_httpx(e) from e
        # decoded above: the response carries the plain body (httpx must not decode it again)
        headers = [(k, v) for k, v in resp.headers if k.lower() not in (b"content-encoding", b"content-length")]
        return httpx.Response(resp.status, headers=headers, content=content, extensions=resp.extensions)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        req = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            resp = await self._request(req)
        except _HTTPCORE_ERRORS as e:
            raise _to_httpx(e) from e
        return httpx.Response(
            resp.status,
            headers=resp.headers,
            stream=_MappedStream(typing.cast(typing.AsyncIterable[bytes], resp.stream)),
            extensions=resp.extensions,
        )

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.aclose()
