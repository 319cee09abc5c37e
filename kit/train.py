"""`kit train`: the whole job a recipe describes, start to finish.

    job = TrainingJob(cfg)       # run folder, [vLLM server], tokenizer, environment, tasks, policy
    job.evaluate("base")         # greedy success on the validation tasks
    job.sft()                    # the optional SFT warm-up
    job.evaluate("after_sft")
    job.grpo()                   # TRL's GRPOTrainer with the kit's multi-turn rollout
    job.evaluate("after_grpo")
    job.finish()                 # reward_curve.png and summary.json; stops the job's server

`train(cfg)` runs exactly these steps; notebook 01 runs them one cell at a time, so the two write
the same run folder.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import logging
import statistics
import time
from collections.abc import Sequence
from typing import Any

from kit.config import KitConfig, save_config
from kit.environment import make_environment
from kit.evaluate import Evaluation, evaluate_model, evaluate_with_generator
from kit.models import load_policy, load_tokenizer, resolve_model
from kit.run_folder import RunFolder
from kit.versions import versions

log = logging.getLogger(__name__)


class TrainingJob:
    """One run of a recipe: the objects it needs, its stages, and the summary they fill in."""

    def __init__(self, cfg: KitConfig, run: RunFolder | None = None) -> None:
        from transformers import set_seed

        self.started = time.perf_counter()
        set_seed(cfg.run.seed)
        self.run = run or RunFolder(cfg.run.output_dir).create()
        save_config(cfg, self.run.path / "config.yaml")
        self.server = None
        if cfg.generation.mode == "server" and cfg.generation.start_server:
            # Started before the policy loads: on a GPU the server takes its share of memory first.
            from kit.serve import VLLMServer

            self.server = VLLMServer(cfg, self.run.server_log).start()
            atexit.register(self.close)  # a notebook kernel or script that dies still stops it
            cfg = dataclasses.replace(
                cfg, generation=dataclasses.replace(cfg.generation, server_url=self.server.url)
            )
        self.cfg = cfg
        self.model_dir = resolve_model(cfg.model.name_or_path)
        self.tokenizer = load_tokenizer(cfg.model, self.model_dir)
        self.env = make_environment(cfg.env)
        self.train_tasks = self.env.load_tasks(
            cfg.env.train_file, limit=cfg.env.max_train_rows, skip_invalid=True
        )
        self.eval_tasks = (
            self.env.load_tasks(cfg.env.eval_file, limit=cfg.run.eval_tasks) if cfg.run.eval_tasks else []
        )
        self.model = load_policy(cfg.model, self.model_dir)
        self.trainer = None
        self.summary: dict[str, Any] = {
            "recipe": cfg.recipe,
            "model": self.model_dir,
            "train_tasks": len(self.train_tasks),
            "versions": versions(),
            "seconds": {},
        }

    def _timed(self, stage: str, started: float) -> float:
        seconds = self.summary["seconds"][stage] = round(time.perf_counter() - started, 1)
        return seconds

    def evaluate(self, stage: str) -> Evaluation | None:
        """Greedy success of the current policy on the validation tasks, stored under `stage`."""
        if not self.eval_tasks:
            return None
        started = time.perf_counter()
        generator = self.served_generator()
        if generator is None:
            result = evaluate_model(self.cfg, self.model, self.tokenizer, self.env, self.eval_tasks)
        else:
            tokens = int(self.cfg.grpo.get("max_completion_length", 256))
            result = evaluate_with_generator(
                self.cfg, generator, self.tokenizer, self.env, self.eval_tasks, tokens
            )
        self.summary[stage] = result.report
        seconds = self._timed(f"{stage}_eval", started)
        report = result.report
        log.info("%s: success %.1f%% on %d validation tasks (%.0f s)", stage, 100 * report["success_rate"],
                 report["n"], seconds)  # fmt: skip
        return result

    def served_generator(self):
        """In server mode with a kit sync (reload, ipc): the server, after pushing the current policy to
        it, so evaluation runs at the server's speed. None: evaluate with the local model."""
        from kit.generation.setup import resolve_generation
        from kit.generation.vllm_server import VLLMServerClient, VLLMServerGenerator
        from kit.generation.weight_sync import server_sync

        gen = self.cfg.generation
        setup = resolve_generation(self.cfg)
        if setup.mode != "server" or setup.sync not in ("reload", "ipc"):
            return None
        client = VLLMServerClient(
            gen.server_url, gen.api_key, gen.request_timeout, log_file=self.run.server_log
        )
        server_sync(setup.sync, self.model, None, client, self.run.path / "weights_sync").sync_weights()
        return VLLMServerGenerator(client)

    def sft(self) -> None:
        """The SFT warm-up on demonstrations from the ground truth (`sft` section)."""
        from kit.sft import sft_warmup

        started = time.perf_counter()
        self.model = sft_warmup(self.cfg, self.model, self.tokenizer, self.env, self.train_tasks, self.run)
        self._timed("sft", started)

    def grpo(self, callbacks: Sequence[Any] = ()):
        """GRPO with TRL's GRPOTrainer; saves the trained policy to the run folder's final/."""
        from kit.grpo_trainer import build_trainer

        self.trainer = build_trainer(
            self.cfg, self.model, self.tokenizer, self.env, self.train_tasks, self.run
        )
        for callback in callbacks:
            self.trainer.add_callback(callback)
        self.summary["generation"] = self.trainer.generation_setup.describe()
        self.summary["generation_mode"] = self.cfg.generation.mode
        started = time.perf_counter()
        self.trainer.train()
        self._timed("grpo", started)
        self.summary["grpo_steps"] = self.trainer.state.global_step
        sync_seconds = getattr(getattr(self.trainer, "vllm_generation", None), "seconds", None)
        if sync_seconds:
            self.summary["weight_sync_seconds_median"] = round(statistics.median(sync_seconds), 3)
        self.model = self.trainer.model
        self.model.config.use_cache = True  # saved for inference, not for training
        self.trainer.save_model(str(self.run.final_model))
        self.tokenizer.save_pretrained(str(self.run.final_model))
        return self.trainer

    def close(self) -> None:
        """Stop the server this job started, if any (also done by `finish`)."""
        if self.server is not None:
            self.server.stop()
            self.server = None

    def finish(self) -> dict[str, Any]:
        """Write reward_curve.png and summary.json, stop the job's server; returns the summary."""
        self.close()
        steps = self.run.training_steps()
        self.summary["reward_first_last"] = [steps[0]["reward"], steps[-1]["reward"]] if steps else None
        if steps:
            grpo = self.cfg.grpo
            per_step = grpo.get("per_device_train_batch_size", 8) * grpo.get("gradient_accumulation_steps", 1)
            self.run.plot_rewards(self.summary, episodes_per_step=per_step)
        self._timed("total", self.started)
        self.summary["run_folder"] = str(self.run.path)
        self.run.summary_file.write_text(json.dumps(self.summary, indent=2) + "\n")
        return self.summary


def train(cfg: KitConfig) -> dict[str, Any]:
    """Run the recipe; returns the summary also written to the run folder's summary.json."""
    job = TrainingJob(cfg)
    try:
        job.evaluate("base")
        if cfg.sft.enabled:
            job.sft()
            job.evaluate("after_sft")
        job.grpo()
        job.evaluate("after_grpo")
        summary = job.finish()
    finally:
        job.close()
    print_summary(summary)
    return summary


def print_summary(summary: dict[str, Any]) -> None:
    """A short human-readable report of a finished run."""
    seconds = summary["seconds"]
    print(f"\n=== run finished: {summary['run_folder']} ({seconds['total']} s) ===")
    for stage in ("base", "after_sft", "after_grpo"):
        report = summary.get(stage)
        if report:
            low, high = report["interval95"]
            by_tier = report["by_tier"].items()
            tiers = ", ".join(f"{k} {v['success_rate']:.1%} (n={v['n']})" for k, v in by_tier)
            print(
                f"{stage:>11}: success {report['success_rate']:.1%} [95% {low:.1%}-{high:.1%}] on "
                f"{report['n']} validation tasks; {tiers}"
            )
    if summary.get("reward_first_last"):
        first, last = summary["reward_first_last"]
        steps = summary["grpo_steps"]
        print(f"GRPO: {steps} steps in {seconds['grpo']} s, mean reward {first:.3f} -> {last:.3f}")
    print(f"model: {summary['run_folder']}/final   plot: {summary['run_folder']}/reward_curve.png")
