"""GRPO with generation one step ahead of training (`grpo_async`), on TRL's own loss.

TRL's `GRPOTrainer` calls `rollout_func` for each batch and trains on what it returns. With
`grpo_async.max_lag: 1` the kit's rollout answers the call for batch n with a batch that was generated
while TRL trained on batch n-1:

    rollout_func(batch n):  wait for batch n (generated with the weights of step n-1)
                            push the weights of step n to the server
                            start batch n+1 in a background thread
                            return batch n  ->  TRL scores it and trains step n

so the server generates batch n+1 while the trainer trains on batch n, and each batch is trained one
step after the weights that sampled it. TRL's importance-sampling correction
(`grpo.vllm_importance_sampling_*`, on in server mode) reweights its tokens by exp(trainer − sampler
log-probs), as NeMo-RL's async GRPO does. The weight push happens between batches: vLLM refuses to reset
its prefix cache while requests hold blocks, and a batch should come from one weight version. TRL's own
per-step push is made a no-op (`kit.train.trl_internals.defer_weight_sync`).

The prompts of batch n+1 come from `AheadSampler`, a second copy of TRL's train sampler read one batch
ahead, so a run's tasks, their order and their groups are those of a synchronous run. A batch generated
ahead is used only when its prompts are the ones TRL hands over and it is at most `max_lag` steps stale;
otherwise it is dropped and the batch generated there and then (`async/missed`). The first batch of a
run, and of a resumed run, is generated synchronously. `max_lag: 0` generates every batch synchronously
through the same code. Stopping (`close`) aborts the requests of a batch in flight and joins its thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from kit.episode import Episode, Task
from kit.generation.vllm_server import VLLMServerGenerator

log = logging.getLogger(__name__)

Generate = Callable[[list[Task], int, VLLMServerGenerator], list[Episode]]
"""Generates one batch: its tasks, the optimizer step it is for, the generator to use."""


class AheadSampler:
    """The dataset rows TRL's dataloader hands to each generation, read ahead from a copy of TRL's train
    sampler (a `RepeatSampler` with its own seeded generator, so the copy draws what TRL's draws).

    One generation batch is a block of `batch_size` prompts of `mini_repeat_count` rows each that the
    sampler repeats `repeat_count` times (kit.train.trl_internals lists these attributes); process p gets
    rows [p·n, (p+1)·n) of it (accelerate shards the batches), with n rows per process. Blocks are
    numbered from the start of this process's first epoch: a run resumed at step N samples that epoch
    afresh and skips its first N mod (blocks per epoch) blocks, as transformers' `Trainer` skips the
    batches of the steps trained in the resumed epoch.
    """

    def __init__(self, sampler, rows_per_process: int, process_index: int) -> None:
        self.sampler = sampler
        self.block = sampler.batch_size * sampler.mini_repeat_count * sampler.repeat_count
        self.rows_per_process = rows_per_process
        self.process_index = process_index
        self.blocks_per_epoch = len(sampler) // self.block
        self._epochs: list[list[int]] = []

    def first_block(self, step: int) -> int:
        """The block a (possibly resumed) run's first generation at optimizer step `step` uses."""
        return step % self.blocks_per_epoch

    def rows(self, block: int) -> list[int]:
        """This process's dataset rows of generation block `block`."""
        epoch, index = divmod(block, self.blocks_per_epoch)
        while len(self._epochs) <= epoch:
            self._epochs.append(list(iter(self.sampler)))
        start = index * self.block + self.process_index * self.rows_per_process
        return self._epochs[epoch][start : start + self.rows_per_process]


@dataclass
class AheadBatch:
    """A batch generated in the background: for which block and step, from which weights, and what came
    of it."""

    block: int
    step: int  # the optimizer step that is to train on it
    tasks: list[Task]
    weights_step: int  # the step whose weights the server held while it generated
    thread: threading.Thread | None = None
    generator: VLLMServerGenerator | None = None
    episodes: list[Episode] | None = None
    error: BaseException | None = None
    seconds: float = 0.0


class RolloutsAhead:
    """What `KitRollout` asks for each batch in `grpo_async` mode: the episodes of the batch TRL hands
    over, generated ahead where they could be, with the weight pushes between batches."""

    def __init__(
        self,
        sampler: AheadSampler,
        tasks: list[Task],
        generate: Generate,
        new_generator: Callable[[], VLLMServerGenerator],
        push_weights: Callable[[], None],
        max_lag: int,
        key_of: Callable[[Task], str],
    ) -> None:
        self.sampler = sampler
        self.tasks = tasks
        self.key_of = key_of
        self.generate = generate
        self.new_generator = new_generator
        self.push_weights = push_weights
        self.max_lag = max_lag
        self.served_step: int | None = None  # the step whose weights the server holds; None: unknown
        self.next_block: int | None = None
        self.ahead: AheadBatch | None = None
        self.reading_ahead = True  # off once the sampler copy disagreed with TRL

    def batch(
        self, tasks: list[Task], step: int, max_steps: int
    ) -> tuple[list[Episode], float, dict[str, float]]:
        """The episodes of `tasks`, the batch TRL trains at optimizer step `step` of `max_steps`, the
        seconds their generation took and the step's `async/*` metrics; starts the next batch when there
        is one to train."""
        block = self.sampler.first_block(step) if self.next_block is None else self.next_block
        if self.reading_ahead and self._keys(self._tasks_of(block)) != self._keys(tasks):
            self.reading_ahead = False
            log.warning(
                "grpo_async: the batch TRL hands over at step %d is not the one read ahead from its sampler; "
                "generating every batch synchronously from here (async/missed counts them)",
                step,
            )
        started = time.perf_counter()
        ready, missed = self._take(block, step)
        # One push a step, on every process at the same point (a collective under FSDP or ZeRO-3), once
        # no request runs: after the batch generated ahead, before the next one (or this one) starts.
        sync_seconds = self._push(step)
        if ready is None:
            ready = self._run(AheadBatch(block, step, tasks, step))
        waited = time.perf_counter() - started - sync_seconds
        if ready.error is not None:
            raise ready.error
        if self.max_lag > 0 and self.reading_ahead and step + 1 < max_steps:
            self._start(AheadBatch(block + 1, step + 1, self._tasks_of(block + 1), step))
        self.next_block = block + 1
        metrics = {
            "async/lag": step - ready.weights_step,
            "async/missed": missed,
            "async/wait_seconds": waited,
            "async/sync_seconds": sync_seconds,
        }
        return ready.episodes, ready.seconds, metrics

    def _tasks_of(self, block: int) -> list[Task]:
        return [self.tasks[row] for row in self.sampler.rows(block)]

    def _keys(self, tasks: list[Task]) -> list[str]:
        return [self.key_of(task) for task in tasks]

    def _take(self, block: int, step: int) -> tuple[AheadBatch | None, int]:
        """The batch generated ahead for `block`, once it is done, when it may train step `step`; else
        None (and 1 when one was dropped)."""
        ahead, self.ahead = self.ahead, None
        if ahead is None:
            return None, 0
        usable = self.reading_ahead and ahead.block == block and step - ahead.weights_step <= self.max_lag
        if not usable:
            self._stop(ahead)
            return None, 1
        ahead.thread.join()
        return ahead, 0

    def _push(self, step: int) -> float:
        """Push the weights of `step` unless the server holds them; the seconds it took."""
        if self.served_step == step:
            return 0.0
        started = time.perf_counter()
        self.push_weights()
        self.served_step = step
        return time.perf_counter() - started

    def _run(self, batch: AheadBatch) -> AheadBatch:
        """Generate `batch` in this thread (its error kept, as the background thread keeps it)."""
        started = time.perf_counter()
        batch.generator = batch.generator or self.new_generator()
        try:
            batch.episodes = self.generate(batch.tasks, batch.step, batch.generator)
        except BaseException as error:  # re-raised in the trainer's thread, where the batch is taken
            batch.error = error
        batch.seconds = time.perf_counter() - started
        return batch

    def _start(self, batch: AheadBatch) -> None:
        batch.generator = self.new_generator()
        batch.thread = threading.Thread(
            target=self._run, args=(batch,), name="kit-rollouts-ahead", daemon=True
        )
        batch.thread.start()
        self.ahead = batch

    def wait_idle(self) -> None:
        """Return once no batch is generating (it stays ready for its step): the server is the caller's,
        e.g. for a held-out evaluation that pushes other weights to it."""
        if self.ahead is not None and self.ahead.thread is not None:
            self.ahead.thread.join()
        # the evaluation may push newer weights; the next batch pushes its own
        self.served_step = None

    def close(self) -> None:
        """Stop: abort the requests of a batch in flight and wait for its thread to end. A later
        training run starts afresh, where its first step's batch is in the sampler."""
        ahead, self.ahead, self.next_block = self.ahead, None, None
        if ahead is not None:
            self._stop(ahead)

    @staticmethod
    def _stop(batch: AheadBatch, timeout: float = 120.0) -> None:
        """Abort `batch`'s requests until its thread ends (a request opening its connection while the
        others are shut is caught by the next round)."""
        deadline = time.monotonic() + timeout
        while batch.thread is not None and batch.thread.is_alive():
            batch.generator.client.abort()
            batch.thread.join(0.2)
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"grpo_async: the batch generating ahead for step {batch.step} did not stop within "
                    f"{timeout:.0f} s of its requests being aborted (a simulated user's or environment's "
                    "request still running?)."
                )
