"""What an episode is made of: the task, the record of one rollout, the sandbox it acts on, and the
token encoding of the messages appended between model turns (tool results, user replies)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class Sandbox(Protocol):
    """What the rollout needs from an environment instance: execute a call, get an observation; and
    release what it holds once the episode is scored."""

    def call(self, name: str, arguments: dict[str, Any] | str) -> str: ...

    def close(self) -> None: ...


class EpisodeFault(RuntimeError):
    """The environment could not serve one episode (its verifier failed on it, say): the episode fails
    with this message and scores 0, the job goes on. A fault of the whole environment (a server that is
    gone) is raised as another error and stops the job."""


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
    # The row the task came from, for environments that send it on (NeMo-Gym's seed_session and verify).
    row: dict[str, Any] = field(default_factory=dict)
    # A solver's calls, in order: the reads that find what the request names, then the writes (the row's
    # `solution`; without one, the ground truth). The SFT warm-up demonstrates it; the reward never reads it.
    solution: list[dict[str, Any]] = field(default_factory=list)

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
    # user_error (then `failure` says what went wrong and `user_breaks` which rules).
    end_reason: str | None = None
    # What went wrong outside the policy (its simulated user, or its environment: an EpisodeFault).
    failure: str | None = None
    # The rules its simulated user broke (kit.rollout.user_rules.RULES): such an episode measures the
    # user, not the policy, and is kept out of training and out of success rates.
    user_breaks: list[str] = field(default_factory=list)
    # The environment's score of the episode, given at its end while its sandbox is alive.
    reward: float | None = None
    # Model calls whose prompt, rendered by NeMo-Gym's agent, did not extend the ids before it, so that
    # its prefix was replaced with what was sampled (kit.envs.nemo_gym.agent); 0 in the kit's own loop.
    prefix_replacements: int = 0

    @property
    def done(self) -> bool:
        return self.end_reason is not None

    @property
    def generated_tokens(self) -> int:
        return sum(self.env_mask)


def episode_reward(episode: Episode) -> float | None:
    """The episode's reward: its environment's score; None when its simulated user broke a rule (the
    episode says nothing about the policy: TRL leaves a None reward out of its group's statistics); 0
    when its environment could not serve it."""
    if episode.user_breaks:
        return None
    if episode.failure:
        return 0.0
    if episode.reward is None:
        raise RuntimeError("episode_reward of an episode its rollout did not score (a bug in the kit)")
    return episode.reward


class Observation(str):
    """The text of a tool's answer (a ``str``), with ``refused`` set when the tool did not do what it was
    asked (bad or missing arguments, a record not found, an unknown tool, an error); a refused call
    leaves the state unchanged."""

    refused: bool

    def __new__(cls, text: str, refused: bool) -> Observation:
        observation = super().__new__(cls, text)
        observation.refused = refused
        return observation

    def __reduce__(self) -> tuple:
        return Observation, (str(self), self.refused)


def is_success(reward: float) -> bool:
    """Whether an episode's reward counts as solving its task: NeMo-Gym's verifiers give 1.0 for that."""
    return reward >= 1.0


def is_error_observation(observation: str) -> bool:
    """Whether the tool refused the call: what the observation says (an `Observation`'s `refused`), else
    whether its text starts with "Error"."""
    refused = getattr(observation, "refused", None)
    return observation.startswith("Error") if refused is None else bool(refused)


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
