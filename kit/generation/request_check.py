"""Requests that vLLM's OpenAI server would refuse without saying what is wrong, refused here with a 400
that names the field.

Fuzzing `kit serve` found three: `messages` that is not a list ("'int' object is not iterable"), a tool
schema the chat template cannot read (`properties` that is not an object: "'list object' has no attribute
'items'"), and a string holding a lone UTF-16 surrogate, which no tokenizer can encode ("TextEncodeInput
must be Union[...]"). `kit serve` installs :class:`RequestCheckMiddleware` with vLLM's `--middleware`;
everything else goes to vLLM untouched, its own errors already name the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from kit.generation.server_auth import ASGIApp, Message, Receive, Scope, Send

CHECKED_PATHS = frozenset({"/v1/chat/completions", "/v1/completions"})
# In a UTF-8 JSON body a surrogate can only come as an escape; most bodies (token ids) have none to look for.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def problems(raw: bytes) -> Iterator[tuple[str, str]]:
    """``(field, what is wrong)`` for each fault of a request body that vLLM reports unclearly."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        return  # vLLM says what is wrong with the JSON
    if not isinstance(body, dict):
        return  # and that it is not an object
    if "messages" in body and not isinstance(body["messages"], list):
        yield "messages", f"must be a list of message objects, got {type(body['messages']).__name__}"
    tools = body.get("tools")
    if isinstance(tools, list):
        for i, tool in enumerate(tools):
            function = tool.get("function") if isinstance(tool, dict) else None
            parameters = function.get("parameters") if isinstance(function, dict) else None
            if isinstance(parameters, dict):
                yield from _schema_problems(parameters, f"tools.{i}.function.parameters")
    if _SURROGATE_ESCAPE.search(raw):
        yield from _lone_surrogates(body, "")


def _schema_problems(schema: dict[str, Any], where: str) -> Iterator[tuple[str, str]]:
    """What a chat template needs of a tool's parameters: JSON Schema's shape for `properties`,
    `required` and the property descriptions."""
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        yield f"{where}.properties", f"must be an object (JSON Schema), got {type(properties).__name__}"
    else:
        for name, spec in properties.items():
            if not isinstance(spec, dict):
                yield f"{where}.properties.{name}", f"must be an object, got {type(spec).__name__}"
            elif not isinstance(spec.get("description", ""), (str, type(None))):
                yield f"{where}.properties.{name}.description", "must be a string"
    required = schema.get("required", [])
    if not (isinstance(required, list) and all(isinstance(name, str) for name in required)):
        yield f"{where}.required", "must be a list of property names"


def _lone_surrogates(value: Any, where: str) -> Iterator[tuple[str, str]]:
    stack = [(value, where)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            if any("\ud800" <= char <= "\udfff" for char in value):
                yield where or "body", "holds an unpaired UTF-16 surrogate (\\ud800-\\udfff): not text"
        elif isinstance(value, dict):
            stack.extend((item, f"{where}.{key}" if where else str(key)) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((item, f"{where}.{i}" if where else str(i)) for i, item in enumerate(value))


class RequestCheckMiddleware:
    """Pure ASGI middleware: reads the body of a POST to the completion endpoints, answers 400 naming the
    field when :func:`problems` finds one, else hands the request, body and all, to the app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "").removeprefix(scope.get("root_path", ""))
        if scope["type"] != "http" or scope.get("method") != "POST" or path not in CHECKED_PATHS:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        raw = b"".join(chunks)
        found = next(problems(raw), None)
        if found is not None:
            await _bad_request(send, *found)
            return
        await self.app(scope, _replay(raw, receive), send)


def _replay(raw: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()  # http.disconnect, when the client goes
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return replay


async def _bad_request(send: Send, field: str, what: str) -> None:
    body = json.dumps(
        {"error": {"message": f"{field} {what}.", "type": "BadRequestError", "param": field, "code": 400}}
    ).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})
