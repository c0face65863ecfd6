"""A hostile OpenAI-compatible stand-in on 127.0.0.1 (real HTTP, no patched httpx).

`HostileServer(mode=...)` answers /v1/chat/completions according to `mode` (changeable while it
runs) and keeps what it "billed" (`billed_micro_usd`, at `PRICE_IN`/`PRICE_OUT` per 1M tokens on
the usage it reports honestly), so a test can compare the client's ledger with the truth.

modes: ok | usage (send `usage` as given: negative, Infinity, a string, 10**15 …) | big (a body of
`big_bytes`; big_chunked: the same without Content-Length) | 500 (every answer 500) | 429 (`rate_429` of answers 429, the rest ok) | malformed
(200 with `malformed_body`: HTML, empty, not JSON) | reset (headers + half the body, then RST) |
echo (the reply text contains the request's bearer key) | slow (`slow_s` before an ok answer).

Round 2 (money the cap must hold against, transport a call must survive):
overbill (report and bill `bill_usd` a call; `overbill_plus_usd`: the call's own token price plus
that) | overtokens (report and bill `completion_tokens` = `over_tokens`, e.g. reasoning tokens
`max_tokens` does not bound) | cost0 (tokens reported, `cost: 0`, the tokens billed) | sse (a
`text/event-stream` reply; `sse_usage`: whether its last chunk carries usage, billed either way) |
gzip_bomb (a small gzip body that decodes to `bomb_bytes`) | trickle (a byte every `trickle_s`,
never ending) | retry_after (every answer 429 with `Retry-After: retry_after`).
"""

from __future__ import annotations

import gzip
import json
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PRICE_IN, PRICE_OUT = 1.0, 2.0  # USD per 1M tokens: what the stand-in really charges


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):  # quiet
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json", extra=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send(200, json.dumps({"data": [{"id": m} for m in self.server.owner.models]}).encode())

    def do_POST(self):
        srv = self.server.owner
        n = int(self.headers.get("Content-Length") or 0)
        req = json.loads(self.rfile.read(n) or b"{}")
        with srv.lock:
            srv.requests += 1
            k = srv.requests
        mode = srv.mode
        if mode == "slow":
            srv.release.wait(srv.slow_s)
        if mode == "500":
            srv.count("500")
            return self._send(500, b'{"error": {"message": "internal error"}}')
        if mode == "429" and (k % 10) < int(round(srv.rate_429 * 10)):
            srv.count("429")
            return self._send(429, b'{"error": "rate limited"}', extra={"Retry-After": "0"})
        if mode == "malformed":
            srv.count("malformed")
            return self._send(200, srv.malformed_body, ctype="text/html")
        if mode == "retry_after":
            srv.count("429")
            return self._send(429, b'{"error": "slow down"}', extra={"Retry-After": srv.retry_after})
        if mode == "gzip_bomb":
            srv.count("bomb")
            return self._send(200, srv.bomb(), extra={"Content-Encoding": "gzip"})
        if mode == "trickle":
            srv.count("trickle")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            try:
                while not srv.release.is_set():
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    srv.release.wait(srv.trickle_s)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            return
        prompt = sum(len(str(m.get("content", ""))) for m in req.get("messages", [])) // 4 + 1
        text = srv.reply
        if mode == "echo":
            text = "my instructions say: " + self.headers.get("Authorization", "")
        completion = max(1, len(text) // 4)
        if mode == "overtokens":
            completion = srv.over_tokens
        usage: object = {"prompt_tokens": prompt, "completion_tokens": completion}
        if mode == "overbill":  # what it charges is what it reports
            usd = srv.bill_usd
            if srv.overbill_plus_usd:
                usd = (prompt * PRICE_IN + completion * PRICE_OUT) / 1e6 + srv.overbill_plus_usd
            srv.bill_micro(round(usd * 1e6))
            usage = {**usage, "cost": usd}
        else:
            srv.bill(prompt, completion)
        if mode == "usage":
            usage = srv.usage
        if mode == "cost0":
            usage = {**usage, "cost": 0}
        if mode == "sse":
            srv.count("sse")
            words = text.split(" ")
            chunks = [
                {
                    "id": f"x{k}",
                    "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": {"content": w + " "}}],
                }
                for w in words
            ]
            chunks.append({"id": f"x{k}", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            if srv.sse_usage:
                chunks.append({"id": f"x{k}", "choices": [], "usage": usage})
            sse = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
            return self._send(200, sse, ctype="text/event-stream")
        body = {
            "id": f"x{k}",
            "object": "chat.completion",
            "model": req.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": usage,
        }
        data = json.dumps(body).encode()  # allow_nan: `Infinity` goes out as sent by bad servers
        if mode == "big_chunked":  # no Content-Length: the client must count what it reads
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"x" * (1 << 20)
            try:
                for part in [data[:-1] + b', "pad": "'] + [chunk] * (srv.big_bytes >> 20) + [b'"}']:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            return
        if mode == "big":
            data = data[:-1] + b', "pad": "' + b"x" * srv.big_bytes + b'"}'
        if mode == "reset":
            srv.count("reset")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        srv.count("200")
        try:
            self._send(200, data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class HostileServer:
    def __init__(self, mode: str = "ok", models=("m-a", "m-b")):
        self.mode = mode
        self.models = list(models)
        self.usage: object = {}
        self.big_bytes = 50 * 1024 * 1024
        self.rate_429 = 0.9
        self.malformed_body = b"<html><body>502 Bad Gateway</body></html>"
        self.reply = "The answer is 42."
        self.slow_s = 0.0
        self.bill_usd = 0.05  # overbill: what every call is charged
        self.overbill_plus_usd = 0.0  # overbill: charged on top of the call's own token price instead
        self.over_tokens = 40_550  # overtokens
        self.sse_usage = True
        self.bomb_bytes = 64 * 1024 * 1024
        self._bomb: bytes | None = None
        self.trickle_s = 0.05
        self.retry_after = "100000"
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.requests = 0
        self.billed_micro_usd = 0
        self.by_kind: dict[str, int] = {}
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.owner = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def bill(self, prompt: int, completion: int) -> None:
        with self.lock:
            self.billed_micro_usd += round(prompt * PRICE_IN + completion * PRICE_OUT)  # micro-USD per token

    def bill_micro(self, micro: int) -> None:
        with self.lock:
            self.billed_micro_usd += micro

    def bomb(self) -> bytes:
        """A JSON-looking body of `bomb_bytes` spaces, gzipped (~1/1000 of it on the wire)."""
        if self._bomb is None:
            self._bomb = gzip.compress(b"{" + b" " * self.bomb_bytes + b"}", compresslevel=6, mtime=0)
        return self._bomb

    def count(self, kind: str) -> None:
        with self.lock:
            self.by_kind[kind] = self.by_kind.get(kind, 0) + 1

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
