"""``kit tools parse`` and ``kit tools list``: try a tool parser (and its plugin file) from the shell."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable

from kit.tool_parsers.registry import available_parsers, load_parser
from kit.tool_parsers.result import ToolParserError

_EMPTY = {"vllm": "(none: vLLM is not installed)"}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``parse`` and ``list`` subcommands to ``subparsers``; each sets ``func(args) -> exit code``."""
    parse = subparsers.add_parser(
        "parse",
        help="parse a model output with a tool parser and print the result as JSON",
        description='Prints {"tool_calls": [{"name": ..., "arguments": {...}}], "content": ..., "error": ...}'
        " on one line.",
    )
    parse.add_argument(
        "--tool-parser", required=True, metavar="NAME", help="parser name, e.g. kit, hermes, json"
    )
    _add_plugin_argument(parse)
    parse.add_argument("--text", help="the model output to parse (default: read stdin)")
    parse.set_defaults(func=_reporting_errors(_parse))

    listing = subparsers.add_parser("list", help="list the tool parser names available, by source")
    _add_plugin_argument(listing)
    listing.set_defaults(func=_reporting_errors(_list))


def _add_plugin_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tool-parser-plugin", metavar="FILE", help="a vLLM tool-parser plugin file that registers parsers"
    )


def _reporting_errors(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``handler`` with :class:`ToolParserError` reported as one line on stderr and exit status 2."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except ToolParserError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2

    return run


def _parse(args: argparse.Namespace) -> int:
    parser = load_parser(args.tool_parser, args.tool_parser_plugin)
    text = sys.stdin.read() if args.text is None else args.text
    print(json.dumps(dataclasses.asdict(parser.parse(text))))
    return 0


def _list(args: argparse.Namespace) -> int:
    for source, names in available_parsers(args.tool_parser_plugin).items():
        label = f"plugin ({args.tool_parser_plugin})" if source == "plugin" else source
        print(f"{label}: {', '.join(names) or _EMPTY.get(source, '(none)')}")
    return 0
