"""Streaming through the built-in parsers: known outputs, fed token by token as vLLM's server feeds them,
add up to exactly what the non-streaming parse returns. (Fuzzed outputs: test_tool_parsers_fuzz.py; a
real server: test_server_streaming.py.)"""

from __future__ import annotations

import json
import time

import pytest

from kit.testing.parser_streams import Reassembled, builtin_plugin, extracted, streamed
from kit.tool_parsers.plugins import PLUGIN_DIR


def args(**values) -> str:
    return json.dumps(values)


KIT_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
# (parser, model output, what both paths must give)
CASES = [
    ("kit", "The answer is 42.", Reassembled((), "The answer is 42.")),
    (
        "kit",
        "  a < b, <b>bold</b> and </tool_call>\n",
        Reassembled((), "  a < b, <b>bold</b> and </tool_call>\n"),
    ),
    ("kit", KIT_CALL, Reassembled((("get_weather", args(city="Paris")),), None)),
    (
        "kit",
        f"I'll check both.\n{KIT_CALL}\nand\n"
        '<tool_call>{"name": "send_email", "arguments": "{\\"to\\": \\"a@b.c\\", \\"body\\": \\"é ☃\\"}"}'
        "</tool_call>\nDone.",
        Reassembled(
            (("get_weather", args(city="Paris")), ("send_email", '{"to": "a@b.c", "body": "é ☃"}')),
            "I'll check both.\n\nand\n\nDone.",
        ),
    ),
    # Generation stopped on the stop string </tool_call>, which is then not part of the output.
    ("kit", '<tool_call>\n{"name": "f", "parameters": {"x": 1}}\n', Reassembled((("f", args(x=1)),), None)),
    (
        "kit",
        '<tool_call>{"name": "note", "arguments": {"text": "write <tool_call> and </tool_call> {"}}'
        "</tool_call>",
        Reassembled((("note", args(text="write <tool_call> and </tool_call> {")),), None),
    ),
    (
        "hermes",
        'Sure.<tool_call>{"name": "a", "arguments": {}}</tool_call> '
        '<tool_call>{"name": "b", "arguments": "{}"}</tool_call>',
        Reassembled((("a", "{}"), ("b", "{}")), "Sure. "),
    ),
    ("hermes", "<toolbox> is not a call", Reassembled((), "<toolbox> is not a call")),
    (
        "json",
        'Data {"name": "Bob", "age": 3} and [1, 2] {"name": "f", "arguments": {"q": [1, {"r": null}]}}',
        Reassembled((("f", args(q=[1, {"r": None}])),), 'Data {"name": "Bob", "age": 3} and [1, 2] '),
    ),
    (
        "json",
        '[{"name": "f", "arguments": {}}, {"name": "g", "parameters": {"y": -1.5e3}}] then {braces} [x]',
        Reassembled((("f", "{}"), ("g", args(y=-1500.0))), " then {braces} [x]"),
    ),
    ("json", "No call: f(x) = {x | x > 0}, [a, b]", Reassembled((), "No call: f(x) = {x | x > 0}, [a, b]")),
]
IDS = [f"{name}-{i}" for i, (name, _, _) in enumerate(CASES)]


@pytest.fixture(scope="module")
def token_ends(demo_model_dir):
    """Where each token of a text ends, with the demo model's tokenizer: the pieces vLLM streams."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(demo_model_dir)

    def ends(text: str) -> list[int]:
        offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        return [end for _, end in offsets]

    return ends


@pytest.mark.parametrize(("name", "text", "expected"), CASES, ids=IDS)
def test_token_by_token_stream_adds_up_to_the_parse(name, text, expected, token_ends):
    assert extracted(name, text) == expected
    assert len(token_ends(text)) > 5
    assert streamed(name, text, token_ends(text)) == expected
    assert streamed(name, text, range(len(text))) == expected  # one character at a time
    assert streamed(name, text) == expected  # all at once


def test_content_streams_before_the_output_ends_and_calls_as_soon_as_complete():
    plugin = builtin_plugin()
    parser = plugin.parsers["kit"](None, None)
    request = plugin.make_request(None)
    text = f"Looking.\n{KIT_CALL}\nOK"
    sent = []
    for end in range(1, len(text) + 1):
        delta = parser.extract_tool_calls_streaming(
            text[: end - 1], text[:end], text[end - 1], [], [], [], request
        )
        sent.append((end, delta))
    json_end = text.index("}}") + 2
    content_before = "".join(delta.content or "" for end, delta in sent if delta and end < json_end)
    assert content_before == "Looking.\n"  # each character as it came; "<" never: it began the call
    assert sent[0][1].content == "L"
    call_at = [end for end, delta in sent if delta is not None and delta.tool_calls]
    assert call_at == [json_end]  # the call goes out when its JSON is complete, id and name included
    (call,) = sent[json_end - 1][1].tool_calls
    assert (call.index, call.type, call.function.name) == (0, "function", "get_weather")
    # vLLM's end-of-stream check sends whatever prev_tool_call_arr holds beyond streamed_args_for_tool.
    assert parser.prev_tool_call_arr == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert parser.streamed_args_for_tool == [call.function.arguments]


@pytest.mark.parametrize(
    ("name", "text", "sent"),
    [
        # A call cut off by the token budget: what was held back as a possible call never goes out.
        ("kit", 'Hi <tool_call>{"name": "f", "argu', Reassembled((), "Hi ")),
        ("json", "Values: [1, 2", Reassembled((), "Values: ")),
        # A malformed call after a good one: the good one is already out; the rest streams as content.
        (
            "hermes",
            '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": }</tool_call>',
            Reassembled((("a", "{}"),), '<tool_call>{"name": }</tool_call>'),
        ),
    ],
)
def test_what_streaming_cannot_know_until_the_end(name, text, sent):
    # The non-streaming parse sees the whole output: no calls here (a parse error), all of it content.
    assert extracted(name, text) == Reassembled((), text)
    assert streamed(name, text, range(len(text))) == sent


def test_a_long_run_of_brackets_costs_no_decode_per_position():
    # Before: every "[" of the run started a decode that failed a thousand levels down, 26 s for the
    # fuzz case of 20,000 (parse, two cuts, stream). The run is skipped to where decoding can succeed.
    text = "[" * 20_000 + "x"
    builtin_plugin()  # loading vLLM is not the parser's time
    started = time.perf_counter()
    assert extracted("json", text) == Reassembled((), text)
    assert streamed("json", text, range(0, len(text), 2000)) == Reassembled((), text)
    assert time.perf_counter() - started < 3.0


def test_a_plugin_without_a_streaming_method_raises_vllms_not_implemented():
    # What a stream=True request with tools meets on a server using such a plugin: vLLM's base method.
    from kit.tool_parsers.plugin_loader import load_plugin

    plugin = load_plugin(PLUGIN_DIR / "nemotron_toolcall.py")
    parser = plugin.parsers["nemotron_toolcall"](None, None)
    with pytest.raises(NotImplementedError, match="extract_tool_calls_streaming"):
        parser.extract_tool_calls_streaming("", "Hi", "Hi", [], [], [], plugin.make_request(None))
