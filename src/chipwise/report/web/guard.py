"""The ASGI guard in front of the web app: the Host allowlist, the body limit, the last-resort
error handler. A plain ASGI middleware (no FastAPI import), so it sees every request before
the framework parses anything.

Per HTTP request, in order:

1. **Host allowlist** (DNS rebinding): when the server is bound to a loopback address, a
   ``Host`` header naming anything but this machine (``127.0.0.1``, ``localhost``, ``[::1]``,
   the bound host) is refused with 421, so a web page on another site that rebinds its name
   to 127.0.0.1 cannot drive the API. A missing Host header is 400.
2. **Body limit**, counted on the bytes received, so a chunked upload (no Content-Length) is
   bounded as well as a declared one: over the limit is 413 with a short message that never
   echoes the body. The rest of an over-limit body is read and dropped (up to
   ``DRAIN_LIMIT_BYTES``) before answering, so a client still sending gets the 413 instead
   of a reset connection; a Content-Length above the drain limit is answered at once. A
   body that takes over ``BODY_TIMEOUT_S`` to arrive is 408 (a trickling client).
3. **Last resort**: an exception nothing else handled is logged with its traceback and
   answered 500 ``{"error": ...}`` in one line (a bug, never the input echoed).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOG = logging.getLogger("chipwise.web")

# Names a browser on this machine sends for a loopback server. "testserver" is the name
# Starlette's TestClient sends (in-process tests); it is not a name DNS gives out, so a
# rebinding page cannot use it.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "testserver"})
# Over-limit bodies are read and dropped up to this size before the 413, so the client sees
# the answer; past it the connection is answered and closed (loopback reads 64 MiB in well
# under a second).
DRAIN_LIMIT_BYTES = 64 * 1024 * 1024
# Seconds a request body may take to arrive: a 1 MiB body crosses even a slow link in a few
# seconds; a client trickling bytes (slowloris) is cut off instead of holding a connection.
BODY_TIMEOUT_S = 30.0


def host_name(header: str) -> str:
    """``'Example.COM.:8080'`` -> ``'example.com'``, ``'[::1]:8765'`` -> ``'::1'``."""
    text = header.strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else text
    return text.rsplit(":", 1)[0].rstrip(".") if ":" in text else text.rstrip(".")


async def _answer(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Guard:
    """Wraps an ASGI app with the three guards above.

    Args:
        app: the application.
        allowed_hosts: host names the Host header may carry; None accepts any (a server
            bound to a public address, where the user chose to be reachable by any name).
        body_limit: the largest body (bytes) accepted on a path.
        too_large: the 413 message for a path and the bytes seen (``n+`` when cut short).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: frozenset[str] | None,
        body_limit: Callable[[str], int],
        too_large: Callable[[str, int], str],
    ) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts
        self.body_limit = body_limit
        self.too_large = too_large

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refused = self._host_refusal(headers.get("host"))
        if refused is not None:
            await _answer(send, *refused)
            return
        path = str(scope.get("path", ""))
        limit = self.body_limit(path)
        declared = headers.get("content-length", "")
        if declared and not declared.isdigit():
            await _answer(send, 400, "Content-Length is not a whole number of bytes")
            return
        if declared and int(declared) > DRAIN_LIMIT_BYTES:
            await _answer(send, 413, self.too_large(path, int(declared)))
            return
        try:
            body, seen, gone = await asyncio.wait_for(
                _read_body(receive, limit), timeout=BODY_TIMEOUT_S
            )
        except TimeoutError:
            await _answer(send, 408, f"the request body took over {BODY_TIMEOUT_S:g} s to arrive")
            return
        if gone:
            return  # the client left before sending its body: nobody to answer
        if seen > limit:
            await _answer(send, 413, self.too_large(path, seen))
            return
        await self._run(scope, _replay(body, receive), send)

    def _host_refusal(self, host: str | None) -> tuple[int, str] | None:
        if self.allowed_hosts is None:
            return None
        if host is None or not host.strip():
            return 400, "no Host header; send the address you opened, e.g. 127.0.0.1:8765"
        name = host_name(host)
        if name in self.allowed_hosts:
            return None
        shown = name if len(name) <= 64 else name[:61] + "..."
        return (
            421,
            f"this server answers only to this machine's names, not {shown!r} (a guard "
            "against DNS rebinding); open it as http://127.0.0.1:PORT/ or start 'chipwise "
            "serve --host' with the name you use",
        )

    async def _run(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as err:
            LOG.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if not started:
                await _answer(
                    tracked,
                    500,
                    f"internal error ({type(err).__name__}); the server log has the details",
                )


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, int, bool]:
    """(the body, bytes seen, whether the client disconnected): keeps at most ``limit``
    bytes in memory, then drops the rest up to ``DRAIN_LIMIT_BYTES``."""
    chunks: list[bytes] = []
    seen = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"", seen, True
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen <= limit:
            chunks.append(chunk)
        if not message.get("more_body", False) or seen > DRAIN_LIMIT_BYTES:
            break
    return b"".join(chunks), seen, False


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the app the body already read, then the real channel (for
    the disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
