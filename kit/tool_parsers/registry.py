"""Which parser a name means, the never-raising parser the rollout calls, and the matching vLLM server args.

A name resolves, in order, to: a parser the plugin file registered, a kit built-in (from
``kit_builtin_plugin.py``, itself a plugin file), or one of vLLM's own parsers (when vLLM is importable).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.tool_parsers.plugin_loader import (
    LoadedPlugin,
    RequestFactory,
    load_plugin,
    load_vllm_parser,
    vllm_parsers,
    vllm_request,
)
from kit.tool_parsers.result import ParseResult, ToolCall, ToolParserError

logger = logging.getLogger(__name__)

BUILTIN_PLUGIN = Path(__file__).with_name("kit_builtin_plugin.py")
"""The plugin file holding the kit's built-in parsers; ``kit serve`` passes it to vLLM for them."""

BUILTIN_PARSERS = ("hermes", "json", "kit")
"""Names registered by :data:`BUILTIN_PLUGIN`."""

_MAX_REASON_CHARS = 300
_FUNCTION_FIELDS = ("name", "description", "parameters", "strict")


class _InvalidOutput(ValueError):
    """A parser returned something other than well-formed ``ExtractedToolCallInformation``."""


@dataclass(frozen=True)
class _Resolved:
    source: str  # "plugin", "builtin" or "vllm"
    parser_cls: type
    make_request: RequestFactory
    plugin_path: str | None  # the file a vLLM server must load for this parser, if any


class ToolCallParser:
    """A loaded tool parser. :meth:`parse` never raises; see :func:`load_parser`.

    ``error_counts`` counts failed parses by kind: ``malformed_tool_call`` (the model wrote a call the
    parser rejected), ``parser_exception`` (the parser raised) and ``invalid_parser_output`` (it returned
    something unusable). The first failure of the last two kinds is logged as a warning.
    """

    def __init__(self, name: str, resolved: _Resolved, tokenizer: Any = None) -> None:
        self.name = name
        self.source = resolved.source
        self.plugin_path = resolved.plugin_path
        self.tokenizer = tokenizer
        self.error_counts: Counter[str] = Counter()
        self._parser_cls = resolved.parser_cls
        self._make_request = resolved.make_request
        self._format_hint: str | None = getattr(resolved.parser_cls, "tool_call_format", None)

    def __repr__(self) -> str:
        where = f" from {self.plugin_path}" if self.plugin_path else ""
        return f"ToolCallParser({self.name!r}, {self.source}{where})"

    def parse(self, text: str, tools: list[dict[str, Any]] | None = None) -> ParseResult:
        """Parse one model output. ``tools`` are the tool schemas the model was shown, chat-completions
        ``{"type": "function", "function": {...}}`` or flat ``{"type": "function", "name": ..., ...}``."""
        try:
            request = self._make_request(_chat_tools(tools))
            # A fresh parser per output, as vLLM makes one per request: parsers may keep state.
            parser = self._parser_cls(self.tokenizer, request.tools)
            info = parser.extract_tool_calls(text, request)
            reason = getattr(parser, "tool_call_error", None)
        except Exception as error:
            return self._failure(
                "parser_exception", f"the {self.name} tool parser failed ({_describe(error)})", text
            )
        if reason:
            return self._failure("malformed_tool_call", str(reason), text)
        try:
            calls, content = _read_output(info)
        except Exception as error:
            detail = (
                str(error) if isinstance(error, _InvalidOutput) else f"unusable output ({_describe(error)})"
            )
            return self._failure(
                "invalid_parser_output", f"the {self.name} tool parser returned {detail}", text
            )
        if calls is None:
            return ParseResult(content=_non_blank(text))
        return ParseResult(tool_calls=calls, content=_non_blank(content))

    def format_tool_calls(self, calls: list[ToolCall]) -> str | None:
        """``calls`` written as this parser reads them, from the parser's optional ``format_tool_calls``
        (the inverse of ``extract_tool_calls``); None when it has none, and the chat template then renders
        the calls from the message's ``tool_calls``."""
        parser = self._parser_cls(self.tokenizer, None)
        if not callable(getattr(parser, "format_tool_calls", None)):
            return None
        return parser.format_tool_calls([{"name": c.name, "arguments": c.arguments} for c in calls])

    def _failure(self, kind: str, reason: str, text: str) -> ParseResult:
        self.error_counts[kind] += 1
        if len(reason) > _MAX_REASON_CHARS:
            reason = reason[:_MAX_REASON_CHARS] + "..."
        first_parser_fault = kind != "malformed_tool_call" and self.error_counts[kind] == 1
        logger.log(
            logging.WARNING if first_parser_fault else logging.DEBUG,
            "tool parser %r: %s (%s #%d)",
            self.name,
            reason,
            kind,
            self.error_counts[kind],
            exc_info=kind == "parser_exception",
        )
        error = f"Error: could not parse tool call: {reason.rstrip('.')}."
        if self._format_hint:
            error += f" Write calls as {self._format_hint}"
        return ParseResult(content=_non_blank(text), error=error)


def _non_blank(text: object) -> str | None:
    return text if isinstance(text, str) and text.strip() else None


def _describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"


def _chat_tools(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """``tools`` in chat-completions shape; flat (Responses / NeMo-Gym) schemas get wrapped."""
    if not tools:
        return None
    return [
        tool
        if "function" in tool
        else {"type": "function", "function": {key: tool[key] for key in _FUNCTION_FIELDS if key in tool}}
        for tool in tools
    ]


def _read_output(info: Any) -> tuple[list[ToolCall] | None, str | None]:
    """Calls (None when the parser says no tool was called) and content from ``extract_tool_calls``."""
    tools_called = getattr(info, "tools_called", None)
    raw_calls = getattr(info, "tool_calls", None)
    content = getattr(info, "content", None)
    if not isinstance(tools_called, bool) or not isinstance(raw_calls, list):
        raise _InvalidOutput(f"{type(info).__name__}, not ExtractedToolCallInformation")
    if content is not None and not isinstance(content, str):
        raise _InvalidOutput(f"content of type {type(content).__name__}, not a string")
    if not tools_called:
        return None, content
    calls = []
    for raw in raw_calls:
        function = getattr(raw, "function", None)
        name, arguments = getattr(function, "name", None), getattr(function, "arguments", None)
        if not isinstance(name, str) or not name:
            raise _InvalidOutput(f"a tool call without a name ({raw!r:.80})")
        if not isinstance(arguments, str):
            raise _InvalidOutput(f"arguments for {name} that are not a JSON string")
        try:
            decoded = json.loads(arguments)
        except (ValueError, RecursionError):
            raise _InvalidOutput(f"arguments for {name} that are not valid JSON") from None
        if not isinstance(decoded, dict):
            raise _InvalidOutput(f"arguments for {name} that are not a JSON object")
        calls.append(ToolCall(name=name, arguments=decoded))
    return calls, content


def _resolve(name: str, plugin_path: str | Path | None) -> _Resolved:
    plugin = load_plugin(plugin_path) if plugin_path is not None else None
    if plugin is not None and name in plugin.parsers:
        return _Resolved("plugin", plugin.parsers[name], plugin.make_request, plugin.path)
    if name in BUILTIN_PARSERS:
        builtin = load_plugin(BUILTIN_PLUGIN)
        return _Resolved("builtin", builtin.parsers[name], builtin.make_request, builtin.path)
    if name in (vllm_parsers() or {}):
        return _Resolved("vllm", load_vllm_parser(name), vllm_request, None)
    raise ToolParserError(_unknown_name_message(name, plugin))


def _unknown_name_message(name: str, plugin: LoadedPlugin | None) -> str:
    lines = [f"Tool parser {name!r} is not registered."]
    if plugin is not None:
        registered = ", ".join(sorted(plugin.parsers)) or "no parsers"
        lines.append(f"The plugin file {plugin.path} registers: {registered}.")
    lines.append(f"Kit built-ins: {', '.join(BUILTIN_PARSERS)}.")
    native = vllm_parsers()
    if native is None:
        lines.append("vLLM is not installed, so its own parsers are not available.")
    else:
        lines.append(f"vLLM's own: {', '.join(sorted(native))}.")
    where = "the plugin file" if plugin is not None else "a plugin file set as rollout.tool_parser_plugin"
    lines.append(
        f"Set rollout.tool_parser (--tool-parser) to one of these, or register {name!r} in {where} "
        f"with @ToolParserManager.register_module({name!r})."
    )
    return " ".join(lines)


def load_parser(name: str, plugin_path: str | Path | None = None, tokenizer: Any = None) -> ToolCallParser:
    """Load the tool parser ``name``: one the plugin file registers, else a kit built-in, else vLLM's own.

    ``tokenizer`` is handed to the parser's constructor, as vLLM does (the built-ins ignore it; some of
    vLLM's parsers need it). Raises :class:`ToolParserError` when the plugin file is missing or fails to
    import, when ``name`` is not registered anywhere, or when the parser cannot be constructed.
    """
    resolved = _resolve(name, plugin_path)
    try:
        resolved.parser_cls(tokenizer, None)
    except Exception as error:
        raise ToolParserError(
            f"Tool parser {name!r} ({resolved.source}) could not be created with "
            f"tokenizer={tokenizer!r:.60}: {_describe(error)}. "
            "Some parsers need the model's tokenizer: pass it to load_parser."
        ) from error
    return ToolCallParser(name, resolved, tokenizer)


def serve_args(name: str, plugin_path: str | Path | None = None) -> list[str]:
    """``vllm serve`` arguments that make the server parse tool calls exactly as :func:`load_parser` does
    with the same arguments; for a kit built-in, the plugin file is :data:`BUILTIN_PLUGIN`."""
    resolved = _resolve(name, plugin_path)
    args = ["--enable-auto-tool-choice", "--tool-call-parser", name]
    if resolved.plugin_path is not None:
        args += ["--tool-parser-plugin", resolved.plugin_path]
    return args


def available_parsers(plugin_path: str | Path | None = None) -> dict[str, list[str]]:
    """Parser names by source, in resolution order: ``plugin`` (when given), ``builtin``, ``vllm``
    (empty without vLLM)."""
    names: dict[str, list[str]] = {}
    if plugin_path is not None:
        names["plugin"] = sorted(load_plugin(plugin_path).parsers)
    names["builtin"] = list(BUILTIN_PARSERS)
    names["vllm"] = sorted(vllm_parsers() or {})
    return names
