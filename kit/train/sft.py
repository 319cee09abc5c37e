"""SFT warm-up on demonstrations of the tasks' solution paths (TRL's SFTTrainer).

A small model may never emit a well-formed tool call on its own, and GRPO learns nothing from a
group whose rewards are all zero. A few SFT steps on demonstrations — a task's solution (the searches
that find what the request names, then the writes; the ground truth where a row has no solution)
executed in a real sandbox, one call per assistant turn, with the real tool results in between, so that
ids arrive in tool results and are used in the next call — teach the call format and the look-up; GRPO
then improves which calls are made.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from kit.config.tree import KitConfig
from kit.envs.environment import TaskEnvironment
from kit.rollout.episode import Task
from kit.rollout.user_simulators import clarification
from kit.train.lora import is_peft_model, peft_config
from kit.train.models import mixed_precision_args
from kit.train.run_folder import RunFolder

log = logging.getLogger(__name__)

FINAL_ANSWER = "Done."
NO_ACTION_ANSWER = "There is nothing to change for this request."
CLARIFYING_QUESTION = (
    "Before I make any change: your request leaves something open. Could you tell me exactly which "
    "item, person, date or option you mean?"
)


def kit_call_format(name: str, arguments: dict[str, Any]) -> str:
    """A tool call as the kit's chat template writes it (the `kit` parser's format)."""
    call = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{call}\n</tool_call>"


def demonstration(
    task: Task, env: TaskEnvironment, call_format: Callable[[str, dict[str, Any]], str] = kit_call_format
) -> list[dict[str, Any]]:
    """The task's conversation with its solution's calls made one per turn, results from a fresh sandbox.

    A dialogue task's demonstration first asks the user what the request leaves open and gets the row's
    clarification back (what the scripted user says), then acts."""
    sandbox = env.new_sandbox(task)
    messages = list(task.messages)
    if task.is_dialogue:
        messages.append({"role": "assistant", "content": CLARIFYING_QUESTION})
        messages.append({"role": "user", "content": clarification(task)})
    for call in task.solution:
        arguments = call["arguments"]
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        messages.append({"role": "assistant", "content": call_format(call["name"], arguments)})
        messages.append({"role": "tool", "content": sandbox.call(call["name"], arguments)})
    sandbox.close()
    messages.append({"role": "assistant", "content": FINAL_ANSWER if task.ground_truth else NO_ACTION_ANSWER})
    return messages


def tokenize_demonstration(
    tokenizer, messages: list[dict[str, Any]], tools: list[dict]
) -> dict[str, list[int]]:
    """Token ids plus `assistant_masks` (loss on what the assistant wrote) when the template marks it.

    Tokenized here rather than by SFTTrainer because tool schemas differ in shape from task to task and
    would not survive a round trip through an Arrow column.
    """
    encoded = tokenizer.apply_chat_template(
        messages, tools=tools or None, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    row = {"input_ids": list(encoded["input_ids"])}
    if 1 in encoded.get("assistant_masks", []):
        row["assistant_masks"] = list(encoded["assistant_masks"])
    return row


def sft_warmup(
    cfg: KitConfig,
    model,
    tokenizer,
    env: TaskEnvironment,
    tasks: list[Task],
    run: RunFolder,
    call_format: Callable[[str, dict[str, Any]], str] = kit_call_format,
):
    """Fine-tune `model` on demonstrations of the configured tiers; returns the trained model."""
    from datasets import Dataset
    from trl import SFTTrainer

    chosen = [t for t in tasks if t.info.get("tier") in cfg.sft.tiers][: cfg.sft.num_examples]
    if not chosen:
        raise ValueError(
            f"sft.tiers={cfg.sft.tiers} selects no training task; tiers present: "
            f"{sorted({t.info.get('tier') for t in tasks})}."
        )
    rows = [tokenize_demonstration(tokenizer, demonstration(t, env, call_format), t.tools) for t in chosen]
    args = cfg.sft.args.build(
        {"seed": cfg.run.seed, **mixed_precision_args()}, output_dir=str(run.path / "sft")
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config(cfg.model.lora),
    )
    log.info("SFT warm-up: %d demonstrations (%s)", len(rows), ", ".join(cfg.sft.tiers))
    result = trainer.train()
    run.append_metrics({"phase": "sft", "train_loss": result.training_loss, "steps": result.global_step})
    # A LoRA warm-up is merged in: GRPO trains a fresh adapter on the warmed-up weights.
    return trainer.model.merge_and_unload() if is_peft_model(trainer.model) else trainer.model
