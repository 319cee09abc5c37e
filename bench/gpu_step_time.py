"""Seconds per GRPO step on one GPU: the kit's multi-turn colocate rollouts vs plain TRL colocate.

    python bench/gpu_step_time.py [--runs 3] [--steps 8] [--variants kit trl-tools trl kit-1turn]
                                  [--base MODEL_DIR] [--out bench/results/gpu_step_time.json]

Every side gets the same model (the demo model after a short SFT warm-up, so that episodes call tools
and run several turns), the same prompts (workplace tasks rendered with the kit's template and tools,
in the same order), the same GRPOConfig (the single_gpu recipe's `grpo` section, vLLM colocated) and
the same outcome reward. Every run is its own process with its own vLLM, and runs alternate: kit,
TRL, kit, TRL, ...

The variants:
- `kit`: the trainer `kit train` builds; multi-turn, up to 4 turns, continuous batching of turns.
- `trl-tools`: stock GRPOTrainer running the same multi-turn episodes with its own tool loop
  (`environment_factory`, see kit/testing/trl_tool_env.py): the same tools, turn limit and observation
  cut. The kit's ratio to it is the comparison on the same work, and the last line prints it.
- `trl`: stock GRPOTrainer, one turn per episode (no tool results go back to the model).
- `kit-1turn`: the kit's trainer with `rollout.max_turns=1`, the same work as `trl`: its ratio to `trl`
  is what the kit's wrapping costs by itself.
- `kit-padded`: the kit with TRL's own scoring, every chunk at the batch's full padded width: what
  skipping all-padding columns saves.

At the sizes users train (issue 38), `--base DIR` takes a model folder instead of the SFT-warmed demo
model, such as a dummy-weight one (`kit model dummy --arch qwen3-4b`). Its text is noise and never calls a
tool, so every side runs one turn; pin the sampled length on every side with the overrides
`generation.ignore_eos=true 'grpo.generation_kwargs={ignore_eos: true}'` (the kit's rollout, TRL's own).

Step time is the wall time between consecutive optimizer steps, the first step (vLLM warm-up) left
out. Each step is split into generation (TRL's `_generate`: weight sync, every turn's sampling, tool
calls and parsing), scoring (rewards and the old policy's logprobs) and training (loss, backward,
optimizer), with the batch's shape as the loss sees it: its sampled tokens, its real tokens (tool
results included) and the padded tokens it computes over (TRL pads prompts and completions to the
longest of the batch). Sides sample different numbers of tokens per step (one turn or several), so
ratios compare seconds per 1000 sampled tokens (medians over runs). `--runs 0` only makes the SFT model.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import MethodType

from transformers import TrainerCallback

from kit.testing.trl_tool_env import (
    as_trl_renders,
    check_same_prompts,
    environment_factories,
    tool_list_key,
    with_response_template,
)

BENCH_OVERRIDES = [
    "generation.mode=colocate",
    "env.tiers=[easy, medium]",
    "env.tools_in_prompt=task",
    "sft.enabled=false",
    "run.eval_tasks=0",
    "rollout.max_turns=4",
    "grpo.max_completion_length=512",
    "grpo.save_strategy='no'",
]


VARIANT_OVERRIDES = {
    "kit": [],
    "trl-tools": [],
    "trl": [],
    "kit-1turn": ["rollout.max_turns=1"],
    "kit-padded": [],
}


class StepTimer(TrainerCallback):
    """Wall-clock time at the end of every optimizer step, the time spent inside timed parts of each, and
    the shape of each step's batch as the loss sees it."""

    def __init__(self) -> None:
        self.ends: list[float] = []
        self.parts: dict[str, list[float]] = {"generation": [0.0], "batch": [0.0]}
        self.shapes: list[dict[str, int]] = [{}]

    def timed(self, part: str, function):
        """`function`, its wall time added to the current step's time in `part`."""

        def timed_function(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.parts[part][-1] += time.perf_counter() - started

        return timed_function

    def measured(self, prepare):
        """TRL's `_generate_and_score_completions`, timed as "batch", with the padded batch it returns
        measured: the tokens the loss's forward pass sees (tool results included, which TRL's own
        `num_tokens` leaves out) and the padded width they are computed over."""
        timed_prepare = self.timed("batch", prepare)

        def measured_prepare(*args, **kwargs):
            batch = timed_prepare(*args, **kwargs)
            rows, prompt_width = batch["prompt_ids"].shape
            completion_width = batch["completion_ids"].shape[1]
            shape = self.shapes[-1]
            shape["tokens"] = shape.get("tokens", 0) + int(
                batch["prompt_mask"].sum() + batch["completion_mask"].sum()
            )
            shape["padded_tokens"] = shape.get("padded_tokens", 0) + rows * (prompt_width + completion_width)
            sampled = batch["completion_mask"] * batch.get("tool_mask", 1)  # tool results are not sampled
            shape["sampled_tokens"] = shape.get("sampled_tokens", 0) + int(sampled.sum())
            shape["completion_width"] = max(shape.get("completion_width", 0), completion_width)
            return batch

        return measured_prepare

    def on_step_end(self, args, state, control, **kwargs):
        self.ends.append(time.perf_counter())
        for times in self.parts.values():
            times.append(0.0)
        self.shapes.append({})


def _config(model_dir: str, steps: int, output_dir: str, extra: list[str]):
    from kit.config.tree import load_config

    overrides = [f"model.name_or_path={model_dir}", f"grpo.max_steps={steps}", f"run.output_dir={output_dir}"]
    return load_config("single_gpu", [*BENCH_OVERRIDES, *overrides, *extra])


def sft_model(target: Path, examples: int, extra: list[str]) -> str:
    """The demo model after an SFT warm-up on easy and medium demonstrations, saved to `target`."""
    from kit.config.tree import DEMO_MODEL, load_config
    from kit.envs.environment import make_environment
    from kit.models import load_policy, load_tokenizer, resolve_model
    from kit.run_folder import RunFolder
    from kit.train.sft import sft_warmup

    cfg = load_config(
        "single_gpu",
        [
            f"model.name_or_path={DEMO_MODEL}", "sft.enabled=true", f"sft.num_examples={examples}",
            "sft.tiers=[easy, medium]", "sft.args.learning_rate=1.0e-4",
            "sft.args.lr_scheduler_type=constant", "sft.args.gradient_accumulation_steps=1",
            "sft.args.per_device_train_batch_size=8",
            *BENCH_OVERRIDES, f"run.output_dir={target}.run", *extra,
        ],
    )  # fmt: skip
    model_dir = resolve_model(cfg.model.name_or_path)
    tokenizer = load_tokenizer(cfg.model, model_dir)
    env = make_environment(cfg.env)
    tasks = as_trl_renders(env.load_tasks(cfg.env.train_file))
    model = sft_warmup(
        cfg, load_policy(cfg.model, model_dir), tokenizer, env, tasks, RunFolder(f"{target}.run").create()
    )
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    return str(target)


def one_run(variant: str, model_dir: str, steps: int, extra: list[str]) -> dict:
    """Train `steps` GRPO steps with the kit's trainer or TRL's own; per-step times and tokens."""
    from datasets import Dataset
    from trl import GRPOTrainer

    from kit.envs.environment import make_environment
    from kit.episode import ToolMessageEncoder
    from kit.generation.setup import resolve_generation
    from kit.models import is_dummy_model, load_policy, load_tokenizer
    from kit.run_folder import RunFolder
    from kit.tool_parsers import load_parser
    from kit.train.grpo_trainer import build_trainer, grpo_args
    from kit.train.trl_internals import colocated_vllm_loads_dummy_weights

    def trl_trainer(**kwargs) -> GRPOTrainer:
        """TRL's own trainer; for a dummy-weight folder its colocated vLLM loads dummy weights, as the kit's
        trainer does (build_trainer)."""
        dummy = is_dummy_model(model_dir)
        with colocated_vllm_loads_dummy_weights() if dummy else contextlib.nullcontext():
            return GRPOTrainer(**kwargs)

    with tempfile.TemporaryDirectory() as tmp:
        cfg = _config(model_dir, steps, tmp, [*VARIANT_OVERRIDES[variant], *extra])
        run = RunFolder(tmp).create()
        tokenizer = load_tokenizer(cfg.model, model_dir)
        env = make_environment(cfg.env)
        tasks = as_trl_renders(env.load_tasks(cfg.env.train_file))
        model = load_policy(cfg.model, model_dir)
        timer = StepTimer()
        if variant.startswith("kit"):
            trainer = build_trainer(cfg, model, tokenizer, env, tasks, run)
            if variant == "kit-padded":
                trainer._get_per_token_logps_and_entropies = MethodType(
                    GRPOTrainer._get_per_token_logps_and_entropies, trainer
                )
        elif variant == "trl-tools":
            factories = environment_factories(tasks, env, cfg.rollout.max_tool_output_chars)
            tokenizer = with_response_template(tokenizer)
            check_same_prompts(tasks, factories, tokenizer)
            rows = [
                {"prompt": t.messages, "task_index": i, "environment": tool_list_key(t)}
                for i, t in enumerate(tasks)
            ]
            args = grpo_args(cfg, run, resolve_generation(cfg))
            args.max_tool_calling_iterations = cfg.rollout.max_turns - 1
            trainer = trl_trainer(
                model=model,
                reward_funcs=[],  # each environment scores its own episode (`get_reward`)
                args=args,
                train_dataset=Dataset.from_list(rows),
                processing_class=tokenizer,
                environment_factory=factories,
            )
        else:
            parser = load_parser(cfg.rollout.tool_parser, tokenizer=tokenizer)
            encoder = ToolMessageEncoder(tokenizer)
            rows = [
                {"prompt": tokenizer.decode(encoder.prompt_ids(t)), "task_index": i}
                for i, t in enumerate(tasks)
            ]

            def outcome(prompts, completions, task_index, **_):
                rewards = []
                for text, index in zip(completions, task_index, strict=True):
                    calls = [
                        {"name": c.name, "arguments": c.arguments} for c in parser.parse(text).tool_calls
                    ]
                    rewards.append(env.outcome(tasks[index], calls))
                return rewards

            trainer = trl_trainer(
                model=model,
                reward_funcs=[outcome],
                args=grpo_args(cfg, run, resolve_generation(cfg)),
                train_dataset=Dataset.from_list(rows),
                processing_class=tokenizer,
            )
        trainer._generate = timer.timed("generation", trainer._generate)
        # Generation, rewards and the old-policy logprobs of a whole batch: the rest of a step is the loss,
        # its backward pass and the optimizer.
        trainer._generate_and_score_completions = timer.measured(trainer._generate_and_score_completions)
        trainer.add_callback(timer)
        trainer.train()
        logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    if variant.startswith("kit"):
        turns = statistics.mean(entry["episode/turns"] for entry in logs)
        calls = statistics.mean(entry["episode/tool_calls"] for entry in logs)
    elif variant == "trl-tools":  # TRL logs calls per episode, not turns
        turns, calls = None, statistics.mean(entry["tools/call_frequency"] for entry in logs)
    else:
        turns, calls = 1.0, None
    step_seconds = [b - a for a, b in zip(timer.ends, timer.ends[1:], strict=False)]
    shapes = timer.shapes[1 : len(timer.ends)]
    return {
        "variant": variant,
        "step_seconds": step_seconds,
        "generation_seconds": timer.parts["generation"][1 : len(timer.ends)],
        "batch_seconds": timer.parts["batch"][1 : len(timer.ends)],
        # TRL pads a batch's prompts to the longest and its completions to the longest: the loss computes
        # over padded_tokens, of which tokens are real.
        "padded_completion_width": [shape["completion_width"] for shape in shapes],
        "sampled_tokens_per_step": [shape["sampled_tokens"] for shape in shapes],
        "sequence_tokens_per_step": [shape["tokens"] for shape in shapes],
        "padded_tokens_per_step": [shape["padded_tokens"] for shape in shapes],
        "turns_per_episode": turns,
        "tool_calls_per_episode": calls,
    }


def summarize(run: dict) -> dict:
    seconds = statistics.median(run["step_seconds"])
    tokens = statistics.median(run["sampled_tokens_per_step"])
    return {
        **run,
        "median_step_seconds": seconds,
        "median_generation_seconds": statistics.median(run["generation_seconds"]),
        "median_scoring_seconds": statistics.median(
            b - g for b, g in zip(run["batch_seconds"], run["generation_seconds"], strict=True)
        ),
        "median_training_seconds": statistics.median(
            s - b for s, b in zip(run["step_seconds"], run["batch_seconds"], strict=True)
        ),
        "median_padded_completion_width": statistics.median(run["padded_completion_width"]),
        "median_seconds_per_1k_tokens": 1000 * seconds / tokens,
        "median_sequence_tokens_per_step": statistics.median(run["sequence_tokens_per_step"]),
        "median_padded_tokens_per_step": statistics.median(run["padded_tokens_per_step"]),
    }


def write_results(out: Path, runs: list[dict], args: argparse.Namespace, versions: dict) -> dict:
    """Medians and spreads of the runs so far, written to `out` after every run (a run cut short by a
    time limit keeps the ones before it)."""
    result: dict = {
        "versions": versions,
        "steps_per_run": args.steps,
        "overrides": args.overrides,
        "runs": runs,
    }
    for variant in VARIANT_OVERRIDES:
        mine = [r for r in runs if r["variant"] == variant]
        if not mine:
            continue
        per_token = [r["median_seconds_per_1k_tokens"] for r in mine]
        per_step = [r["median_step_seconds"] for r in mine]
        generation = [r["median_generation_seconds"] for r in mine]
        result[variant] = {
            "runs": len(mine),
            "median_seconds_per_1k_tokens": statistics.median(per_token),
            "spread_seconds_per_1k_tokens": [min(per_token), max(per_token)],
            "median_step_seconds": statistics.median(per_step),
            "spread_step_seconds": [min(per_step), max(per_step)],
            "median_generation_seconds": statistics.median(generation),
            "median_other_seconds": statistics.median(
                r["median_step_seconds"] - r["median_generation_seconds"] for r in mine
            ),
            "median_scoring_seconds": statistics.median(r["median_scoring_seconds"] for r in mine),
            "median_training_seconds": statistics.median(r["median_training_seconds"] for r in mine),
            "median_padded_completion_width": statistics.median(
                r["median_padded_completion_width"] for r in mine
            ),
            "median_sampled_tokens_per_step": statistics.median(
                statistics.median(r["sampled_tokens_per_step"]) for r in mine
            ),
            "median_sequence_tokens_per_step": statistics.median(
                r["median_sequence_tokens_per_step"] for r in mine
            ),
            "median_padded_tokens_per_step": statistics.median(
                r["median_padded_tokens_per_step"] for r in mine
            ),
        }
    if "kit" in result and "trl-tools" in result:
        kit, trl_tools = result["kit"], result["trl-tools"]
        result["ratio_kit_over_trl_tools_per_1k_tokens"] = (
            kit["median_seconds_per_1k_tokens"] / trl_tools["median_seconds_per_1k_tokens"]
        )
        result["ratio_kit_over_trl_tools_per_step"] = (
            kit["median_step_seconds"] / trl_tools["median_step_seconds"]
        )
    if "trl" in result:
        trl = result["trl"]
        if "kit" in result:
            result["ratio_kit_over_trl_per_1k_tokens"] = (
                result["kit"]["median_seconds_per_1k_tokens"] / trl["median_seconds_per_1k_tokens"]
            )
        if "kit-1turn" in result:
            result["ratio_kit_1turn_over_trl_per_step"] = (
                result["kit-1turn"]["median_step_seconds"] / trl["median_step_seconds"]
            )
    if "kit" in result and "kit-padded" in result:
        result["ratio_kit_over_kit_padded_scoring_and_training_per_token"] = _loss_side_seconds_per_token(
            result["kit"]
        ) / _loss_side_seconds_per_token(result["kit-padded"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return result


def _loss_side_seconds_per_token(variant: dict) -> float:
    """Scoring plus training seconds per prompt+completion token of a step: the part padding costs."""
    seconds = variant["median_scoring_seconds"] + variant["median_training_seconds"]
    return seconds / variant["median_sequence_tokens_per_step"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="runs of each variant, interleaved (0: SFT only)")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=list(VARIANT_OVERRIDES),
        default=["kit", "trl-tools", "trl", "kit-1turn"],
        help="what to run, in this order within each round",
    )
    parser.add_argument("--sft-examples", type=int, default=800)
    parser.add_argument("--work", default=None, help="folder for the SFT model (default: a temporary one)")
    parser.add_argument("--base", help="train this model folder (e.g. a dummy-weight one), not the SFT model")
    parser.add_argument("--out", default="bench/results/gpu_step_time.json")
    parser.add_argument(
        "overrides",
        nargs="*",
        help="more recipe overrides for every variant (e.g. generation.mode=transformers)",
    )
    parser.add_argument("--one", choices=list(VARIANT_OVERRIDES), help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--json", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.one:
        Path(args.json).write_text(json.dumps(one_run(args.one, args.model, args.steps, args.overrides)))
        return

    from kit.versions import versions

    work = Path(args.work or tempfile.mkdtemp(prefix="gpu_step_time_"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    target = work / "sft_model"  # kept from an earlier run in the same --work folder
    if args.base:
        model_dir = args.base
    elif (target / "config.json").is_file():
        model_dir = str(target)
    else:
        model_dir = sft_model(target, args.sft_examples, args.overrides)
    print(f"model: {model_dir} ({time.perf_counter() - started:.0f} s)", flush=True)
    runs: list[dict] = []
    for index in range(args.runs):
        for variant in args.variants:
            result_file = work / f"{variant}_{index}.json"
            command = [sys.executable, __file__, "--one", variant, "--model", model_dir,
                       "--steps", str(args.steps), "--json", str(result_file), *args.overrides]  # fmt: skip
            subprocess.run(command, check=True, env=os.environ)
            runs.append(summarize(json.loads(result_file.read_text())))
            last = runs[-1]
            print(
                f"{variant:>10} run {index + 1}: {last['median_step_seconds']:.2f} s/step "
                f"(generation {last['median_generation_seconds']:.2f} s), "
                f"{statistics.median(last['sampled_tokens_per_step']):.0f} sampled tokens/step, "
                f"{last['median_seconds_per_1k_tokens']:.3f} s per 1k sampled tokens, "
                f"{last['tool_calls_per_episode'] or 0:.2f} tool calls/episode",
                flush=True,
            )
            result = write_results(Path(args.out), runs, args, versions())
    if not runs:
        return
    for variant in args.variants:
        mine = result[variant]
        step_low, step_high = mine["spread_step_seconds"]
        token_low, token_high = mine["spread_seconds_per_1k_tokens"]
        print(
            f"{variant}: {mine['median_step_seconds']:.2f} s/step (runs {step_low:.2f}-{step_high:.2f}) = "
            f"generation {mine['median_generation_seconds']:.2f} + rest {mine['median_other_seconds']:.2f} "
            f"(scoring {mine['median_scoring_seconds']:.2f}, "
            f"training {mine['median_training_seconds']:.2f}); "
            f"{mine['median_seconds_per_1k_tokens']:.3f} s per 1k sampled tokens "
            f"(runs {token_low:.3f}-{token_high:.3f}); "
            f"{mine['median_sequence_tokens_per_step']:.0f} prompt+completion tokens/step "
            f"({mine['median_padded_tokens_per_step']:.0f} padded; "
            f"completions padded to {mine['median_padded_completion_width']:.0f})"
        )
    if "ratio_kit_1turn_over_trl_per_step" in result:
        print(f"ratio kit-1turn/TRL, seconds per step, the same single-turn work: "
              f"{result['ratio_kit_1turn_over_trl_per_step']:.2f}")  # fmt: skip
    if "ratio_kit_over_kit_padded_scoring_and_training_per_token" in result:
        print(f"ratio kit/kit-padded, scoring+training seconds per prompt+completion token: "
              f"{result['ratio_kit_over_kit_padded_scoring_and_training_per_token']:.2f}")  # fmt: skip
    if "ratio_kit_over_trl_per_1k_tokens" in result:
        print(f"ratio kit (multi-turn)/TRL (one turn), seconds per 1k sampled tokens: "
              f"{result['ratio_kit_over_trl_per_1k_tokens']:.2f}")  # fmt: skip
    if "ratio_kit_over_trl_tools_per_1k_tokens" in result:
        per_step = result["ratio_kit_over_trl_tools_per_step"]
        per_token = result["ratio_kit_over_trl_tools_per_1k_tokens"]
        print(f"ratio kit/TRL, the same multi-turn tool episodes (medians of {args.runs} runs each): "
              f"seconds per step {per_step:.2f}; seconds per 1k sampled tokens {per_token:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
