"""Test plugin: calls written as ``[[call NAME {json arguments}]]``, a format no built-in parser knows."""

import json
import re

from vllm.entrypoints.generate.base.protocol import ExtractedToolCallInformation, FunctionCall, ToolCall
from vllm.tool_parsers import ToolParser, ToolParserManager

CALL = re.compile(r"\[\[call\s+([\w.-]+)\s+(\{.*?\})\]\]", re.DOTALL)


@ToolParserManager.register_module(["bracket_call", "bracket_call_alias"])
class BracketCallParser(ToolParser):
    tool_call_format = '[[call NAME {"arg": ...}]]'

    @staticmethod
    def format_tool_calls(calls):
        return "".join(f"[[call {call['name']} {json.dumps(call['arguments'])}]]" for call in calls)

    def extract_tool_calls(self, model_output, request):
        calls = [
            ToolCall(
                function=FunctionCall(name=match.group(1), arguments=json.dumps(json.loads(match.group(2))))
            )
            for match in CALL.finditer(model_output)
        ]
        if not calls:
            return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
        content = CALL.sub("", model_output).strip() or None
        return ExtractedToolCallInformation(tools_called=True, tool_calls=calls, content=content)
