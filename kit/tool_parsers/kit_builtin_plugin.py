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

Arguments may be a JSON object or a string holding one. Each parser also has ``format_tool_calls``, the
inverse of ``extract_tool_calls``: the SFT warm-up writes its demonstrations with it. The trainer loads this
same file (through vLLM when it is installed, otherwise through the kit's stand-in for the vLLM names imported
below) and ``kit serve`` passes it to ``vllm serve --tool-parser-plugin``, so rollouts and the served endpoint
parse alike. Keep it self-contained: the standard library and these vLLM names only.

Content is the text outside the calls as written, or None when that is blank. When the output holds a call
that cannot be parsed, a parser returns no calls and the whole output as content, as vLLM's own parsers do,
and sets ``self.tool_call_error`` to the reason. vLLM ignores that attribute; the kit shows the reason to the
policy, with ``tool_call_format`` as the fix.

Streaming (``stream=True`` on the served endpoint): ``extract_tool_calls_streaming`` sends text as content
as soon as it cannot be part of a call, and each call as one delta (index, id, name and all its arguments)
as soon as it is complete: for ``kit`` and ``json`` when its JSON is, for ``hermes`` when its block is
closed. The deltas add up to exactly the calls and content ``extract_tool_calls`` returns for the whole
output, however the output is cut into pieces, except where that depends on how the output ends, which a
stream cannot see: text that could still begin a call is held back, and is lost if generation stops there
(a cut-off ``<tool_call>`` block, a trailing ``<tool``, for ``json`` an unclosed ``{`` or ``[``); an output
of only whitespace sends nothing; and when a call turns out malformed (for ``kit`` that includes text other
than ``</tool_call>`` right after a call), the calls before it are already sent, and the rest of the output
streams as content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

try:  # vLLM 0.32
    from vllm.entrypoints.generate.base.protocol import (
        DeltaFunctionCall,
        DeltaMessage,
        DeltaToolCall,
        ExtractedToolCallInformation,
        FunctionCall,
        ToolCall,
    )
except ImportError:  # vLLM 0.26 keeps them here
    from vllm.entrypoints.openai.engine.protocol import (
        DeltaFunctionCall,
        DeltaMessage,
        DeltaToolCall,
        ExtractedToolCallInformation,
        FunctionCall,
        ToolCall,
    )
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.tool_parsers import ToolParser, ToolParserManager

from kit.tool_parsers.json_text import DECODER as _DECODER
from kit.tool_parsers.json_text import BadCall as _BadCall
from kit.tool_parsers.json_text import TooDeep as _TooDeep
from kit.tool_parsers.json_text import decode_error as _decode_error
from kit.tool_parsers.json_text import json_value as _json_value
from kit.tool_parsers.json_text import partial_tag_at as _partial_tag_at
from kit.tool_parsers.json_text import past_too_deep as _past_too_deep

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_WHITESPACE = re.compile(r"\s*")
# Where a bare JSON call (or a list of them) may begin.
_JSON_START = re.compile(r"[\[{]")
# A JSON value that starts like a call: when it fails to decode, the model meant a call and botched it.
_CALL_START = re.compile(r'\[?\s*\{\s*"name"\s*:')


def _skip_whitespace(text: str, pos: int) -> int:
    return _WHITESPACE.match(text, pos).end()


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
            scan = _past_too_deep(text, start) if isinstance(error, RecursionError) else start + 1
            continue
        found = _as_calls(value)
        if found is not None:
            calls.extend(_call_from(obj) for obj in found)
            outside.append(text[pos:start])
            pos = end
        scan = end
    outside.append(text[pos:])
    return calls, "".join(outside)


# --- streaming --------------------------------------------------------------------------------------------


@dataclass
class _Step:
    """What the text from the streaming position holds: content up to ``content_end`` that no later text
    can change, then ``calls`` (scanning goes on at ``resume``), a call that cannot be parsed (``fault``),
    or something not yet decided (``resume`` is None: wait for more text)."""

    content_end: int
    calls: list[ToolCall] = field(default_factory=list)
    resume: int | None = None
    fault: bool = False


# --- the parsers --------------------------------------------------------------------------------------------


class _KitToolParser(ToolParser):
    """Shared ``extract_tool_calls`` and ``extract_tool_calls_streaming`` of the built-ins; subclasses set
    ``tool_call_format`` and implement ``_split`` (a whole output) and ``_stream_step`` (a growing one)."""

    tool_call_format = '<tool_call>{"name": ..., "arguments": {...}}</tool_call>'
    tool_call_error: str | None = None
    # Streaming state. vLLM makes a parser per request, so these start fresh for each output.
    _streamed_to = 0  # text before this position has been sent, or deliberately dropped
    _faulted = False  # a malformed call was found: the rest is content
    _held_whitespace = ""  # blank content is held until text follows, so blank content stays None
    _content_sent = False

    def _split(self, text: str) -> tuple[list[ToolCall], str]:
        raise NotImplementedError

    @staticmethod
    def format_tool_calls(calls: list[dict]) -> str:
        """``calls`` (``{"name", "arguments"}`` each) as this parser reads them: the SFT warm-up's text."""
        return "".join(f"{_OPEN}\n{json.dumps(call, ensure_ascii=False)}\n{_CLOSE}" for call in calls)

    def _stream_step(self, text: str, pos: int) -> _Step:
        raise NotImplementedError

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
            tools_called=True, tool_calls=calls, content=content if content.strip() else None
        )

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: ChatCompletionRequest,
    ) -> DeltaMessage | None:
        content: list[str] = []
        calls: list[ToolCall] = []
        pos = self._streamed_to
        while True:
            if self._faulted:
                content.append(current_text[pos:])
                pos = len(current_text)
                break
            step = self._stream_step(current_text, pos)
            content.append(current_text[pos : step.content_end])
            calls += step.calls
            if step.fault:
                self._faulted, pos = True, step.content_end
            elif step.resume is None:
                pos = step.content_end
                break
            else:
                pos = step.resume
        self._streamed_to = pos
        return self._delta("".join(content), calls)

    def _delta(self, content: str, calls: list[ToolCall]) -> DeltaMessage | None:
        if not self._content_sent:
            content, self._held_whitespace = self._held_whitespace + content, ""
            if not content.strip():
                content, self._held_whitespace = "", content
            self._content_sent = bool(content)
        deltas = []
        for call in calls:
            name, arguments = call.function.name, call.function.arguments
            # vLLM's end-of-stream check sends what prev_tool_call_arr holds beyond streamed_args_for_tool:
            # they agree, so it adds nothing.
            self.prev_tool_call_arr.append({"name": name, "arguments": json.loads(arguments)})
            self.streamed_args_for_tool.append(arguments)
            deltas.append(
                DeltaToolCall(
                    index=len(self.prev_tool_call_arr) - 1,
                    id=call.id,
                    type="function",
                    function=DeltaFunctionCall(name=name, arguments=arguments),
                )
            )
        if not (content or deltas):
            return None
        fields = {"content": content} if content else {}
        return DeltaMessage(**fields, tool_calls=deltas) if deltas else DeltaMessage(**fields)


class _TaggedToolParser(_KitToolParser):
    """``<tool_call>`` blocks; ``close_optional_at_end`` lets the last block lack its ``</tool_call>``."""

    close_optional_at_end: bool
    _close_pending = False  # streaming: a call was sent before its </tool_call> arrived

    def _split(self, text: str) -> tuple[list[ToolCall], str]:
        return _split_tagged(text, self.close_optional_at_end)

    def _stream_step(self, text: str, pos: int) -> _Step:
        if self._close_pending:
            after = _skip_whitespace(text, pos)
            if text.startswith(_CLOSE, after):
                self._close_pending = False
                return _Step(pos, resume=after + len(_CLOSE))
            return _Step(pos, fault=not _CLOSE.startswith(text[after:]))
        start = text.find(_OPEN, pos)
        if start == -1:
            return _Step(_partial_tag_at(text, pos, _OPEN))
        try:
            found = _json_value(text, _skip_whitespace(text, start + len(_OPEN)))
            if found is None:
                return _Step(start)
            call = _call_from(found[0])
        except _BadCall:
            return _Step(start, fault=True)
        if self.close_optional_at_end:
            # Generation often stops on </tool_call> itself, which then never arrives: send the call now.
            self._close_pending = True
            return _Step(start, [call], resume=found[1])
        after = _skip_whitespace(text, found[1])
        if text.startswith(_CLOSE, after):
            return _Step(start, [call], resume=after + len(_CLOSE))
        return _Step(start, fault=not _CLOSE.startswith(text[after:]))


@ToolParserManager.register_module("kit")
class KitToolParser(_TaggedToolParser):
    close_optional_at_end = True


@ToolParserManager.register_module("hermes")
class HermesToolParser(_TaggedToolParser):
    close_optional_at_end = False


@ToolParserManager.register_module("json")
class JsonToolParser(_KitToolParser):
    tool_call_format = '{"name": ..., "arguments": {...}}'

    @staticmethod
    def format_tool_calls(calls: list[dict]) -> str:
        return json.dumps(calls[0] if len(calls) == 1 else calls, ensure_ascii=False)

    def _split(self, text: str) -> tuple[list[ToolCall], str]:
        return _split_bare_json(text)

    def _stream_step(self, text: str, pos: int) -> _Step:
        scan = pos
        while match := _JSON_START.search(text, scan):
            start = match.start()
            try:
                found = _json_value(text, start)
            except _BadCall as error:
                if _CALL_START.match(text, start):
                    return _Step(start, fault=True)
                scan = _past_too_deep(text, start) if isinstance(error, _TooDeep) else start + 1
                continue
            if found is None:
                return _Step(start)
            value, end = found
            objects = _as_calls(value)
            if objects is None:
                scan = end
                continue
            try:
                return _Step(start, [_call_from(obj) for obj in objects], resume=end)
            except _BadCall:
                return _Step(start, fault=True)
        return _Step(len(text))
