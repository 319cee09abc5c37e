"""Tool-call parsing for rollouts and ``kit serve``, through vLLM tool-parser plugin files.

``load_parser(name, plugin_path)`` gives the rollout a parser whose ``parse(text, tools)`` never raises;
``serve_args(name, plugin_path)`` gives ``vllm serve`` the arguments that load the same parser from the
same file. The kit's own parsers (``kit``, ``hermes``, ``json``) are themselves a plugin file,
``kit_builtin_plugin.py``. Plugin files load through vLLM when it is installed and through a small
stand-in for its plugin API when it is not. Importing this package does not import vLLM.
"""

from kit.tool_parsers.registry import (
    BUILTIN_PARSERS,
    BUILTIN_PLUGIN,
    ToolCallParser,
    available_parsers,
    load_parser,
    serve_args,
)
from kit.tool_parsers.result import ParseResult, ToolCall, ToolParserError

__all__ = [
    "BUILTIN_PARSERS",
    "BUILTIN_PLUGIN",
    "ParseResult",
    "ToolCall",
    "ToolCallParser",
    "ToolParserError",
    "available_parsers",
    "load_parser",
    "serve_args",
]
