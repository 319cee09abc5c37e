"""Resuming a killed run (`run.resume=true`, `kit train --resume`), and starting a fresh one.

TRL's trainer restores the weights, optimizer, scheduler, RNG states and step counter itself
(`trainer.train(resume_from_checkpoint=...)`). This module picks the checkpoint, checks that the run
folder and the config allow resuming, and cuts the run's logs back to the checkpoint's step, so no
line is written twice.

A checkpoint folder is complete when it holds model weights and a trainer_state.json that parses:
HF's Trainer writes trainer_state.json after the weights, optimizer, scheduler and RNG states, so a
run killed while saving leaves a folder without one (or with a torn one).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kit.config.tree import ConfigError, KitConfig
from kit.run_folder import RunFolder, process_rank

log = logging.getLogger(__name__)

# Weights `from_pretrained` loads, then the others a Trainer checkpoint may hold instead (PEFT, FSDP).
PRETRAINED_WEIGHTS = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
WEIGHT_FILES = (*PRETRAINED_WEIGHTS, "adapter_model.safetensors", "pytorch_model_fsdp.bin")
# What may differ between a run and its resumption: how long it trains, how often it saves, and where
# and when rollout tokens come from (the policy's weights are the checkpoint's either way; grpo_async
# starts a resumed run with a synchronous batch). Prefixes of dotted keys.
MAY_CHANGE = (
    "run.resume",
    "run.output_dir",
    "grpo.max_steps",
    "grpo.num_train_epochs",
    "grpo.save_steps",
    "grpo.save_total_limit",
    "grpo.logging_steps",
    "grpo.report_to",
    "generation.",
    "serve.",
    "grpo_async.",
)
_NOT_SET = object()


@dataclass(frozen=True)
class Checkpoint:
    """A TRL checkpoint folder and the optimizer step it was saved at."""

    path: Path
    step: int


def is_complete(folder: Path) -> bool:
    """Whether a checkpoint folder was written to the end: weights and a trainer_state.json that parses."""
    try:
        json.loads((folder / "trainer_state.json").read_text())
    except (OSError, ValueError):
        return False
    return any((folder / name).is_file() for name in WEIGHT_FILES) or any(folder.glob("pytorch_model_fsdp_*"))


def find_checkpoints(folder: Path) -> tuple[list[Checkpoint], list[Checkpoint]]:
    """The complete and the incomplete checkpoint-N folders under `folder`, each by increasing step."""
    found = []
    for path in folder.glob("checkpoint-*") if folder.is_dir() else ():
        match = re.fullmatch(r"checkpoint-(\d+)", path.name)
        if match and path.is_dir():
            found.append(Checkpoint(path, int(match.group(1))))
    found.sort(key=lambda c: c.step)
    complete = [c for c in found if is_complete(c.path)]
    return complete, [c for c in found if c not in complete]


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"grpo": {"beta": 0.0}} -> {"grpo.beta": 0.0}."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def config_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """The dotted keys whose values differ between a run's saved config and `current`, each with both
    values, leaving out what may change on resume (`MAY_CHANGE`)."""
    was, now = _flatten(saved), _flatten(current)
    differing = []
    for key in sorted(set(was) | set(now)):
        before, after = was.get(key, _NOT_SET), now.get(key, _NOT_SET)
        if key.startswith(MAY_CHANGE) or before == after:
            continue
        shown = ["not set" if v is _NOT_SET else repr(v) for v in (before, after)]
        differing.append(f"{key} ({shown[0]} in the run, {shown[1]} now)")
    return differing


def check_resume(cfg: KitConfig, run: RunFolder) -> Checkpoint:
    """The checkpoint that resuming `run` with `cfg` would continue from, changing nothing. A ConfigError
    says why it cannot be resumed and what to do instead."""
    saved_file = run.path / "config.yaml"
    if not saved_file.is_file():
        what = "holds no config.yaml, so it is no kit run" if run.path.is_dir() else "does not exist"
        raise ConfigError(
            f"run.resume=true, but the run folder {run.path} {what}: nothing to resume. Start a new run "
            "there without run.resume (--resume), or point run.output_dir at the run to continue."
        )
    try:
        saved = yaml.safe_load(saved_file.read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"run.resume=true, but {saved_file} is not valid YAML ({err}).") from err
    current = cfg.to_dict()
    current.pop("recipe")
    differing = config_differences(saved, current)
    if differing:
        raise ConfigError(
            f"run.resume=true, but the config differs from the run's {saved_file} in: "
            f"{'; '.join(differing)}. Resume with the run's own settings (kit train --config {saved_file} "
            "--resume), or start a new run in another run.output_dir."
        )
    complete, incomplete = find_checkpoints(run.checkpoints)
    if not complete:
        partial = f" (incomplete: {', '.join(c.path.name for c in incomplete)})" if incomplete else ""
        raise ConfigError(
            f"run.resume=true, but {run.checkpoints} holds no complete checkpoint{partial}: the run stopped "
            "before its first save (grpo.save_steps). Start it again without run.resume (--resume); that "
            "replaces the folder's logs."
        )
    newest = complete[-1]
    max_steps = cfg.grpo.max_steps
    if 0 < max_steps < newest.step:
        raise ConfigError(
            f"run.resume=true, but grpo.max_steps is {max_steps} and the run's newest checkpoint is at step "
            f"{newest.step}: set grpo.max_steps to {newest.step} or more."
        )
    if grpo_finished(cfg, newest) and not any((newest.path / name).is_file() for name in PRETRAINED_WEIGHTS):
        raise ConfigError(
            f"run.resume=true: {newest.path} is the run's last GRPO step, and its weights (an FSDP state "
            "dict or an adapter) cannot be loaded outside the trainer. Take the trained model from it, or "
            "raise grpo.max_steps to train on."
        )
    return newest


def grpo_finished(cfg: KitConfig, checkpoint: Checkpoint) -> bool:
    """Whether `checkpoint` is the last step of GRPO. HF's Trainer resumed there would train one step
    more (it checks max_steps only after a step), so the kit loads the checkpoint's weights instead."""
    return 0 < cfg.grpo.max_steps <= checkpoint.step


def prepare_resume(cfg: KitConfig, run: RunFolder) -> Checkpoint:
    """`check_resume`, then remove incomplete checkpoints and cut this process's logs back to the newest
    complete checkpoint, which it returns."""
    newest = check_resume(cfg, run)
    _, incomplete = find_checkpoints(run.checkpoints)
    rank = process_rank()
    for checkpoint in incomplete if rank == 0 else ():
        log.warning(
            "resume: %s is incomplete (no readable trainer_state.json, or no weights): ignored and removed",
            checkpoint.path,
        )
        shutil.rmtree(checkpoint.path, ignore_errors=True)
    log.info(
        "resume: continuing from %s (step %d); log lines after step %d are dropped",
        newest.path,
        newest.step,
        newest.step,
    )
    run.truncate_to_step(newest.step, rank)
    return newest


# The stages before GRPO: a resumed job has them done already and skips them.
BEFORE_GRPO = ("base_eval", "sft", "after_sft_eval", "task_selection")
# The summary's records of those stages, and the generation setup (which GRPO writes again).
KEPT_ON_RESUME = ("base", "after_sft", "task_selection", "generation", "generation_mode")


@dataclass(frozen=True)
class ResumePlan:
    """What a training job does about the run folder's earlier run, decided once before anything loads:
    continue from `checkpoint` (None: a fresh run), skipping the stages before GRPO, and when the
    checkpoint is GRPO's last step, load its weights instead of training on."""

    checkpoint: Checkpoint | None
    grpo_done: bool = False

    def skips(self, stage: str) -> bool:
        """Whether the job skips `stage` (one of BEFORE_GRPO) because the earlier run did it."""
        return self.checkpoint is not None and stage in BEFORE_GRPO

    def policy_weights(self, model_dir: str) -> str:
        """Where the policy loads from: the last checkpoint when GRPO is done, else `model_dir` (TRL loads a
        checkpoint's weights itself when GRPO resumes)."""
        return str(self.checkpoint.path) if self.grpo_done and self.checkpoint else model_dir

    def carried_summary(self, earlier: dict[str, Any]) -> dict[str, Any]:
        """What a resumed job's summary.json keeps from the killed run's (`earlier`): the stages before
        GRPO with their seconds, the generation setup, the held-out curve up to the checkpoint's step
        (the steps after it are trained and evaluated again), and the chain of resumes."""
        kept = {key: earlier[key] for key in KEPT_ON_RESUME if key in earlier}
        seconds = earlier.get("seconds", {})
        kept["seconds"] = {key: seconds[key] for key in BEFORE_GRPO if key in seconds}
        step = self.checkpoint.step
        curve = [point for point in earlier.get("held_out_curve", []) if point["step"] <= step]
        if curve:
            kept["held_out_curve"] = curve
        this = {"checkpoint": self.checkpoint.path.name, "step": step}
        kept["resumed_from"] = [*earlier.get("resumed_from", []), this]
        return kept

    @property
    def trainer_checkpoint(self) -> str | None:
        """What `trainer.train(resume_from_checkpoint=...)` gets."""
        return None if self.checkpoint is None else str(self.checkpoint.path)


def plan_resume(cfg: KitConfig, run: RunFolder) -> ResumePlan:
    """With `run.resume`: check and prepare the run folder (`prepare_resume`) and plan to continue from its
    newest complete checkpoint. Otherwise: empty the folder of any earlier run (`start_fresh`)."""
    if not cfg.run.resume:
        start_fresh(run)
        return ResumePlan(None)
    checkpoint = prepare_resume(cfg, run)
    return ResumePlan(checkpoint, grpo_done=grpo_finished(cfg, checkpoint))


def start_fresh(run: RunFolder) -> None:
    """Make `run` hold no earlier run's files, so checkpoints and logs are this run's alone."""
    run.create()
    removed = run.clear_previous_run() if process_rank() == 0 else []
    if removed:
        log.warning(
            "%s held an earlier run: starting fresh removed %s (run.resume=true continues a run instead)",
            run.path,
            ", ".join(removed),
        )
