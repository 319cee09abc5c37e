"""The step-time bench's TRL side for multi-turn episodes: the workplace tools as TRL's own tool environment.

These check what makes that comparison fair: TRL renders the same prompt tokens as the kit, parses the
kit's tool-call format, runs calls in each episode's fresh sandbox, and scores with the same outcome.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kit.testing import trl_tool_env


@pytest.fixture(scope="module")
def setting(demo_model_dir):
    from kit.config.tree import load_config
    from kit.envs.environment import make_environment
    from kit.models import load_tokenizer

    cfg = load_config("single_gpu", ["env.tiers=[easy, medium]", "env.tools_in_prompt=task"])
    tokenizer = trl_tool_env.with_response_template(load_tokenizer(cfg.model, demo_model_dir))
    env = make_environment(cfg.env)
    return tokenizer, env, env.load_tasks(cfg.env.train_file)


def test_trl_renders_the_same_prompt_tokens_as_the_kit(setting):
    tokenizer, env, kit_tasks = setting
    tasks = trl_tool_env.as_trl_renders(kit_tasks)
    factories = trl_tool_env.environment_factories(tasks, env, 800)
    assert 1 < len(factories) < len(tasks)  # one environment per distinct tool list
    trl_tool_env.check_same_prompts(tasks, factories, tokenizer)
    # TRL lists an environment's methods by name: tools in another order give another prompt, and the
    # check catches that.
    reordered = [replace(task, tools=task.tools[::-1]) for task in tasks]
    reordered_factories = trl_tool_env.environment_factories(reordered, env, 800)
    with pytest.raises(ValueError, match="different prompt"):
        trl_tool_env.check_same_prompts(reordered, reordered_factories, tokenizer)


def _assistant_ids(tokenizer, calls: list[dict]) -> tuple[list[int], list[int]]:
    """The ids of an assistant turn making `calls` as the kit template renders it (what SFT teaches), and
    the ids of the prompt before it."""
    messages = [
        {"role": "user", "content": "x"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": c} for c in calls],
        },  # noqa: E501
    ]
    prefix = tokenizer.apply_chat_template(messages[:1], add_generation_prompt=True, tokenize=False)
    text = tokenizer.apply_chat_template(messages, tokenize=False)[len(prefix) :]
    encode = tokenizer.encode
    return encode(text.rstrip("\n"), add_special_tokens=False), encode(prefix, add_special_tokens=False)


def test_trl_parses_the_kits_calls_runs_them_and_scores_the_outcome(setting):
    from trl.chat_template_utils import parse_response

    tokenizer, env, kit_tasks = setting
    tasks = trl_tool_env.as_trl_renders(kit_tasks)
    # A find-then-act task: the solver's path (a search, then the write that uses the id it found).
    index = next(i for i, t in enumerate(tasks) if len(t.solution) >= 2 and not t.info["invalid"])
    task = tasks[index]
    factories = trl_tool_env.environment_factories(tasks, env, max_tool_output_chars=40)
    episode = factories[trl_tool_env.tool_list_key(task)]()
    episode.reset(task_index=index, prompt=task.messages)
    tools = trl_tool_env.trl_tools(episode)
    assert [tool.__name__ for tool in tools] == [t["function"]["name"] for t in task.tools]

    ids, prefix = _assistant_ids(tokenizer, task.solution)
    parsed = parse_response(tokenizer, ids, prefix=prefix, tools=tools)
    calls = [call["function"] for call in parsed["tool_calls"]]
    assert [c["name"] for c in calls] == [c["name"] for c in task.solution]
    observations = [getattr(episode, c["name"])(**c["arguments"]) for c in calls]
    assert all(len(o) <= 40 or o.endswith("more characters]") for o in observations)
    assert episode.get_reward() == 1.0

    # A fresh episode of the same task starts from a clean sandbox: the search alone changes nothing.
    episode.reset(task_index=index, prompt=task.messages)
    getattr(episode, calls[0]["name"])(**calls[0]["arguments"])
    assert episode.get_reward() == env.outcome(task, task.solution[:1]) < 1.0
