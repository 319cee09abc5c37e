"""`kit train`: the whole job a recipe describes, start to finish.

    job = TrainingJob(cfg)       # run folder, [vLLM server], tokenizer, environment, tasks, policy
    job.evaluate("base")         # success on the validation tasks (greedy; pass^k with run.eval_repeats)
    job.sft()                    # the optional SFT warm-up
    job.evaluate("after_sft")
    job.grpo()                   # TRL's GRPOTrainer with the kit's multi-turn rollout
    job.evaluate("after_grpo")
    job.finish()                 # reward_curve.png and summary.json; stops the job's server

`train(cfg)` runs exactly these steps; notebook 01 runs them one cell at a time, so the two write
the same run folder. summary.json is rewritten after each stage, so a killed run's folder says which
stages finished.

With `run.resume=true` the job continues the run in `run.output_dir` from its newest complete GRPO
checkpoint (`kit.train.resume`): the stages before GRPO (base evaluation, SFT warm-up, after-SFT evaluation)
finished before that checkpoint was written, so they are skipped and their results kept from
summary.json; GRPO continues at the checkpoint's step; the after-GRPO evaluation and `finish` run again.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import logging
import statistics
import time
from collections.abc import Sequence
from typing import Any

from transformers import TrainerCallback

from kit.config.tree import ConfigError, KitConfig, save_config
from kit.device import peak_gpu_memory
from kit.envs.environment import make_environment
from kit.generation.setup import resolve_generation
from kit.lora import is_peft_model, merged_parameters
from kit.models import is_dummy_model, load_policy, load_tokenizer, resolve_model
from kit.rollout.user_simulators import open_user_simulator
from kit.run_folder import RunFolder, process_count, process_rank
from kit.train.evaluate import Evaluation, evaluate_model, evaluate_with_generator
from kit.train.out_of_memory import out_of_memory_advice
from kit.train.resume import plan_resume
from kit.versions import versions

log = logging.getLogger(__name__)

# Stages that finish before the first GRPO checkpoint, so a resumed job skips them: their `seconds` keys.


class TrainingJob:
    """One run of a recipe: the objects it needs, its stages, and the summary they fill in."""

    def __init__(self, cfg: KitConfig, run: RunFolder | None = None) -> None:
        from transformers import set_seed

        self.started = time.perf_counter()
        if cfg.task_selection.probe_tasks and process_count() > 1:
            raise ConfigError(
                "task_selection probes tasks in one trainer process; with several, each would keep its own "
                "tasks. Set task_selection.probe_tasks=0 or launch one process."
            )
        set_seed(cfg.run.seed)
        self.run = run or RunFolder(cfg.run.output_dir)
        self.resume = plan_resume(cfg, self.run)
        save_config(cfg, self.run.path / "config.yaml")
        self.server = None
        self._user_context = contextlib.ExitStack()
        # Its servers (NeMo-Gym's) start on first use; close() stops them with the job's others, also when a
        # notebook kernel or script dies (atexit).
        self.env = make_environment(cfg.env, self.run.path / "nemo_gym")
        atexit.register(self.close)
        # Every generation decision of the job (mode, server, weight sync) is made here, once.
        self.setup = resolve_generation(cfg)
        self.setup.check()
        if self.setup.mode == "server" and cfg.generation.start_server:
            # Started before the policy loads: on a GPU the server takes its share of memory first.
            from kit.generation.vllm_process import VLLMServer

            self.server = VLLMServer(cfg, self.run.server_log).start()
            cfg = dataclasses.replace(
                cfg, generation=dataclasses.replace(cfg.generation, server_url=self.server.url)
            )
        self.cfg = cfg
        self.model_dir = resolve_model(cfg.model.name_or_path)
        self.tokenizer = load_tokenizer(cfg.model, self.model_dir)
        self.train_tasks = self.env.load_tasks(
            cfg.env.train_file, limit=cfg.env.max_train_rows, skip_invalid=True
        )
        self.eval_tasks = (
            self.env.load_tasks(cfg.env.eval_file, limit=cfg.run.eval_tasks) if cfg.run.eval_tasks else []
        )
        # The simulated user of dialogue tasks; a served one's server starts before the policy loads.
        self.user = None
        if any(task.is_dialogue for task in [*self.train_tasks, *self.eval_tasks]):
            self.user = self._user_context.enter_context(
                open_user_simulator(cfg, self.env.outcome, self.run.path)
            )
        self.model = load_policy(cfg.model, self.resume.policy_weights(self.model_dir))
        self.trainer = None
        self.summary: dict[str, Any] = {
            "recipe": cfg.recipe,
            "model": self.model_dir,
            "train_tasks": len(self.train_tasks),
            "versions": versions(),
            "seconds": {},
        }
        if is_dummy_model(self.model_dir):
            self.summary["dummy_weights"] = True  # its figures are cost, not learning (kit.dummy_models)
        if self.resume.checkpoint is not None:
            self.summary.update(self.resume.carried_summary(self.run.read_summary()))
        self.run.write_summary(self.summary)

    def _skipped_on_resume(self, stage: str) -> bool:
        """True (with a log line) when this resumed job skips `stage`, which ran before its checkpoint."""
        if not self.resume.skips(stage):
            return False
        kept = "its record kept" if stage in self.summary["seconds"] else "summary.json has no record of it"
        log.info("resume: %s ran before %s; skipped (%s)", stage, self.resume.checkpoint.path.name, kept)
        return True

    def _timed(self, stage: str, started: float) -> float:
        seconds = self.summary["seconds"][stage] = round(time.perf_counter() - started, 1)
        self.run.write_summary(self.summary)
        return seconds

    def evaluate(self, stage: str) -> Evaluation | None:
        """Success of the current policy on the validation tasks (`run.eval_repeats` episodes each),
        stored under `stage`."""
        if not self.eval_tasks or self._skipped_on_resume(f"{stage}_eval"):
            return None
        started = time.perf_counter()
        result = self._evaluation()
        self.summary[stage] = result.report
        seconds = self._timed(f"{stage}_eval", started)
        report = result.report
        log.info("%s: success %.1f%% on %d validation tasks (%.0f s)", stage, 100 * report["success_rate"],
                 report["n"], seconds)  # fmt: skip
        return result

    def evaluate_at_step(self, step: int) -> None:
        """The held-out curve: success on the validation tasks after `step` GRPO steps (`run.eval_every`)."""
        started = time.perf_counter()
        report = self._evaluation().report
        point = {"step": step, **{key: report[key] for key in ("n", "success_rate", "interval95")}}
        self.summary.setdefault("held_out_curve", []).append(point)
        self.run.write_summary(self.summary)
        log.info("step %d: held-out success %.1f%% (%.0f s)", step, 100 * report["success_rate"],
                 time.perf_counter() - started)  # fmt: skip

    def _evaluation(self) -> Evaluation:
        generator = self.served_generator()
        if generator is None:
            return evaluate_model(
                self.cfg, self.model, self.tokenizer, self.env, self.eval_tasks, user=self.user
            )
        tokens = self.cfg.grpo.max_completion_length
        return evaluate_with_generator(
            self.cfg, generator, self.tokenizer, self.env, self.eval_tasks, tokens, self.user
        )

    def served_generator(self):
        """In server mode with a kit sync (reload, ipc): the server, after pushing the current policy to
        it, so evaluation runs at the server's speed. None: evaluate with the local model."""
        from kit.generation.vllm_server import VLLMServerGenerator, connect_to_server
        from kit.generation.weight_sync import server_sync

        setup = self.setup
        if setup.mode != "server" or setup.sync not in ("reload", "ipc"):
            return None
        if self.trainer is not None:  # grpo_async: a batch generating ahead finishes before the push
            self.trainer.rollout_func.wait_idle()
        client = connect_to_server(self.cfg.generation, self.run.server_log)
        server_sync(setup.sync, self.model, None, client, self.run.path / "weights_sync").sync_weights()
        return VLLMServerGenerator(client)

    def probe_generator(self):
        """What samples episodes outside GRPO's rollouts (task probes): the server when there is one, else
        the policy's own generate (colocate mode has no vLLM yet: TRL starts it with the trainer)."""
        from kit.generation.transformers_gen import TransformersGenerator

        return self.served_generator() or TransformersGenerator.for_model(self.model, self.tokenizer)

    def sft(self) -> None:
        """The SFT warm-up (`sft` section): demonstrations of the tasks' solutions, written in the rollout
        parser's format."""
        from kit.train.sft import sft_warmup

        if self._skipped_on_resume("sft"):
            return
        started = time.perf_counter()
        with out_of_memory_advice(self.cfg, "the SFT warm-up", self.model):
            tasks = self.train_tasks
            self.model = sft_warmup(self.cfg, self.model, self.tokenizer, self.env, tasks, self.run)
        self._timed("sft", started)

    def select_tasks(self) -> None:
        """Keep the training tasks whose sampled episodes mix outcomes (`task_selection`); GRPO trains on
        those. A resumed job keeps the killed run's choice, so TRL resumes on the same dataset."""
        from kit.generation.base import Sampling
        from kit.rollout.loop import Rollouts
        from kit.rollout.task_selection import mixed_outcome_tasks

        selection = self.cfg.task_selection
        if not selection.probe_tasks:
            return
        if self._skipped_on_resume("task_selection"):
            kept = set(self.summary.get("task_selection", {}).get("kept_ids", []))
            self.train_tasks = [task for task in self.train_tasks if task.info.get("id") in kept]
            return
        started = time.perf_counter()
        generator = self.probe_generator()
        grpo = self.cfg.grpo
        chosen = mixed_outcome_tasks(
            self.train_tasks[: selection.probe_tasks],
            Rollouts.from_config(self.cfg, self.tokenizer, self.env, self.user),
            generator,
            Sampling.of(grpo, self.cfg.generation.ignore_eos),
            grpo.max_completion_length,
            selection.samples,
        )
        if not chosen.tasks:
            raise RuntimeError(
                f"No probed training task mixed outcomes ({selection.samples} episodes each of "
                f"{selection.probe_tasks}): GRPO would have nothing to learn from. Probe more tasks "
                "(task_selection.probe_tasks), or warm up more or less (sft.num_examples)."
            )
        self.train_tasks = chosen.tasks
        r = self.summary["task_selection"] = chosen.report()
        seconds = self._timed("task_selection", started)
        log.info("task selection: %d of %d probed tasks mix outcomes (%d always solved, %d never; %.0f s)",
                 r["kept"], r["probed"], r["always_solved"], r["never_solved"], seconds)  # fmt: skip

    def grpo(self, callbacks: Sequence[Any] = ()):
        """GRPO with TRL's GRPOTrainer (from the checkpoint when resuming); saves the trained policy to the
        run folder's final/."""
        from kit.train.grpo_trainer import build_trainer

        if self.resume.grpo_done:
            checkpoint = self.resume.checkpoint
            log.info("resume: %s is GRPO's last step; nothing left to train", checkpoint.path.name)
            started = time.perf_counter()
            self.summary["grpo_steps"] = checkpoint.step
            self._save_final()
            self._timed("grpo", started)
            return None
        self.trainer = build_trainer(
            self.cfg, self.model, self.tokenizer, self.env, self.train_tasks, self.run, self.user, self.setup
        )
        for callback in callbacks:
            self.trainer.add_callback(callback)
        if self.cfg.run.eval_every and self.eval_tasks:
            self.trainer.add_callback(HeldOutCurve(self, self.cfg.run.eval_every))
        self.summary["generation"] = self.setup.describe()
        self.summary["generation_mode"] = self.setup.mode
        started = time.perf_counter()
        with (
            peak_gpu_memory(self.summary, "grpo_peak_gpu_memory_gb"),
            out_of_memory_advice(self.cfg, "GRPO", self.model),
        ):
            # TRL restores weights, optimizer, scheduler, RNG states and the step counter from the checkpoint.
            self.trainer.train(resume_from_checkpoint=self.resume.trainer_checkpoint)
        self._timed("grpo", started)
        self.summary["grpo_steps"] = self.trainer.state.global_step
        sync_seconds = getattr(getattr(self.trainer, "vllm_generation", None), "seconds", None)
        if sync_seconds:
            self.summary["weight_sync_seconds_median"] = round(statistics.median(sync_seconds), 3)
        self.model = self.trainer.model
        self._save_final()
        return self.trainer

    def _save_final(self) -> None:
        if self.summary.get("dummy_weights"):
            # Trained from noise, they mean nothing; an 8B model's would take minutes and 30 GB of disk.
            log.info("dummy weights: the trained model is not saved (final/)")
            return
        self.model.config.use_cache = True  # saved for inference, not for training
        final = self.run.final_model
        if self.trainer is None:
            if process_rank() == 0:
                self.model.save_pretrained(str(final))
        elif is_peft_model(self.model):
            # The adapter as TRL saves it, and beside it the merged model that kit serve and kit eval load.
            self.trainer.save_model(str(final / "adapter"))
            if process_rank() == 0:
                with merged_parameters(self.model) as parameters:
                    state = {name: tensor.clone() for name, tensor in parameters}
                self.model.get_base_model().save_pretrained(str(final), state_dict=state)
        else:
            self.trainer.save_model(str(final))  # gathers sharded weights
        self.tokenizer.save_pretrained(str(final))

    def close(self) -> None:
        """Stop the servers this job started, if any (also done by `finish`)."""
        self.env.close()
        self._user_context.close()
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
            per_step = grpo.per_device_train_batch_size * grpo.gradient_accumulation_steps
            self.run.plot_rewards(self.summary, episodes_per_step=per_step)
        self._timed("total", self.started)
        self.summary["run_folder"] = str(self.run.path)
        self.run.write_summary(self.summary)
        return self.summary


class HeldOutCurve(TrainerCallback):
    """Evaluates the job's policy on its validation tasks every `every` GRPO steps (not after the last:
    that is the after_grpo evaluation). One trainer process only: the evaluation runs on it alone."""

    def __init__(self, job: TrainingJob, every: int) -> None:
        self.job = job
        self.every = every
        if process_count() > 1:
            log.warning("run.eval_every is for one trainer process; the held-out curve is left out")
            self.every = 0

    def on_step_end(self, args, state, control, **kwargs):
        if self.every and state.global_step % self.every == 0 and state.global_step < state.max_steps:
            self.job.evaluate_at_step(state.global_step)


def train(cfg: KitConfig) -> dict[str, Any]:
    """Run the recipe; returns the summary also written to the run folder's summary.json."""
    job = TrainingJob(cfg)
    try:
        job.evaluate("base")
        if cfg.sft.enabled:
            job.sft()
            job.evaluate("after_sft")
        job.select_tasks()
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
            if "pass^k" in report:  # run.eval_repeats > 1
                passes = " ".join(f"{v['rate']:.1%}" for v in report["pass^k"].values())
                print(f"{'':>11}  pass^k for k = 1..{len(report['pass^k'])}: {passes}")
    if summary.get("reward_first_last"):
        first, last = summary["reward_first_last"]
        steps = summary["grpo_steps"]
        print(f"GRPO: {steps} steps in {seconds['grpo']} s, mean reward {first:.3f} -> {last:.3f}")
    if summary.get("dummy_weights"):
        print(f"DUMMY weights: cost only, no model saved   plot: {summary['run_folder']}/reward_curve.png")
    else:
        print(f"model: {summary['run_folder']}/final   plot: {summary['run_folder']}/reward_curve.png")
