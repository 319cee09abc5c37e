"""GRPO training through TRL with a plugin parser, and token-exactness of multi-turn rollouts.

One real training run (2 GRPO steps, plain-transformers generation) of a model that writes calls in
the `[[call NAME {...}]]` format, which only the test plugin parses. The run records what the
generator sampled and what TRL handed to the loss, and the tests compare them.
"""

from __future__ import annotations

import json

import pytest
import torch
from conftest import PROJECT_ROOT
from tool_models import TASK_OVERRIDES, tool_caller

from kit.config.tree import load_config
from kit.envs.environment import make_environment
from kit.models import load_policy, load_tokenizer
from kit.run_folder import RunFolder
from kit.train.grpo_trainer import KitGRPOTrainer, build_trainer

PLUGIN = PROJECT_ROOT / "tests" / "plugins" / "bracket_call_plugin.py"
pytestmark = pytest.mark.slow


class RecordingGenerator:
    """Passes generation through to the real generator and keeps what it sampled, per prompt."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.max_model_len = inner.max_model_len
        self.samples: list[tuple[list[int], list[int]]] = []  # (prompt ids, sampled ids)

    def generate(self, prompts, max_tokens, sampling):
        completions = self.inner.generate(prompts, max_tokens, sampling)
        self.samples += [(list(p), c.token_ids) for p, c in zip(prompts, completions, strict=True)]
        return completions


@pytest.fixture(scope="module")
def plugin_run(demo_model_dir, tmp_path_factory):
    model_dir = tool_caller(demo_model_dir, "bracket")
    run_dir = tmp_path_factory.mktemp("plugin_run")
    cfg = load_config(
        "cpu_demo",
        [
            *TASK_OVERRIDES,
            f"model.name_or_path={model_dir}",
            "rollout.tool_parser=bracket_call",
            f"rollout.tool_parser_plugin={PLUGIN}",
            "rollout.max_turns=3",
            "generation.mode=transformers",
            "grpo.max_steps=2",
            "grpo.num_generations=2",
            "grpo.per_device_train_batch_size=4",
            "grpo.max_completion_length=256",
            "grpo.save_strategy='no'",
            f"run.output_dir={run_dir}",
        ],
    )
    run = RunFolder(run_dir).create()
    tokenizer = load_tokenizer(cfg.model, model_dir)
    env = make_environment(cfg.env)
    tasks = env.load_tasks(cfg.env.train_file, limit=16)
    trainer = build_trainer(cfg, load_policy(cfg.model, model_dir), tokenizer, env, tasks, run)
    recorder = RecordingGenerator(trainer.rollout_func.generator)
    trainer.rollout_func.generator = recorder
    loss_inputs = []
    score = trainer._generate_and_score_completions

    def recording_score(inputs):  # observes what TRL feeds to the loss; changes nothing
        output = score(inputs)
        loss_inputs.append({k: v.detach().cpu() for k, v in output.items() if isinstance(v, torch.Tensor)})
        return output

    trainer._generate_and_score_completions = recording_score
    trainer.train()
    return {
        "run": run,
        "recorder": recorder,
        "loss_inputs": loss_inputs,
        "tokenizer": tokenizer,
        "trainer": trainer,
        "model": load_policy(cfg.model, model_dir),  # as before training: a fresh float32 copy
    }


def test_plugin_format_calls_are_parsed_and_executed(plugin_run):
    run: RunFolder = plugin_run["run"]
    steps = run.training_steps()
    assert [m["step"] for m in steps] == [1, 2]
    trajectories = run.trajectories()
    assert len(trajectories) == 8  # 2 steps x (2 prompts x 2 generations)
    executed = [t for t in trajectories if t["tool_calls"]]
    assert executed, "no trajectory executed a call"
    for trajectory in executed:
        assert "[[call " in trajectory["raw_completions"][0]
        tool_messages = [m for m in trajectory["messages"] if m["role"] == "tool"]
        assert tool_messages and all(m["content"] for m in tool_messages)
    assert any(t["reward"] == 1.0 for t in trajectories)
    # Each step's logged episode metrics are exactly those of the episodes recorded under that step.
    for metrics in steps:
        mine = [t for t in trajectories if t["step"] == metrics["step"]]
        assert len(mine) == 4  # 2 prompts x 2 generations
        turns = sum(t["turns"] for t in mine)
        assert metrics["episode/parse_failure_rate"] == pytest.approx(
            sum(t["parse_failures"] for t in mine) / turns
        )
        assert metrics["episode/tool_calls"] == pytest.approx(sum(len(t["tool_calls"]) for t in mine) / 4)
        assert metrics["episode/success_rate"] == pytest.approx(sum(t["reward"] >= 1.0 for t in mine) / 4)


def test_loss_sees_exactly_the_sampled_ids_with_tool_results_masked(plugin_run):
    tokenizer = plugin_run["tokenizer"]
    samples = plugin_run["recorder"].samples
    multi_turn_rows = 0
    for batch in plugin_run["loss_inputs"]:
        prompts, completions = batch["prompt_ids"], batch["completion_ids"]
        prompt_mask, completion_mask, tool_mask = (
            batch["prompt_mask"],
            batch["completion_mask"],
            batch["tool_mask"],
        )
        for row in range(completions.shape[0]):
            prompt = prompts[row][prompt_mask[row].bool()].tolist()
            length = int(completion_mask[row].sum())
            ids = completions[row][:length].tolist()
            mask = tool_mask[row][:length].tolist()
            # Split the completion into spans of sampled ids (mask 1) and tool-message ids (mask 0).
            spans, start = [], 0
            for i in range(1, length + 1):
                if i == length or mask[i] != mask[start]:
                    spans.append((mask[start], ids[start:i]))
                    start = i
            sampled = [span for flag, span in spans if flag == 1]
            # Each sampled span is exactly what the generator returned for the context before it.
            context = list(prompt)
            for flag, span in spans:
                if flag == 1:
                    assert (context, span) in samples
                context += span
            tool_spans = [span for flag, span in spans if flag == 0]
            if tool_spans:
                multi_turn_rows += 1
                assert len(sampled) == len(tool_spans) + 1
                assert "<|im_start|>tool" in tokenizer.decode(tool_spans[0])
    assert multi_turn_rows > 0, "no multi-turn episode reached the loss"


def test_trajectory_lines_are_json_with_rewards(plugin_run):
    lines = plugin_run["run"].trajectories_file.read_text().splitlines()
    assert len(lines) == 8
    for line in lines:
        record = json.loads(line)
        assert set(record) >= {"step", "messages", "raw_completions", "tool_calls", "reward", "ground_truth"}


def test_dashboard_replaces_the_notebook_progress_display(plugin_run):
    """In a Jupyter kernel transformers adds a progress bar and a loss table; the dashboard replaces them."""
    from transformers.utils.notebook import NotebookProgressCallback

    from kit.notebook.dashboard import TrainingDashboard

    trainer = plugin_run["trainer"]
    trainer.add_callback(NotebookProgressCallback)  # what transformers adds when it runs in a kernel
    trainer.add_callback(TrainingDashboard())
    kinds = [type(c) for c in trainer.callback_handler.callbacks]
    assert TrainingDashboard in kinds
    assert NotebookProgressCallback not in kinds


def test_scoring_skips_padding_columns_and_keeps_trls_logprobs_and_gradient(plugin_run, monkeypatch):
    """The kit scores each chunk without the columns that are padding in all its rows; the logprobs and
    entropies of the real completion tokens, and the gradient through them, are those of TRL's scoring.

    Compared in float32 on the model before training. Under bf16 autocast, or after the fixture's two
    steps (activations up to 2e4), a row's logprobs move by up to 0.3 with any change of its padding,
    TRL's own included (TRL pads each row to its batch mates)."""
    import contextlib

    from trl import GRPOTrainer
    from trl.trainer.utils import add_fused_lm_head

    trainer = plugin_run["trainer"]
    model = plugin_run["model"]
    add_fused_lm_head(model, temperature=trainer.temperature, outputs=("log_probs", "entropy"))
    monkeypatch.setattr(trainer.accelerator, "autocast", contextlib.nullcontext)
    batch = max(plugin_run["loss_inputs"], key=lambda b: b["completion_mask"].sum(1).float().std())
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    attention = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    keep = batch["completion_ids"].size(1)
    real = batch["completion_mask"].bool()
    widths: list[int] = []
    hook = model.register_forward_pre_hook(
        lambda module, args, kwargs: widths.append(kwargs["input_ids"].size(1)), with_kwargs=True
    )

    def scored(method):
        widths.clear()
        model.zero_grad()
        logps, entropies, _ = method(trainer, model, ids, attention, keep, batch_size=1, compute_entropy=True)
        (logps * real).sum().backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        return logps.detach(), entropies.detach(), grads, list(widths)

    try:
        trl_logps, trl_entropies, trl_grads, trl_widths = scored(
            GRPOTrainer._get_per_token_logps_and_entropies
        )
        logps, entropies, grads, kit_widths = scored(KitGRPOTrainer._get_per_token_logps_and_entropies)
    finally:
        hook.remove()
    spans = [int(row.nonzero()[-1]) - int(row.nonzero()[0]) + 1 for row in attention]
    assert trl_widths == [ids.size(1)] * len(spans)
    assert kit_widths == spans and min(spans) < ids.size(1), "no padding column was skipped"
    # Shifted positions round RoPE's float32 angles differently, more the longer the row: 4e-5 even with
    # float64 weights on 100-token rows, 1.3e-4 on ~400-token rows, 3.0e-4 on the ~560-token rows of the
    # find-then-act tasks' searches and answers.
    torch.testing.assert_close(logps[real], trl_logps[real], rtol=0, atol=1e-3)
    torch.testing.assert_close(entropies[real], trl_entropies[real], rtol=0, atol=1e-3)
    assert not logps[~real].any()
    torch.testing.assert_close(grads, trl_grads, rtol=0, atol=1e-4 * float(trl_grads.abs().max()))


class AskingGenerator:
    """A policy that asks the same question at every call (so each dialogue reaches its user), sampled
    ids through the real tokenizer."""

    def __init__(self, tokenizer, max_model_len: int) -> None:
        self.ids = tokenizer.encode("Which one do you mean?", add_special_tokens=False)
        self.ids.append(tokenizer.convert_tokens_to_ids(tokenizer.eos_token))
        self.max_model_len = max_model_len

    def generate(self, prompts, max_tokens, sampling):
        from kit.generation.base import Completion

        return [
            Completion(self.ids[:budget], [-0.5] * len(self.ids[:budget]), len(self.ids) <= budget)
            for budget in max_tokens
        ]


def test_an_episode_whose_user_broke_a_rule_is_kept_out_of_the_loss(demo_model_dir, tmp_path, llm_user):
    """A user model that answers as the assistant breaks a rule in every dialogue: TRL must see those
    episodes with no reward (advantage 0) and no loss tokens, and the step must count them."""
    cfg = load_config(
        "cpu_demo",
        [
            *TASK_OVERRIDES,
            "env.dialogue_share=0.5",
            f"model.name_or_path={demo_model_dir}",
            "generation.mode=transformers",
            "grpo.max_steps=1",
            "grpo.num_generations=2",
            "grpo.per_device_train_batch_size=4",
            "grpo.max_completion_length=128",
            "grpo.save_strategy='no'",
            f"run.output_dir={tmp_path}",
        ],
    )
    user = llm_user(lambda messages: "I'm here to assist you. How can I help you today?")
    run = RunFolder(tmp_path).create()
    tokenizer = load_tokenizer(cfg.model, demo_model_dir)
    env = make_environment(cfg.env)
    loaded = env.load_tasks(cfg.env.train_file, limit=40)
    talk = next(t for t in loaded if t.is_dialogue)
    tasks = [talk, next(t for t in loaded if not t.is_dialogue)]
    trainer = build_trainer(cfg, load_policy(cfg.model, demo_model_dir), tokenizer, env, tasks, run, user)
    trainer.rollout_func.generator = AskingGenerator(tokenizer, 2048)
    loss_inputs = []
    score = trainer._generate_and_score_completions

    def recording_score(inputs):
        output = score(inputs)
        loss_inputs.append({k: v.detach().cpu() for k, v in output.items() if isinstance(v, torch.Tensor)})
        return output

    trainer._generate_and_score_completions = recording_score
    trainer.train()
    (batch,) = loss_inputs
    asked = tokenizer.encode("Which one do you mean?", add_special_tokens=False)
    excluded = 0
    for row in range(batch["completion_ids"].shape[0]):
        length = int(batch["completion_mask"][row].sum())
        ids = batch["completion_ids"][row][:length].tolist()
        loss_tokens = int((batch["completion_mask"][row] * batch["tool_mask"][row]).sum())
        prompt = batch["prompt_ids"][row][batch["prompt_mask"][row].bool()].tolist()
        assert ids[: len(asked)] == asked
        if talk.messages[-1]["content"] in tokenizer.decode(prompt):
            excluded += 1
            assert loss_tokens == 0 and float(batch["advantages"][row]) == 0.0
        else:
            assert loss_tokens == length
    assert excluded == 2  # the dialogue's two generations
    (step,) = run.training_steps()
    assert step["user/excluded_episodes"] == 2 and step["user/assistant_speak"] == 1.0
    records = run.trajectories()
    assert sorted(r["reward"] is None for r in records) == [False, False, True, True]
    assert all(r["user_breaks"] == ["assistant_speak"] for r in records if r["reward"] is None)
