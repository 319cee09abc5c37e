"""Example vLLM tool-parser plugin files shipped with the kit.

They are loaded by path (``rollout.tool_parser_plugin``, ``vllm serve --tool-parser-plugin``), not imported
as modules: each imports vLLM at its top. ``PLUGIN_DIR / "nemotron_toolcall.py"`` is the Nemotron example.
"""

from pathlib import Path

PLUGIN_DIR = Path(__file__).parent
