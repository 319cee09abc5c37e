"""Episodes run by NeMo-Gym's own agent against the policy's vLLM server (`rollout.agent: nemo_gym`).

The architecture of NeMo-RL's Gym tutorial and TRL's NeMo-Gym example: NeMo-Gym's launcher starts its
resources server, its agent (`env.nemo_gym.agent`, `simple_agent` by default) and its vLLM model adapter
(`vllm_model`, with `return_token_id_information`) pointed at the policy's `kit serve`, which parses tool
calls with the recipe's parser plugin and renders with the recipe's chat template. For each task the kit
posts the row to the agent's `/run`; the agent seeds a session, calls the policy, routes each tool call to
the resources server, feeds the results back, and verifies. Its answer holds the reward and, per model
call, `prompt_token_ids`, `generation_token_ids` and `generation_log_probs`.

Those calls are stitched into one episode for TRL (`stitch`): the first call's prompt is the episode's
prompt, each call's sampled ids are the policy's tokens (loss on, its logprobs), and what a call's prompt
adds after the previous call's prompt and sampled ids is observation (tool results, user turns: loss
off). Where a call's prompt does not extend the ids before it (the chat template renders the policy's
earlier turn from its parsed tool calls, which can differ from the text it sampled), the prefix is
replaced with what was sampled, as NeMo-RL does: the new prompt is cut after the end-of-turn token that
closes the last sampled turn and appended to the sampled ids. Each such replacement is counted on the
episode (`prefix_replacements`) and logged, never failing the batch.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import requests

from kit.config.tree import KitConfig
from kit.envs.nemo_gym.servers import NeMoGymError, NeMoGymServers, ServerSpec, gym_version, resources_server
from kit.episode import Episode, Task
from kit.generation.base import Sampling

log = logging.getLogger(__name__)

AGENT_INSTANCE = "kit_agent"
MODEL_INSTANCE = "policy_model"
AGENT_WORKERS = 32
"""Episodes posted to the agent at once (each a blocking HTTP call that lasts the whole episode)."""


class ModelCall:
    """What NeMo-Gym's model adapter returned for one model call: the prompt it rendered and the sampled
    ids with their logprobs."""

    def __init__(self, item: dict[str, Any]) -> None:
        self.prompt = [int(t) for t in item["prompt_token_ids"]]
        self.sampled = [int(t) for t in item["generation_token_ids"]]
        self.logprobs = [float(x) for x in item["generation_log_probs"]]


def model_calls(output: list[dict[str, Any]]) -> list[ModelCall]:
    """The model calls of an agent's response, in order: each call's last output item carries its ids."""
    return [ModelCall(item) for item in output if isinstance(item, dict) and "generation_token_ids" in item]


def stitch(calls: list[ModelCall], end_of_turn: int, budget: int) -> tuple[Episode, int]:
    """One episode's token streams from its model calls (see module docstring), cut at `budget`
    completion tokens; returns it and how many prefixes were replaced."""
    if not calls:
        raise NeMoGymError(
            "NeMo-Gym's agent returned no model call with token ids (return_token_id_information)"
        )
    episode = Episode(prompt_ids=list(calls[0].prompt))
    replaced = 0
    for number, call in enumerate(calls):
        if number:
            before = episode.prompt_ids + episode.completion_ids
            if call.prompt[: len(before)] == before:
                observation = call.prompt[len(before) :]
            else:
                replaced += 1
                observation = _after_turn(call.prompt, before.count(end_of_turn), end_of_turn)
            episode.completion_ids += observation
            episode.env_mask += [0] * len(observation)
            episode.logprobs += [0.0] * len(observation)
        episode.completion_ids += call.sampled
        episode.env_mask += [1] * len(call.sampled)
        episode.logprobs += call.logprobs
        episode.turns += 1
    if len(episode.completion_ids) > budget:
        episode.completion_ids = episode.completion_ids[:budget]
        episode.env_mask = episode.env_mask[:budget]
        episode.logprobs = episode.logprobs[:budget]
        episode.end_reason = "budget"
    return episode, replaced


def _after_turn(prompt: list[int], turns_before: int, end_of_turn: int) -> list[int]:
    """The ids of `prompt` after its `turns_before`-th end-of-turn token: what it adds after the turn the
    policy sampled last (the prompt renders as many turns before that point as the sampled ids hold)."""
    seen = 0
    for position, token in enumerate(prompt):
        if token == end_of_turn:
            seen += 1
            if seen == turns_before:
                return prompt[position + 1 :]
    raise NeMoGymError(
        f"a model call's prompt holds {seen} end-of-turn tokens, fewer than the {turns_before} of the turns "
        "before it: the chat template dropped earlier turns, so no prefix can be replaced"
    )


def chat_messages(output: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The agent's output items as the kit's episode messages (OpenAI chat form) and its tool calls."""
    messages: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for item in output:
        kind = item.get("type")
        if kind == "function_call":
            arguments = item.get("arguments", "{}")
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": arguments}}  # fmt: skip
            if not messages or messages[-1]["role"] != "assistant" or "tool_calls" not in messages[-1]:
                messages.append({"role": "assistant", "content": "", "tool_calls": []})
            messages[-1]["tool_calls"].append(call)
            calls.append({"name": item.get("name"), "arguments": _json_or_text(arguments)})
        elif kind == "function_call_output":
            messages.append(
                {"role": "tool", "content": item.get("output", ""), "tool_call_id": item.get("call_id")}
            )
        elif kind == "message":
            content = item.get("content")
            text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])
            messages.append({"role": item.get("role", "assistant"), "content": text})
    return messages, calls


def _json_or_text(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except (ValueError, TypeError):
        return arguments


class NeMoGymAgentRollouts:
    """Rollouts run by NeMo-Gym's agent (see module docstring), with the `run` of
    `kit.rollout.loop.Rollouts`."""

    def __init__(self, cfg: KitConfig, tokenizer, work_dir: str | Path) -> None:
        self.cfg = cfg
        self.gym = cfg.env.nemo_gym
        self.end_of_turn = tokenizer.convert_tokens_to_ids(tokenizer.eos_token)
        self.work_dir = Path(work_dir)
        self.servers: NeMoGymServers | None = None
        self._policy: str | None = None
        self._lock = threading.Lock()
        self.prefix_replacements = 0

    def agent_url(self, client) -> str:
        """The agent's address. NeMo-Gym's servers start on the first call, their model adapter pointed at
        the policy's server that `client` (a `VLLMServerClient`) talks to; later calls come between batches,
        where servers that grew too much are restarted (`env.nemo_gym.max_memory_growth_gib`)."""
        with self._lock:
            if self.servers is not None and self._policy != client.base_url:
                self.servers.stop()
                self.servers = None
            if self.servers is None:
                self.servers = NeMoGymServers(self._specs(client), self.work_dir, self.gym.start_timeout)
                self.servers.start()
                self._policy = client.base_url
            else:
                self.servers.recycle_if_grown(self.gym.max_memory_growth_gib)
            return self.servers.url(AGENT_INSTANCE)

    def _specs(self, client) -> list[ServerSpec]:
        environment = resources_server(self.gym.resources_server)
        model = ServerSpec(MODEL_INSTANCE, "responses_api_models", "vllm_model", {
            "base_url": f"{client.base_url}/v1",
            "api_key": client.api_key or "EMPTY",
            "model": client.model,  # the name the server serves the policy under
            "return_token_id_information": True,
            "uses_reasoning_parser": False,
        })  # fmt: skip
        agent = ServerSpec(AGENT_INSTANCE, "responses_api_agents", self.gym.agent, {
            "resources_server": {"type": "resources_servers", "name": environment.instance},
            "model_server": {"type": "responses_api_models", "name": MODEL_INSTANCE},
            "max_steps": self.cfg.rollout.max_turns,
        })  # fmt: skip
        return [environment, model, agent]

    def run(
        self,
        tasks: list[Task],
        generator,
        sampling: Sampling,
        max_tokens: int,
        progress: Callable[[Episode], None] | None = None,
    ) -> list[Episode]:
        """One episode per task, run by NeMo-Gym's agent against `generator`'s server (a
        `VLLMServerGenerator`), scored by NeMo-Gym's verify; `progress` is called with each episode as
        it comes back, as `kit.rollout.loop.Rollouts.run` does."""
        dialogues = [task.info.get("id") for task in tasks if task.is_dialogue]
        if dialogues:
            raise NeMoGymError(
                f"rows {dialogues[:5]} are dialogues (a user_model_system_prompt), which NeMo-Gym "
                f"{gym_version()}'s {self.gym.agent} cannot run (it has no simulated user); use "
                "rollout.agent=kit for them."
            )
        url = self.agent_url(generator.client)
        with ThreadPoolExecutor(max_workers=AGENT_WORKERS) as pool:
            running = [pool.submit(self._episode, url, task, sampling, max_tokens) for task in tasks]
            if progress is not None:
                for finished in as_completed(running):
                    progress(finished.result())
            return [finished.result() for finished in running]

    def _episode(self, url: str, task: Task, sampling: Sampling, max_tokens: int) -> Episode:
        params = {**task.row["responses_create_params"], "temperature": sampling.temperature,
                  "top_p": sampling.top_p, "max_output_tokens": max_tokens}  # fmt: skip
        try:
            answer = requests.post(
                f"{url}/run", json={**task.row, "responses_create_params": params},
                timeout=self.cfg.generation.request_timeout,
            )  # fmt: skip
        except requests.RequestException as error:
            self.servers.check_alive()
            raise NeMoGymError(f"NeMo-Gym's agent at {url} did not answer /run ({error})") from None
        if not answer.ok:
            raise NeMoGymError(
                f"NeMo-Gym's agent at {url} failed row {task.row.get('id')}: HTTP {answer.status_code} "
                f"{answer.text[:500]}\n{self.servers.log_tail(20)}"
            )
        result = answer.json()
        output = result["response"]["output"]
        episode, replaced = stitch(model_calls(output), self.end_of_turn, max_tokens)
        if replaced:
            with self._lock:
                self.prefix_replacements += replaced
            log.info("row %s: %d model call(s) did not extend the ids before them; prefix replaced",
                     task.row.get("id"), replaced)  # fmt: skip
        episode.prefix_replacements = replaced
        episode.messages, episode.tool_calls = chat_messages(output)
        episode.reward = float(result["reward"])
        episode.end_reason = episode.end_reason or "answered"
        episode.policy_turns = 1
        return episode

    def close(self) -> None:
        """Stop NeMo-Gym's servers; the next `run` starts them again."""
        with self._lock:
            if self.servers is not None:
                self.servers.stop()
                self.servers = None
