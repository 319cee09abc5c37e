"""Success rate on tasks, per category and tier: with a local model, or through a served endpoint.

Every evaluation runs the training rollout (`kit.rollout.loop`): the same tool-output cut, the same
parse-error feedback and, on dialogue tasks, the same simulated user. `kit eval --server URL` drives a
vLLM server (`kit serve`) through the same loop with token-id prompts, so its figure means what the
training evaluations mean. The report counts free successes apart: tasks on which doing nothing
already scores 1; and, on dialogue tasks, the episodes whose simulated user broke a rule: the success
rate is that of the episodes with a conforming user, `user.excluded` the share of the others.

With `run.eval_repeats` 1 (the default) each task gets one greedy episode. With K > 1 it gets K episodes
sampled at the recipe's `grpo.temperature`, repeat r seeded from `run.seed` and r (`repeat_sampling`), and
the report adds pass^k and pass@k for k = 1..K (`kit.train.success_rates`).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.config.tree import ConfigError, KitConfig
from kit.envs.environment import TaskEnvironment, make_environment
from kit.episode import Episode, Task, episode_reward, is_success
from kit.generation.base import Generator, Sampling, mixed_seed
from kit.progress import Progress
from kit.rollout.loop import Rollouts
from kit.stats import share
from kit.train.success_rates import rate

log = logging.getLogger(__name__)


def summarize(
    tasks: list[Task],
    rewards: list[float | None],
    free: list[bool] | None = None,
    episodes: list[Episode] | None = None,
    repeats: int = 1,
) -> dict[str, Any]:
    """Success rate overall, per category, tier and ambiguity type, each with its 95 % interval; with
    `repeats` > 1 also pass^k and pass@k (`kit.train.success_rates.rate`).

    `rewards` (and `episodes`) hold `repeats` attempts at each task, repeat by repeat: attempt r at task i
    is at `r * len(tasks)` + i. Tasks whose ground truth does not apply to the databases
    (`task.info["invalid"]`) are counted apart, not scored; so are episodes whose simulated user broke a
    rule (reward None): `user` gives their share and the rules broken, and a task's rates are those of
    its other attempts. With `free` (per task: doing nothing scores 1), `earned` is the success rate on
    the other tasks. With `episodes`, `dialogue` says how the dialogue tasks' conversations ended, over
    all their episodes.
    """
    if len(rewards) != repeats * len(tasks):
        raise ValueError(f"{len(rewards)} rewards for {repeats} repeats of {len(tasks)} tasks")
    groups: dict[str, dict[str, list[tuple[int, int]]]] = {
        "category": defaultdict(list),
        "tier": defaultdict(list),
        "ambiguity_type": defaultdict(list),
    }
    invalid = [task for task in tasks if task.info.get("invalid")]
    free = free or [False] * len(tasks)
    attempts = [rewards[i :: len(tasks)] for i in range(len(tasks))]
    outcomes = [(sum(is_success(r) for r in mine if r is not None), sum(r is not None for r in mine))
                for mine in attempts]  # fmt: skip
    valid = [(t, o, f) for t, o, f in zip(tasks, outcomes, free, strict=True) if not t.info.get("invalid")]
    scored = [(t, o, f) for t, o, f in valid if o[1]]
    for task, outcome, _ in scored:
        for key in ("category", "tier"):
            groups[key][str(task.info.get(key, "unknown"))].append(outcome)
        if task.is_dialogue:
            groups["ambiguity_type"][task.ambiguity_type].append(outcome)

    def rate_of(items: list[tuple[int, int]]) -> dict[str, Any]:
        return rate(items, repeats)

    report = {
        **rate_of([o for _, o, _ in scored]),
        "by_category": {k: rate_of(v) for k, v in sorted(groups["category"].items())},
        "by_tier": {k: rate_of(v) for k, v in sorted(groups["tier"].items())},
        "invalid": len(invalid),
        "free": sum(f for _, _, f in scored),
        "earned": rate_of([o for _, o, f in scored if not f]),
    }
    if groups["ambiguity_type"]:
        report["by_ambiguity_type"] = {k: rate_of(v) for k, v in sorted(groups["ambiguity_type"].items())}
    valid_attempts = [(t, mine) for t, mine in zip(tasks, attempts, strict=True) if not t.info.get("invalid")]
    talk_rewards = [r for t, mine in valid_attempts if t.is_dialogue for r in mine]
    if talk_rewards:
        report["user"] = {"excluded": share(sum(r is None for r in talk_rewards), len(talk_rewards))}
    if episodes is not None:
        failures = Counter(e.failure for e in episodes if e.failure and not e.user_breaks)
        if failures:  # scored 0: the environment could not serve them
            report["failures"] = {"n": sum(failures.values()), "reasons": dict(failures.most_common(3))}
        if talk_rewards:
            rules = Counter(rule for e in episodes for rule in e.user_breaks)
            report["user"]["rules"] = dict(rules.most_common())
        if any(e.prefix_replacements for e in episodes):
            report["prefix_replacements"] = sum(e.prefix_replacements for e in episodes)
        talks = [e for t, e in zip(tasks * repeats, episodes, strict=True) if t.is_dialogue]
        if talks:
            report["dialogue"] = {
                "tasks": len(talks) // repeats,
                "user_turns": round(sum(e.user_turns for e in talks) / len(talks), 3),
                "ended_by_user": round(sum(e.end_reason == "user_stop" for e in talks) / len(talks), 4),
                "user_errors": sum(e.end_reason == "user_error" for e in talks),
                "end_reasons": dict(Counter(e.end_reason for e in talks).most_common()),
            }
    if invalid:
        report["invalid_reasons"] = sorted({task.info["invalid"] for task in invalid})[:5]
    return report


@dataclass
class Evaluation:
    """What one evaluation produced: the summary, and each episode and its outcome reward, repeat by
    repeat (`repeats` episodes per task; attempt r at task i is at `r * len(tasks) + i`)."""

    report: dict[str, Any]
    episodes: list[Episode]
    rewards: list[float]
    repeats: int = 1


def free_successes(env: TaskEnvironment, tasks: list[Task]) -> list[bool]:
    """Per task: whether doing nothing already scores 1 (its ground truth changes nothing here)."""
    return [is_success(env.outcome(task, [])) for task in tasks]


def repeat_sampling(cfg: KitConfig, repeat: int) -> Sampling:
    """How repeat `repeat` (from 0) of an evaluation samples: greedily when `run.eval_repeats` is 1; else
    as GRPO's rollouts do (`grpo.temperature`, top_p, ...), seeded from `run.seed` and the repeat."""
    ignore_eos = cfg.generation.ignore_eos
    if cfg.run.eval_repeats == 1:
        return Sampling(temperature=0.0, ignore_eos=ignore_eos)
    return Sampling.of(cfg.grpo, ignore_eos, seed=mixed_seed(cfg.run.seed, repeat))


def evaluate_with_generator(
    cfg: KitConfig,
    generator: Generator,
    tokenizer,
    env: TaskEnvironment,
    tasks: list[Task],
    max_tokens: int,
    user=None,
) -> Evaluation:
    """The training rollout of `tasks`, `run.eval_repeats` times (`repeat_sampling`), each episode scored
    once; `user` answers the dialogue tasks. A progress bar (`kit.progress`) shows the episodes done of
    all repeats, the success so far and the time left."""
    rollouts = Rollouts.from_config(cfg, tokenizer, env, user)
    repeats = cfg.run.eval_repeats
    with Progress(repeats * len(tasks), "episode", desc="eval") as progress:
        episodes = [
            episode
            for repeat in range(repeats)
            for episode in rollouts.run(
                tasks, generator, repeat_sampling(cfg, repeat), max_tokens, progress.episode
            )
        ]
    rewards = [episode_reward(e) for e in episodes]
    report = summarize(tasks, rewards, free_successes(env, tasks), episodes, repeats)
    if repeats > 1:
        report["sampling"] = {"repeats": repeats, "temperature": cfg.grpo.temperature, "seed": cfg.run.seed}
    if any(t.is_dialogue for t in tasks):
        report["user_model"] = getattr(user, "name", None)
    return Evaluation(report, episodes, rewards, repeats)


def evaluate_model(
    cfg: KitConfig,
    model,
    tokenizer,
    env: TaskEnvironment,
    tasks: list[Task],
    max_tokens: int | None = None,
    user=None,
) -> Evaluation:
    """`evaluate_with_generator` with a local transformers model, in eval mode with its KV cache on.

    Trainers (SFT, GRPO) set `config.use_cache = False` on the model they train, which makes `generate`
    recompute the whole prefix at every token; both settings are restored afterwards.
    """
    from kit.generation.transformers_gen import TransformersGenerator

    tokens = max_tokens or cfg.grpo.max_completion_length
    was_training, used_cache = model.training, model.config.use_cache
    model.eval()
    model.config.use_cache = True
    try:
        generator = TransformersGenerator.for_model(model, tokenizer)
        return evaluate_with_generator(cfg, generator, tokenizer, env, tasks, tokens, user)
    finally:
        model.train(was_training)
        model.config.use_cache = used_cache


def write_episodes(path: Path, tasks: list[Task], evaluation: Evaluation) -> None:
    """The evaluation's episodes, one JSON line each in the trajectories.jsonl format: the whole
    dialogue (assistant, tool and simulated-user messages), calls, reward and why each ended, and
    `repeat`, which of the task's repeats it is (from 0). The notebooks' TrajectoryBrowser reads it."""
    from kit.run_folder import episode_records

    path.parent.mkdir(parents=True, exist_ok=True)
    each = episode_records(tasks * evaluation.repeats, evaluation.episodes, evaluation.rewards)
    records = [{**record, "repeat": i // max(len(tasks), 1)} for i, record in enumerate(each)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def episodes_path(report_path: str | Path) -> Path:
    """Where `kit eval --out REPORT` writes its episodes: beside the report, REPORT_STEM.episodes.jsonl."""
    path = Path(report_path)
    return path.with_name(path.stem + ".episodes.jsonl")


def evaluate_cli(cfg: KitConfig, args) -> int:
    """`kit eval`: print the JSON report; with --out, write it and its episodes beside it."""
    from kit.models import load_tokenizer, resolve_model
    from kit.rollout.user_simulators import open_user_simulator

    if cfg.rollout.agent == "nemo_gym" and not args.server:
        raise ConfigError(
            "--agent nemo_gym runs the episodes with NeMo-Gym's agent against a served policy: give its "
            "address with --server (a `kit serve` of the model)."
        )
    log_dir = Path(args.out).parent if args.out else Path(cfg.run.output_dir)
    env = make_environment(cfg.env, log_dir / "nemo_gym")
    tasks = env.load_tasks(args.tasks or cfg.env.eval_file, limit=args.limit or cfg.run.eval_tasks or None)
    max_tokens = cfg.grpo.max_completion_length
    model_dir = resolve_model(args.model or cfg.model.name_or_path)
    tokenizer = load_tokenizer(cfg.model, model_dir)
    dialogue = any(task.is_dialogue for task in tasks)
    with (
        contextlib.closing(env),
        open_user_simulator(cfg, env.outcome, log_dir) if dialogue else contextlib.nullcontext() as user,
    ):
        if args.server:
            from kit.generation.vllm_server import VLLMServerClient, VLLMServerGenerator

            client = VLLMServerClient(args.server, args.api_key or cfg.generation.api_key)
            evaluation = evaluate_with_generator(
                cfg, VLLMServerGenerator(client), tokenizer, env, tasks, max_tokens, user
            )
            evaluation.report["endpoint"] = args.server
        else:
            from kit.models import load_policy

            model = load_policy(cfg.model, model_dir)
            evaluation = evaluate_model(cfg, model, tokenizer, env, tasks, max_tokens, user)
            evaluation.report["model"] = model_dir
    text = json.dumps(evaluation.report, indent=2)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
        write_episodes(episodes_path(args.out), tasks, evaluation)
    return 0
