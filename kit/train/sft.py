"""SFT warm-up on demonstrations of the tasks' solution paths (TRL's SFTTrainer).

A small model may never emit a well-formed tool call on its own, and GRPO learns nothing from a
group whose rewards are all zero. A few SFT steps on demonstrations — a task's solution (the searches
that find what the request names, then the writes; the ground truth where a row has no solution)
executed in a real sandbox, one call per assistant turn, with the real tool results in between, so that
ids arrive in tool results and are used in the next call — teach the call format and the look-up; GRPO
then improves which calls are made.

Calls are written in the recipe's own format: the text of the rollout's tool parser
(`rollout.tool_parser`, a plugin's `format_tool_calls`), or, for a parser without one, the message's
`tool_calls` as the chat template renders them. Before training, one demonstration is rendered and read
back through that parser: a warm-up that would teach a format the rollout cannot parse stops there.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from kit.config.tree import KitConfig
from kit.envs.environment import TaskEnvironment
from kit.episode import Task
from kit.lora import is_peft_model, peft_config
from kit.models import mixed_precision_args
from kit.rollout.user_simulators import clarification
from kit.run_folder import RunFolder
from kit.tool_parsers import ToolCall, ToolCallParser, load_parser

log = logging.getLogger(__name__)

FINAL_ANSWER = "Done."
NO_ACTION_ANSWER = "There is nothing to change for this request."
CLARIFYING_QUESTION = (
    "Before I make any change: your request leaves something open. Could you tell me exactly which "
    "item, person, date or option you mean?"
)


def call_message(parser: ToolCallParser, call: ToolCall) -> dict[str, Any]:
    """The assistant message that makes `call`: the parser's own text where it can write calls, else the
    call in `tool_calls`, for the chat template to render."""
    text = parser.format_tool_calls([call])
    if text is not None:
        return {"role": "assistant", "content": text}
    function = {"name": call.name, "arguments": call.arguments}
    return {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": function}]}


def solution_calls(task: Task) -> list[ToolCall]:
    """The task's solution path (its ground truth where the row has none) as decoded calls."""
    return [
        ToolCall(call["name"], json.loads(args) if isinstance(args := call["arguments"], str) else args)
        for call in task.solution
    ]


def demonstration(task: Task, env: TaskEnvironment, parser: ToolCallParser) -> list[dict[str, Any]]:
    """The task's conversation with its solution's calls made one per turn, results from a fresh sandbox.

    A dialogue task's demonstration first asks the user what the request leaves open and gets the row's
    clarification back (what the scripted user says), then acts."""
    sandbox = env.new_sandbox(task)
    messages = list(task.messages)
    if task.is_dialogue:
        messages.append({"role": "assistant", "content": CLARIFYING_QUESTION})
        messages.append({"role": "user", "content": clarification(task)})
    for call in solution_calls(task):
        messages.append(call_message(parser, call))
        messages.append({"role": "tool", "content": sandbox.call(call.name, call.arguments)})
    sandbox.close()
    messages.append({"role": "assistant", "content": FINAL_ANSWER if task.ground_truth else NO_ACTION_ANSWER})
    return messages


def check_demonstration_format(tokenizer, parser: ToolCallParser, task: Task, env: TaskEnvironment) -> None:
    """Render `task`'s demonstration up to its first call, read the call's text back through `parser`,
    and raise ValueError, naming the fix, when the parser does not find the call the warm-up teaches."""
    messages = demonstration(task, env, parser)
    first = next(i for i, m in enumerate(messages) if m["role"] == "tool") - 1
    render = dict(tools=task.tools or None, tokenize=False)
    before = tokenizer.apply_chat_template(messages[:first], add_generation_prompt=True, **render)
    through = tokenizer.apply_chat_template(messages[: first + 1], **render)
    written = through[len(os.path.commonprefix([before, through])) :]
    expected = solution_calls(task)[0]
    found = parser.parse(written, task.tools).tool_calls
    if found[:1] != [expected]:
        how = "its format_tool_calls" if "tool_calls" not in messages[first] else "the chat template"
        raise ValueError(
            f"The SFT warm-up would teach calls that rollout.tool_parser={parser.name!r} does not read back: "
            f"{how} writes {written!r:.240}, which the parser reads as {found or 'no call'}, not {expected}. "
            "Give the parser's plugin a format_tool_calls(calls) -> str, the inverse of its "
            "extract_tool_calls (docs/tool-parsers.md), or name a parser that reads what the chat template "
            "(model.chat_template) writes."
        )


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
):
    """Fine-tune `model` on demonstrations of the configured tiers, calls written as the recipe's tool
    parser reads them; returns the trained model."""
    from datasets import Dataset
    from trl import SFTTrainer

    chosen = [t for t in tasks if t.info.get("tier") in cfg.sft.tiers][: cfg.sft.num_examples]
    if not chosen:
        raise ValueError(
            f"sft.tiers={cfg.sft.tiers} selects no training task; tiers present: "
            f"{sorted({t.info.get('tier') for t in tasks})}."
        )
    parser = load_parser(cfg.rollout.tool_parser, cfg.rollout.tool_parser_plugin, tokenizer=tokenizer)
    if acting := [t for t in chosen if t.solution]:
        check_demonstration_format(tokenizer, parser, acting[0], env)
    rows = [tokenize_demonstration(tokenizer, demonstration(t, env, parser), t.tools) for t in chosen]
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
