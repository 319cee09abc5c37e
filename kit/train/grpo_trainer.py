"""Building TRL's GRPOTrainer around the kit's rollout, rewards and generation modes.

GRPO itself is TRL's. The kit plugs in through TRL's public extension points:
- `rollout_func`: the multi-turn tool rollout (kit.rollout.loop) with the configured generator; it returns
  each row's episode as an extra field, which TRL hands to the reward functions;
- `reward_funcs`: the environment's outcome reward plus optional shaping rewards, each logged by name;
  episode statistics and the rollout's wall time go out through TRL's `log_metric` reward kwarg;
- callbacks: metrics.jsonl in the run folder.
The private parts of TRL it still needs are listed, with why, in `kit.train.trl_internals`. How rollouts
are generated and synced is decided once, by `kit.generation.setup.resolve_generation`; with
`grpo_async` the rollout generates one batch ahead (kit.train.rollouts_ahead).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import torch
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from kit.config.tree import KitConfig
from kit.envs.environment import TaskEnvironment
from kit.episode import Episode, Task, episode_reward, is_success
from kit.generation.base import Generator, Sampling, mixed_seed
from kit.generation.setup import GenerationSetup, resolve_generation
from kit.generation.transformers_gen import TransformersGenerator, context_length
from kit.generation.vllm_server import VLLMServerGenerator, connect_to_server
from kit.generation.weight_sync import server_sync
from kit.lora import peft_config
from kit.models import is_dummy_model, mixed_precision_args
from kit.rollout.loop import Rollouts
from kit.rollout.user_rules import RULES
from kit.run_folder import RunFolder
from kit.train import trl_internals
from kit.train.rollouts_ahead import AheadSampler, RolloutsAhead

log = logging.getLogger(__name__)

trl_internals.compact_lm_head_on_cpu()
trl_internals.quiet_unscorable_row_warning()


def prompt_key(messages: list[dict[str, Any]]) -> str:
    """The key that maps a prompt TRL hands back to the task it came from."""
    return json.dumps([{"role": m["role"], "content": m["content"]} for m in messages], sort_keys=True)


def grpo_args(cfg: KitConfig, run: RunFolder, setup: GenerationSetup) -> GRPOConfig:
    """TRL's GRPOConfig from the recipe's `grpo` section plus the fields the kit derives itself."""
    return cfg.grpo.build(
        mixed_precision_args(), output_dir=str(run.checkpoints), seed=cfg.run.seed, **setup.trl_vllm_args()
    )


class MetricsFileCallback(TrainerCallback):
    """Appends every training log (TRL's metrics plus the kit's episode metrics) to metrics.jsonl."""

    def __init__(self, run: RunFolder) -> None:
        self.run = run

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            self.run.append_metrics({"step": state.global_step, **logs})


class KitGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose `rollout_func` (a `KitRollout`) gets its generator when the trainer is built:
    `generator_for(trainer)` makes it from what TRL set up (the colocated engine, the wrapped model, the
    weight sync), so the rollout never runs without one."""

    def __init__(self, *args, generator_for: Callable[[KitGRPOTrainer], Generator], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rollout_func.attach(self, generator_for(self))

    def train(self, *args, **kwargs):
        """TRL's training; however it ends, no batch is left generating ahead (grpo_async)."""
        try:
            return super().train(*args, **kwargs)
        finally:
            self.rollout_func.close()

    def add_callback(self, callback) -> None:
        """Add a callback; one that draws its own progress (`replaces_progress_display`, such as
        `kit.notebook.dashboard.TrainingDashboard`) replaces the progress bar and loss table that transformers
        adds in a Jupyter kernel, which would otherwise appear under it a second time."""
        super().add_callback(callback)
        if getattr(callback, "replaces_progress_display", False):
            from transformers.utils.notebook import NotebookProgressCallback

            self.remove_callback(NotebookProgressCallback)

    def _get_per_token_logps_and_entropies(
        self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, **kwargs
    ):
        """TRL's per-token logprobs, each chunk computed without the columns that are padding in all its rows.

        TRL pads a whole generation batch to its longest prompt (left) and longest completion (right) and
        scores every chunk at that width. Multi-turn completions (tool results included) vary in length
        far more than single turns, so most of a chunk's columns can be padding. Only those are dropped:
        causal attention never lets a real token see a later pad, and a RoPE model's attention scores do
        not change when every row shifts by the same number of positions. The dropped completion columns
        come back as 0, which is what TRL's fused LM head gives padding; the loss masks them either way.
        Multimodal batches, whose image tensors are laid out per row, go to TRL's method unchanged.
        """
        parent = super()._get_per_token_logps_and_entropies
        if any(value is not None for name, value in kwargs.items() if not name.startswith("compute_")):
            return parent(model, input_ids, attention_mask, logits_to_keep, batch_size, **kwargs)
        logps, entropies, aux_losses = [], [], []
        step = batch_size or input_ids.size(0)
        for start in range(0, input_ids.size(0), step):
            ids, mask = input_ids[start : start + step], attention_mask[start : start + step]
            first, last = _real_column_span(mask, self.pad_to_multiple_of)
            prompt_width = ids.size(1) - logits_to_keep
            keep = max(last - prompt_width, 1)  # HF reads logits_to_keep=0 as "all positions"
            columns = slice(first, prompt_width + keep)
            chunk_logps, chunk_entropy, aux = parent(model, ids[:, columns], mask[:, columns], keep, **kwargs)
            logps.append(_pad_columns(chunk_logps, logits_to_keep))
            if chunk_entropy is not None:
                entropies.append(_pad_columns(chunk_entropy, logits_to_keep))
            if aux is not None:
                aux_losses.append(aux)
        return (
            torch.cat(logps),
            torch.cat(entropies) if entropies else None,
            torch.stack(aux_losses).mean() if aux_losses else None,
        )


def _real_column_span(mask: torch.Tensor, multiple: int | None) -> tuple[int, int]:
    """First and one-past-last column where some row of `mask` is 1, widened to keep the width a
    multiple of `multiple` (TRL's `pad_to_multiple_of`) when that is set."""
    used = mask.any(dim=0).nonzero()
    first, last = int(used[0]), int(used[-1]) + 1
    if multiple:  # TRL padded prompts and completions to multiples: the full width is one too
        width = -(-(last - first) // multiple) * multiple
        last = min(mask.size(1), first + width)
        first = last - width
    return first, last


def _pad_columns(values: torch.Tensor, width: int) -> torch.Tensor:
    """`values` widened on the right with zeros to `width` columns."""
    return torch.nn.functional.pad(values, (0, width - values.size(1)))


class KitRollout:
    """TRL `rollout_func` and the reward functions over the episodes it returns."""

    def __init__(
        self, cfg: KitConfig, env: TaskEnvironment, tasks: list[Task], tokenizer, run: RunFolder, user=None
    ) -> None:
        self.cfg = cfg
        self.env = env
        self.by_prompt = {prompt_key(t.messages): t for t in tasks}
        self.rollouts = Rollouts.from_config(cfg, tokenizer, env, user)
        self.run = run
        # Set by KitGRPOTrainer when it is built (`attach`); `ahead` by build_trainer with grpo_async.
        self.generator: Generator | None = None
        self.sampling = Sampling()
        self.max_tokens = 0
        self.first_row = 0
        self.ahead: RolloutsAhead | None = None

    def attach(self, trainer: GRPOTrainer, generator: Generator) -> None:
        """Generate with `generator` as `trainer`'s arguments say (sampling, completion budget)."""
        args = trainer.args
        self.generator = generator
        self.sampling = Sampling.of(args, self.cfg.generation.ignore_eos)
        self.max_tokens = args.max_completion_length
        self.first_row = (
            trainer.accelerator.process_index * args.per_device_train_batch_size * args.steps_per_generation
        )

    def _task(self, prompt: list[dict[str, Any]]) -> Task:
        return self.by_prompt[prompt_key(prompt)]

    def episodes(self, tasks: list[Task], step: int, generator: Generator) -> list[Episode]:
        """The episodes of the batch of `tasks` that trains optimizer step `step`; with
        generation.seed_rollouts each request is seeded from run.seed, the step and the episode's row."""
        sampling: Sampling | dict[int, Sampling] = self.sampling
        if self.cfg.generation.seed_rollouts:
            seed = self.cfg.run.seed
            sampling = {
                i: dataclasses.replace(self.sampling, seed=mixed_seed(seed, step, self.first_row + i))
                for i in range(len(tasks))
            }
        return self.rollouts.run(tasks, generator, sampling, self.max_tokens)

    def __call__(self, prompts: list[list[dict[str, Any]]], trainer: GRPOTrainer) -> dict[str, list]:
        tasks = [self._task(p) for p in prompts]
        step = trainer.state.global_step
        if self.ahead is None:
            started = time.perf_counter()
            episodes = self.episodes(tasks, step, self.generator)
            seconds, ahead_metrics = time.perf_counter() - started, {}
        else:
            episodes, seconds, ahead_metrics = self.ahead.batch(tasks, step, trainer.state.max_steps)
        return {
            "prompt_ids": [e.prompt_ids for e in episodes],
            "completion_ids": [e.completion_ids for e in episodes],
            "logprobs": [e.logprobs for e in episodes],
            # An episode whose simulated user broke a rule carries no loss: its rewards are None, which
            # TRL leaves out of the group's mean and std and turns into advantage 0, and its tokens are
            # masked here so that no other term of the loss (KL, entropy) trains on them either.
            "env_mask": [[0] * len(e.env_mask) if e.user_breaks else e.env_mask for e in episodes],
            # TRL passes extra fields to the reward functions, a list row by row, anything else to every row.
            "episode": episodes,
            "rollout_seconds": seconds,
            "ahead_metrics": ahead_metrics,
        }

    def wait_idle(self) -> None:
        """Return once no batch generates ahead (grpo_async), so the server is free for other work."""
        if self.ahead is not None:
            self.ahead.wait_idle()

    def close(self) -> None:
        """Abort and join a batch generating ahead, if any (grpo_async)."""
        if self.ahead is not None:
            self.ahead.close()

    def outcome(
        self,
        prompts,
        completions,
        episode,
        rollout_seconds,
        ahead_metrics,
        log_metric=None,
        trainer_state=None,
        **_,
    ):
        """Outcome reward: 1.0 when the episode's calls leave the sandbox in the ground truth's state;
        None (no reward: TRL leaves the episode out) when its simulated user broke a rule."""
        episodes: list[Episode] = episode
        tasks = [self._task(p) for p in prompts]
        rewards = [episode_reward(e) for e in episodes]
        if log_metric is not None:
            for name, value in {
                **episode_metrics(episodes, rewards),
                **user_metrics(tasks, episodes),
            }.items():
                log_metric(name, value)
            # Generation, tool calls and scoring of the batch, weight sync excluded: this process's share
            # (with grpo_async, mostly while the step before trained).
            seconds = rollout_seconds[0]
            log_metric("rollout/seconds", seconds)
            sampled = sum(e.generated_tokens for e in episodes)
            log_metric("rollout/sampled_tokens_per_second", sampled / max(seconds, 1e-9))
            for name, value in ahead_metrics[0].items():
                log_metric(name, value)
        # A batch's episodes train optimizer step global_step + 1, the step metrics.jsonl logs them under.
        step = trainer_state.global_step + 1 if trainer_state is not None else -1
        self.run.append_trajectories(step, tasks, episodes, rewards)
        return rewards

    def shaping_function(self, name: str) -> Callable[..., list[float]]:
        shaping = self.env.shaping[name]

        def reward(prompts, completions, episode, **_):
            return [
                None if e.user_breaks else shaping(self._task(p), e)
                for p, e in zip(prompts, episode, strict=True)
            ]

        reward.__name__ = name
        return reward


def episode_metrics(episodes: list[Episode], rewards: list[float | None]) -> dict[str, float]:
    """Per-batch episode statistics, averaged by TRL over each logging step; the success rate is that of
    the episodes whose simulated user kept its rules."""
    n = max(len(episodes), 1)
    scored = [r for r in rewards if r is not None]
    turns = sum(e.turns for e in episodes)
    calls = sum(len(e.tool_calls) for e in episodes)
    return {
        "episode/success_rate": sum(map(is_success, scored)) / max(len(scored), 1),
        "episode/tool_calls": calls / n,
        "episode/parse_failure_rate": sum(e.parse_failures for e in episodes) / max(turns, 1),
        "episode/tool_error_rate": sum(e.tool_errors for e in episodes) / max(calls, 1),
        "episode/turns": turns / n,
        "episode/completion_tokens": sum(e.generated_tokens for e in episodes) / n,
        "episode/user_turns": sum(e.user_turns for e in episodes) / n,
        "episode/user_errors": sum(e.failure is not None for e in episodes) / n,
        "episode/prefix_replacements": sum(e.prefix_replacements for e in episodes) / n,
    }


def user_metrics(tasks: list[Task], episodes: list[Episode]) -> dict[str, float]:
    """Per-batch statistics of the simulated user, for a batch with dialogue tasks (else none): the
    episodes kept out of training, the share of dialogues whose user broke each rule, and the mean
    length of its replies in characters."""
    talks = [e for t, e in zip(tasks, episodes, strict=True) if t.is_dialogue]
    if not talks:
        return {}
    replies = [len(m["content"]) for e in talks for m in e.messages if m["role"] == "user"]
    return {
        "user/excluded_episodes": sum(bool(e.user_breaks) for e in episodes),
        **{f"user/{rule}": sum(rule in e.user_breaks for e in talks) / len(talks) for rule in RULES},
        "user/reply_chars": sum(replies) / max(len(replies), 1),
    }


def _generator_for(
    cfg: KitConfig, setup: GenerationSetup, trainer: KitGRPOTrainer, tokenizer, run: RunFolder
) -> Generator:
    if setup.mode == "transformers":
        from trl.models import unwrap_model_for_generation

        return TransformersGenerator(
            lambda: unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator),
            tokenizer.pad_token_id,
            list(trainer.eos_token_ids),
            max_model_len=context_length(trainer.model),
        )
    if setup.mode == "colocate":
        from kit.generation.colocate import VLLMColocateGenerator

        return VLLMColocateGenerator(trl_internals.colocated_llm(trainer))
    client = connect_to_server(cfg.generation, run.server_log)
    log.info("generation: %s", setup.describe())
    if setup.sync == "nccl":
        # TRL 1.16 ignores the server's {"success": false} on a prefix-cache reset and lets ranks generate
        # before rank 0's push ends: the reset is checked and a barrier added after each of its syncs.
        def reset_and_wait() -> None:
            if trainer.accelerator.is_main_process:
                client.reset_prefix_cache()
            trainer.accelerator.wait_for_everyone()

        trl_internals.wrap_weight_sync(trainer, reset_and_wait)
    else:
        folder = run.path / "weights_sync"
        sync = server_sync(setup.sync, trainer.model_wrapped, trainer.accelerator, client, folder)
        trl_internals.route_weight_sync(trainer, sync)
    return VLLMServerGenerator(client)


def build_trainer(
    cfg: KitConfig,
    model,
    tokenizer,
    env: TaskEnvironment,
    tasks: list[Task],
    run: RunFolder,
    user=None,
    setup: GenerationSetup | None = None,
) -> KitGRPOTrainer:
    """A ready-to-train GRPOTrainer over `tasks`, generating as `setup` decided (default: as
    `resolve_generation` decides for `cfg` here); `user` (a `kit.rollout.user_simulators.UserSimulator`)
    answers the dialogue tasks."""
    from datasets import Dataset

    setup = setup or resolve_generation(cfg)
    setup.check()

    # With grpo_async the rollouts run in a thread of their own while TRL decodes with `tokenizer`; a
    # Rust tokenizer used from two threads at once can fail ("Already borrowed"), so they get a copy.
    rollout_tokenizer = tokenizer if setup.async_lag is None else copy.deepcopy(tokenizer)
    rollout = KitRollout(cfg, env, tasks, rollout_tokenizer, run, user)
    reward_funcs: list[Callable] = [rollout.outcome]
    for name in cfg.env.shaping_rewards:
        if name not in env.shaping:
            raise ValueError(
                f"env.shaping_rewards names '{name}'; available: {', '.join(sorted(env.shaping))}."
            )
        reward_funcs.append(rollout.shaping_function(name))
    dataset = Dataset.from_list([{"prompt": t.messages} for t in tasks])
    dummy_colocated = setup.mode == "colocate" and is_dummy_model(model.name_or_path)
    with trl_internals.colocated_vllm_loads_dummy_weights() if dummy_colocated else contextlib.nullcontext():
        trainer = KitGRPOTrainer(
            model=model,
            reward_funcs=reward_funcs,
            args=grpo_args(cfg, run, setup),
            train_dataset=dataset,
            processing_class=tokenizer,
            rollout_func=rollout,
            callbacks=[MetricsFileCallback(run)],
            peft_config=peft_config(cfg.model.lora),
            generator_for=lambda trainer: _generator_for(cfg, setup, trainer, tokenizer, run),
        )
    if setup.async_lag is not None:
        rollout.ahead = _rollouts_ahead(cfg, setup, trainer, tasks, run)
    return trainer


def _rollouts_ahead(
    cfg: KitConfig, setup: GenerationSetup, trainer: KitGRPOTrainer, tasks: list[Task], run: RunFolder
) -> RolloutsAhead:
    """grpo_async: the trainer's batches generated ahead from a copy of its sampler, each on a client of
    its own (so that stopping aborts its requests only), the weights pushed between batches."""
    args = trainer.args
    rows = args.per_device_train_batch_size * args.steps_per_generation
    sampler = AheadSampler(trl_internals.train_sampler(trainer), rows, trainer.accelerator.process_index)
    return RolloutsAhead(
        sampler,
        tasks,
        trainer.rollout_func.episodes,
        lambda: VLLMServerGenerator(connect_to_server(cfg.generation, run.server_log)),
        trl_internals.defer_weight_sync(trainer),
        setup.async_lag,
        key_of=lambda task: prompt_key(task.messages),
    )
