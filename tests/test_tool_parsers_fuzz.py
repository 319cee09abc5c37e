"""Fuzzing the built-in parsers: no input makes them raise, results are well-typed, calls round-trip, and
streaming adds up to the same result.

12,000 generated outputs in all: 3,500 fuzzed documents, each also cut at two random points (as when the
token budget cuts generation off), every one parsed by all three built-ins; and 500 round-trips per built-in.
Streaming: 600 fuzzed documents cut into random pieces, and 400 well-formed outputs per built-in.
"""

from __future__ import annotations

import json
from functools import cache

import pytest
from fuzz_verdicts import Crash, Unclear, Wrong
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from parser_streams import extracted, streamed

from kit.tool_parsers import BUILTIN_PARSERS, ParseResult, ToolCall, ToolCallParser, load_parser

FUZZ_EXAMPLES = 3500
ROUND_TRIP_EXAMPLES = 500
STREAM_FUZZ_EXAMPLES = 600
STREAM_EXAMPLES = 400

SETTINGS = {
    "deadline": None,
    "database": None,  # nothing written into the repository
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
}

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
    Raises Crash, Unclear or Wrong (fuzz_verdicts)."""
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


@settings(max_examples=FUZZ_EXAMPLES, **SETTINGS)
@given(document=model_outputs, cuts=st.lists(st.integers(min_value=0), min_size=2, max_size=2))
def test_no_output_breaks_a_builtin_parser(document: str, cuts: list[int]):
    for text in [document] + [document[: cut % (len(document) + 1)] for cut in cuts]:
        check_parse(text)


def render(name: str, call: ToolCall, as_string: bool) -> str:
    arguments = json.dumps(call.arguments) if as_string else call.arguments
    body = json.dumps({"name": call.name, "arguments": arguments})
    if name == "json":
        return body
    return f"<tool_call>\n{body}\n</tool_call>"


# Text around calls that cannot itself open a call in any built-in format.
plain_text = st.text(alphabet=st.characters(blacklist_characters="<{["), max_size=30)
calls = st.lists(
    st.builds(ToolCall, name=st.text(min_size=1, max_size=12), arguments=json_objects), min_size=1, max_size=4
)


@pytest.mark.parametrize("name", BUILTIN_PARSERS)
def test_rendered_calls_round_trip(name):
    parser = builtin_parsers()[name]

    @settings(max_examples=ROUND_TRIP_EXAMPLES, **SETTINGS)
    @given(before=plain_text, after=plain_text, calls=calls, as_string=st.booleans())
    def check(before: str, after: str, calls: list[ToolCall], as_string: bool) -> None:
        text = before + "".join("\n" + render(name, call, as_string) for call in calls) + after
        result = parser.parse(text)
        assert result.error is None
        assert result.tool_calls == calls
        expected_content = before + "\n" * len(calls) + after
        assert result.content == (expected_content if expected_content.strip() else None)

    check()


# --- streaming ---------------------------------------------------------------------------------------------


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


@settings(max_examples=STREAM_FUZZ_EXAMPLES, **SETTINGS)
@given(document=model_outputs, cuts=st.lists(st.integers(min_value=0), max_size=12))
def test_streaming_depends_on_the_text_alone(document: str, cuts: list[int]):
    check_stream(document, cuts)


# Text between calls that must stream as content: plain text, and near misses of every format.
NEAR_MISSES = [
    "<b>",
    "a < b",
    "</tool_call>",
    "<tool",
    "<TOOLCALL>",
    "{",
    "[",
    "{x}",
    "[1, 2]",
    '{"name": "B"}',
]
between_calls = plain_text | st.sampled_from(NEAR_MISSES)
whitespace = st.sampled_from(["", "\n", " ", "\n \t"])
call_arguments = json_objects | st.sampled_from([{"text": "<tool_call> and </tool_call>"}, {"q": "[{"}])


@st.composite
def rendered_call(draw: st.DrawFn, name: str) -> str:
    key = draw(st.sampled_from(["arguments", "parameters"]))
    arguments = draw(call_arguments)
    call = {
        "name": draw(st.text(min_size=1, max_size=8)),
        key: draw(st.just(arguments) | st.just(json.dumps(arguments))),
    }
    body = json.dumps(call, indent=draw(st.sampled_from([None, 1])))
    if name == "json":
        return body if draw(st.booleans()) else json.dumps([call, call])
    return f"<tool_call>{draw(whitespace)}{body}{draw(whitespace)}</tool_call>"


@st.composite
def well_formed_output(draw: st.DrawFn, name: str) -> str:
    pieces = []
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        pieces += [draw(between_calls), draw(rendered_call(name))]
    # The output may end with its last call, unless a "[" before a bare call leaves a list open at the end,
    # which could still grow into one JSON value: streaming holds it back (see kit_builtin_plugin.py). Any
    # "[" counts, not only the last one: in '[' + '[call, call]' + ',' + '[call, call]' the first is open.
    if pieces and not (name == "json" and "[" in pieces[0::2]) and draw(st.booleans()):
        if name == "kit" and draw(st.booleans()):  # cut at the stop string </tool_call>
            pieces[-1] = pieces[-1].removesuffix("</tool_call>") + draw(whitespace)
    else:
        pieces.append(draw(between_calls) + " end")  # no text that could still begin a call at the end
    return "".join(pieces)


@pytest.mark.parametrize("name", BUILTIN_PARSERS)
def test_streaming_well_formed_outputs_gives_exactly_the_parse(name):
    parser = builtin_parsers()[name]

    @settings(max_examples=STREAM_EXAMPLES, **SETTINGS)
    @given(text=well_formed_output(name), cuts=st.lists(st.integers(min_value=0), max_size=30))
    # Found by CI without its " end": the first "[" stays open, so the calls wait for the text after them.
    @example(text="[" + ",".join([json.dumps([{"name": "0", "arguments": {}}] * 2)] * 2) + " end", cuts=[40])
    def check(text: str, cuts: list[int]) -> None:
        assume(parser.parse(text).error is None)  # near misses may make a call malformed
        assert streamed(name, text, cuts) == extracted(name, text)

    check()
