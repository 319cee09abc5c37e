"""Fuzzing the built-in parsers: no input makes them raise, results are well-typed, calls round-trip, and
streaming adds up to the same result.

12,000 generated outputs in all: 3,500 fuzzed documents, each also cut at two random points (as when the
token budget cuts generation off), every one parsed by all three built-ins; and 500 round-trips per built-in.
Streaming: 600 fuzzed documents cut into random pieces, and 400 well-formed outputs per built-in.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from kit.testing.fuzz.tool_parsers import (
    builtin_parsers,
    check_parse,
    check_stream,
    json_objects,
    model_outputs,
)
from kit.testing.parser_streams import extracted, streamed
from kit.tool_parsers import BUILTIN_PARSERS, ToolCall

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
