"""The tool-parser hook with vLLM installed: built-in parsers, plugin files, failures, server args."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kit.tool_parsers import (
    BUILTIN_PARSERS,
    BUILTIN_PLUGIN,
    ParseResult,
    ToolCall,
    ToolParserError,
    available_parsers,
    load_parser,
    serve_args,
)
from kit.tool_parsers.plugins import PLUGIN_DIR

PLUGINS = Path(__file__).parent / "plugins"
BRACKET = PLUGINS / "bracket_call_plugin.py"
FLAKY = PLUGINS / "flaky_plugin.py"
BROKEN = PLUGINS / "broken_plugin.py"
OVERRIDE = PLUGINS / "override_plugin.py"
NEMOTRON = PLUGIN_DIR / "nemotron_toolcall.py"
TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
    },
    {"type": "function", "name": "send_email", "parameters": {"type": "object"}, "strict": False},
]


def kit_block(name: str, arguments: dict | str) -> str:
    """A call as the kit's chat template renders it."""
    rendered = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return f'<tool_call>\n{{"name": {json.dumps(name)}, "arguments": {rendered}}}\n</tool_call>'


def assert_parse_error(result: ParseResult, text: str, *fragments: str) -> None:
    assert result.tool_calls == []
    assert result.content == text
    assert result.error is not None and result.error.startswith("Error: could not parse tool call: ")
    for fragment in fragments:
        assert fragment in result.error


@pytest.fixture(scope="module")
def kit_parser():
    return load_parser("kit")


@pytest.fixture(scope="module")
def hermes():
    return load_parser("hermes")


@pytest.fixture(scope="module")
def json_parser():
    return load_parser("json")


# --- kit ---------------------------------------------------------------------------------------------


def test_kit_single_call_as_the_template_renders_it(kit_parser):
    result = kit_parser.parse(kit_block("get_weather", {"city": "Paris"}), TOOLS)
    assert result == ParseResult(
        tool_calls=[ToolCall("get_weather", {"city": "Paris"})], content=None, error=None
    )


def test_kit_several_calls_with_text_before_between_and_after(kit_parser):
    text = (
        "I'll check both.\n"
        + kit_block("get_weather", {"city": "Paris"})
        + "\nand\n"
        + kit_block("send_email", {"to": "a@b.c", "body": "é ☃"})
        + "\nDone."
    )
    result = kit_parser.parse(text)
    assert [call.name for call in result.tool_calls] == ["get_weather", "send_email"]
    assert result.tool_calls[1].arguments == {"to": "a@b.c", "body": "é ☃"}
    assert result.content == "I'll check both.\n\nand\n\nDone."
    assert result.error is None


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>',
        '<tool_call>  \n\t{"name": "f", "arguments": {"x": 1}}   \n</tool_call>',
        '<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n',  # generation stopped on </tool_call>
        '<tool_call>{"name": "f", "arguments": {"x": 1}}',
        '<tool_call>{"name": "f", "arguments": "{\\"x\\": 1}"}</tool_call>',  # arguments as a JSON string
        '<tool_call>{"name": "f", "parameters": {"x": 1}}</tool_call>',
    ],
)
def test_kit_is_lenient(kit_parser, text):
    assert kit_parser.parse(text) == ParseResult(tool_calls=[ToolCall("f", {"x": 1})])


def test_kit_call_without_arguments(kit_parser):
    assert kit_parser.parse('<tool_call>{"name": "list_all"}</tool_call>').tool_calls == [
        ToolCall("list_all", {})
    ]
    assert kit_parser.parse('<tool_call>{"name": "f", "arguments": null}</tool_call>').tool_calls == [
        ToolCall("f", {})
    ]


def test_text_without_calls_is_content(kit_parser):
    assert kit_parser.parse("The answer is 42.") == ParseResult(content="The answer is 42.")
    assert kit_parser.parse("  \n") == ParseResult()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('<tool_call>{"name": "f", "arguments": {"x": 1}</tool_call>', "invalid JSON after <tool_call>"),
        ("<tool_call>", "invalid JSON after <tool_call>"),
        (
            '<tool_call>{"name": "f", "arguments": [1, 2]}</tool_call>',
            '"arguments" of f must be a JSON object',
        ),
        ('<tool_call>{"name": "f", "arguments": "not json"}</tool_call>', "a string that is not JSON"),
        ('<tool_call>{"arguments": {}}</tool_call>', 'needs a "name" string'),
        ('<tool_call>["f", {}]</tool_call>', "must be a JSON object, not list"),
        ('<tool_call>{"name": "f", "arguments": {}}} </tool_call>', "expected </tool_call>"),
        (kit_block("ok", {}) + '<tool_call>{"name": "g", "arg', "invalid JSON"),
    ],
)
def test_kit_malformed_call_is_an_error_observation(kit_parser, text, reason):
    result = kit_parser.parse(text)
    assert_parse_error(
        result, text, reason, 'Write calls as <tool_call>{"name": ..., "arguments": {...}}</tool_call>'
    )
    assert kit_parser.error_counts["malformed_tool_call"] > 0


# --- hermes ------------------------------------------------------------------------------------------


def test_hermes_calls_and_content(hermes):
    text = (
        'Sure.<tool_call>{"name": "a", "arguments": {}}</tool_call> '
        '<tool_call>{"name": "b", "arguments": "{}"}</tool_call>'
    )
    assert hermes.parse(text) == ParseResult(
        tool_calls=[ToolCall("a", {}), ToolCall("b", {})], content="Sure. "
    )


def test_hermes_needs_every_block_closed(hermes):
    text = '<tool_call>{"name": "a", "arguments": {}}'
    assert_parse_error(hermes.parse(text), text, "not closed with </tool_call>")


def test_hermes_has_no_special_token_requirement():
    # vLLM's own hermes parser needs <tool_call> in the vocabulary; the kit's works without a tokenizer.
    parser = load_parser("hermes", tokenizer=None)
    assert parser.source == "builtin"
    assert parser.parse('<tool_call>{"name": "a", "arguments": {}}</tool_call>').tool_calls == [
        ToolCall("a", {})
    ]


# --- json --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "calls", "content"),
    [
        ('{"name": "f", "arguments": {"x": 1}}', [ToolCall("f", {"x": 1})], None),
        ('Calling: {"name": "f", "parameters": {"x": 1}} now', [ToolCall("f", {"x": 1})], "Calling:  now"),
        (
            '[{"name": "f", "arguments": {}}, {"name": "g", "arguments": "{\\"y\\": [1]}"}]',
            [ToolCall("f", {}), ToolCall("g", {"y": [1]})],
            None,
        ),
        (
            '{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {}}',
            [ToolCall("a", {}), ToolCall("b", {})],
            None,
        ),
        (
            'Data {"name": "Bob", "age": 3} and [1, 2] {"name": "f", "arguments": {}}',
            [ToolCall("f", {})],
            'Data {"name": "Bob", "age": 3} and [1, 2] ',  # the text outside the calls, as written
        ),
    ],
)
def test_json_finds_bare_calls(json_parser, text, calls, content):
    assert json_parser.parse(text) == ParseResult(tool_calls=calls, content=content)


def test_json_leaves_other_json_alone(json_parser):
    text = 'Here: {"city": "Paris", "nested": {"name": "x", "arguments": {}}} [] {}'
    assert json_parser.parse(text) == ParseResult(content=text)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"name": "f", "arguments": {"x": 1}', "invalid JSON in the call"),
        ('[{"name": "f", "arguments": {}}, {"name": "g"', "invalid JSON in the call"),
        ('{"name": "f", "arguments": 3}', '"arguments" of f must be a JSON object'),
        ('{"name": 7, "arguments": {}}', 'needs a "name" string'),
    ],
)
def test_json_malformed_call_is_an_error(json_parser, text, reason):
    assert_parse_error(
        json_parser.parse(text), text, reason, 'Write calls as {"name": ..., "arguments": {...}}'
    )


# --- plugin files through vLLM -----------------------------------------------------------------------


def test_builtin_plugin_registers_exactly_the_builtins():
    from kit.tool_parsers.plugin_loader import load_plugin

    assert sorted(load_plugin(BUILTIN_PLUGIN).parsers) == sorted(BUILTIN_PARSERS)


def test_builtins_load_through_vllms_own_manager():
    from vllm.tool_parsers import ToolParser, ToolParserManager

    parser = load_parser("kit")
    assert parser.plugin_path == str(BUILTIN_PLUGIN)
    for name in BUILTIN_PARSERS:
        cls = ToolParserManager.get_tool_parser(name)
        assert issubclass(cls, ToolParser) and cls.__module__ == "kit_builtin_plugin"


def test_plugin_for_a_format_no_builtin_knows():
    parser = load_parser("bracket_call", str(BRACKET))
    assert parser.source == "plugin" and parser.plugin_path == str(BRACKET)
    result = parser.parse('Let me see. [[call lookup {"q": "x", "n": 2}]] [[call stop {}]]', TOOLS)
    assert result == ParseResult(
        tool_calls=[ToolCall("lookup", {"q": "x", "n": 2}), ToolCall("stop", {})], content="Let me see."
    )
    assert load_parser("bracket_call_alias", BRACKET).parse("[[call a {}]]").tool_calls == [ToolCall("a", {})]
    assert "bracket_call" in available_parsers(BRACKET)["plugin"]


def test_plugin_names_come_first_then_builtins_then_vllm():
    assert load_parser("kit", OVERRIDE).parse("CALL ping").tool_calls == [ToolCall("ping", {})]
    assert load_parser("kit", OVERRIDE).source == "plugin"
    assert load_parser("kit").parse("CALL ping").tool_calls == []
    assert load_parser("json", OVERRIDE).source == "builtin"
    native = load_parser("pythonic", OVERRIDE)
    assert native.source == "vllm"
    assert native.parse("[get_weather(city='Paris')]").tool_calls == [
        ToolCall("get_weather", {"city": "Paris"})
    ]


def test_nemotron_example_plugin():
    parser = load_parser("nemotron_toolcall", NEMOTRON)
    text = 'Checking.<TOOLCALL>[{"name": "a", "arguments": {"x": 1}}, {"name": "b"}]</TOOLCALL>'
    assert parser.parse(text) == ParseResult(
        tool_calls=[ToolCall("a", {"x": 1}), ToolCall("b", {})], content="Checking."
    )
    assert parser.parse("No call.") == ParseResult(content="No call.")
    broken = '<TOOLCALL>[{"name": "a", "arguments": {"x": 1}]</TOOLCALL>'
    assert_parse_error(parser.parse(broken), broken, "Write calls as <TOOLCALL>[")


def test_edited_plugin_file_is_reloaded(tmp_path):
    plugin = tmp_path / "editable_bracket_plugin.py"
    shutil.copy(BRACKET, plugin)
    assert load_parser("bracket_call", plugin).parse("[[call a {}]]").tool_calls == [ToolCall("a", {})]
    plugin.write_text(BRACKET.read_text().replace('"bracket_call", ', '"renamed_call", '))
    os.utime(plugin, ns=(plugin.stat().st_atime_ns, plugin.stat().st_mtime_ns + 10**9))
    assert load_parser("renamed_call", plugin).parse("[[call a {}]]").tool_calls == [ToolCall("a", {})]


# --- a misbehaving plugin never breaks parse() -------------------------------------------------------


def test_plugin_that_raises_becomes_an_error_and_is_counted(caplog):
    parser = load_parser("flaky", FLAKY)
    result = parser.parse("BOOM")
    assert_parse_error(result, "BOOM", "the flaky tool parser failed (RuntimeError: flaky parser exploded)")
    assert parser.parse("BOOM again").error is not None
    assert parser.error_counts["parser_exception"] == 2
    assert "flaky parser exploded" in caplog.text
    assert parser.parse("fine") == ParseResult(content="fine")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("GARBAGE", "returned dict, not ExtractedToolCallInformation"),
        ("LIST_ARGS", "arguments for f that are not a JSON object"),
        ("BAD_JSON", "arguments for f that are not valid JSON"),
    ],
)
def test_plugin_returning_garbage_becomes_an_error(text, reason):
    parser = load_parser("flaky", FLAKY)
    assert_parse_error(parser.parse(text), text, reason)
    assert parser.error_counts == {"invalid_parser_output": 1}


def test_plugin_sees_the_tools_in_a_real_vllm_request():
    result = load_parser("flaky", FLAKY).parse("TOOLS", TOOLS)
    assert result.tool_calls == [ToolCall("echo_tools", {"names": ["get_weather", "send_email"]})]


# --- load errors -------------------------------------------------------------------------------------


def test_missing_plugin_file():
    with pytest.raises(
        ToolParserError, match="not found: /no/such/plugin.py. Point rollout.tool_parser_plugin"
    ):
        load_parser("x", "/no/such/plugin.py")


def test_plugin_that_fails_to_import(capfd):
    with pytest.raises(ToolParserError) as raised:
        load_parser("never_registered", BROKEN)
    message = str(raised.value)
    assert str(BROKEN) in message
    assert "RuntimeError: broken_plugin needs the FROB_TOKEN environment variable" in message
    assert "Fix the plugin file" in message
    assert "Traceback" not in capfd.readouterr().err  # vLLM's logged traceback is kept off the console


def test_unregistered_name_lists_what_is_there():
    with pytest.raises(ToolParserError) as raised:
        load_parser("bracket", BRACKET)
    message = str(raised.value)
    assert f"The plugin file {BRACKET} registers: bracket_call, bracket_call_alias." in message
    assert "Kit built-ins: hermes, json, kit." in message
    assert "pythonic" in message  # vLLM's own
    assert "@ToolParserManager.register_module('bracket')" in message


def test_vllm_parser_that_needs_a_tokenizer():
    with pytest.raises(ToolParserError, match="'llama3_json' \\(vllm\\) could not be created"):
        load_parser("llama3_json")


# --- serve_args --------------------------------------------------------------------------------------


def test_serve_args():
    assert serve_args("kit") == [
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "kit",
        "--tool-parser-plugin",
        str(BUILTIN_PLUGIN),
    ]
    assert serve_args("hermes", BRACKET)[-1] == str(BUILTIN_PLUGIN)
    assert serve_args("bracket_call", BRACKET) == [
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "bracket_call",
        "--tool-parser-plugin",
        str(BRACKET),
    ]
    assert serve_args("kit", OVERRIDE)[-1] == str(OVERRIDE)
    assert serve_args("mistral") == ["--enable-auto-tool-choice", "--tool-call-parser", "mistral"]
    with pytest.raises(ToolParserError, match="'nope' is not registered"):
        serve_args("nope")


def test_plugin_named_like_another_module_is_refused(tmp_path):
    plugin = tmp_path / "json.py"
    shutil.copy(BRACKET, plugin)
    with pytest.raises(ToolParserError, match="named like the module 'json'.*Rename it"):
        load_parser("bracket_call", plugin)


# What a vLLM server does with `kit serve`'s arguments (vllm/entrypoints/launchers/launcher.py and
# vllm/parser/abstract_parser.py), in a fresh process as a server would be.
SERVER_SIDE_SCRIPT = """
import json, sys
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.tool_parsers import ToolParserManager

out = []
for args, text in json.load(sys.stdin):
    name = args[args.index("--tool-call-parser") + 1]
    ToolParserManager.import_tool_parser(args[args.index("--tool-parser-plugin") + 1])
    assert name in ToolParserManager.list_registered(), name
    request = ChatCompletionRequest(messages=[], tools=[{"type": "function", "function": {"name": "f"}}])
    info = ToolParserManager.get_tool_parser(name)(None, request.tools).extract_tool_calls(text, request)
    assert info.tools_called, name
    calls = [{"name": c.function.name, "arguments": json.loads(c.function.arguments)}
             for c in info.tool_calls]
    out.append({"tool_calls": calls, "content": info.content if (info.content or "").strip() else None})
print(json.dumps(out))
"""


def test_served_parser_matches_the_trainers():
    cases = [
        ("kit", None, 'Hi\n<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n'),
        ("hermes", None, 'x<tool_call>{"name": "f", "arguments": "{}"}</tool_call>y'),
        ("json", None, 'Go [{"name": "f", "parameters": {"b": [2]}}]'),
        ("bracket_call", BRACKET, 'Ok [[call f {"c": "é"}]]'),
        ("nemotron_toolcall", NEMOTRON, 'Ok<TOOLCALL>[{"name": "f", "arguments": {}}]</TOOLCALL>'),
    ]
    requests = [(serve_args(name, plugin), text) for name, plugin, text in cases]
    run = subprocess.run(
        [sys.executable, "-c", SERVER_SIDE_SCRIPT],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    for (name, plugin, text), served in zip(cases, json.loads(run.stdout), strict=True):
        trained = load_parser(name, plugin).parse(text)
        assert trained.tool_calls and trained.error is None
        calls = [{"name": call.name, "arguments": call.arguments} for call in trained.tool_calls]
        assert served == {"tool_calls": calls, "content": trained.content}, name
