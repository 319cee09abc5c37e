"""Token-exact multi-turn tool rollouts, with a simulated user where the task has one.

An episode is a dialogue of policy turns (NeMo-Gym's `multi_turn_agent`). A policy turn is the tool
loop: generate -> parse tool calls with the configured parser -> execute them in the episode's own
sandbox -> append the results as tool messages -> generate again, until the model answers without a
call, `max_turns` model calls are made, or the token budget runs out. A task without a simulated user
(`task.user` empty) is one policy turn. A task with one goes on: the user simulator replies to the
policy's answer, the reply is appended as a user message, and the next policy turn starts, until the
user says its stop token, `max_user_turns` policy turns are done, or the budget runs out. Every reply
is checked against the user's rules (kit.rollout.user_rules.reply_breaks); one that breaks a rule ends
the episode with `user_breaks` set, which keeps it out of training.

As soon as its end is decided, each episode is scored by its environment (`TaskEnvironment.score`) while
its sandbox is alive, as NeMo-Gym's agents call verify, and the sandbox is closed: scoring runs in the
background while the other episodes go on, so an evaluation can show its success so far.

Token-exact: the completion the trainer's loss sees is the concatenation of the ids the generator
sampled and the ids of the tool and user messages; the model's own ids are never decoded and
re-encoded. `env_mask` is 1 on sampled ids and 0 on observation ids (tool results and user replies),
so observations carry no loss and count against the same token budget, and `logprobs` are the
generator's own (0.0 on observation ids) for TRL's importance-sampling correction.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kit.config.tree import KitConfig, RolloutConfig
from kit.episode import (
    Episode,
    EpisodeFault,
    Sandbox,
    Task,
    ToolMessageEncoder,
    is_error_observation,
)
from kit.generation.base import Completion, Generator, Request, Sampling, generate_conversations
from kit.rollout.user_rules import reply_breaks
from kit.rollout.user_simulators import USER_WORKERS
from kit.tool_parsers import ParseResult, ToolCallParser

if TYPE_CHECKING:
    from kit.envs.environment import TaskEnvironment

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RolloutSettings:
    """One rollout's limits: the recipe's (`rollout`, `user_model.max_turns`) and the episode budget."""

    max_turns: int  # model calls per policy turn
    max_completion_tokens: int  # per episode, observations included
    max_tool_output_chars: int
    max_user_turns: int  # policy turns of a dialogue task

    @classmethod
    def of(cls, rollout: RolloutConfig, max_completion_tokens: int, max_user_turns: int) -> RolloutSettings:
        return cls(rollout.max_turns, max_completion_tokens, rollout.max_tool_output_chars, max_user_turns)


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
    """Execute the parsed calls (or report the parse failure) and return the tool messages. The episode's
    record of the turn gets the calls in OpenAI's chat form (`tool_calls` on the assistant message, a
    `tool_call_id` on each result), which is what NeMo-Gym's verify and the trajectory files read."""
    if result.error is not None:
        episode.parse_failures += 1
        message = {"role": "tool", "content": result.error[:max_chars]}
        episode.messages.append(dict(message))
        return [message]
    messages, recorded_calls = [], []
    for call in result.tool_calls:
        call_id = f"call_{len(episode.tool_calls)}"
        observation = sandbox.call(call.name, call.arguments)
        episode.tool_calls.append({"name": call.name, "arguments": call.arguments})
        recorded_calls.append({"id": call_id, "type": "function", "function": _chat_call(call)})
        if is_error_observation(observation):
            episode.tool_errors += 1
        messages.append({"role": "tool", "content": cut_observation(observation, max_chars)})
    episode.messages[-1]["tool_calls"] = recorded_calls
    episode.messages.extend(
        {**message, "tool_call_id": recorded["id"]}
        for message, recorded in zip(messages, recorded_calls, strict=True)
    )
    return messages


def _chat_call(call) -> dict[str, str]:
    arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
    return {"name": call.name, "arguments": arguments}


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
    sampling: Sampling | Mapping[int, Sampling],
    parser: ToolCallParser,
    encoder: ToolMessageEncoder,
    env: TaskEnvironment,
    settings: RolloutSettings,
    user=None,
    progress: Callable[[Episode], None] | None = None,
) -> list[Episode]:
    """Run one episode per task in a fresh sandbox of `env`, and score it there; `user` (a
    `kit.rollout.user_simulators.UserSimulator`) answers dialogue tasks. `sampling` may be given per
    episode, by its index in `tasks` (a generator with `generate_continuously` only). `progress`, if
    given, is called with each episode once it is scored, in the order they finish, one call at a time
    (from a worker thread).

    Within a policy turn, an episode's next model call is requested as soon as its tool results are in
    (continuous batching, where the generator supports it; else in rounds of the episodes still going).
    Between policy turns, the user replies of all episodes waiting for one are fetched concurrently. An
    episode is scored in the background as soon as it ends; all are scored when this returns.
    """
    context = generator.max_model_len
    sandboxes = [env.new_sandbox(task) for task in tasks]
    episodes = [Episode(prompt_ids=encoder.prompt_ids(task)) for task in tasks]
    conversations = [list(task.messages) for task in tasks]
    calls_this_turn = [0] * len(tasks)
    pool = ThreadPoolExecutor(max_workers=USER_WORKERS)
    scoring: list[Future[None]] = []
    reporting = threading.Lock()

    def score(i: int) -> None:
        _score(env, tasks[i], episodes[i], sandboxes[i])
        if progress is not None:
            with reporting:
                progress(episodes[i])

    def end(i: int, reason: str) -> None:
        """End episode i and score it. Every end goes through here, after the episode's last sandbox
        call and last change to its record: its sandbox is closed once scored."""
        episodes[i].end_reason = reason
        scoring.append(pool.submit(score, i))

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
        episode.messages.append(dict(assistant))
        if not completion.finished:
            end(i, "budget")
            return None
        result = parser.parse(text, task.tools)
        if not result.tool_calls and result.error is None:
            return None  # the policy answered: its turn is over
        tool_messages = _observation_messages(result, sandboxes[i], episode, settings.max_tool_output_chars)
        if calls_this_turn[i] == settings.max_turns:
            end(i, "max_turns")
            return None
        if not append_observation(i, tool_messages):
            return None
        return next_request(i)

    def user_broke(i: int, rules: list[str], failure: str) -> None:
        episodes[i].user_breaks = rules
        episodes[i].failure = failure
        end(i, "user_error")

    def user_turn(i: int, reply, view: list[dict[str, str]]) -> None:
        episode = episodes[i]
        if reply.error is not None:
            user_broke(i, ["no_reply"], reply.error)
            return
        broken = reply_breaks(tasks[i], view, episode.tool_calls, reply.text, reply.stop)
        message = {"role": "user", "content": reply.text}
        if not reply.stop:
            episode.messages.append(message)  # a reply that breaks a rule too: the record shows it
        if broken:
            user_broke(i, broken, f"the simulated user broke its rules: {', '.join(broken)}")
        elif reply.stop:
            end(i, "user_stop")
        else:
            episode.user_turns += 1
            calls_this_turn[i] = 0
            append_observation(i, [message])

    going = list(range(len(tasks)))
    with pool:
        while going:
            first = {i: request for i in going if (request := next_request(i)) is not None}
            generate_conversations(generator, first, sampling, on_completion)
            answered = [i for i in going if not episodes[i].done]
            for i in answered:
                episodes[i].policy_turns += 1
                if not tasks[i].is_dialogue:
                    end(i, "answered")
                elif not str(tasks[i].user["user_model_system_prompt"]).strip():
                    user_broke(i, ["no_reply"], "the row's user_model_system_prompt is empty")
                elif user is None:
                    user_broke(i, ["no_reply"], "a dialogue task, but no user simulator was given")
                elif episodes[i].policy_turns >= settings.max_user_turns:
                    end(i, "max_user_turns")
            waiting = [i for i in answered if not episodes[i].done]
            views = [_user_view(episodes[i]) for i in waiting]
            replies = pool.map(
                lambda i, view: user.reply(tasks[i], view, list(episodes[i].tool_calls)), waiting, views
            )
            for i, reply, view in zip(waiting, replies, views, strict=True):
                user_turn(i, reply, view)
            going = [i for i in waiting if not episodes[i].done]
        for scored in scoring:
            scored.result()
    for failure in sorted({e.failure for e in episodes if e.failure}):
        count = sum(e.failure == failure for e in episodes)
        user_fault = any(e.user_breaks for e in episodes if e.failure == failure)
        outcome = "kept out of training" if user_fault else "ended with reward 0"
        log.warning("%d episode(s) %s: %s", count, outcome, failure)
    return episodes


def _score(env: TaskEnvironment, task: Task, episode: Episode, sandbox: Sandbox) -> None:
    """Score a finished episode in its sandbox, then close the sandbox."""
    try:
        if not episode.failure:
            episode.reward = env.score(task, episode, sandbox)
    except EpisodeFault as fault:
        episode.failure = str(fault)
    finally:
        sandbox.close()


class Rollouts:
    """The rollout a recipe describes: its tool parser, the chat template's tool-message encoding and
    its turn and output limits. Training and evaluation both run episodes through one of these."""

    def __init__(
        self,
        cfg: RolloutConfig,
        tokenizer,
        env: TaskEnvironment,
        user=None,
        max_user_turns: int = 5,
    ) -> None:
        from kit.tool_parsers import load_parser

        self.cfg = cfg
        self.parser = load_parser(cfg.tool_parser, cfg.tool_parser_plugin, tokenizer=tokenizer)
        self.encoder = ToolMessageEncoder(tokenizer)
        self.env = env
        self.user = user
        self.max_user_turns = max_user_turns

    @classmethod
    def from_config(cls, cfg: KitConfig, tokenizer, env: TaskEnvironment, user=None) -> Rollouts:
        """The rollout of a recipe over `env`, with `user` answering its dialogue tasks; with
        `rollout.agent: nemo_gym`, NeMo-Gym's agent runs the episodes instead (the same `run`)."""
        if cfg.rollout.agent == "nemo_gym":
            return env.agent_rollouts(cfg, tokenizer)
        return cls(cfg.rollout, tokenizer, env, user, cfg.user_model.max_turns)

    def run(
        self,
        tasks: list[Task],
        generator: Generator,
        sampling: Sampling | Mapping[int, Sampling],
        max_tokens: int,
        progress: Callable[[Episode], None] | None = None,
    ) -> list[Episode]:
        """One episode per task (`sampling` for all, or per episode by its index in `tasks`);
        `max_tokens` is each episode's completion budget over all its turns, tool results and user
        replies included. `progress` is called with each episode once it is scored (`run_episodes`)."""
        settings = RolloutSettings.of(self.cfg, max_tokens, self.max_user_turns)
        return run_episodes(
            tasks, generator, sampling, self.parser, self.encoder, self.env, settings, self.user, progress
        )
