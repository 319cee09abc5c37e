"""The same plugin files without vLLM: a subprocess that blocks ``import vllm`` must parse as vLLM does."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kit.tool_parsers import BUILTIN_PLUGIN, load_parser
from kit.tool_parsers.plugins import PLUGIN_DIR

REPO = Path(__file__).resolve().parents[1]
PLUGINS = Path(__file__).parent / "plugins"
TOOLS = [
    {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}
]

# (parser name, plugin file or None, model output, tools)
CASES = [
    (
        "bracket_call",
        str(PLUGINS / "bracket_call_plugin.py"),
        'Hm. [[call lookup {"q": "x"}]] [[call b {}]]',
        TOOLS,
    ),
    ("bracket_call", str(PLUGINS / "bracket_call_plugin.py"), "no calls here", None),
    ("bracket_call", str(PLUGINS / "bracket_call_plugin.py"), "[[call broken {not json}]]", None),
    (
        "nemotron_toolcall",
        str(PLUGIN_DIR / "nemotron_toolcall.py"),
        'Sure.<TOOLCALL>[{"name": "lookup", "arguments": {"q": "é"}}, {"name": "b", "arguments": "{}"}]'
        "</TOOLCALL>",
        TOOLS,
    ),
    ("nemotron_toolcall", str(PLUGIN_DIR / "nemotron_toolcall.py"), '<TOOLCALL>[{"name": "a"', None),
    ("flaky", str(PLUGINS / "flaky_plugin.py"), "BOOM", None),
    ("flaky", str(PLUGINS / "flaky_plugin.py"), "GARBAGE", None),
    ("flaky", str(PLUGINS / "flaky_plugin.py"), "LIST_ARGS", None),
    (
        "flaky",
        str(PLUGINS / "flaky_plugin.py"),
        "TOOLS",
        TOOLS + [{"type": "function", "name": "flat", "strict": False}],
    ),
    (
        "kit",
        None,
        'Hi\n<tool_call>\n{"name": "lookup", "arguments": {"q": 1}}\n</tool_call>\n<tool_call>{"name": "b"',
        None,
    ),
    ("kit", None, '<tool_call>\n{"name": "lookup", "arguments": "{\\"q\\": 1}"}\n', TOOLS),
    ("hermes", None, 'x <tool_call>{"name": "a", "arguments": {}}</tool_call> y', None),
    ("json", None, 'Go: [{"name": "a", "parameters": {"z": null}}]', None),
    ("kit", str(PLUGINS / "override_plugin.py"), "CALL ping", None),
]

# Runs in a fresh interpreter where `import vllm` fails, as on a box without vLLM.
BLOCKED_VLLM_SCRIPT = """
import dataclasses, json, sys
sys.modules["vllm"] = None
from kit.tool_parsers import load_parser

results = []
for name, plugin, text, tools in json.load(sys.stdin):
    parser = load_parser(name, plugin)
    result = dataclasses.asdict(parser.parse(text, tools))
    results.append({"result": result, "counts": dict(parser.error_counts)})
assert sys.modules["vllm"] is None
assert not [module for module in sys.modules if module.startswith("vllm.")]
try:
    import vllm.tool_parsers
except ImportError:
    pass
else:
    raise AssertionError("the stand-in for vLLM leaked out of plugin loading")
print(json.dumps(results))
"""


def run_python(script: str, stdin: str = "", block_vllm: bool = True) -> subprocess.CompletedProcess:
    prefix = "import sys\n" + ('sys.modules["vllm"] = None\n' if block_vllm else "")
    return subprocess.run(
        [sys.executable, "-c", prefix + script],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_plugins_parse_identically_with_and_without_vllm():
    with_vllm = []
    for name, plugin, text, tools in CASES:
        parser = load_parser(name, plugin)
        result = dataclasses.asdict(parser.parse(text, tools))
        with_vllm.append({"result": result, "counts": dict(parser.error_counts)})
    run = run_python(BLOCKED_VLLM_SCRIPT, json.dumps(CASES), block_vllm=False)
    assert run.returncode == 0, run.stderr
    without_vllm = json.loads(run.stdout)
    for case, expected, got in zip(CASES, with_vllm, without_vllm, strict=True):
        assert got == expected, case
    # The cases exercise calls, content, malformed calls and misbehaving parsers alike.
    assert any(entry["result"]["tool_calls"] for entry in with_vllm)
    assert any(entry["result"]["error"] for entry in with_vllm)
    assert any(entry["counts"].get("parser_exception") for entry in with_vllm)


def test_builtins_stream_identically_with_and_without_vllm():
    from kit.testing.parser_streams import streamed

    cases = [(name, text) for name, plugin, text, _ in CASES if plugin is None]
    script = """
import dataclasses, json
from kit.testing.parser_streams import streamed
cases = json.load(sys.stdin)
print(json.dumps([dataclasses.astuple(streamed(name, text, range(len(text)))) for name, text in cases]))
assert not [module for module in sys.modules if module.startswith("vllm.")]
"""
    run = run_python(script, json.dumps(cases))
    assert run.returncode == 0, run.stderr
    with_vllm = [streamed(name, text, range(len(text))) for name, text in cases]
    assert json.loads(run.stdout) == json.loads(json.dumps([dataclasses.astuple(r) for r in with_vllm]))
    assert any(result.calls for result in with_vllm) and any(result.content for result in with_vllm)


def test_importing_the_package_does_not_import_vllm():
    run = run_python(
        "import kit.tool_parsers, kit.tool_parsers.cli\nprint('vllm' in sys.modules)", block_vllm=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"


def test_plugin_written_for_older_vllm_import_paths_loads_without_vllm():
    script = f"""
from kit.tool_parsers import load_parser, ToolCall
parser = load_parser("legacy_upper", {str(PLUGINS / "legacy_paths_plugin.py")!r})
assert parser.parse("CALL ping").tool_calls == [ToolCall("ping", {{}})]
print("ok")
"""
    run = run_python(script)
    assert run.stdout.strip() == "ok", run.stderr


@pytest.mark.parametrize(
    ("call", "fragments"),
    [
        (
            f"load_parser('internals', {str(PLUGINS / 'vllm_internals_plugin.py')!r})",
            [
                "vllm_internals_plugin.py: ModuleNotFoundError: No module named 'vllm.logger'",
                "vLLM is not installed here, and the kit's stand-in for it provides only",
                "vllm.tool_parsers: ToolParser, ToolParserManager",
                "Install vLLM, or import only these names in the plugin.",
            ],
        ),
        (
            f"load_parser('x', {str(PLUGINS / 'broken_plugin.py')!r})",
            ["broken_plugin.py: RuntimeError: broken_plugin needs the FROB_TOKEN", "Fix the plugin file"],
        ),
        (
            f"load_parser('pythonic', {str(PLUGINS / 'bracket_call_plugin.py')!r})",
            [
                "registers: bracket_call, bracket_call_alias.",
                "Kit built-ins: hermes, json, kit.",
                "vLLM is not installed, so its own parsers are not available.",
            ],
        ),
    ],
)
def test_load_errors_without_vllm(call, fragments):
    script = f"""
from kit.tool_parsers import load_parser, ToolParserError
try:
    {call}
except ToolParserError as error:
    print(error)
"""
    run = run_python(script)
    assert run.returncode == 0, run.stderr
    for fragment in fragments:
        assert fragment in run.stdout


def test_serve_args_without_vllm():
    script = f"""
from kit.tool_parsers import serve_args
print(serve_args("kit")[-1])
print(serve_args("bracket_call", {str(PLUGINS / "bracket_call_plugin.py")!r})[-1])
"""
    run = run_python(script)
    assert run.stdout.split() == [str(BUILTIN_PLUGIN), str(PLUGINS / "bracket_call_plugin.py")], run.stderr
