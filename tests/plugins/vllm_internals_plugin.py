"""Test plugin that imports a part of vLLM the kit's stand-in does not provide."""

from vllm.logger import init_logger
from vllm.tool_parsers import ToolParser, ToolParserManager

logger = init_logger(__name__)


@ToolParserManager.register_module("internals")
class InternalsParser(ToolParser):
    pass
