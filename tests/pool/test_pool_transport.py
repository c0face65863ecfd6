"""The pool client's lanes (`trinity.pool.transport.LaneTransport`: httpcore on plain asyncio),
over real loopback HTTP against the practice server — directly, or through a small TCP forwarder
that can drop connections or terminate TLS in front of it."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import socket
import ssl

import httpx
import pytest
from pool_helpers import Faults, messages, practice_pool, questions, server  # noqa: F401

from trinity.pool.client import PoolClient
from trinity.pool.faults import RetryPolicy
from trinity.pool.providers import Timeouts
from trinity.pool.transport import LaneTransport

MATH = questions("math")
NO_RETRY = RetryPolicy(0, 0.01, 0.02, 1)
ONE_RETRY = RetryPolicy(1, 0.01, 0.02, 1)


class Forwarder:
    """A TCP forwarder on 127.0.0.1 in front of the practice server (optionally speaking TLS to
    the client). `drop_next` requests are read and then answered by closing the connection."""

    def __init__(self, target_port: int, ssl_context: ssl.SSLContext | None = None):
        self.target_port = target_port
        self.ssl = ssl_context
        self.drop_next = 0
        self.accepted = 0
        self.writers: set[asyncio.StreamWriter] = set()
        self.tasks: set[asyncio.Task] = set()

    async def __aenter__(self) -> "Forwarder":
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.ssl)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close_all()
        self.server.close()
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.server.wait_closed()

    def close_all(self) -> None:
        for w in list(self.writers):
            w.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self.writers.add(writer)
        task = asyncio.current_task()
        self.tasks.add(task)
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)

        async def up() -> None:
            while data := await reader.read(65536):
                if self.drop_next:
                    self.drop_next -= 1
                    writer.close()
                    up_w.close()
                    return
                up_w.write(data)
                await up_w.drain()
            up_w.close()

        async def down() -> None:
            while data := await up_r.read(65536):
                writer.write(data)
                await writer.drain()
            writer.close()

        try:
            await asyncio.gather(up(), down())
        except (OSError, ssl.SSLError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            up_w.close()
            self.writers.discard(writer)
            self.tasks.discard(task)


def _lanes(c: PoolClient) -> list:
    return list(c._lanes)


async def test_calls_go_through_lane_transports_and_reuse_the_connection(server):
    pool = practice_pool(server.base_url, max_concurrency=4)
    async with PoolClient(pool, run_id="t") as c:
        for i in range(20):  # one after another: one lane, one connection
            r = await c.chat(pool.models[i % 3], messages(MATH[i % len(MATH)]), purpose="train")
            assert r.ok and r.attempts == 1 and r.server_ms is not None
        lanes = _lanes(c)
        assert len(lanes) == 1 and isinstance(lanes[0], LaneTransport)
        assert lanes[0].connections_opened == 1
        # Concurrent calls use at most max_concurrency lanes, each one keep-alive connection.
        rs = await asyncio.gather(
            *(c.chat(pool.models[i % 3], messages(MATH[i % len(MATH)]), purpose="train") for i in range(40))
        )
        assert all(r.ok for r in rs)
        lanes = _lanes(c)
        assert 1 <= len(lanes) <= 4 and all(isinstance(x, LaneTransport) for x in lanes)
        assert sum(x.connections_opened for x in lanes) == len(lanes)
    assert server.stats.by_status[200] == 60


async def test_a_connection_dropped_mid_request_is_retried_on_a_fresh_one(server):
    async with Forwarder(server.port) as fw:
        pool = practice_pool(f"http://127.0.0.1:{fw.port}/v1", max_concurrency=1, retry=ONE_RETRY)
        async with PoolClient(pool, run_id="t") as c:
            assert (await c.chat(pool.models[0], messages(MATH[0]), purpose="train")).ok
            fw.drop_next = 1  # the next request is read, then the connection closes without a reply
            r = await c.chat(pool.models[0], messages(MATH[1]), purpose="train")
            assert r.ok and r.attempts == 2
            assert c.stats.retries == 1 and c.stats.timeouts == 1
            assert fw.accepted == 2 and _lanes(c)[0].connections_opened == 2

            fw.drop_next = 2  # once the retries are spent it is a failed call naming the transport error
            r = await c.chat(pool.models[0], messages(MATH[2]), purpose="train")
            assert not r.ok and r.status == 0 and "RemoteProtocolError" in r.error
            assert c.unreachable() is None  # the server answered the connect: not unreachable


async def test_an_idle_connection_the_server_closed_is_replaced_without_a_failed_attempt(server):
    async with Forwarder(server.port) as fw:
        pool = practice_pool(f"http://127.0.0.1:{fw.port}/v1", max_concurrency=1, retry=NO_RETRY)
        async with PoolClient(pool, run_id="t") as c:
            assert (await c.chat(pool.models[0], messages(MATH[0]), purpose="train")).ok
            fw.close_all()  # the server ends the idle keep-alive connection
            await asyncio.sleep(0.05)
            r = await c.chat(pool.models[0], messages(MATH[1]), purpose="train")
            assert r.ok and r.attempts == 1 and c.stats.requests == 2
            assert fw.accepted == 2 and _lanes(c)[0].connections_opened == 2


async def test_read_timeout_fires_and_the_lane_recovers(server):
    server.set_faults(Faults(rate_slow=1.0, slow_ms=600))
    pool = practice_pool(
        server.base_url, max_concurrency=1, retry=NO_RETRY, timeouts=Timeouts(connect_s=1, read_s=0.15, write_s=1)
    )
    async with PoolClient(pool, run_id="t") as c:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        r = await c.chat(pool.models[0], messages(MATH[0]), purpose="train")
        assert loop.time() - t0 < 0.5
        assert not r.ok and r.status == 0 and "ReadTimeout" in r.error and c.stats.timeouts == 1
        server.set_faults(Faults())
        r = await c.chat(pool.models[0], messages(MATH[1]), purpose="train")
        assert r.ok and _lanes(c)[0].connections_opened == 2  # the timed-out connection was closed
    await asyncio.sleep(0.5)  # let the server's slow reply to the first request finish before it stops


async def test_a_large_request_body_and_a_write_timeout():
    # A listener that accepts and never reads: a body far larger than the socket buffers stalls.
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    try:
        pool = practice_pool(
            f"http://127.0.0.1:{lsock.getsockname()[1]}/v1",
            retry=NO_RETRY,
            timeouts=Timeouts(connect_s=1, read_s=5, write_s=0.2),
        )
        big = [{"role": "user", "content": "x" * (24 * 1024 * 1024)}]
        async with PoolClient(pool, run_id="t") as c:
            r = await c.chat(pool.models[0], big, purpose="train")
        assert not r.ok and r.status == 0 and "WriteTimeout" in r.error
    finally:
        lsock.close()


async def test_a_large_request_body_reaches_the_server(server):
    pool = practice_pool(server.base_url)
    msgs = messages(MATH[0])
    msgs[1]["content"] += " " + "y" * 300_000  # several flushes' worth, sent with the drain path
    async with PoolClient(pool, run_id="t") as c:
        r = await c.chat(pool.models[0], msgs, purpose="train")
    assert r.ok and r.prompt_tokens > 50_000


async def test_lane_transport_serves_the_httpx_transport_api(server):
    async with httpx.AsyncClient(transport=LaneTransport()) as client:
        r1 = await client.get(f"{server.base_url}/models")
        r2 = await client.get(f"{server.base_url}/models")
        assert r1.status_code == r2.status_code == 200 and r1.json() == r2.json()
        lane = client._transport
        assert isinstance(lane, LaneTransport) and lane.connections_opened == 1


def _self_signed(tmp_path):
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


async def test_https_goes_through_the_lane_with_tls_verified(server, tmp_path, monkeypatch):
    cert_file, key_file = _self_signed(tmp_path)
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(cert_file, key_file)
    async with Forwarder(server.port, ssl_context=sctx) as fw:
        pool = practice_pool(f"https://127.0.0.1:{fw.port}/v1", max_concurrency=2, retry=NO_RETRY)
        # Not trusted: the handshake fails as a connection error (never sent in the clear).
        async with PoolClient(pool, run_id="t") as c:
            r = await c.chat(pool.models[0], messages(MATH[0]), purpose="train")
            assert not r.ok and "ConnectError" in r.error and "CERTIFICATE_VERIFY_FAILED" in r.error
        # Trusted (the client's default context reads SSL_CERT_FILE): calls work over TLS.
        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
        async with PoolClient(pool, run_id="t") as c:
            rs = await asyncio.gather(
                *(c.chat(pool.models[i % 3], messages(MATH[i]), purpose="train") for i in range(6))
            )
            assert all(r.ok for r in rs)
            lanes = _lanes(c)
            assert all(isinstance(x, LaneTransport) for x in lanes)
            assert all(x._conn._connection._network_stream.get_extra_info("ssl_object") is not None for x in lanes)


def test_a_proxy_from_the_environment_keeps_httpx_transport(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    pool = practice_pool("https://api.provider.invalid/v1")

    async def lane_types():
        async with PoolClient(pool, run_id="t") as c:
            return type(c._new_lane()), c._proxy

    kind, proxy = asyncio.run(lane_types())
    assert kind is httpx.AsyncHTTPTransport and proxy == "http://proxy.invalid:3128"
