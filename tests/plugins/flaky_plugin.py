"""Test plugin whose parser misbehaves on marker words: raises, returns garbage, or returns bad arguments."""

import json

from vllm.entrypoints.generate.base.protocol import ExtractedToolCallInformation, FunctionCall, ToolCall
from vllm.tool_parsers import ToolParser, ToolParserManager


@ToolParserManager.register_module("flaky")
class FlakyParser(ToolParser):
    def extract_tool_calls(self, model_output, request):
        if "BOOM" in model_output:
            raise RuntimeError("flaky parser exploded")
        if "GARBAGE" in model_output:
            return {"tools_called": True}
        if "LIST_ARGS" in model_output:
            call = ToolCall(function=FunctionCall(name="f", arguments="[1, 2]"))
            return ExtractedToolCallInformation(tools_called=True, tool_calls=[call], content=None)
        if "BAD_JSON" in model_output:
            call = ToolCall(function=FunctionCall(name="f", arguments="{oops"))
            return ExtractedToolCallInformation(tools_called=True, tool_calls=[call], content=None)
        if "TOOLS" in model_output:
            names = [tool.function.name for tool in request.tools or []]
            call = ToolCall(function=FunctionCall(name="echo_tools", arguments=json.dumps({"names": names})))
            return ExtractedToolCallInformation(tools_called=True, tool_calls=[call], content=None)
        return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
