"""Policies that really call tools, for tests and benchmarks: the demo model after a short SFT warm-up on
a recipe's tasks (the kit's own `sft_warmup`), built once and cached in the kit's cache folder.

The demo model never writes a tool call zero-shot; 8 steps of batch 8 (about 2 minutes on 2 cores) teach
it one call format. A tiny random model is no cheaper: with a 49k vocabulary the LM head dominates either
way, and it needs over 100 steps to learn the format.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from kit.config.tree import load_config
from kit.envs.environment import make_environment
from kit.models import cache_dir, load_policy, load_tokenizer
from kit.paths import resolve_path
from kit.run_folder import RunFolder
from kit.train.sft import sft_warmup


def warmed_up(
    name: str,
    base_model_dir: str,
    recipe: str,
    overrides: list[str],
    steps: int = 8,
) -> str:
    """The cached model `name`: `base_model_dir` after `steps` SFT steps (batch 8) on demonstrations of
    `recipe`'s training tasks (with `overrides`), calls written in the format of the recipe's tool parser.
    The cache folder's name carries a fingerprint of the recipe, overrides, steps and task file, so that a
    regenerated task set builds a new model instead of reusing one taught the old tasks."""
    cfg = load_config(
        recipe,
        [
            *overrides,
            f"model.name_or_path={base_model_dir}",
            f"sft.args={{learning_rate: 1.0e-4, max_steps: {steps}, per_device_train_batch_size: 8, "
            "lr_scheduler_type: constant}",
        ],
    )
    taught = json.dumps([recipe, overrides, steps], sort_keys=True).encode()
    taught += Path(resolve_path(cfg.env.train_file)).read_bytes()
    target = cache_dir() / "models" / f"{name}-{hashlib.sha256(taught).hexdigest()[:10]}"
    if (target / "config.json").is_file():
        return str(target)
    tokenizer = load_tokenizer(cfg.model, base_model_dir)
    run = RunFolder(target.with_name(target.name + ".sft-run")).create()
    env = make_environment(cfg.env, run.path / "nemo_gym")
    try:
        tasks = env.load_tasks(cfg.env.train_file, limit=64)
        model = sft_warmup(cfg, load_policy(cfg.model, base_model_dir), tokenizer, env, tasks, run)
    finally:
        env.close()
    partial = Path(str(target) + ".partial")
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.replace(target)
    return str(target)
