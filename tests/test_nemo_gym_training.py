"""Training and evaluating on NeMo-Gym's own servers (`env.name: nemo_gym`), with the kit's loop and with
NeMo-Gym's agent driving the episodes against `kit serve` (`rollout.agent: nemo_gym`). The policy is the
demo model warmed up on rows of NeMo-Gym's counter server (tests/tool_models.py), so that it really calls
the server's tools; every server is NeMo-Gym's own, started by its own launcher."""

from __future__ import annotations

import json
import math

import pytest
from tool_models import counter_caller

from kit.config.tree import DEMO_MODEL, load_config
from kit.envs.environment import make_environment
from kit.generation.base import Sampling
from kit.generation.vllm_server import VLLMServerGenerator
from kit.rollout.loop import Rollouts
from kit.testing.fuzz.server import KEY
from kit.train.evaluate import evaluate_model
from kit.train.models import load_policy, load_tokenizer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def caller(demo_model_dir) -> str:
    return counter_caller(demo_model_dir)


def counter_holds(row: dict, calls: list[dict]) -> float:
    """What NeMo-Gym's verify must say: 1 when the calls leave the counter at the row's expected count."""
    if not all(isinstance(call["arguments"], dict) for call in calls):
        return float("nan")  # NeMo-Gym's agent answers these itself: no claim to check
    counts = [call["arguments"].get("count") for call in calls if call["name"] == "increment_counter"]
    total = row["initial_count"]
    for count in counts:
        if not isinstance(count, int):
            return float("nan")  # the server refuses it: no claim to check
        total += count
    return float(total == row["expected_count"])


def test_the_kit_loop_on_nemo_gym_is_scored_by_the_server_s_own_state(caller, tmp_path):
    cfg = load_config("cpu_nemo_gym", [f"model.name_or_path={caller}", "generation.mode=transformers"])
    env = make_environment(cfg.env, tmp_path)
    try:
        tasks = env.load_tasks(cfg.env.eval_file, limit=12)
        tokenizer = load_tokenizer(cfg.model, caller)
        evaluation = evaluate_model(cfg, load_policy(cfg.model, caller), tokenizer, env, tasks, 192)
    finally:
        env.close()
    episodes = evaluation.episodes
    assert sum(len(e.tool_calls) for e in episodes) >= len(tasks)  # the policy acts on the server
    for task, episode in zip(tasks, episodes, strict=True):
        expected = counter_holds(task.row, episode.tool_calls)
        assert math.isnan(expected) or episode.reward == expected, (task.row, episode.tool_calls)
    observations = [m["content"] for e in episodes for m in e.messages if m["role"] == "tool"]
    assert '{"success":true}' in observations  # NeMo-Gym's own answer body, as its agent would feed it


def test_nemo_gym_s_agent_runs_the_episodes_against_kit_serve(
    caller, shared_server, served_weights, tmp_path
):
    client = served_weights(caller)
    served = [f"generation.server_url={shared_server.url}", f"generation.api_key={KEY}"]
    overrides = [f"model.name_or_path={DEMO_MODEL}", "generation.mode=server", *served]
    agent_cfg = load_config("cpu_nemo_gym", [*overrides, "rollout.agent=nemo_gym"])
    kit_cfg = load_config("cpu_nemo_gym", overrides)
    env = make_environment(agent_cfg.env, tmp_path)
    tokenizer = load_tokenizer(agent_cfg.model, caller)
    generator = VLLMServerGenerator(client)
    try:
        tasks = env.load_tasks(agent_cfg.env.eval_file, limit=8)
        # NeMo-Gym's agent limits each model call and the number of calls, not an episode's tokens: with a
        # budget neither reaches, both paths end an episode after the same calls (rollout.max_turns).
        budget, greedy = 1024, Sampling(0.0)
        by_agent = Rollouts.from_config(agent_cfg, tokenizer, env).run(tasks, generator, greedy, budget)
        by_kit = Rollouts.from_config(kit_cfg, tokenizer, env).run(tasks, generator, greedy, budget)
    finally:
        env.close()
    assert sum(e.turns for e in by_agent) > len(tasks)  # several model calls per episode: stitched
    for task, agent, kit in zip(tasks, by_agent, by_kit, strict=True):
        assert len(agent.completion_ids) == len(agent.env_mask) == len(agent.logprobs)
        assert all(math.isfinite(lp) for lp in agent.logprobs)
        assert agent.prompt_ids == kit.prompt_ids  # the same template and tools render the same prompt
        masked = [t for t, m in zip(agent.completion_ids, agent.env_mask, strict=True) if not m]
        observed = tokenizer.decode(masked)
        for message in agent.messages:
            if message["role"] == "tool":
                assert message["content"] in observed  # the tool results are in the masked tokens
        expected = counter_holds(task.row, agent.tool_calls)
        assert math.isnan(expected) or agent.reward == expected
        # Greedy, the same tokens before each model call: the same episode, the same calls, the same reward.
        assert agent.prompt_ids + agent.completion_ids == kit.prompt_ids + kit.completion_ids
        assert agent.env_mask == kit.env_mask
        assert agent.tool_calls == kit.tool_calls and agent.reward == kit.reward
    print(json.dumps({"prefix_replacements": sum(e.prefix_replacements for e in by_agent)}))


def test_grpo_trains_on_episodes_nemo_gym_s_agent_ran(caller, shared_server, served_weights, tmp_path):
    from kit.train.job import TrainingJob

    served_weights(caller)  # the server starts from the policy's weights; each step pushes the new ones
    cfg = load_config("cpu_nemo_gym", [
        f"model.name_or_path={caller}", "rollout.agent=nemo_gym", "generation.mode=server",
        f"generation.server_url={shared_server.url}", f"generation.api_key={KEY}", "sft.enabled=false",
        "task_selection.probe_tasks=0", "run.eval_tasks=0", "grpo.max_steps=1", "grpo.num_generations=4",
        "grpo.per_device_train_batch_size=8", "grpo.max_completion_length=160", "grpo.save_strategy='no'",
        f"run.output_dir={tmp_path / 'run'}",
    ])  # fmt: skip
    job = TrainingJob(cfg)
    try:
        job.grpo()
    finally:
        summary = job.finish()
    assert summary["grpo_steps"] == 1
    step = job.run.training_steps()[0]
    assert math.isfinite(step["loss"]) and "episode/prefix_replacements" in step
    records = job.run.trajectories()
    assert len(records) == 8 and any(r["tool_calls"] for r in records)
    rows = {task.info["id"]: task.row for task in job.train_tasks}
    for record in records:  # each reward is NeMo-Gym's verify of what the agent's episode did
        expected = counter_holds(rows[record["task"]["id"]], record["tool_calls"])
        assert math.isnan(expected) or record["reward"] == expected
