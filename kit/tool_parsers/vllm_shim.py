"""A stand-in for the few vLLM names a tool-parser plugin imports, for machines without vLLM.

Plugin files are written against vLLM (``from vllm.tool_parsers import ToolParser, ToolParserManager``, ...).
Where vLLM is not installed, :func:`stand_in_for_vllm` puts small look-alike modules into ``sys.modules`` for
as long as the plugin file executes, and takes them out again afterwards, so the same unchanged file loads
while ``import vllm`` keeps failing everywhere else in the process. The classes keep vLLM's constructor
fields; nothing else of vLLM is imitated.
"""

from __future__ import annotations

import sys
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from types import ModuleType
from typing import Any


@dataclass(kw_only=True)
class FunctionCall:
    name: str
    arguments: str
    id: str | None = None


@dataclass(kw_only=True)
class ToolCall:
    function: FunctionCall
    id: str = field(default_factory=lambda: f"chatcmpl-tool-{uuid.uuid4().hex[:16]}")
    type: str = "function"


@dataclass(kw_only=True)
class ExtractedToolCallInformation:
    tools_called: bool
    tool_calls: list[ToolCall]
    content: str | None = None


@dataclass(kw_only=True)
class DeltaFunctionCall:
    name: str | None = None
    arguments: str | None = None


@dataclass(kw_only=True)
class DeltaToolCall:
    index: int
    id: str | None = None
    type: str | None = None
    function: DeltaFunctionCall | None = None


@dataclass(kw_only=True)
class DeltaMessage:
    role: str | None = None
    content: str | None = None
    reasoning: str | None = None
    tool_calls: list[DeltaToolCall] = field(default_factory=list)


@dataclass(kw_only=True)
class FunctionDefinition:
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


@dataclass(kw_only=True)
class ChatCompletionToolsParam:
    function: FunctionDefinition
    type: str = "function"


@dataclass(kw_only=True)
class ChatCompletionRequest:
    messages: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None
    tools: list[ChatCompletionToolsParam] | None = None
    tool_choice: Any = None

    def __post_init__(self) -> None:
        # vLLM's default: "auto" when tools are given, else "none".
        if self.tool_choice is None:
            self.tool_choice = "auto" if self.tools else "none"


def make_request(tools: list[dict[str, Any]] | None) -> ChatCompletionRequest:
    """A request carrying ``tools`` (chat-completions format), as vLLM's parsers receive it."""
    params = [
        ChatCompletionToolsParam(
            function=FunctionDefinition(
                name=tool["function"]["name"],
                description=tool["function"].get("description"),
                parameters=tool["function"].get("parameters"),
            )
        )
        for tool in tools or []
    ]
    return ChatCompletionRequest(tools=params or None)


class ToolParser:
    """vLLM's ``ToolParser`` base: subclasses implement ``extract_tool_calls(model_output, request)``, and
    ``extract_tool_calls_streaming(...)`` for ``stream=True`` requests."""

    def __init__(self, tokenizer: Any, tools: list[Any] | None = None) -> None:
        self.prev_tool_call_arr: list[dict] = []
        self.current_tool_id = -1
        self.current_tool_name_sent = False
        self.streamed_args_for_tool: list[str] = []
        self.model_tokenizer = tokenizer
        self.tools = list(tools or [])

    @cached_property
    def vocab(self) -> dict[str, int]:
        return self.model_tokenizer.get_vocab()

    def adjust_request(self, request: Any) -> Any:
        return request

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        raise NotImplementedError("ToolParser.extract_tool_calls has not been implemented")

    def extract_tool_calls_streaming(
        self,
        previous_text: str,
        current_text: str,
        delta_text: str,
        previous_token_ids: Sequence[int],
        current_token_ids: Sequence[int],
        delta_token_ids: Sequence[int],
        request: Any,
    ) -> DeltaMessage | None:
        raise NotImplementedError("ToolParser.extract_tool_calls_streaming has not been implemented")


def _new_manager() -> type:
    """A ``ToolParserManager`` with its own registry, so each plugin file's registrations stay apart."""

    class ToolParserManager:
        tool_parsers: dict[str, type[ToolParser]] = {}

        @classmethod
        def register_module(
            cls, name: str | list[str] | None = None, force: bool = True, module: type | None = None
        ) -> Any:
            def register(parser: type) -> type:
                if not (isinstance(parser, type) and issubclass(parser, ToolParser)):
                    raise TypeError(f"module must be subclass of ToolParser, but got {parser!r}")
                names = [name] if isinstance(name, str) else name or [parser.__name__]
                for each in names:
                    if not force and each in cls.tool_parsers:
                        raise KeyError(f"{each} is already registered")
                    cls.tool_parsers[each] = parser
                return parser

            return register if module is None else register(module)

    return ToolParserManager


_PROTOCOL = (
    "DeltaFunctionCall",
    "DeltaMessage",
    "DeltaToolCall",
    "ExtractedToolCallInformation",
    "FunctionCall",
    "ToolCall",
)
_PARSERS = ("ToolParser", "ToolParserManager")
# Import path -> names, for vLLM 0.32, 0.26 and the releases before them.
EXPORTS: dict[str, tuple[str, ...]] = {
    "vllm.tool_parsers": _PARSERS,
    "vllm.entrypoints.generate.base.protocol": _PROTOCOL,
    "vllm.entrypoints.openai.engine.protocol": _PROTOCOL,
    "vllm.entrypoints.openai.chat_completion.protocol": ("ChatCompletionRequest", "ChatCompletionToolsParam"),
    "vllm.entrypoints.openai.tool_parsers": _PARSERS,
    "vllm.entrypoints.openai.protocol": (*_PROTOCOL, "ChatCompletionRequest"),
}

_lock = threading.Lock()


def _modules(manager: type, exports: dict[str, tuple[str, ...]]) -> dict[str, ModuleType]:
    values = {
        "ChatCompletionRequest": ChatCompletionRequest,
        "ChatCompletionToolsParam": ChatCompletionToolsParam,
        "DeltaFunctionCall": DeltaFunctionCall,
        "DeltaMessage": DeltaMessage,
        "DeltaToolCall": DeltaToolCall,
        "ExtractedToolCallInformation": ExtractedToolCallInformation,
        "FunctionCall": FunctionCall,
        "ToolCall": ToolCall,
        "ToolParser": ToolParser,
        "ToolParserManager": manager,
    }
    modules: dict[str, ModuleType] = {}
    for path, names in exports.items():
        parts = path.split(".")
        for depth in range(1, len(parts) + 1):
            name = ".".join(parts[:depth])
            if name not in modules:
                module = modules[name] = ModuleType(name, "gym-grpo-kit's stand-in for vLLM")
                module.__path__ = []  # a package with nothing on disk: other vllm.* imports still fail
                if depth > 1:
                    setattr(modules[".".join(parts[: depth - 1])], parts[depth - 1], module)
        for attribute in names:
            setattr(modules[path], attribute, values[attribute])
    return modules


@contextmanager
def stand_in_for_vllm(exports: dict[str, tuple[str, ...]] = EXPORTS) -> Iterator[type]:
    """Make the vLLM names in ``exports`` (default :data:`EXPORTS`, every layout the kit knows)
    importable inside the block; yields the block's ``ToolParserManager``, whose ``tool_parsers`` holds
    what the plugin registered."""
    manager = _new_manager()
    modules = _modules(manager, exports)
    with _lock:
        before = {name: sys.modules[name] for name in _vllm_module_names()}
        sys.modules.update(modules)
        try:
            yield manager
        finally:
            for name in _vllm_module_names():
                sys.modules.pop(name, None)
            sys.modules.update(before)


def _vllm_module_names() -> list[str]:
    # tuple() copies the keys in one step, so imports on other threads cannot break the iteration.
    return [name for name in tuple(sys.modules) if name == "vllm" or name.startswith("vllm.")]
