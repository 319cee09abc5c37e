"""Token-exact multi-turn tool rollouts.

For each task: generate -> parse tool calls with the configured parser -> execute them in the
episode's own sandbox -> append the results as tool messages -> generate again, until the model
answers without a call, `max_turns` is reached, or the token budget runs out.

Token-exact: the completion the trainer's loss sees is the concatenation of the ids the generator
sampled and the ids of the tool messages; the model's own ids are never decoded and re-encoded.
`env_mask` is 1 on sampled ids and 0 on tool-message ids, so tool results carry no loss, and
`logprobs` are the generator's own (0.0 on tool ids) for TRL's importance-sampling correction.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kit.config import RolloutConfig
from kit.generation.base import Completion, Generator, Request, Sampling, generate_conversations
from kit.tool_parsers import ParseResult, ToolCallParser


class Sandbox(Protocol):
    """What the rollout needs from an environment instance: execute a call, get an observation."""

    def call(self, name: str, arguments: dict[str, Any] | str) -> str: ...


@dataclass
class Task:
    """One prompt of the environment: chat messages, the tool schemas shown, and grading data."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    ground_truth: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Episode:
    """Everything one rollout produced: tokens for the trainer and a readable trajectory."""

    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    raw_completions: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_errors: int = 0
    parse_failures: int = 0
    turns: int = 0
    done: bool = False

    @property
    def generated_tokens(self) -> int:
        return sum(self.env_mask)


def is_error_observation(observation: str) -> bool:
    return observation.startswith("Error")


class ToolMessageEncoder:
    """Token ids of tool messages as the chat template renders them after an assistant turn.

    The suffix is the template's own text for the new messages plus the generation prompt, found by
    rendering the conversation with and without them; it is tokenized alone and appended to the
    sampled ids, so earlier tokens never change.
    """

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.eos = tokenizer.eos_token

    def prompt_ids(self, task: Task) -> list[int]:
        return list(
            self.tokenizer.apply_chat_template(
                task.messages,
                tools=task.tools or None,
                add_generation_prompt=True,
                tokenize=True,
                return_dict=False,
            )
        )

    def suffix_ids(
        self, conversation: list[dict[str, Any]], tools: list[dict], tool_messages: list[dict]
    ) -> list[int]:
        render = self.tokenizer.apply_chat_template
        base = render(conversation, tools=tools or None, tokenize=False)
        full = render(
            conversation + tool_messages, tools=tools or None, tokenize=False, add_generation_prompt=True
        )
        if not full.startswith(base):
            raise ValueError(
                "The chat template renders earlier turns differently once tool messages follow, so tool "
                "results cannot be appended token-exactly. Use model.chat_template=kit or a template that "
                "renders history append-only."
            )
        # The sampled ids end on the end-of-turn token; whatever the template writes after it comes first.
        after_eos = base[base.rfind(self.eos) + len(self.eos) :] if self.eos and self.eos in base else ""
        return self.tokenizer.encode(after_eos + full[len(base) :], add_special_tokens=False)


@dataclass
class RolloutSettings:
    max_turns: int = 4
    max_completion_tokens: int = 256
    max_tool_output_chars: int = 800


class RolloutError(RuntimeError):
    """A generator returned something the trainer must not learn from; the message says what."""


# A turn needs room for at least a short answer; with less left the episode ends instead.
MIN_TURN_TOKENS = 8


def token_budget(episode: Episode, settings: RolloutSettings, max_model_len: int | None) -> int:
    """Tokens the next turn may generate: what is left of the completion budget, and never more than
    what still fits in the generator's context after the prompt and the turns so far."""
    budget = settings.max_completion_tokens - len(episode.completion_ids)
    if max_model_len is not None:
        budget = min(budget, max_model_len - len(episode.prompt_ids) - len(episode.completion_ids))
    return budget


def _check_logprobs(completion: Completion, generator: Generator) -> None:
    if len(completion.logprobs) != len(completion.token_ids) or not all(
        math.isfinite(lp) for lp in completion.logprobs
    ):
        raise RolloutError(
            f"{type(generator).__name__} returned {len(completion.logprobs)} logprobs for "
            f"{len(completion.token_ids)} sampled tokens, some missing or not finite. They would enter "
            "TRL's importance-sampling ratio and the loss. A vLLM server must run with "
            "`--logprobs-mode processed_logprobs --max-logprobs -1` (what `kit serve` passes)."
        )


def _observation_messages(
    result: ParseResult, sandbox: Sandbox, episode: Episode, max_chars: int
) -> list[dict]:
    """Execute the parsed calls (or report the parse failure) and return the tool messages."""
    if result.error is not None:
        episode.parse_failures += 1
        return [{"role": "tool", "content": result.error[:max_chars]}]
    messages = []
    for call in result.tool_calls:
        observation = sandbox.call(call.name, call.arguments)
        episode.tool_calls.append({"name": call.name, "arguments": call.arguments})
        if is_error_observation(observation):
            episode.tool_errors += 1
        if len(observation) > max_chars:
            observation = (
                observation[:max_chars] + f"... [cut: {len(observation) - max_chars} more characters]"
            )
        messages.append({"role": "tool", "content": observation})
    return messages


def run_episodes(
    tasks: list[Task],
    generator: Generator,
    sampling: Sampling,
    parser: ToolCallParser,
    encoder: ToolMessageEncoder,
    new_sandbox: Callable[[Task], Sandbox],
    settings: RolloutSettings,
) -> list[Episode]:
    """Run one episode per task. An episode's next turn is requested as soon as its tool results are in
    (continuous batching, where the generator supports it; else in rounds of the episodes still going)."""
    context = generator.max_model_len
    sandboxes = [new_sandbox(task) for task in tasks]
    episodes = [Episode(prompt_ids=encoder.prompt_ids(task)) for task in tasks]
    conversations = [list(task.messages) for task in tasks]

    def next_request(i: int) -> Request | None:
        episode = episodes[i]
        budget = token_budget(episode, settings, context)
        if episode.done or episode.turns >= settings.max_turns or budget < MIN_TURN_TOKENS:
            episode.done = True
            return None
        return episode.prompt_ids + episode.completion_ids, budget

    def on_completion(i: int, completion: Completion) -> Request | None:
        _check_logprobs(completion, generator)
        episode, task = episodes[i], tasks[i]
        episode.turns += 1
        episode.completion_ids += completion.token_ids
        episode.env_mask += [1] * len(completion.token_ids)
        episode.logprobs += completion.logprobs
        text = encoder.tokenizer.decode(completion.token_ids, skip_special_tokens=True)
        episode.raw_completions.append(text)
        assistant = {"role": "assistant", "content": text}
        conversations[i].append(assistant)
        episode.messages.append(assistant)
        result = parser.parse(text, task.tools)
        wants_tools = bool(result.tool_calls) or result.error is not None
        if not completion.finished or not wants_tools:
            episode.done = True
            return None
        tool_messages = _observation_messages(result, sandboxes[i], episode, settings.max_tool_output_chars)
        episode.messages.extend(tool_messages)
        if episode.turns == settings.max_turns:
            episode.done = True
            return None
        suffix = encoder.suffix_ids(conversations[i], task.tools, tool_messages)
        conversations[i].extend(tool_messages)
        # Stop when the tool results would leave no room for the model's next turn.
        if token_budget(episode, settings, context) - len(suffix) < MIN_TURN_TOKENS:
            episode.done = True
            return None
        episode.completion_ids += suffix
        episode.env_mask += [0] * len(suffix)
        episode.logprobs += [0.0] * len(suffix)
        return next_request(i)

    first = {i: request for i in range(len(tasks)) if (request := next_request(i)) is not None}
    generate_conversations(generator, first, sampling, on_completion)
    return episodes


class Rollouts:
    """The rollout a recipe describes: its tool parser, the chat template's tool-message encoding and
    its turn and output limits. Training and evaluation both run episodes through one of these."""

    def __init__(self, cfg: RolloutConfig, tokenizer, new_sandbox: Callable[[Task], Sandbox]) -> None:
        from kit.tool_parsers import load_parser

        self.cfg = cfg
        self.parser = load_parser(cfg.tool_parser, cfg.tool_parser_plugin, tokenizer=tokenizer)
        self.encoder = ToolMessageEncoder(tokenizer)
        self.new_sandbox = new_sandbox

    def run(
        self, tasks: list[Task], generator: Generator, sampling: Sampling, max_tokens: int
    ) -> list[Episode]:
        """One episode per task; `max_tokens` is each episode's completion budget over all its turns."""
        settings = RolloutSettings(self.cfg.max_turns, max_tokens, self.cfg.max_tool_output_chars)
        return run_episodes(tasks, generator, sampling, self.parser, self.encoder, self.new_sandbox, settings)
