"""Test plugin that fails while being imported."""

from vllm.tool_parsers import ToolParserManager  # noqa: F401

raise RuntimeError("broken_plugin needs the FROB_TOKEN environment variable")
