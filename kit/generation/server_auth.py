"""Bearer-key check on every endpoint of the vLLM server that `kit serve` starts.

vLLM's own `--api-key` guards only the OpenAI routes (`/v1/...`); with `VLLM_SERVER_DEV_MODE=1` the
server also answers `/collective_rpc`, `/reset_prefix_cache`, `/server_info`, `/update_weights`,
`/sleep`, ... without it, so anyone who reaches the port could replace the model's weights.
`kit serve` passes `--middleware kit.generation.server_auth.BearerKeyMiddleware` to vLLM's OpenAI server
when an API key is set, and gives the key through the KIT_SERVER_API_KEY environment variable (not argv, where
`ps` would show it).
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

KEY_ENV = "KIT_SERVER_API_KEY"
OPEN_PATHS = frozenset({"/health"})

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BearerKeyMiddleware:
    """Pure ASGI middleware: every HTTP request and WebSocket handshake must carry
    `Authorization: Bearer <key>`, the key being $KIT_SERVER_API_KEY; others get 401 (a WebSocket is
    closed with code 1008 before it is accepted).

    The one exception is `/health`, which the kit (`VLLMServerClient.wait_until_healthy`, the SkyPilot
    node entry) and load balancers poll for liveness, and which reveals nothing but "up".

    vLLM adds a `--middleware` class with `app.add_middleware(cls)`, so the app is the only argument it
    gets and the key comes from the environment (`key` is for use outside vLLM). A missing or empty key
    raises when the app builds its middleware stack: a misconfigured server never serves unguarded.
    """

    def __init__(self, app: ASGIApp, key: str | None = None) -> None:
        key = key if key is not None else os.environ.get(KEY_ENV, "")
        if not key:
            raise RuntimeError(
                f"{KEY_ENV} is empty: BearerKeyMiddleware needs the API key in ${KEY_ENV} (`kit serve` "
                "sets it from generation.api_key or --api-key)."
            )
        self.app = app
        self._key = key.encode()

    def authorized(self, scope: Scope) -> bool:
        """Whether the request may pass: an open path, or the right bearer key."""
        path = scope["path"].removeprefix(scope.get("root_path", ""))
        if path in OPEN_PATHS:
            return True
        given = [value for name, value in scope.get("headers", ()) if name.lower() == b"authorization"]
        if len(given) != 1:
            return False
        scheme, _, token = given[0].partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(token, self._key)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.authorized(scope):
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong API key"})
        else:
            await _unauthorized(send)


async def _unauthorized(send: Send) -> None:
    body = json.dumps(
        {"error": "Unauthorized: send the server's API key as `Authorization: Bearer <key>`."}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b"Bearer"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
