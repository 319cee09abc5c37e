"""Test plugin that registers a parser under the built-in name ``kit``, to check that the plugin wins."""

from vllm.entrypoints.generate.base.protocol import ExtractedToolCallInformation, FunctionCall, ToolCall
from vllm.tool_parsers import ToolParser, ToolParserManager


@ToolParserManager.register_module("kit")
class ShoutedCallParser(ToolParser):
    """A whole output ``CALL NAME`` is a call of NAME without arguments."""

    def extract_tool_calls(self, model_output, request):
        words = model_output.split()
        if len(words) == 2 and words[0] == "CALL":
            call = ToolCall(function=FunctionCall(name=words[1], arguments="{}"))
            return ExtractedToolCallInformation(tools_called=True, tool_calls=[call], content=None)
        return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
