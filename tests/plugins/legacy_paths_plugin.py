"""Test plugin written against the import paths of vLLM releases before 0.32."""

from vllm.entrypoints.openai.protocol import ExtractedToolCallInformation, FunctionCall, ToolCall
from vllm.entrypoints.openai.tool_parsers import ToolParser, ToolParserManager


@ToolParserManager.register_module("legacy_upper")
class LegacyUpperParser(ToolParser):
    """Treats a whole output of the form ``CALL NAME`` as a call without arguments."""

    def extract_tool_calls(self, model_output, request):
        words = model_output.split()
        if len(words) == 2 and words[0] == "CALL":
            call = ToolCall(function=FunctionCall(name=words[1], arguments="{}"))
            return ExtractedToolCallInformation(tools_called=True, tool_calls=[call], content=None)
        return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
