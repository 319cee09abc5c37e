"""GRPO on the workplace-assistant tasks, the whole loop in one file.

TRL's own `GRPOTrainer` and `GRPOConfig`, with three pieces from the kit: the environment (NeMo-Gym's
workplace tools on a sandbox per episode, and the state-diff reward), the multi-turn rollout (the model
calls tools, reads their answers, calls again; tool tokens are masked from the loss), and a generator
(here plain transformers `generate` on the policy being trained). `kit train` runs the same loop with a
vLLM server or colocated engine, an SFT warm-up, evaluations, checkpoints and resume.

    python examples/grpo_workplace.py --max-steps 2                   # CPU, the demo model, ~2 minutes
    python examples/grpo_workplace.py --model runs/cpu_demo/sft --max-steps 50

The demo model never writes a tool call before a warm-up, so its rewards are all 0 and GRPO has nothing
to learn from; point `--model` at a warmed-up model (`kit train` saves one under `<run>/sft`) to see
rewards move.
"""

from __future__ import annotations

import argparse

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer
from trl.models import unwrap_model_for_generation

from kit.config.tree import DEMO_MODEL, load_config
from kit.envs.environment import make_environment
from kit.episode import episode_reward
from kit.generation.base import Sampling
from kit.generation.transformers_gen import TransformersGenerator
from kit.models import load_policy, load_tokenizer, mixed_precision_args, resolve_model
from kit.rollout.loop import Rollouts
from kit.train.grpo_trainer import prompt_key


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=DEMO_MODEL, help="a hub id or a local model folder")
    parser.add_argument("--max-steps", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=64, help="training tasks to sample prompts from")
    parser.add_argument("--output-dir", default="runs/example_grpo_workplace")
    args = parser.parse_args()

    # The environment and the rollout settings come from the CPU demo recipe: the easy workplace tasks,
    # each prompt listing only its task's tools, the kit's <tool_call> format and chat template.
    cfg = load_config("cpu_demo", [f"model.name_or_path={args.model}"])
    model_dir = resolve_model(args.model)
    tokenizer = load_tokenizer(cfg.model, model_dir)
    model = load_policy(cfg.model, model_dir)
    env = make_environment(cfg.env)
    tasks = env.load_tasks(cfg.env.train_file, limit=args.tasks, skip_invalid=True)
    task_of = {prompt_key(task.messages): task for task in tasks}  # TRL hands each prompt's messages back
    rollouts = Rollouts.from_config(cfg, tokenizer, env)

    def rollout_func(prompts: list[list[dict]], trainer: GRPOTrainer) -> dict[str, list]:
        """Play one episode per prompt with the policy as it is now; TRL computes the loss on the result."""
        generator = TransformersGenerator(
            lambda: unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator),
            tokenizer.pad_token_id,
            [tokenizer.eos_token_id],
        )
        sampling = Sampling(trainer.args.temperature, trainer.args.top_p)
        episode_tasks = [task_of[prompt_key(prompt)] for prompt in prompts]
        episodes = rollouts.run(episode_tasks, generator, sampling, trainer.args.max_completion_length)
        return {
            "prompt_ids": [e.prompt_ids for e in episodes],  # the chat template applied to the task
            "completion_ids": [e.completion_ids for e in episodes],  # all turns, tool answers too
            "logprobs": [e.logprobs for e in episodes],  # the sampler's, one per completion token
            "env_mask": [e.env_mask for e in episodes],  # 0 on tool-answer tokens: no loss on them
            "episode": episodes,  # any other key reaches the reward functions, row by row
        }

    def outcome(prompts, completions, episode, **kwargs) -> list[float | None]:
        """1.0 when the episode's tool calls leave the databases as the task's ground truth does."""
        return [episode_reward(e) for e in episode]

    def tool_calls(prompts, completions, episode, **kwargs) -> list[float]:
        """Not trained on (weight 0): logged beside the reward, so a run shows whether the policy acts."""
        return [float(len(e.tool_calls)) for e in episode]

    training_args = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        learning_rate=1e-5,
        beta=0.0,  # no reference model: GRPO as DAPO and Dr. GRPO run it
        num_generations=4,  # episodes per task: the group whose rewards set each advantage
        per_device_train_batch_size=8,  # 2 tasks x 4 episodes a step
        max_completion_length=256,  # the budget of a whole episode, tool answers included
        temperature=1.0,
        reward_weights=[1.0, 0.0],
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        **mixed_precision_args(),  # bf16 autocast where the hardware has it, float32 weights
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[outcome, tool_calls],
        args=training_args,
        train_dataset=Dataset.from_list([{"prompt": task.messages} for task in tasks]),
        processing_class=tokenizer,
        rollout_func=rollout_func,
    )
    trainer.train()
    trainer.save_model(args.output_dir)
    env.close()
    for log in trainer.state.log_history:
        if "reward" in log:
            print(
                f"step {log['step']}: reward {log['reward']:.3f}, "
                f"tool calls an episode {log['rewards/tool_calls/mean']:.2f}, loss {log['loss']:.4f}"
            )
    print(f"policy saved to {args.output_dir}")


if __name__ == "__main__":
    main()
