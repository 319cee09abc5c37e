"""`kit user train`: fine-tune a small model into a simulated user (TRL's SFTTrainer).

The talks come from the recipe's training rows (`env.train_file`, never `env.eval_file`, which `kit user
check` runs on): kit.rollout.user_model_data writes what a user who keeps the rules says in four
situations. The loss is on the user's replies only. They are rendered with the model's own chat
template, the one a `served` user model is served with (`chat_template="model"`), and the folder written
holds the model and its tokenizer, ready for `user_model.kind=served user_model.model=FOLDER`.

The recipe's `sft` section sizes the run: `sft.num_examples` training rows (each a full talk and an
early 'done'), of `sft.tiers`, and `sft.args` (TRL's SFTConfig).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from pathlib import Path
from typing import Any

from kit.config.tree import ConfigError, KitConfig
from kit.models import load_policy, load_tokenizer, mixed_precision_args, resolve_model
from kit.rollout.user_model_data import summary, user_model_dialogues

log = logging.getLogger(__name__)


def tokenize_talk(
    tokenizer, talk: list[dict[str, str]], max_length: int | None = None
) -> dict[str, list[int]]:
    """A talk's token ids and `assistant_masks`: 1 on the user's replies (their end-of-turn token too),
    found by rendering the talk up to each reply; works with any chat template that renders a message
    the same whatever follows it."""
    spans, text = [], ""
    for i, message in enumerate(talk):
        if message["role"] == "assistant":
            before = tokenizer.apply_chat_template(talk[:i], tokenize=False, add_generation_prompt=True)
            through = tokenizer.apply_chat_template(talk[: i + 1], tokenize=False)
            spans.append((len(before), len(through)))
            text = through
    text = text or tokenizer.apply_chat_template(talk, tokenize=False)
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    mask = [int(any(a <= start < b for a, b in spans)) for start, _ in encoded["offset_mapping"]]
    ids = list(encoded["input_ids"])
    if max_length:
        ids, mask = ids[:max_length], mask[:max_length]
    return {"input_ids": ids, "assistant_masks": mask}


def training_rows(cfg: KitConfig, tasks) -> list:
    """The recipe's training rows for the user model: dialogue rows of `sft.tiers`, the first
    `sft.num_examples`."""
    chosen = [t for t in tasks if t.is_dialogue and t.info.get("tier") in cfg.sft.tiers]
    return chosen[: cfg.sft.num_examples]


def train_user_model(cfg: KitConfig, out: Path) -> dict[str, Any]:
    """Fine-tune `cfg.model` into a user model on talks from `cfg.env.train_file`; write it to OUT/model
    and a summary to OUT/user_model_train.json, and return the summary."""
    from datasets import Dataset
    from trl import SFTTrainer

    from kit.envs.environment import make_environment

    train_file, eval_file = Path(cfg.env.train_file), Path(cfg.env.eval_file)
    if train_file.resolve() == eval_file.resolve():
        raise ConfigError(
            f"env.train_file and env.eval_file are both {train_file}: the user model would train on the "
            "rows `kit user check` measures it on. Give it a training split."
        )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    env = make_environment(cfg.env, out / "nemo_gym")
    with contextlib.closing(env):
        rows = training_rows(cfg, env.load_tasks(cfg.env.train_file))
    if not rows:
        raise ConfigError(
            f"{cfg.env.train_file} holds no dialogue row of sft.tiers={cfg.sft.tiers}: make dialogue rows "
            "with `kit env generate --dialogue-share 1.0 --out DIR` and set env.train_file."
        )
    talks = user_model_dialogues(rows, seed=cfg.run.seed)
    model_dir = resolve_model(cfg.model.name_or_path)
    tokenizer = load_tokenizer(cfg.model, model_dir)
    max_length = cfg.sft.args.max_length
    examples = [tokenize_talk(tokenizer, talk, max_length) for talk in talks]
    model = load_policy(cfg.model, model_dir)
    args = cfg.sft.args.build(
        {"seed": cfg.run.seed, **mixed_precision_args()},
        output_dir=str(out / "checkpoints"),
    )
    trainer = SFTTrainer(
        model=model, args=args, train_dataset=Dataset.from_list(examples), processing_class=tokenizer
    )
    counts = summary(talks)
    log.info("user model: %d talks from %d training rows (%s)", len(talks), len(rows), counts)
    started = time.perf_counter()
    result = trainer.train()
    seconds = time.perf_counter() - started
    folder = out / "model"
    trainer.save_model(str(folder))
    tokenizer.save_pretrained(str(folder))
    report = {
        "model": str(folder),
        "base_model": cfg.model.name_or_path,
        "train_file": str(cfg.env.train_file),
        "rows": len(rows),
        "talks": len(talks),
        "replies": counts,
        "tokens": sum(len(e["input_ids"]) for e in examples),
        "steps": result.global_step,
        "train_loss": result.training_loss,
        "train_seconds": round(seconds, 1),
        "serve_with": f"user_model.kind=served user_model.model={folder}",
    }
    (out / "user_model_train.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def train_cli(args) -> int:
    """`kit user train`: load the recipe, train, print where the model is and how to serve it."""
    from kit.config.tree import load_config

    cfg = load_config(args.config, args.overrides)
    out = Path(args.out or cfg.run.output_dir)
    report = train_user_model(cfg, out)
    print(
        f"user model: {report['model']} ({report['talks']} talks from {report['rows']} training rows, "
        f"{report['steps']} steps, loss {report['train_loss']:.3f}, {report['train_seconds']:.0f} s)\n"
        f"check it:  kit user check {report['serve_with']}"
    )
    return 0


def register(subparsers: Any) -> None:
    """Add ``train`` to the `kit user` sub-parsers."""
    train = subparsers.add_parser(
        "train",
        help="fine-tune a small model into a simulated user on talks made from the training rows",
        description="Fine-tune the recipe's model (TRL SFTTrainer) into a user simulator on talks made from "
        "the dialogue rows of env.train_file: answers with the asked detail, 'I don't know' for what the "
        "intent never says, END_CONVERSATION after completion, 'not yet' after an early 'done'. Writes "
        "OUT/model, to serve with user_model.kind=served user_model.model=OUT/model.",
    )
    train.add_argument("--config", default="user_model_cpu", help="recipe (default: user_model_cpu)")
    train.add_argument("overrides", nargs="*", help="dotted overrides, e.g. sft.num_examples=100")
    train.add_argument("--out", help="output folder (default: run.output_dir); the model goes to OUT/model")
    train.set_defaults(func=train_cli)
