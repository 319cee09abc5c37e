"""Every private part of TRL the kit relies on, in one place: what it is, why no public option does the
job, and the TRL version it was read against. `problems()` reads the installed TRL and names whatever no
longer looks the way the kit expects; tests/test_trl_internals.py fails on any, so a TRL upgrade that
changes one of them is caught before a run.

- `trl.trainer.utils._use_triton`: TRL's fused LM head scores every position on devices without Triton;
  on CPU the kit makes it score completion positions only (`compact_lm_head_on_cpu`).
- `GRPOTrainer._get_per_token_logps_and_entropies`: overridden by `KitGRPOTrainer` to skip the columns
  that are padding in every row of a chunk.
- `GRPOTrainer.vllm_generation`, `.use_vllm`, `.vllm_mode`, `._last_loaded_step`: `_generate` syncs
  weights only through `vllm_generation.sync_weights()`, when `use_vllm` is on and the step has moved.
  The kit's own server syncs (file reload, CUDA IPC) take that place (`route_weight_sync`); TRL's NCCL
  sync gets a checked prefix-cache reset and a barrier after it (`wrap_weight_sync`).
- `GRPOTrainer.vllm_generation.llm`: the colocated vLLM engine TRL built, which the kit's multi-turn
  rollout generates with (`colocated_llm`).
- `trl.generation.vllm_generation.LLM`: TRL builds the colocated `vllm.LLM` under that name with no option
  for the load format; a dummy-weight policy needs `load_format="dummy"` there
  (`colocated_vllm_loads_dummy_weights`).
- `GRPOTrainer._generate_and_score_completions`' handling of None rewards: a row for which every reward
  function returns None is left out of its group's mean and std and gets advantage 0
  (`unscorable_mask`). The kit gives None to an episode whose simulated user broke a rule and masks its
  tokens through `env_mask`. TRL's `_calculate_rewards` then warns with the whole row on every such
  batch, as if a reward function were broken; the kit counts these episodes itself
  (`user/excluded_episodes`) and drops that warning (`quiet_unscorable_row_warning`).
- `GRPOTrainer._get_train_sampler` and `trl.trainer.utils.RepeatSampler`'s `batch_size`,
  `mini_repeat_count` and `repeat_count`: with `grpo_async` the kit reads a second copy of the train
  sampler one batch ahead (`train_sampler`, kit.train.rollouts_ahead.AheadSampler); TRL has no public way
  to ask which prompts come next. It relies, too, on transformers' `Trainer` resuming at step N by
  sampling the resumed epoch afresh and skipping the batches of its first N mod (steps per epoch) steps
  (`_init_training_state`, `_run_epoch`; transformers 5.19).
- `GRPOTrainer.vllm_generation.sync_weights` once more: with `grpo_async` the kit pushes weights itself,
  between batches, so TRL's per-step call is made a no-op (`defer_weight_sync`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
from collections.abc import Callable, Iterator
from typing import Any

CHECKED_AGAINST = "1.16.0"
"""The TRL version whose source these were read in."""


def compact_lm_head_on_cpu() -> None:
    """Make TRL's fused LM head score only completion positions on CPU, as it does on CUDA.

    TRL (`trl.trainer.utils.add_fused_lm_head`) scores every position, prompt included, on devices
    without Triton, to keep tile shapes fixed for compilers such as Neuron's. On CPU nothing is compiled
    and prompts are most of each sequence, so that multiplies the LM-head work several times over.
    `_use_triton` is read there only to choose the compact path.
    """
    import trl.trainer.utils as trl_utils

    original = trl_utils._use_triton
    if getattr(original, "kit_patched", False):
        return

    def compact_on_cpu(device) -> bool:
        return device.type == "cpu" or original(device)

    compact_on_cpu.kit_patched = True
    trl_utils._use_triton = compact_on_cpu


def route_weight_sync(trainer, sync) -> None:
    """Make TRL's `_generate` call `sync.sync_weights()` before each step's rollouts, as it calls its own
    vLLM sync (this also turns on TRL's importance-sampling correction with the server's logprobs)."""
    trainer.vllm_generation = sync
    trainer.use_vllm = True
    trainer.vllm_mode = "server"
    # No step is -1, so the first rollout pushes the policy first: after a resume from step N too,
    # and then it holds the checkpoint's weights (TRL loads them before the first step).
    trainer._last_loaded_step = -1


def wrap_weight_sync(trainer, after: Callable[[], None]) -> None:
    """Run `after` right after each of TRL's own vLLM weight syncs."""
    trl_sync = trainer.vllm_generation.sync_weights

    def sync_weights() -> None:
        trl_sync()
        after()

    trainer.vllm_generation.sync_weights = sync_weights


class _DeferredSync:
    """What `trainer.vllm_generation` becomes under `defer_weight_sync`: the sync TRL calls does nothing;
    everything else (its `seconds`, TRL's client) is the real sync's."""

    def __init__(self, real) -> None:
        self.real = real

    def sync_weights(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def defer_weight_sync(trainer) -> Callable[[], None]:
    """Make the weight sync TRL's `_generate` calls before each step's rollouts a no-op and return the
    real one, for the kit to call between batches (kit.train.rollouts_ahead). Call it after
    `route_weight_sync` or `wrap_weight_sync`."""
    real = trainer.vllm_generation
    trainer.vllm_generation = _DeferredSync(real)
    return real.sync_weights


def train_sampler(trainer) -> Any:
    """A new copy of the trainer's train sampler (TRL's `RepeatSampler`, seeded as the trainer's, so it
    draws the same rows in the same order)."""
    return trainer._get_train_sampler(trainer.train_dataset)


def colocated_llm(trainer) -> Any:
    """The `vllm.LLM` TRL built in colocate mode, whose weights TRL syncs before each step's rollouts."""
    return trainer.vllm_generation.llm


@contextlib.contextmanager
def colocated_vllm_loads_dummy_weights() -> Iterator[None]:
    """While TRL builds its colocated vLLM engine: with `load_format="dummy"`, for a dummy-weight policy
    (kit.dummy_models), whose folder has no weights to read; TRL pushes the policy's weights in before
    the first rollout."""
    import trl.generation.vllm_generation as trl_vllm

    original = trl_vllm.LLM
    trl_vllm.LLM = functools.partial(original, load_format="dummy")
    try:
        yield
    finally:
        trl_vllm.LLM = original


UNSCORABLE_ROW_WARNING = "All reward functions returned None"
"""How TRL's warning about a row without any reward begins."""


class _UnscorableRowFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(UNSCORABLE_ROW_WARNING)


def quiet_unscorable_row_warning() -> None:
    """Drop TRL's warning about a row all of whose rewards are None: for the kit such a row is an episode
    its simulated user broke, kept out of training on purpose and counted in `user/*`."""
    trl_logger = logging.getLogger("trl.trainer.grpo_trainer")
    if not any(isinstance(f, _UnscorableRowFilter) for f in trl_logger.filters):
        trl_logger.addFilter(_UnscorableRowFilter())


def _sampler_problems() -> list[str]:
    """What `train_sampler` and kit.train.rollouts_ahead.AheadSampler read, as TRL and transformers 5.19
    have it."""
    from transformers import Trainer
    from trl import GRPOTrainer
    from trl.trainer.utils import RepeatSampler

    found = []
    if "RepeatSampler(" not in inspect.getsource(GRPOTrainer._get_train_sampler):
        found.append("GRPOTrainer._get_train_sampler no longer builds a RepeatSampler")
    parameters = inspect.signature(RepeatSampler).parameters
    if not {"mini_repeat_count", "batch_size", "repeat_count", "seed"} <= set(parameters):
        found.append(f"trl.trainer.utils.RepeatSampler takes {list(parameters)}")
    if "torch.randperm(self.num_samples, generator=self.generator)" not in inspect.getsource(RepeatSampler):
        found.append("RepeatSampler no longer draws each epoch's order from its own generator")
    resume = inspect.getsource(Trainer._init_training_state) + inspect.getsource(Trainer._run_epoch)
    for needed in (
        "self.state.global_step % num_update_steps_per_epoch",
        "skip_first_batches(train_dataloader, steps_trained_in_current_epoch)",
    ):
        if needed not in resume:
            found.append(f"transformers' Trainer no longer resumes an epoch as read ({needed})")
    return found


def problems() -> list[str]:
    """What in the installed TRL no longer matches the internals above (empty when all do)."""
    import trl
    import trl.trainer.utils as trl_utils
    from trl import GRPOTrainer

    found = []
    if not callable(getattr(trl_utils, "_use_triton", None)):
        found.append("trl.trainer.utils._use_triton is gone")
    elif "_use_triton(" not in inspect.getsource(trl_utils.add_fused_lm_head):
        found.append("trl.trainer.utils.add_fused_lm_head no longer asks _use_triton")
    scoring = inspect.signature(GRPOTrainer._get_per_token_logps_and_entropies).parameters
    expected = ["self", "model", "input_ids", "attention_mask", "logits_to_keep", "batch_size"]
    if list(scoring)[: len(expected)] != expected:
        found.append(f"GRPOTrainer._get_per_token_logps_and_entropies takes {list(scoring)}")
    generate = inspect.getsource(GRPOTrainer._generate)
    for needed in ("self.use_vllm", "self._last_loaded_step", "self.vllm_generation.sync_weights()"):
        if needed not in generate:
            found.append(f"GRPOTrainer._generate no longer reads {needed}")
    if "self.rollout_func(" not in generate:
        found.append("GRPOTrainer._generate no longer calls rollout_func")
    from trl.generation.vllm_generation import VLLMGeneration

    source = inspect.getsource(VLLMGeneration)
    if "self.llm" not in source:
        found.append("trl.generation.vllm_generation.VLLMGeneration no longer holds the colocated `llm`")
    if "LLM(" not in source:
        found.append("trl.generation.vllm_generation no longer builds the colocated engine as LLM(...)")
    scoring_source = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    for needed in ("unscorable_mask", "torch.nan_to_num(advantages, nan=0.0)", 'pop("env_mask"'):
        if needed not in scoring_source + inspect.getsource(GRPOTrainer._generate):
            found.append(f"GRPOTrainer no longer handles None rewards and env_mask as read ({needed})")
    if UNSCORABLE_ROW_WARNING not in inspect.getsource(GRPOTrainer._calculate_rewards):
        found.append("GRPOTrainer._calculate_rewards no longer warns about rows without rewards as read")
    found += _sampler_problems()
    if found and trl.__version__ != CHECKED_AGAINST:
        found.append(f"(the kit read these in TRL {CHECKED_AGAINST}; installed: {trl.__version__})")
    return found
