"""gym-grpo-kit's built-in tool-call parsers, written as one vLLM tool-parser plugin file.

Registered names:

* ``kit``: the kit's default chat template,
  ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``, one block per call, text allowed
  around them. Lenient: whitespace inside the tags is optional, and the last block may lack its
  ``</tool_call>`` (generation often stops on that string, which is then not part of the output).
* ``hermes``: strict ``<tool_call>{json}</tool_call>`` blocks, every block closed. Loading this file into a
  vLLM server REPLACES vLLM's own ``hermes`` parser there: vLLM's needs ``<tool_call>`` to be special tokens
  in the model's vocabulary, which small models such as SmolLM2-135M-Instruct lack; this one reads plain text.
* ``json``: bare JSON calls ``{"name": ..., "arguments": {...}}`` (or ``"parameters"``), or a JSON list of
  them, anywhere in the text.

Arguments may be a JSON object or a string holding one. The trainer loads this same file (through vLLM when
it is installed, otherwise through the kit's stand-in for the vLLM names imported below) and ``kit serve``
passes it to ``vllm serve --tool-parser-plugin``, so rollouts and the served endpoint parse alike. Keep it
self-contained: the standard library and these vLLM names only.

When the output holds a call that cannot be parsed, a parser returns no calls and the whole output as content,
as vLLM's own parsers do, and sets ``self.tool_call_error`` to the reason. vLLM ignores that attribute; the
kit shows the reason to the policy, with ``tool_call_format`` as the fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import partial

try:  # vLLM 0.32
    from vllm.entrypoints.generate.base.protocol import ExtractedToolCallInformation, FunctionCall, ToolCall
except ImportError:  # vLLM 0.26 keeps them here
    from vllm.entrypoints.openai.engine.protocol import ExtractedToolCallInformation, FunctionCall, ToolCall
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.tool_parsers import ToolParser, ToolParserManager

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_WHITESPACE = re.compile(r"\s*")
# Where a bare JSON call (or a list of them) may begin.
_JSON_START = re.compile(r"[\[{]")
# A JSON value that starts like a call: when it fails to decode, the model meant a call and botched it.
_CALL_START = re.compile(r'\[?\s*\{\s*"name"\s*:')
_DECODER = json.JSONDecoder()


class _BadCall(ValueError):
    """The output holds a tool call that cannot be parsed; the message says why."""


def _skip_whitespace(text: str, pos: int) -> int:
    return _WHITESPACE.match(text, pos).end()


def _decode_error(error: Exception, start: int) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg} at character {error.pos - start}"
    if isinstance(error, RecursionError):
        return "JSON nested too deeply"
    return str(error)


def _decode_at(text: str, pos: int, where: str) -> tuple[object, int]:
    try:
        return _DECODER.raw_decode(text, pos)
    except (ValueError, RecursionError) as error:
        raise _BadCall(f"invalid JSON {where} ({_decode_error(error, pos)})") from None


def _call_from(obj: object) -> ToolCall:
    if not isinstance(obj, dict):
        raise _BadCall(f"a call must be a JSON object, not {type(obj).__name__}")
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise _BadCall('a call needs a "name" string')
    arguments = obj.get("arguments", obj.get("parameters"))
    if arguments is None:
        arguments = {}
    elif isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            raise _BadCall(f'the "arguments" of {name} are a string that is not JSON') from None
    if not isinstance(arguments, dict):
        raise _BadCall(f'the "arguments" of {name} must be a JSON object')
    return ToolCall(function=FunctionCall(name=name, arguments=json.dumps(arguments, ensure_ascii=False)))


def _split_tagged(text: str, close_optional_at_end: bool) -> tuple[list[ToolCall], str]:
    """Calls in ``<tool_call>`` blocks, and the text outside them."""
    calls: list[ToolCall] = []
    outside: list[str] = []
    pos = 0
    while (start := text.find(_OPEN, pos)) != -1:
        outside.append(text[pos:start])
        obj, end = _decode_at(text, _skip_whitespace(text, start + len(_OPEN)), f"after {_OPEN}")
        calls.append(_call_from(obj))
        end = _skip_whitespace(text, end)
        if text.startswith(_CLOSE, end):
            pos = end + len(_CLOSE)
        elif end == len(text) and close_optional_at_end:
            pos = end
        elif end == len(text):
            raise _BadCall(f"the last {_OPEN} block is not closed with {_CLOSE}")
        else:
            raise _BadCall(f"expected {_CLOSE} after the JSON of the call, found {text[end : end + 20]!r}")
    outside.append(text[pos:])
    return calls, "".join(outside)


def _as_calls(value: object) -> list[object] | None:
    """The call objects ``value`` stands for, or None when it is ordinary JSON rather than a call."""

    def is_call(item: object) -> bool:
        return isinstance(item, dict) and "name" in item and ("arguments" in item or "parameters" in item)

    if is_call(value):
        return [value]
    if isinstance(value, list) and value and all(is_call(item) for item in value):
        return value
    return None


def _split_bare_json(text: str) -> tuple[list[ToolCall], str]:
    """Calls written as bare JSON (objects or lists of them), and the text outside them."""
    calls: list[ToolCall] = []
    outside: list[str] = []
    pos = scan = 0
    while match := _JSON_START.search(text, scan):
        start = match.start()
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError) as error:
            if _CALL_START.match(text, start):
                raise _BadCall(f"invalid JSON in the call ({_decode_error(error, start)})") from None
            scan = start + 1
            continue
        found = _as_calls(value)
        if found is not None:
            calls.extend(_call_from(obj) for obj in found)
            outside.append(text[pos:start])
            pos = end
        scan = end
    outside.append(text[pos:])
    return calls, "".join(outside)


class _KitToolParser(ToolParser):
    """Shared ``extract_tool_calls`` of the built-ins; subclasses set ``_split`` and ``tool_call_format``."""

    _split: Callable[[str], tuple[list[ToolCall], str]]
    tool_call_format = '<tool_call>{"name": ..., "arguments": {...}}</tool_call>'
    tool_call_error: str | None = None

    def extract_tool_calls(
        self, model_output: str, request: ChatCompletionRequest
    ) -> ExtractedToolCallInformation:
        self.tool_call_error = None
        try:
            calls, content = self._split(model_output)
        except _BadCall as error:
            self.tool_call_error = str(error)
            calls = []
        if not calls:
            return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
        return ExtractedToolCallInformation(
            tools_called=True, tool_calls=calls, content=content.strip() or None
        )


@ToolParserManager.register_module("kit")
class KitToolParser(_KitToolParser):
    _split = staticmethod(partial(_split_tagged, close_optional_at_end=True))


@ToolParserManager.register_module("hermes")
class HermesToolParser(_KitToolParser):
    _split = staticmethod(partial(_split_tagged, close_optional_at_end=False))


@ToolParserManager.register_module("json")
class JsonToolParser(_KitToolParser):
    tool_call_format = '{"name": ..., "arguments": {...}}'
    _split = staticmethod(_split_bare_json)
