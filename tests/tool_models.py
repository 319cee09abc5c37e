"""Models that really emit tool calls in a given format, for the rollout and trainer tests.

The demo model never writes a tool call zero-shot, so the tests first teach it one call format with
the kit's own SFT warm-up: 8 steps of batch 8 (about 2 minutes on 2 cores, bf16 autocast). A tiny
random model is no cheaper here: with a 49k vocabulary the LM head dominates either way, and it needs
over 100 steps to learn the format. The result is cached in the kit's cache folder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kit.config.tree import load_config
from kit.envs.environment import make_environment
from kit.train.models import cache_dir, load_policy, load_tokenizer
from kit.train.run_folder import RunFolder
from kit.train.sft import kit_call_format, sft_warmup

# One category and tier, so a 2-layer model can learn the pattern quickly.
TASK_OVERRIDES = ["env.tiers=[easy]", "env.categories=[workplace_assistant_project_management]"]


def bracket_call_format(name: str, arguments: dict[str, Any]) -> str:
    """The format of tests/plugins/bracket_call_plugin.py."""
    return f"[[call {name} {json.dumps(arguments)}]]"


CALL_FORMATS: dict[str, Callable[[str, dict[str, Any]], str]] = {
    "kit": kit_call_format,
    "bracket": bracket_call_format,
}


def tool_caller(base_model_dir: str, call_format: str = "kit", steps: int = 8) -> str:
    """A copy of `base_model_dir` that writes tool calls in `call_format`, built once and cached."""
    target = cache_dir() / "models" / f"smollm2-tool-caller-{call_format}"
    if (target / "config.json").is_file():
        return str(target)
    cfg = load_config(
        "cpu_demo",
        [
            *TASK_OVERRIDES,
            f"model.name_or_path={base_model_dir}",
            "sft.num_examples=32",
            f"sft.args={{learning_rate: 1.0e-4, max_steps: {steps}, per_device_train_batch_size: 8, "
            "lr_scheduler_type: constant}",
        ],
    )
    tokenizer = load_tokenizer(cfg.model, base_model_dir)
    env = make_environment(cfg.env)
    tasks = env.load_tasks(cfg.env.train_file, limit=64)
    run = RunFolder(target.with_name(target.name + ".sft-run")).create()
    model = sft_warmup(
        cfg, load_policy(cfg.model, base_model_dir), tokenizer, env, tasks, run, CALL_FORMATS[call_format]
    )
    partial = Path(str(target) + ".partial")
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.replace(target)
    return str(target)
