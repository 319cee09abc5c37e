"""vLLM tool parser for NVIDIA Nemotron's ``<TOOLCALL>`` format.

The model writes its calls as one JSON list inside ``<TOOLCALL>`` tags, after any text::

    Let me look that up.<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>

Serve with::

    vllm serve MODEL --enable-auto-tool-choice \\
        --tool-parser-plugin nemotron_toolcall.py --tool-call-parser nemotron_toolcall

or train with ``rollout.tool_parser_plugin: <this file>`` and ``rollout.tool_parser: nemotron_toolcall``.

Training and non-streaming requests need only ``extract_tool_calls``. This example has no
``extract_tool_calls_streaming``: a ``stream=True`` request with ``tools`` to a server using it gets vLLM's
NotImplementedError as an error event instead of tokens. To stream, implement it as the kit's built-ins
do (``kit/tool_parsers/kit_builtin_plugin.py``): return None while nothing can be sent,
``DeltaMessage(content=...)`` for text, and ``DeltaMessage(tool_calls=[DeltaToolCall(index=..., id=...,
type="function", function=DeltaFunctionCall(name=..., arguments=...))])`` for calls (import the three next
to ``ToolCall``), keeping ``self.prev_tool_call_arr`` and ``self.streamed_args_for_tool`` in step with what
was sent.
"""

import json
import logging
import re

try:  # vLLM 0.32
    from vllm.entrypoints.generate.base.protocol import ExtractedToolCallInformation, FunctionCall, ToolCall
except ImportError:  # vLLM 0.26 keeps them here
    from vllm.entrypoints.openai.engine.protocol import ExtractedToolCallInformation, FunctionCall, ToolCall
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.tool_parsers import ToolParser, ToolParserManager

logger = logging.getLogger(__name__)


@ToolParserManager.register_module("nemotron_toolcall")
class NemotronToolCallParser(ToolParser):
    tool_call_start_token = "<TOOLCALL>"
    tool_call_regex = re.compile(r"<TOOLCALL>(.*?)</TOOLCALL>", re.DOTALL)

    # Optional: gym-grpo-kit shows the policy `tool_call_error` (plus this format) when a call is malformed.
    # vLLM ignores both.
    tool_call_format = '<TOOLCALL>[{"name": ..., "arguments": {...}}]</TOOLCALL>'
    tool_call_error = None

    @staticmethod
    def format_tool_calls(calls: list[dict]) -> str:
        """Optional, for gym-grpo-kit's SFT warm-up: ``calls`` ({"name", "arguments"} each) written as the
        model writes them, the inverse of ``extract_tool_calls``. vLLM ignores it."""
        return f"<TOOLCALL>{json.dumps(calls, ensure_ascii=False)}</TOOLCALL>"

    def extract_tool_calls(
        self, model_output: str, request: ChatCompletionRequest
    ) -> ExtractedToolCallInformation:
        self.tool_call_error = None
        if self.tool_call_start_token not in model_output:
            return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
        try:
            match = self.tool_call_regex.search(model_output)
            if match is None:
                raise ValueError("<TOOLCALL> is not closed with </TOOLCALL>")
            calls = json.loads(match.group(1))
            if isinstance(calls, dict):
                calls = [calls]
            if not isinstance(calls, list) or not calls:
                raise ValueError("<TOOLCALL> must hold a non-empty JSON list of calls")
            tool_calls = [self._tool_call(call) for call in calls]
        except ValueError as error:
            logger.debug("could not parse Nemotron tool call: %s", error)
            self.tool_call_error = str(error)
            return ExtractedToolCallInformation(tools_called=False, tool_calls=[], content=model_output)
        content = model_output[: match.start()].strip()
        return ExtractedToolCallInformation(tools_called=True, tool_calls=tool_calls, content=content or None)

    @staticmethod
    def _tool_call(call: object) -> ToolCall:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ValueError('each call must be a JSON object with a "name" string')
        arguments = call.get("arguments", {})
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        if not isinstance(arguments, dict):
            raise ValueError(f'the "arguments" of {call["name"]} must be a JSON object')
        return ToolCall(
            function=FunctionCall(name=call["name"], arguments=json.dumps(arguments, ensure_ascii=False))
        )
