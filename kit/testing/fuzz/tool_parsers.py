"""Fuzzing the built-in tool parsers: model outputs of every shape, and the checks one output must pass,
parsed whole (`check_parse`) and streamed in pieces (`check_stream`).

Used by tests/test_tool_parsers_fuzz.py (which adds the round-trip and well-formed streaming properties)
and bench/fuzz.py.
"""

from __future__ import annotations

import json
from functools import cache

from hypothesis import strategies as st

from kit.testing.fuzz.verdicts import Crash, Unclear, Wrong
from kit.testing.parser_streams import streamed
from kit.tool_parsers import BUILTIN_PARSERS, ParseResult, ToolCall, ToolCallParser, load_parser

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
tool_names = st.sampled_from(["get_weather", "unknown_tool", "send_email", ""]) | st.text(
    min_size=1, max_size=12
)

# Call-shaped values, valid or not: wrong types, missing keys, arguments as strings or as non-JSON.
call_objects = st.fixed_dictionaries(
    {"name": tool_names | json_scalars},
    optional={
        "arguments": json_values | json_objects.map(json.dumps) | st.text(max_size=10),
        "parameters": json_objects,
    },
)
call_json = call_objects.map(json.dumps) | st.lists(call_objects, max_size=3).map(json.dumps)
truncated_json = st.tuples(call_json, st.integers(min_value=0)).map(lambda t: t[0][: t[1] % (len(t[0]) + 1)])
TOKENS = [
    "<tool_call>",
    "</tool_call>",
    "<tool_call>\n",
    "\n</tool_call>",
    "<TOOLCALL>",
    "</TOOLCALL>",
    "<tool_call",
    "{",
    "}",
    "[",
    "]",
    '"',
    ":",
    ",",
    "\\",
    "\\u",
    "\n",
    " ",
    "\t",
    '"name"',
    '"arguments"',
    '"parameters"',
    "null",
    "NaN",
    "1e999",
    "9" * 5000,
    "\ud800",
    "é",
    "😀",
    "\x00",
    "[" * 50,
    "{" * 50,
]
fragments = (
    st.sampled_from(TOKENS)
    | st.text(max_size=20)
    | call_json
    | truncated_json
    | call_json.map(lambda body: f"<tool_call>{body}</tool_call>")
    | call_json.map(lambda body: f"<tool_call>\n{body}\n")
)
documents = st.lists(fragments, max_size=8).map("".join)
huge_documents = st.tuples(documents, st.integers(min_value=1, max_value=2000)).map(
    lambda t: (t[0] * t[1])[:20_000]
)
model_outputs = documents | huge_documents | st.text(max_size=200)


def assert_well_formed(result: ParseResult, text: str) -> None:
    assert isinstance(result, ParseResult)
    assert isinstance(result.tool_calls, list)
    for call in result.tool_calls:
        assert isinstance(call, ToolCall)
        assert isinstance(call.name, str) and call.name
        assert isinstance(call.arguments, dict)
        json.dumps(call.arguments)
    assert result.content is None or (isinstance(result.content, str) and result.content.strip())
    if result.error is not None:
        assert result.tool_calls == [] and result.content == (text if text.strip() else None)


@cache
def builtin_parsers() -> dict[str, ToolCallParser]:
    return {name: load_parser(name) for name in BUILTIN_PARSERS}


ERROR_PREFIX = "Error: could not parse tool call: "


def check_parse(text: str) -> None:
    """Every built-in on one output: no exception, a well-formed result, an error that says what is wrong.
    Raises Crash, Unclear or Wrong (kit.testing.fuzz.verdicts)."""
    for name, parser in builtin_parsers().items():
        before = dict(parser.error_counts)
        try:
            result = parser.parse(text)
        except Exception as error:
            raise Crash(f"{name} raised {error!r} on {text[:200]!r}") from error
        # The parser itself never raised or returned garbage: every failure was a malformed call.
        faults = {kind for kind, count in parser.error_counts.items() if count != before.get(kind)}
        if faults - {"malformed_tool_call"}:
            raise Crash(f"{name} failed ({', '.join(faults)}) on {text[:200]!r}")
        if result.error is not None and not (
            result.error.startswith(ERROR_PREFIX) and len(result.error) > len(ERROR_PREFIX) + 10
        ):
            raise Unclear(f"{name}: {result.error!r} for {text[:200]!r}")
        try:
            assert_well_formed(result, text)
        except AssertionError as error:
            raise Wrong(f"{name}: {result} for {text[:200]!r}") from error


def check_stream(document: str, cuts: list[int]) -> None:
    """Every built-in streaming one output: no exception, well-formed deltas (parser_streams checks each),
    and the same calls and content however the server cuts the text into pieces."""
    for name in BUILTIN_PARSERS:
        try:
            pieces, whole = streamed(name, document, cuts), streamed(name, document)
        except AssertionError as error:
            raise Wrong(f"{name}: a malformed delta for {document[:200]!r}: {error}") from error
        except Exception as error:
            raise Crash(f"{name} raised {error!r} streaming {document[:200]!r}") from error
        if pieces != whole:
            raise Wrong(f"{name}: {pieces} cut at {cuts}, {whole} whole, for {document[:200]!r}")
