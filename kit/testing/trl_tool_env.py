"""The workplace sandbox as TRL's own multi-turn tool environment (`GRPOTrainer(environment_factory=...)`).

TRL 1.16 runs tool-calling episodes itself: it renders the tools into the prompt from Python methods
(their signatures and docstrings), parses each completion with the tokenizer's response template, calls
the methods, appends the results and generates again, in rounds of the episodes still calling tools.
This module gives that loop the same tasks the kit trains on, so the step-time bench
(bench/gpu_step_time.py) can compare the kit's rollouts with plain TRL on the same multi-turn work:

- one environment class per distinct tool list, its methods built from the tasks' JSON schemas, so TRL
  renders the same prompt tokens as the kit (`check_same_prompts` asserts it);
- each method runs the call in the episode's fresh sandbox and cuts the observation as the kit does;
- `get_reward` replays nothing: it scores the calls the episode made with the environment's outcome.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kit.envs.environment import TaskEnvironment
from kit.episode import Task, ToolMessageEncoder
from kit.rollout.loop import cut_observation

_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}

# The kit's template writes calls as <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, the
# Hermes/Qwen format, so TRL's Qwen3 response template parses them.
RESPONSE_TEMPLATE_NAME = "qwen3_template"


def _tool_function(schema: dict[str, Any]) -> Callable[..., str]:
    """A method named and documented like the tool's schema, so that transformers' `get_json_schema`
    gives back the schema's name, description, arguments, their descriptions and which are required."""
    fn = schema.get("function", schema)
    name, params = fn["name"], fn.get("parameters", {})
    properties, required = params.get("properties", {}), set(params.get("required", []))
    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    doc_args = []
    for arg, spec in properties.items():
        annotation = _TYPES.get(spec.get("type", "string"), str)
        default = inspect.Parameter.empty if arg in required else None
        signature.append(
            inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        )
        annotations[arg] = annotation
        doc_args.append(f"    {arg}: {spec['description']}")

    def tool(self, **arguments: Any) -> str:
        return self._call(name, {k: v for k, v in arguments.items() if v is not None})

    tool.__name__ = tool.__qualname__ = name
    tool.__signature__ = inspect.Signature(signature)
    tool.__annotations__ = annotations
    tool.__doc__ = f"{fn.get('description') or name}\n\nArgs:\n" + "\n".join(doc_args)
    return tool


def as_trl_renders(tasks: list[Task]) -> list[Task]:
    """`tasks` with their tools as TRL can render them from methods: sorted by name (TRL lists an
    environment's methods by name) and every argument described (transformers' `get_json_schema` needs a
    description; an argument without one gets its own name). The bench gives every variant, and the SFT
    warm-up, these tasks, so that all sides see the same prompts."""
    return [replace(task, tools=sorted(map(_described, task.tools), key=_name)) for task in tasks]


def _name(tool: dict[str, Any]) -> str:
    return tool.get("function", tool)["name"]


def _described(tool: dict[str, Any]) -> dict[str, Any]:
    fn = tool.get("function", tool)
    properties = fn.get("parameters", {}).get("properties", {})
    described = {
        arg: {**spec, "description": spec.get("description") or arg} for arg, spec in properties.items()
    }
    parameters = {**fn.get("parameters", {}), "properties": described}
    return {"type": "function", "function": {**fn, "parameters": parameters}}


def tool_list_key(task: Task) -> str:
    """The name of the environment that exposes exactly `task`'s tools, in order."""
    return ",".join(map(_name, task.tools))


def environment_factories(
    tasks: list[Task], environment: TaskEnvironment, max_tool_output_chars: int
) -> dict[str, Callable[[], Any]]:
    """`environment_factory` for TRL: one environment class per distinct tool list of `tasks`.

    An instance is reset with the dataset row (`task_index` names the task), runs calls in its own copy
    of the sandbox and scores the calls it ran with `environment.outcome`."""

    class WorkplaceToolEnv:
        def reset(self, task_index: int, **_: Any) -> None:
            self.task = tasks[task_index]
            self.sandbox = environment.new_sandbox(self.task)
            self.calls: list[dict[str, Any]] = []

        def _call(self, name: str, arguments: dict[str, Any]) -> str:  # "_": TRL skips it as a tool
            self.calls.append({"name": name, "arguments": arguments})
            return cut_observation(self.sandbox.call(name, arguments), max_tool_output_chars)

        def get_reward(self) -> float:
            return environment.outcome(self.task, self.calls)

    factories = {}
    for task in tasks:
        key = tool_list_key(task)
        if key not in factories:
            methods = {tool.__name__: tool for tool in map(_tool_function, task.tools)}
            factories[key] = type(f"WorkplaceTools{len(factories)}", (WorkplaceToolEnv,), methods)
    return factories


def with_response_template(tokenizer: Any) -> Any:
    """`tokenizer` with the response template TRL parses the kit's tool-call format with."""
    from trl import chat_template_utils

    tokenizer.response_template = getattr(chat_template_utils, RESPONSE_TEMPLATE_NAME)
    return tokenizer


def trl_tools(environment: Any) -> list[Callable[..., str]]:
    """The tools TRL 1.16 shows for an environment instance: its public methods but `reset` and
    `get_reward`, in `inspect.getmembers` order (by name)."""
    members = inspect.getmembers(type(environment), predicate=inspect.isfunction)
    return [
        getattr(environment, name)
        for name, _ in members
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def check_same_prompts(tasks: list[Task], factories: dict[str, Callable[[], Any]], tokenizer: Any) -> None:
    """Raise unless TRL's rendering (tools from the environment's methods) gives the kit's prompt ids."""
    encoder = ToolMessageEncoder(tokenizer)
    for index, task in enumerate(tasks):
        methods = trl_tools(factories[tool_list_key(task)]())
        trl_ids = tokenizer.apply_chat_template(
            task.messages, tools=methods, add_generation_prompt=True, tokenize=True, return_dict=False
        )
        if list(trl_ids) != encoder.prompt_ids(task):
            raise ValueError(
                f"Task {index}: TRL renders the tools from methods into a different prompt than the kit's "
                "schemas; the comparison would not be on the same prompts."
            )
