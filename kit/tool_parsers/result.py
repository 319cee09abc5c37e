"""Value types shared by the tool-parser hook: what a parse returns, and the loader's error."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One tool call found in a model's output; ``arguments`` is always a decoded JSON object."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ParseResult:
    """The outcome of parsing one model output.

    ``error`` is set when the output holds a tool call that could not be parsed (or the parser itself
    failed); it is written for the policy to read as an observation. When ``error`` is set,
    ``tool_calls`` is empty and ``content`` is the whole output. Otherwise ``content`` is the text
    outside the calls, or None when that is empty.
    """

    tool_calls: list[ToolCall] = field(default_factory=list)
    content: str | None = None
    error: str | None = None


class ToolParserError(ValueError):
    """A tool parser could not be loaded: missing or broken plugin file, or an unknown parser name."""
