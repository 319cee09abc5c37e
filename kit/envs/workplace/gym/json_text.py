"""The JSON text of NeMo-Gym's answers, written as its server writes it.

A tool's answer is serialised by FastAPI through pydantic's JSON encoder: compact, non-ASCII kept,
NaN and infinities as ``null``, and floats in pydantic's spelling (``1e-7`` rather than Python's
``1e-07``, and ``0.00001`` where Python writes ``1e-05``). A request FastAPI rejects (422) is written
by Starlette's ``JSONResponse``: ``json.dumps`` with compact separators and non-ASCII kept.

Text that UTF-8 cannot encode (a lone surrogate, which JSON's ``\ud800`` escapes can carry) makes either
writer fail; NeMo-Gym's server then answers 500 with ``repr`` of the exception as a JSON string.
"""

from __future__ import annotations

import json
import math
from typing import Any


def _float(value: float) -> str:
    if not math.isfinite(value):
        return "null"
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    if not exponent.startswith("-"):
        return text
    power = int(exponent)
    if power == -5:  # pydantic writes 1e-05 as a decimal, smaller powers with an unpadded exponent
        sign, digits = ("-", mantissa[1:]) if mantissa.startswith("-") else ("", mantissa)
        return f"{sign}0.0000{digits.replace('.', '')}"
    return f"{mantissa}e{power}"


def pydantic_json(value: Any) -> str:
    """``value`` as pydantic's JSON encoder writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{" + ",".join(f"{pydantic_json(str(k))}:{pydantic_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(pydantic_json(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def server_error(text: str) -> str:
    """The body NeMo-Gym's server answers when an exception escapes a request: its ``repr``, as JSON."""
    return json.dumps(text, ensure_ascii=False)


def _encodable(value: Any) -> None:
    # Raises UnicodeEncodeError for the first string pydantic would fail on, keys before values.
    if isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, dict):
        for key, item in value.items():
            _encodable(key)
            _encodable(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _encodable(item)


def output_body(output: Any) -> str:
    """The body of a tool's answer, ``{"output": ...}``."""
    try:
        _encodable(output)
    except UnicodeEncodeError as error:
        return server_error(
            f"PydanticSerializationError(Error serializing to JSON: UnicodeEncodeError: {error})"
        )
    return '{"output":' + pydantic_json(output) + "}"


def starlette_json(value: Any) -> str:
    """``value`` as Starlette's JSONResponse writes it (FastAPI's validation errors)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return server_error(repr(error))
    return text
