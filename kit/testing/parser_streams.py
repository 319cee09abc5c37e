"""A model output replayed through a built-in parser's streaming method, as vLLM's server feeds it.

``streamed`` hands a fresh parser the growing text piece by piece, checks the shape of every delta it
returns, and adds the deltas up the way an OpenAI client does; ``extracted`` is the non-streaming result
in the same form, so the two compare directly.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from kit.tool_parsers import BUILTIN_PLUGIN
from kit.tool_parsers.plugin_loader import LoadedPlugin, load_plugin


@dataclass(frozen=True)
class Reassembled:
    """Calls as ``(name, arguments JSON)`` in index order, and the content (None when there is none)."""

    calls: tuple[tuple[str, str], ...]
    content: str | None


@cache
def builtin_plugin() -> LoadedPlugin:
    return load_plugin(BUILTIN_PLUGIN)


def extracted(name: str, text: str) -> Reassembled:
    """What ``extract_tool_calls`` returns for the whole ``text``."""
    plugin = builtin_plugin()
    info = plugin.parsers[name](None, None).extract_tool_calls(text, plugin.make_request(None))
    calls = tuple((call.function.name, call.function.arguments) for call in info.tool_calls)
    return Reassembled(calls, info.content)


def streamed(name: str, text: str, cuts: Iterable[int] = ()) -> Reassembled:
    """Feed ``text`` to ``extract_tool_calls_streaming`` in pieces ending at ``cuts`` (any order, out of
    range ones folded in), the last piece ending at the end of ``text``."""
    plugin = builtin_plugin()
    parser = plugin.parsers[name](None, None)
    request = plugin.make_request(None)
    ends = sorted({cut % (len(text) + 1) for cut in cuts} | {len(text)})
    content: list[str] = []
    calls: list[list[str]] = []
    previous = ""
    for end in ends:
        current = text[:end]
        delta = parser.extract_tool_calls_streaming(
            previous, current, current[len(previous) :], [], [], [], request
        )
        previous = current
        if delta is None:
            continue
        assert delta.content is None or (isinstance(delta.content, str) and delta.content), delta
        assert delta.content or delta.tool_calls, "an empty delta instead of None"
        content.append(delta.content or "")
        for call in delta.tool_calls:
            # The built-ins send each call whole, in one delta: a new index, an id, the name, the arguments.
            assert call.index == len(calls), (call, calls)
            assert isinstance(call.id, str) and call.id and call.type == "function", call
            assert isinstance(call.function.name, str) and call.function.name, call
            assert isinstance(json.loads(call.function.arguments), dict), call
            calls.append([call.function.name, call.function.arguments])
    return Reassembled(
        tuple((call_name, arguments) for call_name, arguments in calls), "".join(content) or None
    )
