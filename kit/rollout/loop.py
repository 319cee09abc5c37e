"""Token-exact multi-turn tool rollouts, with a simulated user where the task has one.

An episode is a dialogue of policy turns (NeMo-Gym's `multi_turn_agent`). A policy turn is the tool
loop: generate -> parse tool calls with the configured parser -> execute them in the episode's own
sandbox -> append the results as tool messages -> generate again, until the model answers without a
call, `max_turns` model calls are made, or the token budget runs out. A task without a simulated user
(`task.user` empty) is one policy turn. A task with one goes on: the user simulator replies to the
policy's answer, the reply is appended as a user message, and the next policy turn starts, until the
user says its stop token, `max_user_turns` policy turns are done, or the budget runs out.

Token-exact: the completion the trainer's loss sees is the concatenation of the ids the generator
sampled and the ids of the tool and user messages; the model's own ids are never decoded and
re-encoded. `env_mask` is 1 on sampled ids and 0 on observation ids (tool results and user replies),
so observations carry no loss and count against the same token budget, and `logprobs` are the
generator's own (0.0 on observation ids) for TRL's importance-sampling correction.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kit.config.tree import KitConfig, RolloutConfig
from kit.generation.base import Completion, Generator, Request, Sampling, generate_conversations
from kit.tool_parsers import ParseResult, ToolCallParser

if TYPE_CHECKING:
    from kit.envs.environment import TaskEnvironment

log = logging.getLogger(__name__)


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
    # A dialogue task's row fields for its simulated user: `user_model_system_prompt` and
    # `verifier_metadata`; empty for a task that is one request.
    user: dict[str, Any] = field(default_factory=dict)

    @property
    def is_dialogue(self) -> bool:
        return "user_model_system_prompt" in self.user

    @property
    def ambiguity_type(self) -> str | None:
        """A dialogue task's `verifier_metadata.ambiguity_type` (NeMo-Gym's three, or "unknown")."""
        if not self.is_dialogue:
            return None
        return str((self.user.get("verifier_metadata") or {}).get("ambiguity_type", "unknown"))


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
    turns: int = 0  # model calls, over all policy turns
    policy_turns: int = 0
    user_turns: int = 0  # replies of the simulated user that went back to the policy
    # Why the episode ended: answered, user_stop, max_user_turns, max_turns, budget, or
    # user_error (then `failure` says what went wrong and the episode scores 0).
    end_reason: str | None = None
    failure: str | None = None

    @property
    def done(self) -> bool:
        return self.end_reason is not None

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
        self, conversation: list[dict[str, Any]], tools: list[dict], messages: list[dict]
    ) -> list[int]:
        """Ids of `messages` (tool results or a user reply) and the generation prompt after them."""
        render = self.tokenizer.apply_chat_template
        base = render(conversation, tools=tools or None, tokenize=False)
        full = render(
            conversation + messages, tools=tools or None, tokenize=False, add_generation_prompt=True
        )
        if not full.startswith(base):
            raise ValueError(
                "The chat template renders earlier turns differently once tool or user messages follow, so "
                "they cannot be appended token-exactly. Use model.chat_template=kit or a template that "
                "renders history append-only."
            )
        # The sampled ids end on the end-of-turn token; whatever the template writes after it comes first.
        after_eos = base[base.rfind(self.eos) + len(self.eos) :] if self.eos and self.eos in base else ""
        return self.tokenizer.encode(after_eos + full[len(base) :], add_special_tokens=False)


@dataclass
class RolloutSettings:
    max_turns: int = 4  # model calls per policy turn
    max_completion_tokens: int = 256  # per episode, observations included
    max_tool_output_chars: int = 800
    max_user_turns: int = 5  # policy turns of a dialogue task


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


def cut_observation(observation: str, max_chars: int) -> str:
    """`observation` cut to `max_chars`, saying how much was left out (what the model reads)."""
    if len(observation) <= max_chars:
        return observation
    return observation[:max_chars] + f"... [cut: {len(observation) - max_chars} more characters]"


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
        messages.append({"role": "tool", "content": cut_observation(observation, max_chars)})
    return messages


USER_WORKERS = 16
"""User replies requested at once (each a blocking call to the user model)."""


def _user_view(episode: Episode) -> list[dict[str, str]]:
    """The dialogue as the simulated user sees it: the policy's answers (the last assistant text of each
    policy turn) as "user" messages, its own replies as "assistant" ones."""
    view: list[dict[str, str]] = []
    answer = None
    for message in episode.messages:
        if message["role"] == "assistant":
            answer = message["content"]
        elif message["role"] == "user":
            view.append({"role": "user", "content": answer or ""})
            view.append({"role": "assistant", "content": message["content"]})
            answer = None
    return [*view, {"role": "user", "content": answer or ""}]


def run_episodes(
    tasks: list[Task],
    generator: Generator,
    sampling: Sampling,
    parser: ToolCallParser,
    encoder: ToolMessageEncoder,
    new_sandbox: Callable[[Task], Sandbox],
    settings: RolloutSettings,
    user=None,
) -> list[Episode]:
    """Run one episode per task; `user` (a `kit.rollout.user_simulators.UserSimulator`) answers dialogue
    tasks.

    Within a policy turn, an episode's next model call is requested as soon as its tool results are in
    (continuous batching, where the generator supports it; else in rounds of the episodes still going).
    Between policy turns, the user replies of all episodes waiting for one are fetched concurrently.
    """
    context = generator.max_model_len
    sandboxes = [new_sandbox(task) for task in tasks]
    episodes = [Episode(prompt_ids=encoder.prompt_ids(task)) for task in tasks]
    conversations = [list(task.messages) for task in tasks]
    calls_this_turn = [0] * len(tasks)

    def end(i: int, reason: str) -> None:
        episodes[i].end_reason = reason

    def append_observation(i: int, messages: list[dict[str, Any]]) -> bool:
        """Append tool or user messages as observation tokens; False (episode ended) when the model's
        next turn would no longer fit."""
        episode = episodes[i]
        suffix = encoder.suffix_ids(conversations[i], tasks[i].tools, messages)
        conversations[i].extend(messages)
        if token_budget(episode, settings, context) - len(suffix) < MIN_TURN_TOKENS:
            end(i, "budget")
            return False
        episode.completion_ids += suffix
        episode.env_mask += [0] * len(suffix)
        episode.logprobs += [0.0] * len(suffix)
        return True

    def next_request(i: int) -> Request | None:
        episode = episodes[i]
        budget = token_budget(episode, settings, context)
        if budget < MIN_TURN_TOKENS:
            end(i, "budget")
            return None
        return episode.prompt_ids + episode.completion_ids, budget

    def on_completion(i: int, completion: Completion) -> Request | None:
        _check_logprobs(completion, generator)
        episode, task = episodes[i], tasks[i]
        episode.turns += 1
        calls_this_turn[i] += 1
        episode.completion_ids += completion.token_ids
        episode.env_mask += [1] * len(completion.token_ids)
        episode.logprobs += completion.logprobs
        text = encoder.tokenizer.decode(completion.token_ids, skip_special_tokens=True)
        episode.raw_completions.append(text)
        assistant = {"role": "assistant", "content": text}
        conversations[i].append(assistant)
        episode.messages.append(assistant)
        if not completion.finished:
            end(i, "budget")
            return None
        result = parser.parse(text, task.tools)
        if not result.tool_calls and result.error is None:
            return None  # the policy answered: its turn is over
        tool_messages = _observation_messages(result, sandboxes[i], episode, settings.max_tool_output_chars)
        episode.messages.extend(tool_messages)
        if calls_this_turn[i] == settings.max_turns:
            end(i, "max_turns")
            return None
        if not append_observation(i, tool_messages):
            return None
        return next_request(i)

    def user_turn(i: int, reply) -> None:
        episode = episodes[i]
        if reply.error is not None:
            episode.failure = reply.error
            end(i, "user_error")
        elif reply.stop:
            end(i, "user_stop")
        else:
            message = {"role": "user", "content": reply.text}
            episode.messages.append(message)
            episode.user_turns += 1
            calls_this_turn[i] = 0
            append_observation(i, [message])

    going = list(range(len(tasks)))
    with ThreadPoolExecutor(max_workers=USER_WORKERS) as pool:
        while going:
            first = {i: request for i in going if (request := next_request(i)) is not None}
            generate_conversations(generator, first, sampling, on_completion)
            answered = [i for i in going if not episodes[i].done]
            for i in answered:
                episodes[i].policy_turns += 1
                if not tasks[i].is_dialogue:
                    end(i, "answered")
                elif not str(tasks[i].user["user_model_system_prompt"]).strip():
                    episodes[i].failure = "the row's user_model_system_prompt is empty"
                    end(i, "user_error")
                elif user is None:
                    episodes[i].failure = "a dialogue task, but no user simulator was given"
                    end(i, "user_error")
                elif episodes[i].policy_turns >= settings.max_user_turns:
                    end(i, "max_user_turns")
            waiting = [i for i in answered if not episodes[i].done]
            views = [_user_view(episodes[i]) for i in waiting]
            replies = pool.map(
                lambda i, view: user.reply(tasks[i], view, list(episodes[i].tool_calls)), waiting, views
            )
            for i, reply in zip(waiting, replies, strict=True):
                user_turn(i, reply)
            going = [i for i in waiting if not episodes[i].done]
    for failure in sorted({e.failure for e in episodes if e.failure}):
        count = sum(e.failure == failure for e in episodes)
        log.warning("%d episode(s) ended with reward 0: %s", count, failure)
    return episodes


class Rollouts:
    """The rollout a recipe describes: its tool parser, the chat template's tool-message encoding and
    its turn and output limits. Training and evaluation both run episodes through one of these."""

    def __init__(
        self,
        cfg: RolloutConfig,
        tokenizer,
        new_sandbox: Callable[[Task], Sandbox],
        user=None,
        max_user_turns: int = 5,
    ) -> None:
        from kit.tool_parsers import load_parser

        self.cfg = cfg
        self.parser = load_parser(cfg.tool_parser, cfg.tool_parser_plugin, tokenizer=tokenizer)
        self.encoder = ToolMessageEncoder(tokenizer)
        self.new_sandbox = new_sandbox
        self.user = user
        self.max_user_turns = max_user_turns

    @classmethod
    def from_config(cls, cfg: KitConfig, tokenizer, env: TaskEnvironment, user=None) -> Rollouts:
        """The rollout of a recipe over `env`, with `user` answering its dialogue tasks."""
        return cls(cfg.rollout, tokenizer, env.new_sandbox, user, cfg.user_model.max_turns)

    def run(
        self, tasks: list[Task], generator: Generator, sampling: Sampling, max_tokens: int
    ) -> list[Episode]:
        """One episode per task; `max_tokens` is each episode's completion budget over all its turns,
        tool results and user replies included."""
        settings = RolloutSettings(
            self.cfg.max_turns, max_tokens, self.cfg.max_tool_output_chars, self.max_user_turns
        )
        return run_episodes(
            tasks, generator, sampling, self.parser, self.encoder, self.new_sandbox, settings, self.user
        )
