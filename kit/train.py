"""`kit train`: the whole job a recipe describes, start to finish.

resolve model -> load tasks -> [evaluate base] -> [SFT warm-up] -> GRPO (TRL) -> save ->
[evaluate trained] -> reward_curve.png + summary.json in the run folder
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import statistics
import time
from collections.abc import Iterator
from typing import Any

from kit.config import KitConfig, save_config
from kit.environment import make_environment
from kit.evaluate import evaluate_with_generator
from kit.generation.transformers_gen import TransformersGenerator
from kit.models import load_policy, load_tokenizer, resolve_model
from kit.runlog import RunFolder
from kit.versions import versions

log = logging.getLogger(__name__)


def _success(cfg: KitConfig, stage: str, model, tokenizer, env, tasks) -> dict[str, Any] | None:
    if not tasks:
        return None
    max_tokens = int(cfg.grpo.get("max_completion_length", 256))
    was_training = model.training
    model.eval()
    started = time.perf_counter()
    report, _ = evaluate_with_generator(
        cfg, TransformersGenerator.for_model(model, tokenizer), tokenizer, env, tasks, max_tokens
    )
    model.train(was_training)
    log.info(
        "%s: success %.1f%% on %d validation tasks (%.0f s)",
        stage, 100 * report["success_rate"], report["n"], time.perf_counter() - started,
    )  # fmt: skip
    return report


@contextlib.contextmanager
def started_server(cfg: KitConfig, run: RunFolder) -> Iterator[KitConfig]:
    """With `generation.start_server`, `kit serve` for the length of the run; yields the config that
    points at it. Otherwise yields `cfg` unchanged."""
    if cfg.generation.mode != "server" or not cfg.generation.start_server:
        yield cfg
        return
    from kit.serve import VLLMServer

    server = VLLMServer(cfg, run.server_log)
    with server:
        yield dataclasses.replace(cfg, generation=dataclasses.replace(cfg.generation, server_url=server.url))


def train(cfg: KitConfig) -> dict[str, Any]:
    """Run the recipe; returns the summary also written to the run folder's summary.json."""
    run = RunFolder(cfg.run.output_dir).create()
    save_config(cfg, run.path / "config.yaml")
    with started_server(cfg, run) as cfg:
        return _train(cfg, run)


def _train(cfg: KitConfig, run: RunFolder) -> dict[str, Any]:
    from transformers import set_seed

    from kit.sft import sft_warmup
    from kit.trainer import build_trainer

    started = time.perf_counter()
    set_seed(cfg.run.seed)
    model_dir = resolve_model(cfg.model.name_or_path)
    tokenizer = load_tokenizer(cfg.model, model_dir)
    env = make_environment(cfg.env)
    train_tasks = env.load_tasks(cfg.env.train_file, limit=cfg.env.max_train_rows)
    eval_tasks = env.load_tasks(cfg.env.eval_file, limit=cfg.run.eval_tasks) if cfg.run.eval_tasks else []
    model = load_policy(cfg.model, model_dir)
    summary: dict[str, Any] = {
        "recipe": cfg.recipe,
        "model": model_dir,
        "train_tasks": len(train_tasks),
        "versions": versions(),
    }

    summary["base"] = _success(cfg, "base", model, tokenizer, env, eval_tasks)
    if cfg.sft.enabled:
        model = sft_warmup(cfg, model, tokenizer, env, train_tasks, run)
        summary["after_sft"] = _success(cfg, "after_sft", model, tokenizer, env, eval_tasks)

    trainer = build_trainer(cfg, model, tokenizer, env, train_tasks, run)
    summary["generation"] = trainer.generation_setup.describe()
    summary["generation_mode"] = cfg.generation.mode
    grpo_started = time.perf_counter()
    trainer.train()
    summary["grpo_seconds"] = round(time.perf_counter() - grpo_started, 1)
    summary["grpo_steps"] = trainer.state.global_step
    sync_seconds = getattr(getattr(trainer, "vllm_generation", None), "seconds", None)
    if sync_seconds:
        summary["weight_sync_seconds_median"] = round(statistics.median(sync_seconds), 3)
    trainer.model.config.use_cache = True  # saved for inference, not for training
    trainer.save_model(str(run.final_model))
    tokenizer.save_pretrained(str(run.final_model))
    summary["after_grpo"] = _success(cfg, "after_grpo", trainer.model, tokenizer, env, eval_tasks)

    steps = run.training_steps()
    summary["reward_first_last"] = [steps[0]["reward"], steps[-1]["reward"]] if steps else None
    if steps:
        run.plot_rewards()
    summary["total_seconds"] = round(time.perf_counter() - started, 1)
    summary["run_folder"] = str(run.path)
    run.summary_file.write_text(json.dumps(summary, indent=2) + "\n")
    print_summary(summary)
    return summary


def print_summary(summary: dict[str, Any]) -> None:
    """A short human-readable report of a finished run."""
    print(f"\n=== run finished: {summary['run_folder']} ({summary['total_seconds']} s) ===")
    for stage in ("base", "after_sft", "after_grpo"):
        report = summary.get(stage)
        if report:
            low, high = report["interval95"]
            tiers = ", ".join(
                f"{k} {v['success_rate']:.1%} (n={v['n']})" for k, v in report["by_tier"].items()
            )
            print(
                f"{stage:>11}: success {report['success_rate']:.1%} [95% {low:.1%}-{high:.1%}] on "
                f"{report['n']} validation tasks; {tiers}"
            )
    if summary.get("reward_first_last"):
        first, last = summary["reward_first_last"]
        steps, seconds = summary["grpo_steps"], summary["grpo_seconds"]
        print(f"GRPO: {steps} steps in {seconds} s, mean reward {first:.3f} -> {last:.3f}")
    print(f"model: {summary['run_folder']}/final   plot: {summary['run_folder']}/reward_curve.png")
